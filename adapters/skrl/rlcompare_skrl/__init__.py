"""skrl adapter: PPO, A2C, DQN (discrete actions), SAC, TD3 and DDPG (continuous actions) with skrl's
torch agents, memories, noises, mixin models and ``SequentialTrainer``.

Environments: one environment is wrapped on its own (skrl's trainer resets it when an episode ends,
so the last observation of every episode is the real one); several are a Gymnasium vector env in
same-step autoreset mode, wrapped by skrl's Gymnasium wrapper (``wrap_env``). skrl's wrapper relies
on the vector env's autoreset and never reads ``final_obs``; in Gymnasium 1.x's default next-step
mode every episode end would add a step that ignores the action, which skrl would record as a
transition and count as an env step. Same-step mode keeps every recorded step a real one; the
observation recorded after a truncation is then the next episode's first (approximate bootstrapping,
said in the fidelity report).

Parallelism: ``workers == 1`` steps ``envs_per_worker`` environments in-process (SyncVectorEnv);
``workers > 1`` uses Gymnasium's AsyncVectorEnv, one subprocess per environment, which is what skrl
offers for CPU environments (its own ``ParallelTrainer`` runs several agents, not rollout workers).
skrl has no asynchronous sampling: ``mode = "async"`` is refused. With ``parallelism.simulation =
"envpool"`` the environments are one EnvPool instead (the harness's ``context.vector_env`` in
same-step autoreset mode, counted by the harness; ``workers``: EnvPool's threads), wrapped by skrl's
Gymnasium wrapper like the vector envs above, with Gymnasium's vector ``ClipAction`` /
``RescaleAction`` where the per-env wrappers below would be.

Actions: PPO and A2C act through ``ClipAction`` (Gaussian samples clipped to the bounds, as SB3);
SAC's policy outputs actions in env units (a tanh-bounded mean scaled to the bounds); TD3's and
DDPG's deterministic actor ends in tanh and acts on the action scaled to [-1, 1], each environment
wrapped in Gymnasium's ``RescaleAction``, as SB3 scales its actions. skrl's ``GaussianNoise`` (one
scalar standard deviation) then acts in the canonical units, the action range's half-width, for
any bounds, and the critics take the scaled action as SB3's do.

The harness hooks in through the agent's ``post_interaction``, which skrl calls after every vector
step: after every update period (a rollout for PPO/A2C, ``update_interval`` for DQN, a step for
SAC, TD3 and DDPG) ``context.checkpoint`` runs there with skrl's own step count (timestep x number
of envs).
The same builder serves the un-instrumented baseline of ``benchmarks/overhead.py``
(``benchmarks/baselines.py``).

Schedule: ``train()`` wraps the main optimizer's ``step`` (``gradient_step``), the agent's ``update``
(``update``), the target network's ``update_parameters`` (``target_sync``) and DQN's exploration
scheduler (``exploration``) to trace them (:func:`trace_schedule`). Parity probes are answered by
skrl's own memory and ``update`` on the adapter's own build (:mod:`rlcompare_skrl.parity`; TD3 and
DDPG in :mod:`rlcompare_skrl.parity_td3`, whose probes skrl's update passes with no departure).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
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
    gradient_steps_between_target_syncs,
    map_settings,
    only_if,
    train_with_setup,
)

if TYPE_CHECKING:
    import numpy as np

    from rlcompare.adapter import TrainingContext
    from rlcompare.plugins.register import Register

ON_POLICY = ("PPO", "A2C")
#: The families with a deterministic actor acting on the action scaled to [-1, 1] (RescaleAction).
DETERMINISTIC = ("TD3", "DDPG")
ACTION_SPACES = {"PPO": frozenset({"discrete", "continuous"}), "A2C": frozenset({"discrete", "continuous"}),
                 "DQN": frozenset({"discrete"}), "SAC": frozenset({"continuous"}),
                 "TD3": frozenset({"continuous"}), "DDPG": frozenset({"continuous"})}
ACTIVATIONS = {"tanh": "Tanh", "relu": "ReLU"}
#: Where each family's parity probe is answered (``module:function``).
PARITY_UPDATES = {"PPO": "rlcompare_skrl.parity:ppo_update", "A2C": "rlcompare_skrl.parity_a2c:a2c_update",
                  "DQN": "rlcompare_skrl.parity_dqn:dqn_update", "SAC": "rlcompare_skrl.parity_sac:sac_update",
                  "TD3": "rlcompare_skrl.parity_td3:td3_update", "DDPG": "rlcompare_skrl.parity_td3:td3_update"}


# -------------------------------------------------------------------------------------------------
# the mapping table: skrl counts in vector steps ("timesteps"), the canonical settings in env steps
# -------------------------------------------------------------------------------------------------


def _n_envs(workload: WorkloadLike) -> int:
    return workload.parallelism.total_envs


def _per_vector_step(value: int, workload: WorkloadLike) -> int:
    return value // _n_envs(workload)


def _ceil_per_vector_step(value: int, workload: WorkloadLike) -> int:
    return math.ceil(value / _n_envs(workload))


def _whole_vector_steps(what: str) -> Judge:
    def judge(value: int, workload: WorkloadLike) -> tuple[Fidelity, str]:
        n_envs = _n_envs(workload)
        if value % n_envs == 0:
            return Fidelity.EXACT, f"{what}; skrl counts vector steps of {n_envs} envs"
        return Fidelity.APPROXIMATE, f"{what}; rounded to whole vector steps of {n_envs} envs"

    return judge


#: skrl 2.1's Model.random_act under gymnasium 1.x: ``batch_space(space, n).sample()`` on a space
#: whose generator a deep copy leaves unmoved, so every call returns the same action (measured by the
#: parity probe's ``random_actions`` default; upstream's fix shows there as a changed default). It
#: reaches the canonical settings that ask for random actions: the warm-up (``learning_starts``) and
#: epsilon-greedy's random half (the exploration epsilons).
CONSTANT_RANDOM_ACTIONS = ("skrl's random actions are one constant action for the whole run: "
                           "gymnasium.vector.utils.batch_space(space, n).sample() on a deep copy of an unmoved "
                           "generator (Model.random_act under gymnasium 1.x)")


def _random_warm_up(value: int, workload: WorkloadLike) -> tuple[Fidelity, str]:
    status, note = _whole_vector_steps("also random_timesteps: random actions until then")(value, workload)
    if value > 0:
        return Fidelity.APPROXIMATE, f"{note}; {CONSTANT_RANDOM_ACTIONS}"
    return status, note


def _random_half(value: float, _: WorkloadLike) -> tuple[Fidelity, str]:
    note = "linear in vector steps from initial to final over fraction x budget, then flat"
    if value > 0:
        return Fidelity.APPROXIMATE, f"{note}; epsilon-greedy's random half: {CONSTANT_RANDOM_ACTIONS}"
    return Fidelity.EXACT, note


def _minibatches(value: int, workload: WorkloadLike) -> int:
    rollout = workload.hyperparameters.rollout_steps * _n_envs(workload)  # type: ignore[union-attr]
    return max(1, round(rollout / value))


def _judge_minibatches(value: int, workload: WorkloadLike) -> tuple[Fidelity, str]:
    rollout = workload.hyperparameters.rollout_steps * _n_envs(workload)  # type: ignore[union-attr]
    if rollout % value == 0:
        return Fidelity.EXACT, f"skrl takes a number of minibatches: {rollout} / {value}"
    return Fidelity.APPROXIMATE, (f"skrl takes a number of minibatches: {rollout} / {value} rounded to "
                                  f"{_minibatches(value, workload)} (np.array_split sizes)")


def _ppo_advantages(value: bool, _: WorkloadLike) -> tuple[Fidelity, str]:
    if value:
        return Fidelity.APPROXIMATE, "skrl normalizes advantages once over the whole rollout, not per minibatch"
    return Fidelity.UNSUPPORTED, "skrl's PPO always normalizes advantages"


def _a2c_advantages(value: bool, _: WorkloadLike) -> tuple[Fidelity, str]:
    if value:
        return Fidelity.EXACT, "over the whole rollout, which is A2C's one minibatch"
    return Fidelity.UNSUPPORTED, "skrl's A2C always normalizes advantages"


def _updates_between_syncs(_value: int, workload: WorkloadLike) -> int:
    # skrl counts target_update_interval in gradient updates, the canonical setting in env steps between env steps
    return gradient_steps_between_target_syncs(workload.hyperparameters)


def _judge_target_sync(value: int, workload: WorkloadLike) -> tuple[Fidelity, str]:
    hp = workload.hyperparameters
    updates = gradient_steps_between_target_syncs(hp)
    note = (f"every {updates} gradient updates: gradient_steps x ceil(interval / train_every), the canonical copy "
            "between env steps (of several between two updates only the last counts), so never inside an "
            "update's run of gradient steps; skrl counts from the first update")
    whole = hp.train_every % _n_envs(workload) == 0 and (value % hp.train_every == 0 or hp.train_every % value == 0)  # type: ignore[union-attr]
    in_phase = value <= hp.train_every or hp.learning_starts % value == 0  # type: ignore[union-attr]
    if whole and in_phase:
        return Fidelity.EXACT, note
    return Fidelity.APPROXIMATE, note + ("" if whole else "; the interval is not a whole number of updates") + (
        "" if in_phase else "; out of phase with learning_starts")


def _every_step_gradient_steps(value: int, workload: WorkloadLike) -> int:
    # skrl's SAC, TD3 and DDPG update after every vector step: spread the canonical update rate over vector steps
    return max(1, round(value * _n_envs(workload) / workload.hyperparameters.train_every))  # type: ignore[union-attr]


def _judge_every_step_rate(value: int, workload: WorkloadLike) -> tuple[Fidelity, str]:
    hp = workload.hyperparameters
    rate = hp.gradient_steps * _n_envs(workload) / hp.train_every  # type: ignore[union-attr]
    updates = f"skrl's {workload.algorithm} updates after every vector step"
    if hp.train_every == _n_envs(workload):  # type: ignore[union-attr]
        return Fidelity.EXACT, updates
    return Fidelity.APPROXIMATE, (f"{updates} ({_n_envs(workload)} env steps): {rate:g} gradient steps per vector "
                                  f"step rounded to {max(1, round(rate))}")


def _entropy(value: float | str, _: WorkloadLike) -> dict[str, Any]:
    if value == "auto":
        return {"learn_entropy": True, "initial_entropy_value": 1.0, "target_entropy": None}
    return {"learn_entropy": False, "initial_entropy_value": float(value)}


def _one_memory_size(value: int, workload: WorkloadLike) -> int:
    return math.ceil(value / _n_envs(workload))


#: The units skrl's noises act in for TD3 and DDPG: the actor's action, the canonical units.
SCALED_ACTIONS = ("the actor acts on the action scaled to [-1, 1] (gymnasium RescaleAction around each env, as SB3 "
                  "scales), so the std is the canonical one, in units of the action range's half-width, unconverted")


def _gaussian_noise(value: float, _: WorkloadLike) -> dict[str, Any]:
    # what build() turns into skrl.resources.noises.torch.GaussianNoise and its kwargs
    return {"class": "GaussianNoise", "mean": 0.0, "std": float(value)}


def _judge_exploration_noise(value: float, workload: WorkloadLike) -> tuple[Fidelity, str]:
    note = (f"skrl's GaussianNoise(mean=0, std) added to each env's action, then clamped to [-1, 1] as SB3 clips; "
            f"{SCALED_ACTIONS}; exploration_scheduler None: the scale stays 1 for the whole run, as canonical")
    # the warm-up's random actions carry no noise in skrl, as canonical (the authors' code)
    return Fidelity.EXACT, f"{note}; no noise on the warm-up's random actions (learning_starts), as canonical"


_ON_POLICY_COMMON = [
    Setting("learning_rate", "learning_rate",
            note="one Adam for policy and value (PyTorch's eps 1e-8; SB3 uses 1e-5)"),
    Setting("gamma", "discount_factor"),
    Setting("gae_lambda", "gae_lambda"),
    Setting("rollout_steps", "rollouts", note="vector steps per update: per environment, as canonical"),
    Setting("entropy_coef", "entropy_loss_scale"),
    Setting("max_grad_norm", "grad_norm_clip", note="one global norm over policy and value"),
]
_OFF_POLICY_COMMON = [
    Setting("gamma", "discount_factor"),
    Setting("buffer_size", "memory.memory_size", convert=_one_memory_size,
            judge=_whole_vector_steps("RandomMemory rows of one transition per env")),
    Setting("learning_starts", "learning_starts", convert=_per_vector_step, judge=_random_warm_up),
    Setting("minibatch_size", "batch_size", note="uniform sampling with replacement, as SB3"),
]

SETTINGS: dict[str, list[Setting]] = {
    "PPO": [
        *_ON_POLICY_COMMON,
        Setting("clip_range", "ratio_clip", note="value_clip=0: no value clipping"),
        Setting("minibatch_size", "mini_batches", convert=_minibatches, judge=_judge_minibatches),
        Setting("epochs", "learning_epochs"),
        Setting("value_coef", "value_loss_scale"),
        Setting("normalize_advantage", None, judge=_ppo_advantages),
    ],
    "A2C": [
        *_ON_POLICY_COMMON,
        Setting("optimizer", None, judge=only_if("adam", "skrl's A2C always builds Adam")),
        Setting("value_coef", None, judge=only_if(1.0, "skrl's A2C adds the value loss unweighted (coefficient 1)")),
        Setting("normalize_advantage", None, judge=_a2c_advantages),
    ],
    "DQN": [
        Setting("learning_rate", "learning_rate", note="Adam, PyTorch's defaults otherwise"),
        *_OFF_POLICY_COMMON,
        Setting("train_every", "update_interval", convert=_per_vector_step,
                judge=_whole_vector_steps("vector steps between updates")),
        Setting("gradient_steps", "gradient_steps"),
        Setting("target_update_interval", "target_update_interval", convert=_updates_between_syncs,
                judge=_judge_target_sync),
        Setting("exploration_initial_eps", "exploration_scheduler", judge=_random_half),
        Setting("exploration_final_eps", "exploration_scheduler", judge=_random_half),
        Setting("exploration_fraction", "exploration_scheduler"),
        Setting("max_grad_norm", None, judge=lambda _v, _w: (Fidelity.UNSUPPORTED,
                                                              "skrl's DQN does not clip gradients")),
        Setting("double_q", "agent", convert=lambda value, _: "DDQN" if value else "DQN",
                note="skrl.agents.torch.ddqn.DDQN for double-Q targets"),
    ],
    "SAC": [
        Setting("learning_rate", "learning_rate", convert=lambda value, _: [value, value, value],
                note="the same rate for policy, critics and entropy coefficient"),
        *_OFF_POLICY_COMMON,
        Setting("tau", "polyak", note="Polyak update after every gradient step"),
        Setting("train_every", None, judge=_judge_every_step_rate),
        Setting("gradient_steps", "gradient_steps", convert=_every_step_gradient_steps, judge=_judge_every_step_rate),
        Setting("entropy_coef", "entropy", convert=_entropy,
                note="'auto': learned, initial value 1.0 as SB3, target entropy -dim(A)"),
    ],
}


#: TD3 and DDPG: twin critics (TD3) or one (DDPG), delayed actor and Polyak targets, Gaussian noises.
_DETERMINISTIC_COMMON = [
    Setting("learning_rate", "learning_rate", convert=lambda value, _: [value, value],
            note="the same rate for actor and critics; torch's Adam with its defaults, as SB3's"),
    *_OFF_POLICY_COMMON,
    Setting("tau", "polyak", note="one Polyak step of every target (actor and critics) with each actor step"),
    Setting("train_every", None, judge=_judge_every_step_rate),
    Setting("gradient_steps", "gradient_steps", convert=_every_step_gradient_steps, judge=_judge_every_step_rate),
    Setting("exploration_noise", "exploration_noise", convert=_gaussian_noise, judge=_judge_exploration_noise),
]
SETTINGS["TD3"] = [
    *_DETERMINISTIC_COMMON,
    Setting("policy_delay", "policy_delay",
            note="the actor steps and the targets move after every policy_delay-th critic gradient step, counted "
                 "over the whole run (skrl's _update_counter, as SB3's _n_updates)"),
    Setting("target_policy_noise", "smooth_regularization_noise", convert=_gaussian_noise,
            note=f"skrl's GaussianNoise(mean=0, std) on the target actor's action, which is then clamped to "
                 f"[-1, 1] as SB3 clamps it; {SCALED_ACTIONS}"),
    Setting("target_noise_clip", "smooth_regularization_clip",
            note="the target noise clamped to [-clip, clip], in the same scaled units"),
]
#: skrl's DDPG: one critic; the actor and both targets step after every critic gradient step, as SB3's.
SETTINGS["DDPG"] = list(_DETERMINISTIC_COMMON)


_TORCH_ADAM = entry("defaults.adam_eps", 1e-5, Fidelity.APPROXIMATE, "torch.optim.Adam(eps)", 1e-8,
                    "skrl builds Adam with torch's default epsilon")
#: How skrl's updates depart from the canonical ones, as its parity probes measured them
#: (``rlcompare parity --adapters skrl``; skrl/agents/torch/*); the settings each family's
#: SETTINGS judge unsupported (A2C's optimizer, value_coef, normalize_advantage) are declared there.
DEPARTURES: dict[str, tuple[FidelityEntry, ...]] = {
    "PPO": (_TORCH_ADAM,),
    "A2C": (_TORCH_ADAM,),
    "DQN": (entry("defaults.td_loss", "huber", Fidelity.APPROXIMATE, "F.mse_loss", "mse",
                  "skrl's DQN.update takes the squared TD error"),),
}


# -------------------------------------------------------------------------------------------------
# the adapter
# -------------------------------------------------------------------------------------------------


class SkrlAdapter(Adapter):
    id = "skrl"
    framework = "skrl"
    summary = ("skrl: PPO, A2C, DQN (discrete), SAC, TD3, DDPG (continuous); SequentialTrainer on Gymnasium "
               "vector envs")
    import_name = "skrl"
    distributions = ("skrl", "torch")

    def capabilities(self) -> Capabilities:
        return Capabilities(
            algorithms=frozenset(SETTINGS),
            action_spaces=frozenset({"discrete", "continuous"}),
            vectorized_envs=True,
            rollout_workers=True,
            modes=frozenset({"sync"}),
            algorithm_action_spaces=dict(ACTION_SPACES),
            simulations=frozenset({"gymnasium", "envpool"}),
        )

    # -- translation -------------------------------------------------------------------------------

    def native_config(self, workload: WorkloadLike) -> tuple[dict[str, Any], list[FidelityEntry]]:
        """skrl's agent configuration (``cfg``), the memory, models and env settings, and the
        fidelity entries."""
        flat, entries = map_settings(workload, SETTINGS[workload.algorithm])
        algorithm = workload.algorithm
        agent = flat.pop("agent", algorithm)
        cfg: dict[str, Any] = {}
        memory: dict[str, Any] = {"class": "RandomMemory"}
        for name, value in flat.items():
            if name == "memory.memory_size":
                memory["memory_size"] = value
            elif name == "entropy":
                cfg.update(value)
            elif name == "exploration_scheduler":
                continue  # built from the three canonical settings in build()
            else:
                cfg[name] = value
        fixed = _fixed_choices(algorithm)
        cfg.update(fixed)
        if algorithm in ON_POLICY:
            memory.update(memory_size=cfg["rollouts"], replacement=False)
        else:
            memory["replacement"] = True
            cfg["random_timesteps"] = cfg["learning_starts"]
        if algorithm == "DQN":
            hp = workload.hyperparameters
            cfg["exploration"] = {
                "initial_eps": hp.exploration_initial_eps, "final_eps": hp.exploration_final_eps,  # type: ignore[union-attr]
                "fraction": hp.exploration_fraction,  # type: ignore[union-attr]
            }
        net = workload.network
        hidden = list(net.hidden_sizes)
        activation = f"torch.nn.{ACTIVATIONS[net.activation]}"
        layout = _network_layout(algorithm, hidden)
        models = {"hidden_sizes": hidden, "activation": activation, "layout": layout}
        network_note = "separate networks, no shared layers; PyTorch's default weight initialisation"
        if algorithm == "SAC":
            network_note = f"{network_note}; {SAC_POLICY}"
        elif algorithm in DETERMINISTIC:
            network_note = f"{network_note}; {DETERMINISTIC_POLICY}"
        entries.append(entry("network.hidden_sizes", hidden,
                             Fidelity.APPROXIMATE if algorithm == "SAC" else Fidelity.EXACT, "models", layout,
                             network_note))
        entries.append(entry("network.activation", net.activation, Fidelity.EXACT, "models.activation", activation))
        env, env_entries = _parallelism(workload)
        if algorithm in DETERMINISTIC:
            env["action_rescale"] = [-1.0, 1.0]  # RescaleAction around each env: the actor's units are the canonical
        entries.extend(env_entries)
        config = {"agent": agent, "cfg": cfg, "memory": memory, "models": models, "env": env,
                  "trainer": {"class": "SequentialTrainer", "timesteps": math.ceil(workload.env_steps / env["n_envs"])}}
        return config, entries

    def fidelity(self, workload: WorkloadLike) -> list[FidelityEntry]:
        return [*self.native_config(workload)[1], *DEPARTURES.get(workload.algorithm, ())]

    # -- training ----------------------------------------------------------------------------------

    def train(self, workload: WorkloadLike, context: TrainingContext) -> TrainingResult:
        config, _ = self.native_config(workload)
        if context.simulation == "envpool":  # one EnvPool, counted by the harness, in skrl's autoreset mode
            setup = build(workload, config, (), context.seed, vector_env=context.vector_env("SameStep"))
        else:
            setup = build(workload, config, context.env_factories(), context.seed)
        trace_schedule(setup.agent, workload.algorithm, context)
        return train_with_setup(setup, context)

    # -- parity ------------------------------------------------------------------------------------

    def parity_update(self, probe: ParityProbe) -> ParityOutcome:
        """skrl's own memory and ``update`` on the probe (one module per family, :mod:`rlcompare_skrl.parity`)."""
        import importlib

        module, _, function = PARITY_UPDATES.get(probe.family, ":").partition(":")
        try:
            update = getattr(importlib.import_module(module), function) if module else None
        except ModuleNotFoundError:
            update = None
        if update is None:
            return ParityOutcome.unverifiable(f"no {probe.family} probe is implemented for skrl")
        return update(self, probe)


