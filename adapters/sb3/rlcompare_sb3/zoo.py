"""SB3's recommended settings for the native arm: the RL Baselines3 Zoo's tuned hyperparameters.

The zoo (``rl-zoo3`` on the package index; ``pip install 'rlcompare-sb3[zoo]'``) ships one YAML file
per algorithm, ``rl_zoo3/hyperparams/<algo>.yml``, an entry per environment. They are read here as
files, found with ``importlib.util.find_spec`` without importing ``rl_zoo3`` (its import pulls in
torch, SB3-Contrib and the Hugging Face client). An entry becomes a :class:`Recommendation` in
canonical terms: the zoo's keys are SB3's keyword arguments, mapped as the adapter maps the canonical
settings to them; what the entry leaves out takes SB3's own default (not the canonical one, where the
two differ: SB3's PPO collects 2,048 steps per env, its A2C uses RMSprop, its DQN samples 32); the
network is the entry's ``policy_kwargs`` (``net_arch``, ``activation_fn``, read with ``ast``, never
evaluated), else SB3's default for the policy. The zoo's linear schedules (``lin_<x>``) are
native-only settings the adapter applies. ``n_timesteps`` is the zoo's budget: the workload's budget
rules, and the zoo's is kept in the source for the record. An entry with a key the adapter cannot
apply (``normalize``, ``use_sde``, other ``policy_kwargs``, a wrapper, a non-Gaussian noise) is
refused with the keys named.
"""

from __future__ import annotations

import ast
import importlib.metadata
import importlib.util
from pathlib import Path
from typing import Any

from rlcompare.adapter import IncompatibleError, Recommendation

DISTRIBUTION = "rl_zoo3"
#: Zoo keys -> canonical hyperparameter names (the rest of a family's canonical names are the same word).
RENAMED = {"n_steps": "rollout_steps", "batch_size": "minibatch_size", "n_epochs": "epochs",
           "ent_coef": "entropy_coef", "vf_coef": "value_coef", "train_freq": "train_every"}
#: Per family: the zoo keys (SB3 keyword arguments) that have a canonical counterpart.
KEYS = {
    "PPO": ("learning_rate", "n_steps", "batch_size", "n_epochs", "gamma", "gae_lambda", "clip_range", "ent_coef",
            "vf_coef", "max_grad_norm", "normalize_advantage"),
    "A2C": ("learning_rate", "n_steps", "gamma", "gae_lambda", "ent_coef", "vf_coef", "max_grad_norm",
            "normalize_advantage", "use_rms_prop"),
    "DQN": ("learning_rate", "buffer_size", "learning_starts", "batch_size", "gamma", "train_freq", "gradient_steps",
            "target_update_interval", "exploration_fraction", "exploration_initial_eps", "exploration_final_eps",
            "max_grad_norm"),
    "SAC": ("learning_rate", "buffer_size", "learning_starts", "batch_size", "tau", "gamma", "train_freq",
            "gradient_steps", "ent_coef"),
    "TD3": ("learning_rate", "buffer_size", "learning_starts", "batch_size", "tau", "gamma", "train_freq",
            "gradient_steps", "policy_delay", "target_policy_noise", "target_noise_clip"),
    "DDPG": ("learning_rate", "buffer_size", "learning_starts", "batch_size", "tau", "gamma", "train_freq",
             "gradient_steps"),
}
#: Keys read for the record or handled apart, never a refusal.
HANDLED = frozenset({"n_timesteps", "policy", "n_envs", "policy_kwargs", "noise_type", "noise_std"})
#: SB3 2.x defaults that differ from the canonical ones, in canonical terms (stable_baselines3/*/*.py).
SB3_DEFAULTS: dict[str, dict[str, Any]] = {
    "PPO": {"rollout_steps": 2048},
    "A2C": {"optimizer": "rmsprop"},
    "DQN": {"buffer_size": 1_000_000, "learning_starts": 100, "minibatch_size": 32, "target_update_interval": 10_000},
    "TD3": {"exploration_noise": 0.0},
    "DDPG": {"exploration_noise": 0.0},
}
#: SB3's default networks of ``MlpPolicy`` (policies.py of each algorithm).
SB3_NETWORKS = {"PPO": ([64, 64], "tanh"), "A2C": ([64, 64], "tanh"), "DQN": ([64, 64], "relu"),
                "SAC": ([256, 256], "relu"), "TD3": ([400, 300], "relu"), "DDPG": ([400, 300], "relu")}
ACTIVATIONS = {"Tanh": "tanh", "ReLU": "relu"}
SCHEDULED = ("learning_rate", "clip_range")


def hyperparameter_folder() -> Path | None:
    """The installed zoo's ``hyperparams`` folder, found without importing it; None when not installed."""
    try:
        found = importlib.util.find_spec(DISTRIBUTION)
    except (ImportError, ValueError):
        return None
    if found is None or not found.submodule_search_locations:
        return None
    folder = Path(next(iter(found.submodule_search_locations))) / "hyperparams"
    return folder if folder.is_dir() else None


def zoo_entry(env: str, algorithm: str) -> tuple[dict[str, Any], str] | None:
    """The zoo's entry for ``env`` in ``<algorithm>.yml`` and a line naming its source; None when the
    zoo is not installed, has no file for the algorithm or no entry for the environment."""
    import yaml

    folder = hyperparameter_folder()
    if folder is None:
        return None
    path = folder / f"{algorithm.lower()}.yml"
    if not path.is_file():
        return None
    table = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    entry = table.get(env)
    if not isinstance(entry, dict):
        return None
    version = importlib.metadata.version("rl_zoo3") if _installed() else "unknown"
    return entry, f"rl-zoo3 {version}, rl_zoo3/hyperparams/{path.name}, entry {env}"


