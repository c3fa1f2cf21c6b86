"""Stable-Baselines3 adapter: PPO, A2C, DQN, SAC, TD3 and DDPG with SB3's own vectorized environments.

Parallelism maps to SB3's only mechanism: ``workers == 1`` steps ``envs_per_worker`` environments
in-process (DummyVecEnv); ``workers > 1`` uses SubprocVecEnv, which runs one environment per
subprocess, so ``workers x envs_per_worker`` processes (approximate when envs_per_worker > 1).
With ``parallelism.simulation = "envpool"`` SB3 trains on one EnvPool of every environment instead
(the harness's ``context.vector_env``, counted by it), through :mod:`rlcompare_sb3.envpool_vec_env`,
which keeps SB3's same-step autoreset and ``terminal_observation``; ``workers`` are EnvPool's threads.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from rlcompare import hookimpl
from rlcompare.adapter import (
    Adapter,
    Capabilities,
    Fidelity,
    FidelityEntry,
    NativeSetting,
    ParityOutcome,
    ParityProbe,
    Recommendation,
    Setting,
    TrainingResult,
    WorkloadLike,
    entry,
    map_settings,
    only_if,
    vector_env_fidelity,
)
from rlcompare.adapter import apply_native_settings as apply_native

if TYPE_CHECKING:
    from rlcompare.adapter import TrainingContext
    from rlcompare.plugins.register import Register


def _per_vec_step(value: int, workload: WorkloadLike) -> int:
    # SB3 counts train_freq in calls to VecEnv.step, each of which steps every env once.
    return max(1, value // workload.parallelism.total_envs)


def _divisible_by_envs(value: int, workload: WorkloadLike) -> tuple[Fidelity, str]:
    envs = workload.parallelism.total_envs
    if value % envs == 0:
        return Fidelity.EXACT, f"train_freq counts vector steps of {envs} envs"
    return Fidelity.APPROXIMATE, f"rounded to a multiple of {envs} envs"


_ON_POLICY_COMMON = [
    Setting("learning_rate", "learning_rate"),
    Setting("gamma", "gamma"),
    Setting("gae_lambda", "gae_lambda"),
    Setting("rollout_steps", "n_steps", note="per environment, as canonical"),
    Setting("entropy_coef", "ent_coef"),
    Setting("value_coef", "vf_coef"),
    Setting("max_grad_norm", "max_grad_norm"),
    Setting("normalize_advantage", "normalize_advantage"),
]

SETTINGS: dict[str, list[Setting]] = {
    "PPO": [
        *_ON_POLICY_COMMON,
        Setting("clip_range", "clip_range"),
        Setting("minibatch_size", "batch_size"),
        Setting("epochs", "n_epochs"),
    ],
    "A2C": [
        *_ON_POLICY_COMMON,
        Setting("optimizer", "use_rms_prop", convert=lambda value, _: value == "rmsprop"),
    ],
    "DQN": [
        Setting("learning_rate", "learning_rate"),
        Setting("gamma", "gamma"),
        Setting("buffer_size", "buffer_size"),
        Setting("learning_starts", "learning_starts"),
        Setting("minibatch_size", "batch_size"),
        Setting("train_every", "train_freq", convert=_per_vec_step, judge=_divisible_by_envs),
        Setting("gradient_steps", "gradient_steps"),
        Setting("target_update_interval", "target_update_interval", note="env steps, as canonical"),
        Setting("exploration_initial_eps", "exploration_initial_eps"),
        Setting("exploration_final_eps", "exploration_final_eps"),
        Setting("exploration_fraction", "exploration_fraction"),
        Setting("max_grad_norm", "max_grad_norm"),
        Setting("double_q", None, judge=only_if(False, "SB3's DQN has no double-Q targets")),
    ],
}
#: What SB3's off-policy actor-critics (SAC, TD3, DDPG) share.
_OFF_POLICY_ACTOR_CRITIC = [
    Setting("learning_rate", "learning_rate"),
    Setting("gamma", "gamma"),
    Setting("buffer_size", "buffer_size"),
    Setting("learning_starts", "learning_starts"),
    Setting("minibatch_size", "batch_size"),
    Setting("tau", "tau"),
    Setting("train_every", "train_freq", convert=_per_vec_step, judge=_divisible_by_envs),
    Setting("gradient_steps", "gradient_steps"),
]
SETTINGS["SAC"] = [*_OFF_POLICY_ACTOR_CRITIC, Setting("entropy_coef", "ent_coef")]
#: Exploration noise: SB3's NormalActionNoise, added to the action scaled to [-1, 1] (canonical units:
#: the action range's half-width), built by build_model from the sigma kept here.
def _judge_exploration_noise(value: float, workload: WorkloadLike) -> tuple[Fidelity, str]:
    note = ("NormalActionNoise(sigma), one draw per env (VectorizedActionNoise with several), added to the action "
            "scaled to [-1, 1], then clipped there")
    if value > 0 and int(workload.hyperparameters.learning_starts) > 0:  # type: ignore[union-attr]
        return Fidelity.APPROXIMATE, (f"{note}; SB3 adds it to the warm-up's uniform random actions too (learning_starts "
                                      "env steps), where canonically they carry none")
    return Fidelity.EXACT, note


_EXPLORATION_NOISE = Setting("exploration_noise", "action_noise", judge=_judge_exploration_noise)
_DETERMINISTIC_COMMON = [*_OFF_POLICY_ACTOR_CRITIC, _EXPLORATION_NOISE]
SETTINGS["TD3"] = [
    *_DETERMINISTIC_COMMON,
    Setting("policy_delay", "policy_delay"),
    Setting("target_policy_noise", "target_policy_noise", note="on the target action scaled to [-1, 1]"),
    Setting("target_noise_clip", "target_noise_clip"),
]
SETTINGS["DDPG"] = list(_DETERMINISTIC_COMMON)
#: The families whose actor is deterministic and whose critic SB3 calls ``qf``.
_DETERMINISTIC = ("TD3", "DDPG")

ACTIVATIONS = {"tanh": "Tanh", "relu": "ReLU"}
#: Where each family's parity probe is answered (``module:function``).
PARITY_UPDATES = {"PPO": "rlcompare_sb3.parity:ppo_update", "A2C": "rlcompare_sb3.parity_a2c:a2c_update",
                  "DQN": "rlcompare_sb3.parity_dqn:dqn_update", "SAC": "rlcompare_sb3.parity_sac:sac_update",
                  "TD3": "rlcompare_sb3.parity_td3:td3_update", "DDPG": "rlcompare_sb3.parity_td3:td3_update"}


class StableBaselines3Adapter(Adapter):
    id = "sb3"
    framework = "stable-baselines3"
    summary = "Stable-Baselines3: PPO, A2C, DQN, SAC, TD3, DDPG; DummyVecEnv / SubprocVecEnv"
    import_name = "stable_baselines3"
    distributions = ("stable-baselines3", "torch")

    def capabilities(self) -> Capabilities:
        return Capabilities(
            algorithms=frozenset(SETTINGS),
            action_spaces=frozenset({"discrete", "continuous"}),
            vectorized_envs=True,
            rollout_workers=True,
            modes=frozenset({"sync"}),
            algorithm_action_spaces={"DQN": frozenset({"discrete"}), "SAC": frozenset({"continuous"}),
                                     "TD3": frozenset({"continuous"}), "DDPG": frozenset({"continuous"})},
            simulations=frozenset({"gymnasium", "envpool"}),
        )

    # -- translation -------------------------------------------------------------------------------

    def native_config(self, workload: WorkloadLike) -> tuple[dict[str, Any], list[FidelityEntry]]:
        kwargs, entries = map_settings(workload, SETTINGS[workload.algorithm])
        entries = apply_native_settings(workload, kwargs, entries)
        net = workload.network
        hidden = list(net.hidden_sizes)
        if workload.algorithm in ("PPO", "A2C"):
            net_arch: Any = {"pi": hidden, "vf": hidden}
        elif workload.algorithm in ("SAC", *_DETERMINISTIC):
            net_arch = {"pi": hidden, "qf": hidden}
        else:
            net_arch = hidden
        kwargs["policy_kwargs"] = {"net_arch": net_arch, "activation_fn": f"torch.nn.{ACTIVATIONS[net.activation]}"}
        entries.append(entry("network.hidden_sizes", hidden, Fidelity.EXACT, "policy_kwargs.net_arch", net_arch))
        entries.append(entry("network.activation", net.activation, Fidelity.EXACT, "policy_kwargs.activation_fn",
                             kwargs["policy_kwargs"]["activation_fn"]))
        entries.extend(self._parallelism_fidelity(workload))
        return kwargs, entries

    def recommended_settings(self, env: str, algorithm: str) -> Recommendation | None:
        """The RL Baselines3 Zoo's tuned entry, where the zoo is installed (:mod:`rlcompare_sb3.zoo`)."""
        from rlcompare_sb3.zoo import recommendation

        return recommendation(env, algorithm)

    def _parallelism_fidelity(self, workload: WorkloadLike) -> list[FidelityEntry]:
        par = workload.parallelism
        if getattr(par, "simulation", "gymnasium") == "envpool":
            return envpool_fidelity(workload)
        return vector_env_fidelity(workload, "DummyVecEnv", "SubprocVecEnv", "SubprocVecEnv(n_envs)")

    def fidelity(self, workload: WorkloadLike) -> list[FidelityEntry]:
        return self.native_config(workload)[1]

    # -- training ----------------------------------------------------------------------------------

    def build_model(self, workload: WorkloadLike, env: Any, seed: int) -> tuple[Any, dict[str, Any], dict[str, Any]]:
        """The SB3 algorithm for ``workload`` on the vector env ``env``: (model, kwargs, policy_kwargs)."""
        import stable_baselines3
        import torch
        from stable_baselines3.common.logger import Logger

        kwargs, _ = self.native_config(workload)
        policy_kwargs = dict(kwargs.pop("policy_kwargs"))
        policy_kwargs["activation_fn"] = getattr(torch.nn, ACTIVATIONS[workload.network.activation])
        if workload.algorithm == "A2C" and not kwargs["use_rms_prop"]:
            policy_kwargs["optimizer_class"] = torch.optim.Adam
        if "action_noise" in kwargs:  # TD3, DDPG: the sigma the fidelity report states, as SB3's noise object
            import numpy as np
            from stable_baselines3.common.noise import NormalActionNoise, VectorizedActionNoise

            actions = int(np.prod(env.action_space.shape))
            noise: Any = NormalActionNoise(np.zeros(actions), np.full(actions, float(kwargs["action_noise"])))
            if env.num_envs > 1:  # one draw per env (a plain NormalActionNoise gives every env the same draw)
                noise = VectorizedActionNoise(noise, env.num_envs)
            kwargs["action_noise"] = noise
        for key in SCHEDULED:  # the native arm's linear schedules, as the zoo builds them
            if isinstance(kwargs.get(key), dict) and "linear_from" in kwargs[key]:
                kwargs[key] = LinearSchedule(float(kwargs[key]["linear_from"]))
        algorithm_class = getattr(stable_baselines3, workload.algorithm)
        model = algorithm_class("MlpPolicy", env, seed=seed, device="cpu", verbose=0, policy_kwargs=policy_kwargs,
                                **kwargs)
        # a logger with no outputs: SB3's default makes an empty SB3-<time> folder in TMPDIR per run
        model.set_logger(Logger(folder=None, output_formats=[]))
        return model, kwargs, policy_kwargs

    def train(self, workload: WorkloadLike, context: TrainingContext) -> TrainingResult:
        from stable_baselines3.common.callbacks import BaseCallback
        from stable_baselines3.common.vec_env import DummyVecEnv, SubprocVecEnv

        if context.simulation == "envpool":  # one EnvPool, counted by the harness, in SB3's autoreset mode
            from rlcompare_sb3.envpool_vec_env import GymnasiumVectorVecEnv

            vec_env_class: Any = GymnasiumVectorVecEnv
            env = GymnasiumVectorVecEnv(context.vector_env("SameStep"))
        else:
            vec_env_class = DummyVecEnv if workload.parallelism.workers == 1 else SubprocVecEnv
            env = vec_env_class(context.env_factories())
        model, kwargs, policy_kwargs = self.build_model(workload, env, context.seed)
        deterministic = context.deterministic

        def policy(observations: Any) -> Any:
            return model.predict(observations, deterministic=deterministic)[0]

        exploring = workload.algorithm == "DQN"

        class HarnessCallback(BaseCallback):
            def _on_step(self) -> bool:
                if exploring and model.exploration_rate != traced.get("epsilon"):
                    traced["epsilon"] = model.exploration_rate
                    context.trace("exploration", model.exploration_rate)
                context.checkpoint(policy, self.num_timesteps)
                return True

        traced: dict[str, float] = {}
        trace_schedule(model, workload.algorithm, context)
        context.start_training()
        try:
            with context.until_solved():  # a stop_when_solved workload ends at its solving evaluation
                model.learn(total_timesteps=workload.env_steps, callback=HarnessCallback())
        finally:
            context.stop_training()
            env.close()
        native = {"class": f"stable_baselines3.{workload.algorithm}", "vec_env": vec_env_class.__name__,
                  "n_envs": workload.parallelism.total_envs, "simulation": context.simulation, **{k: _plain(v) for k, v in kwargs.items()},
                  "policy_kwargs": {key: str(value) for key, value in policy_kwargs.items()}}
        return TrainingResult(policy=policy, framework_env_steps=int(model.num_timesteps), native_config=native)

    # -- parity ------------------------------------------------------------------------------------

    def parity_update(self, probe: ParityProbe) -> ParityOutcome:
        """SB3's own buffers and ``train()`` on the probe (one module per family, :mod:`rlcompare_sb3.parity`)."""
        import importlib

        module, _, function = PARITY_UPDATES.get(probe.family, ":").partition(":")
        try:
            update = getattr(importlib.import_module(module), function) if module else None
        except ModuleNotFoundError:
            update = None
        if update is None:
            return ParityOutcome.unverifiable(f"no {probe.family} probe is implemented for SB3")
        return update(self, probe)