@hookimpl
def rlcompare_register_adapters(register: Register) -> None:
    register.add_adapter(SkrlAdapter)


def trace_schedule(agent: Any, algorithm: str, context: TrainingContext) -> None:
    """Trace the schedule from inside skrl: each step of the main optimizer (SAC, TD3, DDPG: the
    critics') is a gradient step, each call of the agent's ``update`` an update, each
    ``update_parameters`` of the target network (DQN: the hard copy every ``target_update_interval``
    updates; SAC: the Polyak step of ``target_critic_1``, which ``target_critic_2`` takes with it;
    TD3: that of ``target_critic_1`` after every ``policy_delay``-th critic step, which
    ``target_critic_2`` and ``target_policy`` take with it; DDPG: that of ``target_critic``, which
    ``target_policy`` takes with it) a target sync, and each new
    value of DQN's ``exploration_scheduler`` (skrl asks it from ``random_timesteps`` on, before which
    it acts uniformly at random) an exploration value. A wrapped call costs one Python call."""
    optimizer = agent.critic_optimizer if algorithm in ("SAC", *DETERMINISTIC) else agent.optimizer
    step, update = optimizer.step, agent.update

    def traced_step(*args: Any, **kwargs: Any) -> Any:
        context.trace("gradient_step")
        return step(*args, **kwargs)

    def traced_update(*args: Any, **kwargs: Any) -> Any:
        context.trace("update")
        return update(*args, **kwargs)

    optimizer.step, agent.update = traced_step, traced_update
    target = {"DQN": "target_q_network", "SAC": "target_critic_1", "TD3": "target_critic_1",
              "DDPG": "target_critic"}.get(algorithm)
    if target is not None:
        model = getattr(agent, target)
        sync = model.update_parameters

        def traced_sync(*args: Any, **kwargs: Any) -> Any:
            context.trace("target_sync")
            return sync(*args, **kwargs)

        model.update_parameters = traced_sync
    scheduler = getattr(agent.cfg, "exploration_scheduler", None)
    if scheduler is not None:
        agent.cfg.exploration_scheduler = TracedEpsilon(scheduler, context)


