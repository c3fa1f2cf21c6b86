"""d3rlpy 2.8 adapter: online DQN (discrete actions), SAC, TD3 and DDPG (continuous actions) through
d3rlpy's own ``QLearningAlgoBase.fit_online`` loop, replay buffer and explorers.

d3rlpy is an offline-RL library whose algorithms also train online: ``fit_online(env, buffer,
explorer, n_steps, update_interval, n_updates, update_start_step, random_steps, ...)``
(``d3rlpy/algos/qlearning/base.py``) steps *one* Gymnasium environment, appends each step to the
replay buffer and, at every ``update_interval``-th step past ``update_start_step``, makes
``n_updates`` gradient steps on minibatches drawn uniformly with replacement. It has no vectorized
or parallel sampling, so the adapter offers one environment in one worker (``vectorized_envs`` off:
other workloads are refused before anything runs).

Every environment comes from the harness: ``fit_online`` steps ``context.env_factory(0)``'s counted
environment (TD3, DDPG and SAC inside Gymnasium's ``RescaleAction`` to ``[-1, 1]``, the policy's
own action space, as SB3 scales actions), so the harness counts every step. ``fit_online``'s
``callback(algo, epoch, total_step)``, called after every env step and its updates, hands the
harness the greedy policy (``algo.predict``) with d3rlpy's own step count; the budget is
``n_steps``. d3rlpy's own evaluation (``eval_env=None``) and logging (``NoopAdapterFactory``) are off,
and so are its observation, action and reward scalers.

Schedule: the adapter wraps ``algo.update`` (one gradient step: ``gradient_step``; a step with any:
``update``), the impl's target update (``target_sync``: DQN's ``update_target``, the actor-critics'
``update_critic_target``) and the epsilon schedule (``exploration``).

Parity probes (:mod:`rlcompare_d3rlpy.parity`) run d3rlpy's own ``algo.update`` on the probe's
transitions, loaded into a d3rlpy ``ReplayBuffer`` and picked in order by its ``BasicTransitionPicker``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rlcompare import hookimpl
from rlcompare.adapter import (
    Adapter,
    Capabilities,
    Fidelity,
    FidelityEntry,
    ParityOutcome,
    ParityProbe,
    Setting,
    TrainingResult,
    WorkloadLike,
    entry,
    gradient_steps_between_target_syncs,
    map_settings,
    train_with_setup,
)

if TYPE_CHECKING:
    from rlcompare.adapter import TrainingContext
    from rlcompare.plugins.register import Register

#: The d3rlpy release the adapter is written against (its behaviour is read from this release's source).
D3RLPY_VERSION = "2.8.1"
ACTION_SPACES = {"DQN": frozenset({"discrete"}), "SAC": frozenset({"continuous"}),
                 "TD3": frozenset({"continuous"}), "DDPG": frozenset({"continuous"})}
#: The families whose actor acts on the action scaled to [-1, 1] (RescaleAction around the env).
CONTINUOUS = ("SAC", "TD3", "DDPG")
#: d3rlpy's config class of each family (``d3rlpy.algos``); DQN with double-Q targets: DoubleDQNConfig.
CONFIG_CLASSES = {"DQN": "DQNConfig", "SAC": "SACConfig", "TD3": "TD3Config", "DDPG": "DDPGConfig"}
#: Twin critics for SAC and TD3, one for DDPG and DQN (``n_critics``).
N_CRITICS = {"DQN": 1, "SAC": 2, "TD3": 2, "DDPG": 1}

# -------------------------------------------------------------------------------------------------
# the mapping table
# -------------------------------------------------------------------------------------------------

#: What enters d3rlpy's replay buffer (d3rlpy/dataset/writers.py, transition_pickers.py): it stores
#: observations, not next observations, so a transition is sampled only once the next observation has
#: arrived, and the last step of an episode cut by its time limit never becomes a transition.
BUFFER_NOTE = ("ReplayBuffer(FIFOBuffer(limit)) of transitions, drawn uniformly with replacement (np.random.randint "
               "per transition, as SB3); d3rlpy stores observations, not next observations: a transition becomes "
               "sampleable when the next step's observation is written (the update after env step t draws from "
               "steps before t unless t ended its episode), and the last step of an episode cut by its time limit "
               "never becomes a transition (BasicTransitionPicker has no next observation for it), so it is neither "
               "bootstrapped nor learned from")


def _judge_buffer(_value: int, _workload: WorkloadLike) -> tuple[Fidelity, str]:
    return Fidelity.APPROXIMATE, BUFFER_NOTE


def _random_steps(value: int, _workload: WorkloadLike) -> int:
    # fit_online acts at random while total_step (1-based) < random_steps: learning_starts random actions
    return value + 1


def _judge_learning_starts(value: int, workload: WorkloadLike) -> tuple[Fidelity, str]:
    batch = workload.hyperparameters.minibatch_size  # type: ignore[union-attr]
    note = ("update_start_step: updates from the first update step after it, as SB3; random_steps = "
            "learning_starts + 1: uniform random actions (env.action_space.sample()) for the first learning_starts "
            "steps, as canonical")
    if value > batch:
        return Fidelity.EXACT, note
    return Fidelity.APPROXIMATE, (f"{note}; d3rlpy also waits until its buffer holds more than batch_size={batch} "
                                  "transitions before the first update")


def _judge_every(what: str) -> Any:
    def judge(_value: int, _workload: WorkloadLike) -> tuple[Fidelity, str]:
        return Fidelity.EXACT, what
    return judge


def _target_syncs(_value: int, workload: WorkloadLike) -> int:
    return gradient_steps_between_target_syncs(workload.hyperparameters)


def first_update_step(workload: WorkloadLike) -> int:
    """The env step of the first update: the first multiple of ``train_every`` past ``learning_starts``
    (``total_step > update_start_step and total_step % update_interval == 0``, as SB3's ``train_freq``)."""
    hp = workload.hyperparameters
    every = int(hp.train_every)  # type: ignore[union-attr]
    return (int(hp.learning_starts) // every + 1) * every  # type: ignore[union-attr]


def _judge_target_sync(value: int, workload: WorkloadLike) -> tuple[Fidelity, str]:
    hp = workload.hyperparameters
    every = int(hp.train_every)  # type: ignore[union-attr]
    steps = gradient_steps_between_target_syncs(hp)
    note = (f"target_update_interval={steps} gradient steps: gradient_steps x ceil(interval / train_every); DQNImpl "
            "copies after a gradient step whose counter is a multiple of it, and the adapter starts d3rlpy's "
            "counter at 1 (algo.set_grad_step(1): it counts the steps made, as SB3's _n_updates), so the copy "
            "falls after the last gradient step of an update, before the next: the canonical copy between env "
            "steps, never inside an update's run of gradient steps")
    whole = value <= every or value % every == 0
    in_phase = value <= every or first_update_step(workload) % value == 0
    if whole and in_phase:
        return Fidelity.EXACT, note
    return Fidelity.APPROXIMATE, note + ("" if whole else "; the interval is not a whole number of updates") + (
        "" if in_phase else "; out of phase with the first update")


def _epsilon_note(what: str) -> str:
    return (f"LinearDecayEpsilonGreedy.{what}: epsilon falls linearly over duration = exploration_fraction x budget "
            "env steps, then stays; d3rlpy evaluates it at the 1-based number of the step about to be taken, "
            "SB3 at the number of steps taken (one env step apart); the warm-up's actions are random (random_steps)")


def _duration(value: float, workload: WorkloadLike) -> int:
    return max(1, round(value * workload.env_steps))


def _adam_note(networks: str) -> str:
    return f"AdamFactory (torch's Adam, eps 1e-8) for {networks}; constant"


def _sac_learning_rates(value: float, workload: WorkloadLike) -> dict[str, float]:
    rates = {"actor_learning_rate": value, "critic_learning_rate": value}
    if workload.hyperparameters.entropy_coef == "auto":  # type: ignore[union-attr]
        rates["temp_learning_rate"] = value
    return rates


def _temperature(value: float | str, _workload: WorkloadLike) -> dict[str, float]:
    if value == "auto":
        return {"initial_temperature": 1.0}
    return {"initial_temperature": float(value), "temp_learning_rate": 0.0}


def _judge_temperature(value: float | str, _workload: WorkloadLike) -> tuple[Fidelity, str]:
    if value == "auto":
        return Fidelity.EXACT, ("learned log-temperature from initial_temperature=1.0 (SB3's 'auto'), target entropy "
                                "-dim(A) (SACImpl.update_temp: log_prob - action_size); how its loss and timing differ "
                                "is declared in the defaults.* entries")
    return Fidelity.EXACT, "fixed: initial_temperature=value, temp_learning_rate=0 (no temperature optimizer)"


def _judge_exploration_noise(_value: float, _workload: WorkloadLike) -> tuple[Fidelity, str]:
    return Fidelity.EXACT, ("NormalNoise(mean=0, std) added to algo.predict's action in the action scaled to [-1, 1] "
                            "(RescaleAction around the env), clipped to [-1, 1] and stored clipped, as SB3; the "
                            "warm-up's random actions (random_steps) carry none, as canonical")


_OFF_POLICY_COMMON = [
    Setting("gamma", "gamma"),
    Setting("buffer_size", "FIFOBuffer.limit", judge=_judge_buffer),
    Setting("learning_starts", "fit_online.update_start_step", judge=_judge_learning_starts),
    Setting("minibatch_size", "batch_size", note="uniform sampling with replacement (ReplayBuffer.sample_transition)"),
    Setting("train_every", "fit_online.update_interval",
            judge=_judge_every("updates at every env step that is a multiple of update_interval past "
                               "update_start_step, as SB3's train_freq in steps")),
    Setting("gradient_steps", "fit_online.n_updates",
            judge=_judge_every("n_updates gradient steps in a row per update, each on a fresh minibatch")),
]

SETTINGS: dict[str, list[Setting]] = {
    "DQN": [
        Setting("learning_rate", "learning_rate", note=_adam_note("the Q-network")),
        *_OFF_POLICY_COMMON,
        Setting("target_update_interval", "target_update_interval", convert=_target_syncs, judge=_judge_target_sync),
        Setting("exploration_initial_eps", "LinearDecayEpsilonGreedy.start_epsilon",
                note=_epsilon_note("start_epsilon")),
        Setting("exploration_final_eps", "LinearDecayEpsilonGreedy.end_epsilon", note=_epsilon_note("end_epsilon")),
        Setting("exploration_fraction", "LinearDecayEpsilonGreedy.duration", convert=_duration,
                note=_epsilon_note("duration")),
        Setting("max_grad_norm", "AdamFactory.clip_grad_norm",
                note="OptimizerWrapper clips the global norm over the Q-network's parameters before each step"),
        Setting("double_q", "config_class", convert=lambda value, _: "DoubleDQNConfig" if value else "DQNConfig",
                note="DoubleDQNConfig: the online network's argmax evaluated by the target network"),
    ],
    "SAC": [
        Setting("learning_rate", "*_learning_rate", convert=_sac_learning_rates,
                note=_adam_note("actor, critics and temperature") + ": actor_learning_rate, critic_learning_rate, "
                     "temp_learning_rate"),
        *_OFF_POLICY_COMMON,
        Setting("tau", "tau", note="Polyak step of both target critics after every gradient step"),
        Setting("entropy_coef", "initial_temperature", convert=_temperature, judge=_judge_temperature),
    ],
}
_DETERMINISTIC_COMMON = [
    Setting("learning_rate", "*_learning_rate",
            convert=lambda value, _: {"actor_learning_rate": value, "critic_learning_rate": value},
            note=_adam_note("actor and critics") + ": actor_learning_rate, critic_learning_rate"),
    *_OFF_POLICY_COMMON,
    Setting("exploration_noise", "NormalNoise.std", judge=_judge_exploration_noise),
]
SETTINGS["TD3"] = [
    *_DETERMINISTIC_COMMON,
    Setting("tau", "tau", note="one Polyak step of the target actor and both target critics with each actor step"),
    Setting("policy_delay", "update_actor_interval",
            note="TD3Impl steps the actor and moves the targets when the gradient-step counter is a multiple of it; "
                 "the adapter starts the counter at 1 (algo.set_grad_step(1)), so after critic steps d, 2d, ... "
                 "counted over the whole run, as TD3's authors and SB3"),
    Setting("target_policy_noise", "target_smoothing_sigma",
            note="N(0, sigma) on the target actor's tanh action in [-1, 1] (the canonical unit), clipped to "
                 "+-target_smoothing_clip, the smoothed action clamped to [-1, 1]"),
    Setting("target_noise_clip", "target_smoothing_clip"),
]
SETTINGS["DDPG"] = [
    *_DETERMINISTIC_COMMON,
    Setting("tau", "tau", note="one Polyak step of the target actor and critic after every gradient step"),
]

#: How d3rlpy's updates depart from the canonical ones, as its parity probes measured them
#: (``rlcompare parity --adapters d3rlpy``; d3rlpy/algos/qlearning/torch/sac_impl.py,
#: d3rlpy/models/torch/q_functions/ensemble_q_function.py, d3rlpy/models/torch/distributions.py).
DEPARTURES: dict[str, tuple[FidelityEntry, ...]] = {
    "SAC": (
        entry("defaults.critic_loss_scale", 0.5, Fidelity.APPROXIMATE, "compute_ensemble_q_function_error", 1.0,
              "the critics' loss is sum_i mean((Q_i - y)^2), without the factor 1/2"),
        entry("defaults.alpha_loss", "log_alpha", Fidelity.APPROXIMATE, "SACImpl.update_temp", "alpha",
              "the temperature loss is -mean(exp(log_temp) * (log pi - dim(A))): on alpha, not log_alpha"),
        entry("defaults.squash_correction_eps", 1e-6, Fidelity.APPROXIMATE,
              "SquashedGaussianDistribution._log_prob_from_raw_y", 0.0,
              "the tanh correction is exact: 2 (log 2 - u - softplus(-2u)), no 1e-6"),
        entry("defaults.actor_alpha_timing", "before its step", Fidelity.APPROXIMATE, "SACImpl.compute_actor_loss",
              "after its step", "the actor's loss uses the temperature after update_temp's step; the critics' "
              "target the one before"),
    ),
}


# -------------------------------------------------------------------------------------------------
# the adapter
# -------------------------------------------------------------------------------------------------


class D3rlpyAdapter(Adapter):
    id = "d3rlpy"
    framework = "d3rlpy"
    summary = "d3rlpy: online DQN (discrete), SAC, TD3, DDPG (continuous) with fit_online on one env"
    import_name = "d3rlpy"
    distributions = ("d3rlpy", "torch", "gymnasium", "numpy")
    install_requires = (f"d3rlpy=={D3RLPY_VERSION}", "torch==2.13.0", "gymnasium==1.0.0")
    #: d3rlpy 2.8.1 pins gymnasium==1.0.0 (the main environment has a newer one): its own environment,
    #: built with uv by :mod:`rlcompare.pyenvs`, torch pinned to the CPU build.
    environment_requires = (f"d3rlpy=={D3RLPY_VERSION}", "torch==2.13.0", "gymnasium==1.0.0")
    requires_isolation = True

    def capabilities(self) -> Capabilities:
        return Capabilities(
            algorithms=frozenset(SETTINGS),
            action_spaces=frozenset({"discrete", "continuous"}),
            vectorized_envs=False,
            rollout_workers=False,
            modes=frozenset({"sync"}),
            algorithm_action_spaces=dict(ACTION_SPACES),
        )

    # -- translation -------------------------------------------------------------------------------

    def native_config(self, workload: WorkloadLike) -> tuple[dict[str, Any], list[FidelityEntry]]:
        """d3rlpy's configuration of the run: ``config`` (the algorithm's config class and its fields),
        ``fit_online`` (its arguments), ``buffer``, ``explorer``, ``optimizer`` and ``encoder``; and the
        fidelity entries."""
        algorithm = workload.algorithm
        flat, entries = map_settings(workload, SETTINGS[algorithm])
        native: dict[str, Any] = {"config_class": CONFIG_CLASSES[algorithm], "config": {}, "fit_online": {},
                                  "buffer": {"class": "FIFOBuffer"}, "explorer": None, "optimizer": {"class": "AdamFactory"}}
        explorer: dict[str, Any] = {}
        for name, value in flat.items():
            group, _, field = name.rpartition(".")
            if name == "config_class":
                native["config_class"] = value
            elif isinstance(value, dict):
                native["config"].update(value)
            elif group == "fit_online":
                native["fit_online"][field] = value
            elif group == "FIFOBuffer":
                native["buffer"][field] = value
            elif group in ("LinearDecayEpsilonGreedy", "NormalNoise"):
                explorer.update({"class": group, field: value})
            elif group == "AdamFactory":
                native["optimizer"][field] = value
            else:
                native["config"][field] = value
        if explorer.get("class") == "NormalNoise":
            explorer["mean"] = 0.0
        native["explorer"] = explorer or None
        native["config"]["n_critics"] = N_CRITICS[algorithm]
        hp = workload.hyperparameters
        native["fit_online"].update(n_steps=workload.env_steps, random_steps=_random_steps(int(hp.learning_starts), workload),  # type: ignore[union-attr]
                                    eval_env=None, logger_adapter="NoopAdapterFactory", show_progress=False)
        net = workload.network
        hidden = list(net.hidden_sizes)
        native["encoder"] = {"class": "VectorEncoderFactory", "hidden_units": hidden, "activation": net.activation}
        layout = {"DQN": "Q-network: encoder then a linear head per action",
                  "SAC": "actor: encoder, then linear mean and log-std heads (state-dependent, clamped to [-20, 2], "
                         "tanh-squashed Gaussian); critics: encoder of [observation, action] then a linear head",
                  "TD3": "actor: encoder then a linear head and tanh; critics: encoder of [observation, action] "
                         "then a linear head",
                  "DDPG": "actor: encoder then a linear head and tanh; critic: encoder of [observation, action] "
                          "then a linear head"}[algorithm]
        if hidden:
            entries.append(entry("network.hidden_sizes", hidden, Fidelity.EXACT, "VectorEncoderFactory.hidden_units",
                                 hidden, f"{layout}; separate networks, no batch or layer norm, no dropout; "
                                         "PyTorch's default initialization"))
        else:
            entries.append(entry("network.hidden_sizes", hidden, Fidelity.UNSUPPORTED, None, None,
                                 "d3rlpy's VectorEncoder needs at least one hidden layer (its output size is the last "
                                 "hidden size): d3rlpy's default [256, 256] runs"))
        entries.append(entry("network.activation", net.activation, Fidelity.EXACT, "VectorEncoderFactory.activation",
                             net.activation, "after every hidden layer"))
        entries.append(entry("parallelism.envs_per_worker", workload.parallelism.envs_per_worker, Fidelity.EXACT,
                             "fit_online(env)", 1, "fit_online steps one environment"))
        entries.append(entry("parallelism.workers", workload.parallelism.workers, Fidelity.EXACT, "fit_online", 1,
                             "in the training process"))
        return native, entries

    def fidelity(self, workload: WorkloadLike) -> list[FidelityEntry]:
        return [*self.native_config(workload)[1], *DEPARTURES.get(workload.algorithm, ())]

    # -- training ----------------------------------------------------------------------------------

    def train(self, workload: WorkloadLike, context: TrainingContext) -> TrainingResult:
        from rlcompare_d3rlpy.run import build

        native, _ = self.native_config(workload)
        setup = build(workload, native, context.env_factory(0), context.seed, trace=context.trace)
        return train_with_setup(setup, context)

    # -- parity ------------------------------------------------------------------------------------

    def parity_update(self, probe: ParityProbe) -> ParityOutcome:
        """d3rlpy's own ``algo.update`` on the probe (:mod:`rlcompare_d3rlpy.parity`)."""
        from rlcompare_d3rlpy.parity import parity_update

        return parity_update(self, probe)


@hookimpl
def rlcompare_register_adapters(register: Register) -> None:
    register.add_adapter(D3rlpyAdapter)


def cache_size(step_limit: int | None, budget: int) -> int:
    """d3rlpy's ``ReplayBuffer(cache_size)``: the active episode's preallocated length, which must exceed
    the longest episode (``_ActiveEpisode.append`` asserts it): the env's step limit, else the budget."""
    return max(10_000, (step_limit if step_limit is not None else budget) + 1)