#: What EnvPool changes in the training environments (rlcompare.harness.envpool_envs says how it was checked).
ENVPOOL_NOTE = ("one EnvPool (envpool.make, sync mode) of every environment, counted by the harness; SB3's "
                "same-step autoreset kept: ended environments are reset by EnvPool.reset(env_id) inside the step "
                "and their last observation handed over as terminal_observation; dynamics, rewards and time limits "
                "checked equal to Gymnasium's, but EnvPool draws its own random numbers (other episodes for the "
                "same seed) and an episode failing on its last allowed step is truncated only")


def envpool_fidelity(workload: WorkloadLike) -> list[FidelityEntry]:
    """The parallelism entries of a workload simulated by EnvPool: one pool in the training process
    (``workers``: EnvPool's threads, not processes)."""
    par = workload.parallelism
    n_envs = par.total_envs
    entries = [entry("parallelism.simulation", "envpool", Fidelity.EXACT, "envpool.make", "envpool", ENVPOOL_NOTE)]
    if par.workers == 1:
        return [
            entry("parallelism.envs_per_worker", par.envs_per_worker, Fidelity.EXACT, "envpool.make(num_envs)",
                  n_envs, "one EnvPool in the training process"),
            entry("parallelism.workers", 1, Fidelity.EXACT, "envpool.make(num_threads)", 1,
                  "one EnvPool thread; the policy acts in the training process"),
            *entries,
        ]
    return [
        entry("parallelism.envs_per_worker", par.envs_per_worker, Fidelity.APPROXIMATE, "envpool.make(num_envs)",
              n_envs, f"one EnvPool of all {n_envs} environments, shared by its threads"),
        entry("parallelism.workers", par.workers, Fidelity.APPROXIMATE, "envpool.make(num_threads)", par.workers,
              f"{par.workers} EnvPool threads in the training process, not worker processes"),
        *entries,
    ]