class TracedEpsilon:
    """DQN's ``exploration_scheduler`` that traces each new epsilon skrl asks it for; ``untraced``
    is the scheduler itself (the harness's evaluation reads it without tracing)."""

    def __init__(self, untraced: Callable[[int, int], float], context: TrainingContext) -> None:
        self.untraced = untraced
        self.context = context
        self.last: float | None = None

    def __call__(self, timestep: int, timesteps: int) -> float:
        epsilon = self.untraced(timestep, timesteps)
        if epsilon != self.last:
            self.last = epsilon
            self.context.trace("exploration", epsilon)
        return epsilon


#: TD3's and DDPG's actor and critics: SB3's shapes, on the scaled action.
DETERMINISTIC_POLICY = ("deterministic actor ending in tanh, acting on the action scaled to [-1, 1] (gymnasium "
                        "RescaleAction around each env), critics on the observation and that scaled action, "
                        "target copies of each: SB3's TD3/DDPG shapes")
#: skrl's SAC policy head, which the canonical network (SB3's squashed Gaussian) is not.
SAC_POLICY = ("skrl's Gaussian policy: tanh-bounded mean scaled to the action bounds, state-independent log-std, "
              "samples clipped to the bounds, log-probability of the unsquashed Gaussian (SB3 squashes samples "
              "with tanh and corrects the log-probability)")