def _installed() -> bool:
    try:
        importlib.metadata.version("rl_zoo3")
    except importlib.metadata.PackageNotFoundError:
        return False
    return True


def recommendation(env: str, algorithm: str) -> Recommendation | None:
    """The zoo's entry for ``env`` and ``algorithm`` as a recommendation (see the module docstring);
    None without an entry; :class:`IncompatibleError` naming the keys the adapter cannot apply."""
    found = zoo_entry(env, algorithm)
    if found is None or algorithm not in KEYS:
        return None
    entry, source = found
    unknown = sorted(key for key in entry if key not in KEYS[algorithm] and key not in HANDLED)
    policy = entry.get("policy", "MlpPolicy")
    if policy != "MlpPolicy":
        unknown.append(f"policy={policy}")
    hidden, activation = SB3_NETWORKS[algorithm]
    network_kwargs = _policy_kwargs(entry.get("policy_kwargs"))
    for key in sorted(set(network_kwargs) - {"net_arch", "activation_fn"}):
        unknown.append(f"policy_kwargs.{key}")
    if entry.get("noise_type") not in (None, "normal"):
        unknown.append(f"noise_type={entry['noise_type']}")
    if unknown:
        raise IncompatibleError(f"the zoo's entry ({source}) sets {', '.join(unknown)}, which the SB3 adapter does "
                                "not apply in the native arm")
    hyperparameters: dict[str, Any] = dict(SB3_DEFAULTS.get(algorithm, {}))
    native: dict[str, Any] = {}
    for key in KEYS[algorithm]:
        if key not in entry:
            continue
        value = entry[key]
        if key in SCHEDULED and isinstance(value, str) and value.startswith("lin_"):
            value = float(value[len("lin_"):])
            native[f"{key}_schedule"] = "linear"  # rl_zoo3.utils.linear_schedule: progress_remaining x value
        if key == "use_rms_prop":
            hyperparameters["optimizer"] = "rmsprop" if value else "adam"
            continue
        if key == "gradient_steps" and value == -1:  # as many as the env steps of the update interval
            value = entry.get("train_freq", 1)
        hyperparameters[RENAMED.get(key, key)] = float(value) if isinstance(value, float) else value
    if "noise_std" in entry:  # Gaussian, in SB3's action space scaled to [-1, 1]: the canonical unit
        hyperparameters["exploration_noise"] = float(entry["noise_std"])
    if "net_arch" in network_kwargs:
        hidden = _hidden(network_kwargs["net_arch"], source)
    if "activation_fn" in network_kwargs:
        activation = ACTIVATIONS.get(network_kwargs["activation_fn"], "")
        if not activation:
            raise IncompatibleError(f"the zoo's entry ({source}) uses activation {network_kwargs['activation_fn']}, "
                                    "which the canonical network does not offer")
    if "n_timesteps" in entry:
        source += f" (its budget n_timesteps = {int(float(entry['n_timesteps'])):,}; the workload's budget rules)"
    return Recommendation(source=source, hyperparameters=hyperparameters,
                          network={"hidden_sizes": hidden, "activation": activation},
                          parallelism={"envs_per_worker": int(entry.get("n_envs", 1)), "workers": 1},
                          native=native)


def _policy_kwargs(text: Any) -> dict[str, Any]:
    """``policy_kwargs`` as the zoo writes it, ``"dict(net_arch=[64, 64], activation_fn=nn.ReLU)"``,
    read with ``ast`` (never evaluated): literals, ``dict(...)`` calls and ``nn.X`` names."""
    if text is None:
        return {}
    if isinstance(text, dict):
        return text
    tree = ast.parse(str(text), mode="eval").body
    value = _literal(tree)
    if not isinstance(value, dict):
        raise IncompatibleError(f"the zoo's policy_kwargs {text!r} is not a dict(...)")
    return value


def _literal(node: ast.AST) -> Any:
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "dict" and not node.args:
        return {keyword.arg: _literal(keyword.value) for keyword in node.keywords}
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in ("nn", "th.nn"):
        return node.attr
    if isinstance(node, ast.Dict):
        return {_literal(key): _literal(value) for key, value in zip(node.keys, node.values, strict=True)
                if key is not None}
    if isinstance(node, (ast.List, ast.Tuple)):
        return [_literal(item) for item in node.elts]
    return ast.literal_eval(node)


def _hidden(net_arch: Any, source: str) -> list[int]:
    if isinstance(net_arch, dict):  # dict(pi=..., vf=...) or dict(pi=..., qf=...): the canonical network is one size
        sizes = list(net_arch.values())
        if not sizes or any(size != sizes[0] for size in sizes):
            raise IncompatibleError(f"the zoo's entry ({source}) gives its networks different sizes ({net_arch}), "
                                    "which the canonical network cannot express")
        net_arch = sizes[0]
    if not isinstance(net_arch, list) or not all(isinstance(size, int) for size in net_arch):
        raise IncompatibleError(f"the zoo's entry ({source}) has a net_arch the canonical network cannot express")
    return list(net_arch)