def _plain(value: Any) -> Any:
    """A native-config value as plain data (SB3's noise objects as their repr)."""
    return value if value is None or isinstance(value, (bool, int, float, str, list, dict)) else repr(value)


def trace_schedule(model: Any, algorithm: str, context: TrainingContext) -> None:
    """Trace the schedule from inside SB3: each step of the main optimizer (the policy's; SAC, TD3,
    DDPG: the critic's) is a gradient step, each ``train()`` call an update, each ``polyak_update`` of
    the target network (DQN, SAC; TD3 and DDPG: of the target critic, which moves with the target
    actor) a target sync."""
    import importlib

    optimizer = model.critic.optimizer if algorithm in ("SAC", *_DETERMINISTIC) else model.policy.optimizer
    step, train = optimizer.step, model.train

    def traced_step(*args: Any, **kwargs: Any) -> Any:
        context.trace("gradient_step")
        return step(*args, **kwargs)

    def traced_train(*args: Any, **kwargs: Any) -> Any:
        context.trace("update")
        return train(*args, **kwargs)

    optimizer.step, model.train = traced_step, traced_train
    if algorithm in ("DQN", "SAC", *_DETERMINISTIC):
        owner = "td3" if algorithm in _DETERMINISTIC else algorithm.lower()  # DDPG trains with TD3's train()
        module = importlib.import_module(f"stable_baselines3.{owner}.{owner}")
        polyak = module.polyak_update
        # TD3 and DDPG move the target critic and the target actor by one call each: count the critic's
        critic = next(iter(model.critic.parameters())) if algorithm in _DETERMINISTIC else None

        def traced_polyak(params: Any, target_params: Any, tau: float) -> Any:
            params = list(params)
            # SB3 calls it again for batch-norm statistics, which an MLP has none of
            if params and (critic is None or params[0] is critic):
                context.trace("target_sync")
            return polyak(params, target_params, tau)

        module.polyak_update = traced_polyak  # this process runs this one model