def _fixed_choices(algorithm: str) -> dict[str, Any]:
    """skrl settings with no canonical counterpart, pinned to the canonical (SB3-style) semantics where
    skrl can (how the update departs where it cannot is declared in DEPARTURES, and checked by the
    parity probe)."""
    off = {"experiment": {"write_interval": 0, "checkpoint_interval": 0}}
    if algorithm == "PPO":
        # clipped surrogate, no value clipping, no KL early stop; truncated episodes bootstrap
        return {**off, "value_clip": 0.0, "kl_threshold": 0.0, "time_limit_bootstrap": True}
    if algorithm == "A2C":
        return {**off, "mini_batches": 1, "time_limit_bootstrap": True}  # one full-batch step per rollout
    if algorithm == "DQN":
        return {**off, "polyak": 1.0}  # hard target copies (the MSE TD loss: DEPARTURES)
    if algorithm in DETERMINISTIC:
        # no gradient clipping, as SB3; no exploration scheduler: the noise keeps its std for the whole run
        return {**off, "grad_norm_clip": 0.0, "exploration_scheduler": None}
    return {**off, "grad_norm_clip": 0.0}  # two critics with Polyak targets


def _network_layout(algorithm: str, hidden: list[int]) -> dict[str, list[int]]:
    if algorithm in ON_POLICY:
        return {"policy": hidden, "value": hidden}
    if algorithm in ("SAC", "TD3"):
        return {"policy": hidden, "critic_1": hidden, "critic_2": hidden}
    if algorithm == "DDPG":
        return {"policy": hidden, "critic": hidden}
    return {"q_network": hidden}


