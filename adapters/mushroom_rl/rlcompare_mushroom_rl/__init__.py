"""MushroomRL adapter: PPO, DQN (discrete actions), SAC, TD3 and DDPG (continuous actions) with
MushroomRL 1.10's own agents, approximators, replay memory and ``Core``.

The loop is MushroomRL's: ``Core(agent, mdp).learn(n_steps=budget, n_steps_per_fit=...)`` over
a MushroomRL ``Environment`` that wraps the harness's counted Gymnasium environment
(:class:`rlcompare_mushroom_rl.build.HarnessEnvironment`), so every step the agent takes is one the
harness counts. ``Core`` calls its ``callbacks_fit`` after every ``agent.fit``; there the adapter
traces the update and calls ``context.checkpoint`` with MushroomRL's own step count
(``Core._total_steps_counter``), so evaluations fall on the grid without restarting ``learn`` (each
``learn`` call resets the environment, ``mushroom_rl/core/core.py:_run_impl``).

Parallelism: MushroomRL 1.x's ``Core`` steps one environment (a vectorized core is on its 2.0
development branch, 2.0.0-rc1, unreleased: the index's latest release is 1.10.2). A workload of ``N`` envs is run on one environment, the
harness's slot 0, with the same number of env steps per update (an on-policy rollout of ``N x T``
consecutive steps of that environment); the parallelism entry says so. Separate rollout workers and
asynchronous sampling are refused.

Episode ends: MushroomRL marks a transition ``absorbing`` (the environment's ``terminated``) and
``last`` (the episode ends there: absorbing, or ``Core``'s step count reached the ``horizon``).
The wrapper returns the real final observation of every episode (the harness's environment is never
auto-reset) and gives ``Core`` the environment's ``max_episode_steps`` as its horizon; the adapter's
``Core`` also ends an episode the environment truncates on its own (:class:`build.HarnessCore`).
Truncated transitions therefore bootstrap from the final observation's value, as canonical.

Algorithms and what differs from the canonical update (read from ``mushroom_rl/algorithms``,
verified by the parity probes, :mod:`rlcompare_mushroom_rl.parity`):

- PPO (``actor_critic/deep_actor_critic/ppo.py``): GAE (``utils/value_functions.py:compute_gae``),
  advantages normalized once over the whole rollout with numpy's biased std; the critic is a
  separate ``Regressor`` fitted first (``_V.fit``: its own Adam, ``n_epochs`` passes of
  ``batch_size`` minibatches on ``value_coef x`` the squared error), then the policy
  (``_update_policy``); no gradient clipping anywhere.
- DQN (``value/dqn/abstract_dqn.py``, ``dqn.py``, ``double_dqn.py``): one gradient step per
  ``fit``; the adapter calls ``fit`` with an empty dataset ``gradient_steps - 1`` more times (each
  draws a fresh minibatch); the target copy every ``target_update_frequency`` fits, after that
  fit's gradient step; no gradient clipping.
- DDPG/TD3 (``ddpg.py``, ``td3.py``): the critic(s) first, then the actor (every ``policy_delay``-th
  fit, counted from 0), then both targets by Polyak at *every* fit.
- SAC (``sac.py``): the actor first (with the critics before their step), then the temperature, then
  the critics (their target with the temperature after its step), then the targets; the actor is two
  networks (mean and log-std), not a trunk with two heads.

A2C is not offered: MushroomRL's ``A2C.fit`` computes its returns with
``compute_advantage_montecarlo``, which resets them only at absorbing states and ignores ``last``,
so the return of an episode cut by its time limit runs on into the next episode's rewards (and, in a
rollout of several envs laid end to end, one env's into the next's); no variant of the reference
update names that, and ``gae_lambda`` and ``normalize_advantage`` are fixed (1, off).

Release: 1.10.1. MushroomRL 1.10.2 is the same code (only ``__version__`` and ``utils/viewer.py``
differ) with ``numpy==1.24.4`` and ``torch==2.5.1`` pinned, which the main environment's numpy 2
and torch 2.13 exclude; 1.10.1 installs there beside them (it adds scikit-learn, pygame and
opencv-python) and runs with numpy 2.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from rlcompare import hookimpl
from rlcompare.adapter import (
    Adapter,
    Capabilities,
    Fidelity,
    FidelityEntry,
    Judge,
    ParityOutcome,
    ParityProbe,
    Setting,
    TrainingResult,
    WorkloadLike,
    entry,
    map_settings,
)

if TYPE_CHECKING:
    from rlcompare.adapter import TrainingContext
    from rlcompare.plugins.register import Register

#: The MushroomRL release the adapter pins (``pyproject.toml``): 1.10.2 pins torch==2.5.1.
MUSHROOM_RL_VERSION = "1.10.1"
ON_POLICY = ("PPO",)
#: The families with a deterministic tanh actor on the action scaled to [-1, 1].
DETERMINISTIC = ("TD3", "DDPG")
ACTION_SPACES = {"PPO": frozenset({"discrete", "continuous"}), "DQN": frozenset({"discrete"}),
                 "SAC": frozenset({"continuous"}), "TD3": frozenset({"continuous"}),
                 "DDPG": frozenset({"continuous"})}
ACTIVATIONS = {"tanh": "Tanh", "relu": "ReLU"}
#: Adam's epsilon of the canonical PPO (SB3, CleanRL); the off-policy families keep torch's 1e-8.
PPO_ADAM_EPS = 1e-5
#: Where each family's parity probe is answered (``module:function``).
PARITY_UPDATES = {"PPO": "rlcompare_mushroom_rl.parity:ppo_update",
                  "DQN": "rlcompare_mushroom_rl.parity:dqn_update",
                  "TD3": "rlcompare_mushroom_rl.parity:td3_update",
                  "DDPG": "rlcompare_mushroom_rl.parity:td3_update"}
#: Why a family's probe cannot be answered with MushroomRL's own objects.
PARITY_UNVERIFIABLE = {
    "SAC": ("MushroomRL's SAC actor is two separate approximators (actor_mu_params and actor_sigma_params, "
            "mushroom_rl/algorithms/actor_critic/deep_actor_critic/sac.py), the probe's a shared trunk with a mean "
            "and a log-std head: its weights have no place in MushroomRL's policy"),
}

# -------------------------------------------------------------------------------------------------
# the mapping table
# -------------------------------------------------------------------------------------------------


def _n_envs(workload: WorkloadLike) -> int:
    return workload.parallelism.total_envs


def _rollout_env_steps(value: int, workload: WorkloadLike) -> int:
    return value * _n_envs(workload)


def _judge_rollout(value: int, workload: WorkloadLike) -> tuple[Fidelity, str]:
    n_envs = _n_envs(workload)
    if n_envs == 1:
        return Fidelity.EXACT, "Core.learn(n_steps_per_fit): env steps between two fits of the agent"
    return Fidelity.APPROXIMATE, (f"Core.learn(n_steps_per_fit={value * n_envs}): the rollout of {n_envs} envs x "
                                  f"{value} steps is collected as {value * n_envs} consecutive steps of one "
                                  "environment (MushroomRL 1.x's Core steps one)")


def _judge_ppo_advantages(value: bool, _: WorkloadLike) -> tuple[Fidelity, str]:
    if value:
        return Fidelity.APPROXIMATE, ("PPO.fit normalizes advantages once over the whole rollout, "
                                      "(A - mean) / (np.std(A) + 1e-8) with the biased std, not per minibatch")
    return Fidelity.UNSUPPORTED, "MushroomRL's PPO always normalizes advantages (PPO.fit)"


def _value_loss_scale(value: float, _: WorkloadLike) -> dict[str, Any]:
    return {"loss": "F.mse_loss", "scale": float(value)}


def _fits_between_target_syncs(_value: int, workload: WorkloadLike) -> int:
    hp = workload.hyperparameters
    return max(1, int(hp.gradient_steps) * math.ceil(int(hp.target_update_interval) / int(hp.train_every)))  # type: ignore[union-attr]


def _judge_target_sync(value: int, workload: WorkloadLike) -> tuple[Fidelity, str]:
    hp = workload.hyperparameters
    fits = _fits_between_target_syncs(value, workload)
    note = (f"a hard copy every {fits} fits (each one gradient step; gradient_steps x ceil(interval / train_every)): "
            "AbstractDQN counts its fits from the first, learning or not, and copies after that fit's gradient step")
    if value <= hp.train_every:  # type: ignore[union-attr]
        return Fidelity.EXACT, (f"{note}; with the interval within one update period the target of every update is "
                                "the network after the previous update, as canonical")
    return Fidelity.APPROXIMATE, (f"{note}: one update later than the canonical copy between env steps, before the "
                                  "gradient steps of the update at that env step"
                                  + ("" if value % hp.train_every == 0 else  # type: ignore[union-attr]
                                     "; the interval is not a whole number of updates"))


def _judge_learning_starts(value: int, workload: WorkloadLike) -> tuple[Fidelity, str]:
    hp = workload.hyperparameters
    if hp.buffer_size <= value:  # type: ignore[union-attr]
        return Fidelity.UNSUPPORTED, ("ReplayMemory.initialized needs more than initial_replay_size samples, more than "
                                      "the buffer holds: MushroomRL would never fit")
    note = ("ReplayMemory(initial_replay_size): fits take gradient steps once the memory holds more samples, as "
            "canonical (after learning_starts env steps)")
    if workload.algorithm == "DQN":
        return Fidelity.EXACT, (f"{note}; epsilon 1 until then (uniform random actions, EpsGreedy), through the "
                                "adapter's epsilon Parameter")
    if value == 0:
        return Fidelity.EXACT, note
    return Fidelity.APPROXIMATE, (f"{note}; but MushroomRL has no random warm-up: the first {value} env steps act with "
                                  "the (untrained) policy and its exploration, where canonically they are uniform "
                                  "random")


def _never(note: str) -> Judge:
    """A canonical setting MushroomRL has no counterpart for, whatever its value."""

    def judge(_value: Any, _workload: WorkloadLike) -> tuple[Fidelity, str]:
        return Fidelity.UNSUPPORTED, note

    return judge


def _every_fit(what: str) -> Judge:
    def judge(value: int, _: WorkloadLike) -> tuple[Fidelity, str]:
        return Fidelity.EXACT, what

    return judge


def _judge_sac_entropy(value: float | str, _: WorkloadLike) -> tuple[Fidelity, str]:
    if value != "auto":
        return Fidelity.EXACT, ("log_alpha set to log(entropy_coef) and lr_alpha=0: the temperature never moves "
                                "(MushroomRL's SAC always has a temperature optimizer)")
    return Fidelity.APPROXIMATE, ("log_alpha learned from 0 (alpha 1) with use_log_alpha_loss=True and target entropy "
                                  "-dim(A), lr_alpha = learning_rate; but SAC.fit steps the temperature before the "
                                  "critics, whose target then uses the new alpha (the actor the old one), where "
                                  "canonically both use alpha from before its step")


_EXTRA_FITS = ("one gradient step per agent.fit; the adapter calls fit with an empty dataset gradient_steps - 1 more "
               "times after each of Core's fits, each drawing a fresh minibatch")

_OFF_POLICY_COMMON = [
    Setting("gamma", "MDPInfo.gamma"),
    Setting("buffer_size", "max_replay_size", note="ReplayMemory, a ring of transitions"),
    Setting("learning_starts", "initial_replay_size", judge=_judge_learning_starts),
    Setting("minibatch_size", "batch_size", note="ReplayMemory.get: uniform with replacement, as SB3"),
    Setting("train_every", "n_steps_per_fit", note="Core.learn(n_steps_per_fit): env steps between fits"),
    Setting("gradient_steps", "extra_fits", convert=lambda value, _: value - 1, judge=_every_fit(_EXTRA_FITS)),
]

SETTINGS: dict[str, list[Setting]] = {
    "PPO": [
        Setting("learning_rate", "optimizer.lr",
                note=f"one Adam for the policy (actor_optimizer) and one for the critic (critic_params.optimizer), "
                     f"each with this lr and eps {PPO_ADAM_EPS:g}"),
        Setting("gamma", "MDPInfo.gamma"),
        Setting("gae_lambda", "lam", note="compute_gae over the critic's values of s and s' at fit time (the "
                                          "collecting critic: it changes only in fit)"),
        Setting("clip_range", "eps_ppo", note="the ratio clamped to [1 - eps, 1 + eps]"),
        Setting("rollout_steps", "n_steps_per_fit", convert=_rollout_env_steps, judge=_judge_rollout),
        Setting("minibatch_size", "batch_size",
                note="policy minibatches (minibatch_generator: shuffled, the last one smaller) and the critic's "
                     "(critic_params.batch_size), drawn separately"),
        Setting("epochs", "n_epochs_policy",
                note="the policy's passes; the critic makes as many (critic_fit_params.n_epochs), before the policy's, "
                     "on the advantages computed before either"),
        Setting("entropy_coef", "ent_coeff"),
        Setting("value_coef", "critic_params.loss", convert=_value_loss_scale,
                note="the critic's loss is value_coef x mean((R - V)^2), minimized by its own Adam: the gradient the "
                     "canonical joint loss gives the value network"),
        Setting("max_grad_norm", None,
                judge=_never("MushroomRL's PPO steps both optimizers without gradient clipping (PPO._update_policy, "
                             "TorchApproximator._fit_batch)")),
        Setting("normalize_advantage", None, judge=_judge_ppo_advantages),
    ],
    "DQN": [
        Setting("learning_rate", "optimizer.lr", note="Adam, torch's defaults otherwise (eps 1e-8, as SB3's DQN)"),
        *_OFF_POLICY_COMMON,
        Setting("target_update_interval", "target_update_frequency", convert=_fits_between_target_syncs,
                judge=_judge_target_sync),
        Setting("exploration_initial_eps", "EpsGreedy.epsilon",
                note="the adapter's mushroom_rl Parameter: 1 until learning_starts, then SB3's linear schedule in env "
                     "steps from initial to final over fraction x budget, then flat"),
        Setting("exploration_final_eps", "EpsGreedy.epsilon"),
        Setting("exploration_fraction", "EpsGreedy.epsilon"),
        Setting("max_grad_norm", None,
                judge=_never("TorchApproximator._fit_batch steps Adam without gradient clipping")),
        Setting("double_q", "class", convert=lambda value, _: "DoubleDQN" if value else "DQN",
                note="mushroom_rl's DoubleDQN (online argmax, target evaluation) or DQN"),
    ],
    "SAC": [
        Setting("learning_rate", "optimizer.lr", note="Adam for the actor, each critic and the temperature (lr_alpha)"),
        *_OFF_POLICY_COMMON,
        Setting("tau", "tau", note="Polyak step of both target critics after every fit"),
        Setting("entropy_coef", "log_alpha",
                convert=lambda value, _: "learned" if value == "auto" else math.log(float(value)),
                judge=_judge_sac_entropy),
    ],
}

_DETERMINISTIC_COMMON = [
    Setting("learning_rate", "optimizer.lr", note="Adam for the actor and each critic (torch's eps 1e-8)"),
    *_OFF_POLICY_COMMON,
    Setting("tau", "tau", note="Polyak step of the target actor and target critics after every fit"),
    Setting("exploration_noise", "ClippedGaussianPolicy.sigma",
            note="N(0, sigma^2) added to the actor's action in the [-1, 1] scaled action space (gymnasium RescaleAction "
                 "around the env), then clipped there"),
]


def _judge_policy_delay(value: int, _: WorkloadLike) -> tuple[Fidelity, str]:
    note = ("TD3.fit steps the actor when its fit count (from 0) is a multiple of policy_delay: after critic steps "
            "1, d + 1, ... where the canonical schedule has d, 2d, ...")
    if value == 1:
        return Fidelity.EXACT, note
    return Fidelity.APPROXIMATE, (f"{note}; and the targets move by a Polyak step after every critic step, not only "
                                  "with the actor's")


SETTINGS["TD3"] = [
    *_DETERMINISTIC_COMMON,
    Setting("policy_delay", "policy_delay", judge=_judge_policy_delay),
    Setting("target_policy_noise", "noise_std",
            note="np.random.normal on the target actor's action in the scaled units, clipped, then the action clipped "
                 "to [-1, 1]"),
    Setting("target_noise_clip", "noise_clip"),
]
SETTINGS["DDPG"] = list(_DETERMINISTIC_COMMON)

#: How MushroomRL's updates depart from the canonical ones, as read in its source and measured by the
#: parity probes; each is the setting of a variant of the family's reference update.
DEPARTURES: dict[str, tuple[FidelityEntry, ...]] = {
    "PPO": (entry("defaults.advantage_std", "unbiased", Fidelity.APPROXIMATE, "np.std", "biased",
                  "PPO.fit divides by numpy's default (biased, ddof 0) standard deviation plus 1e-8"),),
    "SAC": (entry("defaults.actor_critic_order", "critics stepped first", Fidelity.APPROXIMATE, "SAC.fit",
                  "critics before their step",
                  "SAC.fit steps the actor (and the temperature) before the critics, on the critics of before their "
                  "step"),),
}

# -------------------------------------------------------------------------------------------------
# the adapter
# -------------------------------------------------------------------------------------------------


class MushroomRLAdapter(Adapter):
    id = "mushroom-rl"
    framework = "mushroom-rl"
    summary = "MushroomRL 1.10: PPO, DQN (discrete), SAC, TD3, DDPG (continuous); its Core on one environment"
    import_name = "mushroom_rl"
    distributions = ("mushroom-rl", "torch")
    install_requires = (f"mushroom-rl=={MUSHROOM_RL_VERSION}", "torch==2.13.0")

    def capabilities(self) -> Capabilities:
        return Capabilities(
            algorithms=frozenset(SETTINGS),
            action_spaces=frozenset({"discrete", "continuous"}),
            vectorized_envs=True,  # N envs run as one: see the module's docstring and the parallelism entry
            rollout_workers=False,
            modes=frozenset({"sync"}),
            algorithm_action_spaces=dict(ACTION_SPACES),
        )

    # -- translation -------------------------------------------------------------------------------

    def native_config(self, workload: WorkloadLike) -> tuple[dict[str, Any], list[FidelityEntry]]:
        """MushroomRL's agent arguments (as the adapter builds them) and the fidelity entries."""
        kwargs, entries = map_settings(workload, SETTINGS[workload.algorithm])
        algorithm = workload.algorithm
        net = workload.network
        hidden = list(net.hidden_sizes)
        activation = f"torch.nn.{ACTIVATIONS[net.activation]}"
        layout = _network_layout(algorithm, hidden)
        note = ("separate MLPs (no shared layers), the adapter's torch modules handed to MushroomRL's approximators; "
                "PyTorch's default weight initialisation")
        if algorithm == "SAC":
            entries.append(entry("network.hidden_sizes", hidden, Fidelity.APPROXIMATE, "network", layout,
                                 f"{note}; MushroomRL's SAC policy is two networks of these sizes (mean and log-std), "
                                 "where the canonical actor is one trunk with two heads"))
        else:
            entries.append(entry("network.hidden_sizes", hidden, Fidelity.EXACT, "network", layout, note))
        entries.append(entry("network.activation", net.activation, Fidelity.EXACT, "network.activation", activation))
        entries.extend(_parallelism(workload))
        config = {"algorithm": _agent_class(algorithm, kwargs), "settings": kwargs,
                  "network": {"hidden_sizes": hidden, "activation": activation, "layout": layout},
                  "core": {"class": "Core", "n_steps": workload.env_steps,
                           "n_steps_per_fit": _steps_per_fit(workload)},
                  "environment": {"slot": 0, "wrapper": "HarnessEnvironment",
                                  "action_rescale": [-1.0, 1.0] if algorithm in (*DETERMINISTIC, "SAC") else None}}
        return config, entries

    def fidelity(self, workload: WorkloadLike) -> list[FidelityEntry]:
        return [*self.native_config(workload)[1], *DEPARTURES.get(workload.algorithm, ())]

    # -- training ----------------------------------------------------------------------------------

    def train(self, workload: WorkloadLike, context: TrainingContext) -> TrainingResult:
        from rlcompare_mushroom_rl.build import build, run_training

        config, _ = self.native_config(workload)
        setup = build(workload, config, context.env_factory(0), context.seed)
        return run_training(setup, context)

    # -- parity ------------------------------------------------------------------------------------

    def parity_update(self, probe: ParityProbe) -> ParityOutcome:
        """MushroomRL's own ``fit`` on the probe (:mod:`rlcompare_mushroom_rl.parity`)."""
        import importlib

        if probe.family in PARITY_UNVERIFIABLE:
            return ParityOutcome.unverifiable(PARITY_UNVERIFIABLE[probe.family])
        module, _, function = PARITY_UPDATES.get(probe.family, ":").partition(":")
        if not module:
            return ParityOutcome.unverifiable(f"no {probe.family} probe is implemented for MushroomRL")
        return getattr(importlib.import_module(module), function)(self, probe)