#: Settings the native arm may schedule linearly (rl-zoo3's ``lin_<x>``).
SCHEDULED = ("learning_rate", "clip_range")


@dataclass(frozen=True)
class LinearSchedule:
    """rl_zoo3.utils.linear_schedule: ``progress_remaining x initial`` (1 at the start, 0 at the end)."""

    initial: float

    def __call__(self, progress_remaining: float) -> float:
        return progress_remaining * self.initial


def apply_native_settings(workload: WorkloadLike, kwargs: dict[str, Any],
                          entries: list[FidelityEntry]) -> list[FidelityEntry]:
    """The native arm's settings (``workload.native``, from :meth:`recommended_settings`) into SB3's
    keyword arguments, each with a fidelity entry (:func:`rlcompare.harness.fidelity.apply_native_settings`):
    ``<name>_schedule = "linear"`` for a scheduled setting the family has (:data:`SCHEDULED`) becomes
    rl_zoo3's linear schedule from the canonical value, which turns that setting approximate
    (canonically it is constant)."""

    def schedule(key: str, value: Any) -> NativeSetting | None:
        name = key.removesuffix("_schedule")
        if key.endswith("_schedule") and value == "linear" and name in SCHEDULED and name in kwargs:
            return NativeSetting((workload.algorithm,), name, (name,),
                                 "rl_zoo3's lin_ schedule: progress_remaining x the initial value")
        return None

    def put(setting: NativeSetting, _key: str, _value: Any) -> str:
        start = kwargs[setting.target]
        kwargs[setting.target] = {"linear_from": start}
        return f"linear_schedule({start})"

    return apply_native(workload, entries, schedule, put, "SB3")


@hookimpl
def rlcompare_register_adapters(register: Register) -> None:
    register.add_adapter(StableBaselines3Adapter)