def _parallelism(workload: WorkloadLike) -> tuple[dict[str, Any], list[FidelityEntry]]:
    par = workload.parallelism
    n_envs = par.total_envs
    truncation_note = ("same-step autoreset: after a truncation skrl sees the next episode's first observation, "
                       "so bootstrapping uses that one")
    if getattr(par, "simulation", "gymnasium") == "envpool":
        return _envpool_parallelism(workload, truncation_note)
    if par.workers == 1:
        if n_envs == 1:
            env = {"class": "gymnasium.Env", "wrapper": "gymnasium", "n_envs": 1}
            env_entries = [
                entry("parallelism.envs_per_worker", 1, Fidelity.EXACT, "wrap_env(env)", 1,
                      "one environment, reset by skrl's trainer at every episode end"),
                entry("parallelism.workers", 1, Fidelity.EXACT, "SequentialTrainer", 1, "in the training process"),
            ]
        else:
            env = {"class": "gymnasium.vector.SyncVectorEnv", "autoreset_mode": "same-step", "wrapper": "gymnasium",
                   "n_envs": n_envs}
            env_entries = [
                entry("parallelism.envs_per_worker", par.envs_per_worker, Fidelity.EXACT, "SyncVectorEnv", n_envs,
                      f"stepped sequentially in the training process; {truncation_note}"),
                entry("parallelism.workers", 1, Fidelity.EXACT, "SequentialTrainer", 1, "in the training process"),
            ]
    else:
        status = Fidelity.EXACT if par.envs_per_worker == 1 else Fidelity.APPROXIMATE
        env = {"class": "gymnasium.vector.AsyncVectorEnv", "autoreset_mode": "same-step", "wrapper": "gymnasium",
               "n_envs": n_envs}
        env_entries = [
            entry("parallelism.envs_per_worker", par.envs_per_worker, status, "AsyncVectorEnv", 1,
                  f"AsyncVectorEnv runs one environment per process; {truncation_note}"),
            entry("parallelism.workers", par.workers, status, "AsyncVectorEnv(env_fns)", n_envs,
                  f"{n_envs} subprocesses; the policy acts in the training process"),
        ]
    env_entries.append(entry("parallelism.mode", par.mode, Fidelity.EXACT, "SequentialTrainer", "sync"))
    return env, env_entries