@hookimpl
def rlcompare_register_adapters(register: Register) -> None:
    register.add_adapter(MushroomRLAdapter)


def _steps_per_fit(workload: WorkloadLike) -> int:
    hp = workload.hyperparameters
    if workload.algorithm in ON_POLICY:
        return int(hp.rollout_steps) * _n_envs(workload)  # type: ignore[union-attr]
    return int(hp.train_every)  # type: ignore[union-attr]


def _agent_class(algorithm: str, kwargs: dict[str, Any]) -> str:
    if algorithm == "DQN":
        return f"mushroom_rl.algorithms.value.{kwargs['class']}"
    return f"mushroom_rl.algorithms.actor_critic.{algorithm}"


def _network_layout(algorithm: str, hidden: list[int]) -> dict[str, list[int]]:
    if algorithm in ON_POLICY:
        return {"policy": hidden, "critic": hidden}
    if algorithm == "DQN":
        return {"q": hidden, "q_target": hidden}
    if algorithm == "SAC":
        return {"actor_mu": hidden, "actor_sigma": hidden, "critic_1": hidden, "critic_2": hidden}
    if algorithm == "TD3":
        return {"actor": hidden, "critic_1": hidden, "critic_2": hidden}
    return {"actor": hidden, "critic": hidden}


def _parallelism(workload: WorkloadLike) -> list[FidelityEntry]:
    par = workload.parallelism
    n_envs = par.total_envs
    if n_envs == 1:
        envs = entry("parallelism.envs_per_worker", 1, Fidelity.EXACT, "Core(agent, mdp)", 1,
                     "one MushroomRL Environment around the harness's environment")
    else:
        envs = entry("parallelism.envs_per_worker", par.envs_per_worker, Fidelity.APPROXIMATE, "Core(agent, mdp)", 1,
                     f"MushroomRL 1.x's Core steps one environment: the {n_envs} envs' share of every update is "
                     "collected from one (the harness's slot 0), the same env steps per update")
    return [envs,
            entry("parallelism.workers", par.workers, Fidelity.EXACT, "Core", 1, "in the training process"),
            entry("parallelism.mode", par.mode, Fidelity.EXACT, "Core", "sync",
                  "acting and fitting alternate in Core's loop")]