#: What EnvPool changes in the training environments (rlcompare.harness.envpool_envs says how it was checked).
ENVPOOL_NOTE = ("one EnvPool (envpool.make, sync mode) of every environment, counted by the harness, as a Gymnasium "
                "vector env in same-step autoreset mode (ended environments reset by EnvPool.reset(env_id) inside "
                "the step), wrapped by skrl's Gymnasium wrapper; dynamics, rewards and time limits checked equal to "
                "Gymnasium's, but EnvPool draws its own random numbers (other episodes for the same seed) and an "
                "episode failing on its last allowed step is truncated only")


def _envpool_parallelism(workload: WorkloadLike, truncation_note: str) -> tuple[dict[str, Any], list[FidelityEntry]]:
    """One EnvPool in the training process; ``workers`` are its threads, not processes."""
    par = workload.parallelism
    n_envs = par.total_envs
    env = {"class": "rlcompare.harness.envpool_envs.CountedEnvPool", "autoreset_mode": "same-step",
           "wrapper": "gymnasium", "n_envs": n_envs, "simulation": "envpool", "threads": par.workers}
    status = Fidelity.EXACT if par.workers == 1 else Fidelity.APPROXIMATE
    threads = ("one EnvPool thread" if par.workers == 1
               else f"{par.workers} EnvPool threads in the training process, not worker processes")
    return env, [
        entry("parallelism.envs_per_worker", par.envs_per_worker, status, "envpool.make(num_envs)", n_envs,
              f"one EnvPool of {n_envs} environments in the training process; {truncation_note}"),
        entry("parallelism.workers", par.workers, status, "envpool.make(num_threads)", par.workers,
              f"{threads}; the policy acts in the training process"),
        entry("parallelism.simulation", "envpool", Fidelity.EXACT, "envpool.make", "envpool", ENVPOOL_NOTE),
        entry("parallelism.mode", par.mode, Fidelity.EXACT, "SequentialTrainer", "sync"),
    ]


# -------------------------------------------------------------------------------------------------
# the builder, shared by the adapter and the overhead benchmark's direct baseline
# -------------------------------------------------------------------------------------------------


@dataclass
class SkrlSetup:
    """Everything built for one run; :meth:`run` trains, :attr:`env_steps` is skrl's own count."""

    workload: WorkloadLike
    agent: Any
    env: Any
    trainer_cfg: dict[str, Any]
    n_envs: int
    native: dict[str, Any] = field(default_factory=dict)
    timesteps_done: int = 0
    #: The env's own action bounds (low, high) where skrl acts on the action scaled to [-1, 1] (TD3, DDPG).
    action_bounds: tuple[Any, Any] | None = None

    @property
    def env_steps(self) -> int:
        """Env steps as skrl counts them: vector steps (timesteps) done x number of envs."""
        return self.timesteps_done * self.n_envs

    @property
    def update_period(self) -> int:
        """Vector steps between two updates: a rollout (PPO, A2C), ``update_interval`` (DQN), one (SAC,
        TD3, DDPG)."""
        cfg = self.agent.cfg
        return int(getattr(cfg, "rollouts", None) or getattr(cfg, "update_interval", 1))

    def run(self, after_update: Callable[[int], None]) -> None:
        """Train for the workload's budget; ``after_update(steps)`` runs after every update period
        (and after the last vector step)."""
        from skrl.trainers.torch import SequentialTrainer

        setup = self
        agent = self.agent
        original = agent.post_interaction
        period = self.update_period

        def post_interaction(*, timestep: int, timesteps: int) -> None:
            original(timestep=timestep, timesteps=timesteps)
            setup.timesteps_done = timestep + 1
            if setup.timesteps_done % period == 0 or setup.timesteps_done == timesteps:
                after_update(setup.env_steps)

        agent.post_interaction = post_interaction  # skrl's own hook point, called by the trainer
        trainer = SequentialTrainer(env=self.env, agents=agent, cfg=dict(self.trainer_cfg))
        trainer.train()

    def policy_fn(self, deterministic: bool) -> Callable[[np.ndarray], np.ndarray]:
        """A batch-observations -> batch-actions numpy callable over the live models."""
        import gymnasium
        import numpy as np
        import torch

        agent = self.agent
        algorithm = self.workload.algorithm
        space = self.env.action_space
        model = agent.models["q_network" if algorithm == "DQN" else "policy"]
        discrete = isinstance(space, gymnasium.spaces.Discrete)

        def act(observations: np.ndarray) -> np.ndarray:
            inputs = {"observations": torch.as_tensor(np.asarray(observations), dtype=torch.float32).reshape(
                len(observations), -1), "states": None}
            with torch.no_grad():
                if algorithm == "DQN":
                    actions = torch.argmax(model.act(inputs, role="q_network")[0], dim=1)
                    if not deterministic:
                        # epsilon-greedy at the current training epsilon (what SB3's DQN.predict does)
                        scheduler = agent.cfg.exploration_scheduler
                        epsilon = getattr(scheduler, "untraced", scheduler)(self.timesteps_done, 1)
                        explore = torch.rand(actions.shape[0]) < epsilon
                        actions[explore] = torch.randint(int(space.n), (int(explore.sum()),))
                    return actions.numpy()
                sampled, outputs = model.act(inputs, role="policy")
                if self.action_bounds is not None:
                    # TD3, DDPG: the actor's scaled action back to the env's bounds (RescaleAction's map); no
                    # exploration noise either way, as SB3's predict
                    low, high = self.action_bounds
                    return np.clip(low + (high - low) * (sampled.numpy() + 1.0) / 2.0, low, high)
                if discrete:
                    chosen = torch.argmax(outputs["net_output"], dim=-1) if deterministic else sampled.reshape(-1)
                    return chosen.numpy()
                chosen = outputs["mean_actions"] if deterministic else sampled
                return np.clip(chosen.numpy(), space.low, space.high)

        return act

    def close(self) -> None:
        self.env.close()


def build(workload: WorkloadLike, config: dict[str, Any], env_fns: Sequence[Callable[[], Any]], seed: int,
          vector_env: Any = None) -> SkrlSetup:
    """Build the wrapped env, models, memory and agent for ``workload`` as ``config`` says; on
    ``vector_env`` (a Gymnasium vector env in same-step autoreset mode: the harness's EnvPool) instead
    of ``env_fns`` where one is given."""
    import gymnasium
    from skrl.envs.wrappers.torch import wrap_env
    from skrl.memories.torch import RandomMemory
    from skrl.utils import set_seed

    set_seed(seed)  # random, numpy, torch and skrl's env-reset key (env i gets seed + i)
    env_config = config["env"]
    fns = list(env_fns)
    space = vector_env.single_action_space if vector_env is not None else _action_space(fns[0])
    clip = isinstance(space, gymnasium.spaces.Box) and workload.algorithm in ON_POLICY
    if clip:
        fns = [ClippedActions(fn) for fn in fns]  # Gaussian samples clipped to the bounds, as SB3 does
    rescale = env_config.get("action_rescale")
    action_bounds = None
    if rescale is not None:  # TD3, DDPG: the actor and its noises act on the action scaled to [-1, 1]
        fns = [ScaledActions(fn, *rescale) for fn in fns]
        action_bounds = (space.low, space.high)
    if vector_env is not None:  # the same wrappers, for the whole vector env
        raw = vector_env
        if clip:
            raw = gymnasium.wrappers.vector.ClipAction(raw)
        if rescale is not None:
            dtype = space.dtype.type
            raw = gymnasium.wrappers.vector.RescaleAction(raw, dtype(rescale[0]), dtype(rescale[1]))
    elif env_config["n_envs"] == 1:
        raw = fns[0]()
    else:
        vector_class = (gymnasium.vector.SyncVectorEnv if env_config["class"].endswith("SyncVectorEnv")
                        else gymnasium.vector.AsyncVectorEnv)
        raw = vector_class(fns, autoreset_mode=gymnasium.vector.AutoresetMode.SAME_STEP)
    env = wrap_env(raw, wrapper="gymnasium", verbose=False)
    device = env.device
    models = _build_models(workload, env, device)
    memory_config = dict(config["memory"])
    memory_config.pop("class")
    memory = RandomMemory(num_envs=env.num_envs, device=device, **memory_config)
    cfg = dict(config["cfg"])
    agent_class, cfg_class = _agent_classes(config["agent"])
    exploration = cfg.pop("exploration", None)
    if exploration is not None:
        cfg["exploration_scheduler"] = LinearEpsilon(
            exploration["initial_eps"], exploration["final_eps"],
            exploration["fraction"] * workload.env_steps / env.num_envs)
    native_noises = _gaussian_noises(cfg, device)
    agent = agent_class(models=models, memory=memory, cfg=cfg_class(**cfg), observation_space=env.observation_space,
                        state_space=env.state_space, action_space=env.action_space, device=device)
    trainer_cfg = {"timesteps": config["trainer"]["timesteps"], "headless": True, "disable_progressbar": True,
                   "close_environment_at_exit": False}
    native = {
        "agent": f"skrl.agents.torch.{config['agent']}", "cfg": {**_plain(cfg), **native_noises},
        "memory": config["memory"],
        "models": config["models"], "env": env_config, "trainer": {"class": "SequentialTrainer", **trainer_cfg},
    }
    return SkrlSetup(workload, agent, env, trainer_cfg, env.num_envs, native, action_bounds=action_bounds)


#: The noise settings of skrl's TD3 and DDPG configurations.
NOISES = ("exploration_noise", "smooth_regularization_noise")


def _gaussian_noises(cfg: dict[str, Any], device: Any) -> dict[str, Any]:
    """Turn each noise the mapping describes (:func:`_gaussian_noise`) into skrl's ``GaussianNoise``
    class and its keyword arguments, in ``cfg``; return them as the native configuration records them."""
    native: dict[str, Any] = {}
    for key in NOISES:
        spec = cfg.get(key)
        if not isinstance(spec, dict):
            continue
        from skrl.resources.noises.torch import GaussianNoise

        kwargs = {"mean": spec["mean"], "std": spec["std"]}
        cfg[key], cfg[f"{key}_kwargs"] = GaussianNoise, {**kwargs, "device": device}
        native[key], native[f"{key}_kwargs"] = "skrl.resources.noises.torch.GaussianNoise", kwargs
    return native


def _action_space(env_fn: Callable[[], Any]) -> Any:
    """The action space of the environments ``env_fn`` builds, from an uncounted copy."""
    from rlcompare.adapter import make_env

    env = make_env(env_fn.env_id, env_fn.env_kwargs) if hasattr(env_fn, "env_id") else env_fn()
    try:
        return env.action_space
    finally:
        env.close()


@dataclass(frozen=True)
class ClippedActions:
    """A picklable env factory whose environment clips continuous actions to the action bounds."""

    env_fn: Callable[[], Any]

    def __call__(self, *_: Any, **__: Any) -> Any:
        import gymnasium

        return gymnasium.wrappers.ClipAction(self.env_fn())


@dataclass(frozen=True)
class ScaledActions:
    """A picklable env factory whose environment takes continuous actions scaled to ``[low, high]``
    (Gymnasium's ``RescaleAction``; the env's bounds must be finite, as SB3's scaling needs)."""

    env_fn: Callable[[], Any]
    low: float = -1.0
    high: float = 1.0

    def __call__(self, *_: Any, **__: Any) -> Any:
        import gymnasium

        env = self.env_fn()
        dtype = env.action_space.dtype.type  # bounds of the space's own precision (float32 for most envs)
        return gymnasium.wrappers.RescaleAction(env, dtype(self.low), dtype(self.high))


@dataclass(frozen=True)
class LinearEpsilon:
    """skrl's ``exploration_scheduler(timestep, timesteps)``: SB3's linear schedule, in vector steps."""

    initial: float
    final: float
    decay_timesteps: float

    def __call__(self, timestep: int, _timesteps: int = 0) -> float:
        if timestep >= self.decay_timesteps:
            return self.final
        return self.initial + (self.final - self.initial) * timestep / self.decay_timesteps


def _agent_classes(name: str) -> tuple[type, type]:
    if name == "PPO":
        from skrl.agents.torch.ppo import PPO, PPO_CFG

        return PPO, PPO_CFG
    if name == "A2C":
        from skrl.agents.torch.a2c import A2C, A2C_CFG

        return A2C, A2C_CFG
    if name == "DQN":
        from skrl.agents.torch.dqn import DQN, DQN_CFG

        return DQN, DQN_CFG
    if name == "DDQN":
        from skrl.agents.torch.ddqn import DDQN, DDQN_CFG

        return DDQN, DDQN_CFG
    if name == "TD3":
        from skrl.agents.torch.td3 import TD3, TD3_CFG

        return TD3, TD3_CFG
    if name == "DDPG":
        from skrl.agents.torch.ddpg import DDPG, DDPG_CFG

        return DDPG, DDPG_CFG
    from skrl.agents.torch.sac import SAC, SAC_CFG

    return SAC, SAC_CFG


def _plain(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(key): _plain(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(item) for item in value]
    return value if value is None or isinstance(value, (bool, int, float, str)) else repr(value)


def _build_models(workload: WorkloadLike, env: Any, device: Any) -> dict[str, Any]:
    """skrl models (mixins over ``skrl.models.torch.Model``) shaped as the workload's network says."""
    import gymnasium
    import torch
    from skrl.models.torch import CategoricalMixin, DeterministicMixin, GaussianMixin, Model

    hidden = list(workload.network.hidden_sizes)
    activation = getattr(torch.nn, ACTIVATIONS[workload.network.activation])

    def mlp(inputs: int, outputs: int, squash: bool = False) -> torch.nn.Sequential:
        layers: list[torch.nn.Module] = []
        for width in hidden:
            layers += [torch.nn.Linear(inputs, width), activation()]
            inputs = width
        layers.append(torch.nn.Linear(inputs, outputs))
        if squash:
            layers.append(torch.nn.Tanh())
        return torch.nn.Sequential(*layers)

    spaces = {"observation_space": env.observation_space, "state_space": env.state_space,
              "action_space": env.action_space, "device": device}

    class CategoricalPolicy(CategoricalMixin, Model):
        def __init__(self) -> None:
            Model.__init__(self, **spaces)
            CategoricalMixin.__init__(self, unnormalized_log_prob=True)
            self.net = mlp(self.num_observations, self.num_actions)

        def compute(self, inputs: dict[str, Any], role: str = "") -> tuple[Any, dict[str, Any]]:
            return self.net(inputs["observations"]), {}

    class GaussianPolicy(GaussianMixin, Model):
        """SB3's PPO/A2C shape (unbounded mean, state-independent log-std from 0) or, for SAC, skrl's
        examples' shape (mean bounded by tanh and scaled to the action bounds)."""

        def __init__(self, bounded: bool) -> None:
            Model.__init__(self, **spaces)
            GaussianMixin.__init__(self, clip_actions=bounded, clip_log_std=True, min_log_std=-20, max_log_std=2)
            self.net = mlp(self.num_observations, self.num_actions, squash=bounded)
            self.log_std_parameter = torch.nn.Parameter(torch.zeros(self.num_actions))
            self.bounded = bounded
            if bounded:
                space = env.action_space
                self.register_buffer("scale", torch.as_tensor((space.high - space.low) / 2, dtype=torch.float32))
                self.register_buffer("center", torch.as_tensor((space.high + space.low) / 2, dtype=torch.float32))

        def compute(self, inputs: dict[str, Any], role: str = "") -> tuple[Any, dict[str, Any]]:
            mean = self.net(inputs["observations"])
            if self.bounded:
                mean = self.center + self.scale * mean
            return mean, {"log_std": self.log_std_parameter}

    class DeterministicPolicy(DeterministicMixin, Model):
        """SB3's TD3/DDPG actor: an MLP ending in tanh, on the action scaled to [-1, 1] (the env's
        ``RescaleAction`` makes that skrl's action space, so skrl's noises and clamps act there)."""

        def __init__(self) -> None:
            Model.__init__(self, **spaces)
            DeterministicMixin.__init__(self, clip_actions=False)
            self.net = mlp(self.num_observations, self.num_actions, squash=True)

        def compute(self, inputs: dict[str, Any], role: str = "") -> tuple[Any, dict[str, Any]]:
            return self.net(inputs["observations"]), {}

    class Value(DeterministicMixin, Model):
        def __init__(self, outputs: int, with_actions: bool) -> None:
            Model.__init__(self, **spaces)
            DeterministicMixin.__init__(self)
            self.with_actions = with_actions
            self.net = mlp(self.num_observations + (self.num_actions if with_actions else 0), outputs)

        def compute(self, inputs: dict[str, Any], role: str = "") -> tuple[Any, dict[str, Any]]:
            x = inputs["observations"]
            if self.with_actions:
                x = torch.cat([x, inputs["taken_actions"]], dim=1)
            return self.net(x), {}

    discrete = isinstance(env.action_space, gymnasium.spaces.Discrete)
    algorithm = workload.algorithm
    if algorithm in ON_POLICY:
        policy = CategoricalPolicy() if discrete else GaussianPolicy(bounded=False)
        return {"policy": policy, "value": Value(1, with_actions=False)}
    if algorithm == "DQN":
        n_actions = int(env.action_space.n)
        return {"q_network": Value(n_actions, with_actions=False),
                "target_q_network": Value(n_actions, with_actions=False)}
    if algorithm == "TD3":
        return {"policy": DeterministicPolicy(), "target_policy": DeterministicPolicy(),
                "critic_1": Value(1, True), "critic_2": Value(1, True),
                "target_critic_1": Value(1, True), "target_critic_2": Value(1, True)}
    if algorithm == "DDPG":
        return {"policy": DeterministicPolicy(), "target_policy": DeterministicPolicy(),
                "critic": Value(1, True), "target_critic": Value(1, True)}
    return {"policy": GaussianPolicy(bounded=True), "critic_1": Value(1, True), "critic_2": Value(1, True),
            "target_critic_1": Value(1, True), "target_critic_2": Value(1, True)}
