"""Tianshou 2.0 adapter: PPO, A2C, PG (REINFORCE) and DQN on discrete actions, SAC, TD3 and DDPG on continuous actions,
built with Tianshou's procedural API (networks, ``Algorithm``, ``Collector``, ``OnPolicyTrainer`` /
``OffPolicyTrainer``).

Parallelism: ``workers == 1`` steps ``envs_per_worker`` environments in-process (DummyVectorEnv);
``workers > 1`` uses SubprocVectorEnv, one process per environment, so ``workers x envs_per_worker``
processes (approximate when envs_per_worker > 1). Sampling is synchronous only: Tianshou 2.0.1's
AsyncCollector fails on its first collect with every policy used here (it indexes the empty per-step
"policy" batch these policies produce), so ``mode = "async"`` is not offered.

The harness hooks in through the trainer's ``training_fn``, which Tianshou calls before every collect
step: it updates DQN's epsilon schedule and calls ``context.checkpoint``. TD3 and DDPG explore with
Tianshou's own ``GaussianNoise``, which the collector adds to the actor's action in the action space
scaled to [-1, 1] (the canonical unit, half the action range), before clipping and scaling it for the
environment. The same builder serves
the un-instrumented baseline of ``benchmarks/overhead.py`` (``benchmarks/baselines.py``), so both
train the identical configuration; ``train()`` alone adds the schedule trace (:func:`trace_schedule`).

Parity probes (:meth:`TianshouAdapter.parity_update`) run Tianshou's own buffer, targets and update
on rlcompare's fixed problems, one module per family (:mod:`rlcompare_tianshou.parity`). TD3's and
DDPG's probe (:mod:`rlcompare_tianshou.parity_td3`) is the reference update: it has no exploration or
smoothing noise and a policy delay of 1, so Tianshou's TD3 departures from SB3's, which need one of
those, are stated in the notes of the settings they touch (:data:`SETTINGS`), not as ``defaults.*``.
"""

from __future__ import annotations

import math
import os
import random
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
    NativeSetting,
    ParityOutcome,
    ParityProbe,
    Recommendation,
    Setting,
    TrainingResult,
    WorkloadLike,
    entry,
    gradient_steps_between_target_syncs,
    map_settings,
    only_if,
    train_with_setup,
    vector_env_fidelity,
)
from rlcompare.adapter import apply_native_settings as apply_native

if TYPE_CHECKING:
    import numpy as np

    from rlcompare.adapter import TrainingContext
    from rlcompare.plugins.register import Register

ON_POLICY = ("PPO", "A2C", "PG")
ACTION_SPACES = {"PPO": "discrete", "A2C": "discrete", "PG": "discrete", "DQN": "discrete", "SAC": "continuous",
                 "TD3": "continuous", "DDPG": "continuous"}
#: The deterministic-actor families: Tianshou's DDPG and TD3, exploring with Gaussian action noise.
DETERMINISTIC = ("TD3", "DDPG")
#: The off-policy actor-critics, whose critic optimizer makes the traced gradient step.
ACTOR_CRITIC_OFF_POLICY = ("SAC", *DETERMINISTIC)
ACTIVATIONS = {"tanh": "Tanh", "relu": "ReLU"}
#: Adam/RMSprop epsilon for the on-policy optimizers: the value of the reference implementations the
#: canonical defaults come from (SB3's ActorCriticPolicy and CleanRL use 1e-5); Tianshou's default is 1e-8.
ON_POLICY_OPTIM_EPS = 1e-5
#: DQN's TD loss: Huber with delta 1 as in the Nature DQN paper and SB3 (Tianshou's default is MSE).
DQN_HUBER_DELTA = 1.0
#: Where each family's parity probe is answered (``module:function``).
#: A folder where Tianshou's numba helpers keep their compiled code between processes (see
#: :func:`cache_compiled_helpers`); unset, every process compiles them, as Tianshou itself does.
NUMBA_CACHE_ENV = "RLCOMPARE_NUMBA_CACHE"
#: The modules whose ``@njit`` helpers Tianshou compiles when a buffer or an algorithm is built.
NUMBA_MODULES = ("tianshou.data.buffer.manager", "tianshou.algorithm.algorithm_base", "tianshou.data.utils.segtree")
PARITY_UPDATES = {"PPO": "rlcompare_tianshou.parity:ppo_update", "A2C": "rlcompare_tianshou.parity:a2c_update",
                  "PG": "rlcompare_tianshou.parity:pg_update",
                  "DQN": "rlcompare_tianshou.parity_dqn:dqn_update", "SAC": "rlcompare_tianshou.parity_sac:sac_update",
                  "TD3": "rlcompare_tianshou.parity_td3:td3_update", "DDPG": "rlcompare_tianshou.parity_td3:td3_update"}


# -------------------------------------------------------------------------------------------------
# the mapping table: native names are "<component>.<keyword>", routed by component in the builder
# -------------------------------------------------------------------------------------------------


def _n_envs(workload: WorkloadLike) -> int:
    return workload.parallelism.total_envs


def _per_collect(value: int, workload: WorkloadLike) -> int:
    # Tianshou's collector steps every env once per vector step, so a collect of n steps really
    # collects ceil(n / n_envs) * n_envs; round down to whole vector steps as SB3's train_freq does.
    n_envs = _n_envs(workload)
    return n_envs * max(1, value // n_envs)


def _divisible_by_envs(what: str) -> Judge:
    def judge(value: int, workload: WorkloadLike) -> tuple[Fidelity, str]:
        n_envs = _n_envs(workload)
        if value % n_envs == 0:
            return Fidelity.EXACT, f"{what}; whole vector steps of {n_envs} envs"
        return Fidelity.APPROXIMATE, f"{what}; rounded to whole vector steps of {n_envs} envs"

    return judge


def _prefill_steps(value: int, workload: WorkloadLike) -> int:
    # collect(n_step=n) collects ceil(n / n_envs) vector steps
    n_envs = _n_envs(workload)
    return n_envs * math.ceil(value / n_envs)


def _gradient_steps_per_sample(value: int, workload: WorkloadLike) -> float:
    # OffPolicyTrainer performs round(u * collected_steps) gradient steps after each collect
    return value / workload.hyperparameters.train_every  # type: ignore[union-attr]


def _target_update_in_updates(_value: int, workload: WorkloadLike) -> int:
    # Tianshou counts target_update_freq in gradient updates, the canonical setting in env steps between env steps
    return gradient_steps_between_target_syncs(workload.hyperparameters)


def _judge_target_update(value: int, workload: WorkloadLike) -> tuple[Fidelity, str]:
    hp = workload.hyperparameters
    updates = gradient_steps_between_target_syncs(hp)
    note = (f"every {updates} gradient updates: gradient_steps x ceil(interval / train_every), the canonical copy "
            "between env steps (of several between two updates only the last counts), so never inside an "
            "update's run of gradient steps; Tianshou counts from the first update")
    whole = hp.train_every % _n_envs(workload) == 0 and (value % hp.train_every == 0 or hp.train_every % value == 0)  # type: ignore[union-attr]
    in_phase = value <= hp.train_every or hp.learning_starts % value == 0  # type: ignore[union-attr]
    if whole and in_phase:
        return Fidelity.EXACT, note
    return Fidelity.APPROXIMATE, note + ("" if whole else "; the interval is not a whole number of updates") + (
        "" if in_phase else "; out of phase with learning_starts")


def _judge_minibatch(value: int, workload: WorkloadLike) -> tuple[Fidelity, str]:
    rollout = workload.hyperparameters.rollout_steps * _n_envs(workload)  # type: ignore[union-attr]
    if rollout % value == 0:
        return Fidelity.EXACT, "minibatches are shuffled afresh every epoch"
    return Fidelity.APPROXIMATE, (f"rollout of {rollout} is not a multiple of {value}: Tianshou merges the short "
                                  "last minibatch into the one before (SB3 keeps it as a small minibatch)")


def _judge_buffer(value: int, workload: WorkloadLike) -> tuple[Fidelity, str]:
    n_envs = _n_envs(workload)
    if value % n_envs == 0:
        return Fidelity.EXACT, f"VectorReplayBuffer: {n_envs} sub-buffers of {value // n_envs}"
    return Fidelity.APPROXIMATE, f"VectorReplayBuffer: {n_envs} sub-buffers of ceil({value}/{n_envs})"


def _optimizer_name(value: str, _: WorkloadLike) -> str:
    return {"adam": "AdamOptimizerFactory", "rmsprop": "RMSpropOptimizerFactory"}[value]


def _standardization(value: str, _: WorkloadLike) -> str:
    # the native config says which standardization Tianshou applies; the builder passes a bool
    return "running" if value == "batch" else "none"


def _judge_standardization(value: str, _: WorkloadLike) -> tuple[Fidelity, str]:
    if value == "none":
        return Fidelity.EXACT, "Reinforce(return_standardization=False): the discounted returns as they are"
    return Fidelity.APPROXIMATE, (
        "Tianshou 2.0 standardizes with the running mean and variance of earlier rollouts' returns, "
        "(G - mean) / sqrt(var + 1e-8), updated after use (so its first update sees the raw returns), "
        "not over the rollout's own batch as Tianshou 0.2's rew_norm did")


def _alpha(value: float | str, _: WorkloadLike) -> Any:
    if value == "auto":
        return "AutoAlpha(target_entropy=-dim(A), log_alpha=0.0, optim=AdamOptimizerFactory(lr))"
    return float(value)


_ROLLOUT = Setting("rollout_steps", "trainer.collection_step_num_env_steps", convert=lambda v, w: v * _n_envs(w),
                   note="step_per_collect = rollout_steps x n_envs, so each env steps rollout_steps times")
_ON_POLICY_COMMON = [
    Setting("gamma", "algorithm.gamma"),
    Setting("gae_lambda", "algorithm.gae_lambda"),
    _ROLLOUT,
    Setting("entropy_coef", "algorithm.ent_coef"),
    Setting("value_coef", "algorithm.vf_coef"),
    Setting("max_grad_norm", "algorithm.max_grad_norm", note="one global norm over actor and critic"),
]
_OFF_POLICY_COMMON = [
    Setting("learning_rate", "optim.lr", note="Adam, Tianshou's defaults otherwise (eps 1e-8)"),
    Setting("gamma", "algorithm.gamma"),
    Setting("buffer_size", "buffer.total_size", judge=_judge_buffer),
    Setting("learning_starts", "prefill.n_step", convert=_prefill_steps,
            judge=_divisible_by_envs("uniform random actions via Collector.collect(random=True), no updates")),
    Setting("minibatch_size", "trainer.batch_size"),
    Setting("train_every", "trainer.collection_step_num_env_steps", convert=_per_collect,
            judge=_divisible_by_envs("env steps per collect, each followed by an update step")),
    Setting("gradient_steps", "trainer.update_step_num_gradient_steps_per_sample",
            convert=_gradient_steps_per_sample,
            note="gradient_steps / train_every per collected step, i.e. gradient_steps per collect"),
]

SETTINGS: dict[str, list[Setting]] = {
    "PPO": [
        Setting("learning_rate", "optim.lr", note=f"Adam(eps={ON_POLICY_OPTIM_EPS}) as in SB3 and CleanRL"),
        *_ON_POLICY_COMMON,
        Setting("clip_range", "algorithm.eps_clip", note="policy ratio only; value_clip=False"),
        Setting("minibatch_size", "trainer.batch_size", judge=_judge_minibatch),
        Setting("epochs", "trainer.update_step_num_repetitions"),
        Setting("normalize_advantage", "algorithm.advantage_normalization", note="per minibatch, as canonical"),
    ],
    "A2C": [
        Setting("learning_rate", "optim.lr"),
        Setting("optimizer", "optim.class", convert=_optimizer_name,
                note=f"Adam(eps={ON_POLICY_OPTIM_EPS}) or RMSprop(alpha=0.99, eps={ON_POLICY_OPTIM_EPS}) "
                     "as in SB3; one full-batch gradient step per rollout"),
        *_ON_POLICY_COMMON,
        Setting("normalize_advantage", None,
                judge=only_if(False, "Tianshou's A2C never normalizes advantages")),
    ],
    "PG": [
        Setting("learning_rate", "optim.lr", note="Adam with Tianshou's (and torch's) eps 1e-8, as canonical"),
        Setting("gamma", "algorithm.gamma"),
        _ROLLOUT,
        Setting("return_standardization", "algorithm.return_standardization", convert=_standardization,
                judge=_judge_standardization),
    ],
    "DQN": [
        *_OFF_POLICY_COMMON,
        Setting("target_update_interval", "algorithm.target_update_freq", convert=_target_update_in_updates,
                judge=_judge_target_update),
        Setting("exploration_initial_eps", "exploration.initial_eps",
                note="linear schedule over env steps (collector count), applied with "
                     "policy.set_eps_training before every collect"),
        Setting("exploration_final_eps", "exploration.final_eps"),
        Setting("exploration_fraction", "exploration.fraction", note="share of the env-step budget"),
        Setting("max_grad_norm", "algorithm.max_grad_norm",
                note="Tianshou's DQN builds its optimizer unclipped; a subclass hands max_grad_norm to "
                     "Tianshou's own Algorithm.Optimizer wrapper (global norm over the Q-network)"),
        Setting("double_q", "algorithm.is_double", note="Tianshou's default is True; passed explicitly"),
    ],
    "SAC": [
        *_OFF_POLICY_COMMON,
        Setting("tau", "algorithm.tau", note="Polyak update after every gradient step"),
        Setting("entropy_coef", "algorithm.alpha", convert=_alpha,
                note="'auto': AutoAlpha with target entropy -dim(A) and initial alpha 1.0 as in SB3; "
                     "Tianshou updates alpha after the actor, SB3 before the critics"),
    ],
}


# TD3 and DDPG. Tianshou's actor ends in tanh (max_action 1) and the policy scales its action from
# [-1, 1] to [low, high] (action_scaling, action_bound_method="clip"), so the actor, the critics, the
# replay buffer and both noises all work in the action scaled to [-1, 1]: the canonical noise unit (the
# action range's half-width) needs no conversion. Their parity probe (rlcompare_tianshou.parity_td3)
# is verified: the update itself is the reference one, so no ``defaults.*`` entries are listed; how
# Tianshou departs from SB3's TD3 (and TD3's authors) in what the probe cannot show (noise, delay
# phase) is said in the notes of the settings concerned, which are then approximate.


def _judge_exploration_noise(value: float, _: WorkloadLike) -> tuple[Fidelity, str]:
    note = ("GaussianNoise(mu=0, sigma), added by the collector (exploration_noise=True) to the actor's action "
            "in the action space scaled to [-1, 1] before Tianshou clips it to [-1, 1] and scales it to "
            "[low, high]: sigma is already in units of the half-width, no conversion (in env units its std is "
            "sigma x (high - low) / 2); no noise on the random actions of the learning_starts pre-fill")
    if value == 0:
        return Fidelity.EXACT, note
    return Fidelity.APPROXIMATE, (note + "; the replay buffer keeps the noisy action *unclipped* (the env gets it "
                                  "clipped), where SB3 and TD3's authors store the clipped action: the critics "
                                  "also learn on actions beyond [-1, 1]")


def _target_noise(value: float, workload: WorkloadLike) -> float:
    # Tianshou reads noise_clip <= 0 as "no clip", where a canonical clip of 0 leaves no noise at all
    return 0.0 if workload.hyperparameters.target_noise_clip == 0 else float(value)  # type: ignore[union-attr]


def _judge_target_noise(value: float, workload: WorkloadLike) -> tuple[Fidelity, str]:
    clip = workload.hyperparameters.target_noise_clip  # type: ignore[union-attr]
    if value == 0 or clip == 0:
        return Fidelity.EXACT, ("no smoothing noise (canonically none reaches the target action"
                                + (": its clip is 0); policy_noise 0" if clip == 0 and value != 0 else ")")
                                + ", so the target action is the target actor's own, inside [-1, 1]")
    return Fidelity.APPROXIMATE, ("N(0, policy_noise) on the target actor's action in the space scaled to [-1, 1] "
                                  "(the canonical unit, no conversion), clipped to +-noise_clip; but Tianshou does not "
                                  "clamp the smoothed target action to [-1, 1] as SB3 and TD3's authors do, so the "
                                  "target critics may be evaluated beyond the action range")


def _judge_noise_clip(value: float, workload: WorkloadLike) -> tuple[Fidelity, str]:
    if value == 0:
        return Fidelity.EXACT, ("Tianshou reads noise_clip 0 as 'no clip'; a canonical clip of 0 leaves no noise, "
                                "so policy_noise is passed as 0 (see target_policy_noise)")
    return Fidelity.EXACT, "the smoothing noise is clamped to +-noise_clip in the action scaled to [-1, 1], as canonical"


def _judge_policy_delay(value: int, _: WorkloadLike) -> tuple[Fidelity, str]:
    note = ("Tianshou counts critic gradient steps over the whole run (TD3._cnt) and steps the actor, then moves "
            "all targets by one Polyak step, every update_actor_freq-th of them")
    if value == 1:
        return Fidelity.EXACT, note + "; with 1, after every critic step"
    return Fidelity.APPROXIMATE, (note + f", but from the first: after critic steps 1, {value + 1}, "
                                  f"{2 * value + 1}, ... where the canonical schedule (TD3's authors, SB3) has "
                                  f"{value}, {2 * value}, ...: the same interval, {value - 1} critic step(s) earlier")


_DETERMINISTIC_COMMON = [
    *_OFF_POLICY_COMMON,
    Setting("exploration_noise", "policy.exploration_noise", judge=_judge_exploration_noise),
]
SETTINGS["TD3"] = [
    *_DETERMINISTIC_COMMON,
    Setting("tau", "algorithm.tau",
            note="one Polyak step of the target actor and both target critics with every actor step"),
    Setting("policy_delay", "algorithm.update_actor_freq", judge=_judge_policy_delay),
    Setting("target_policy_noise", "algorithm.policy_noise", convert=_target_noise, judge=_judge_target_noise),
    Setting("target_noise_clip", "algorithm.noise_clip", judge=_judge_noise_clip),
]
SETTINGS["DDPG"] = [
    *_DETERMINISTIC_COMMON,
    Setting("tau", "algorithm.tau",
            note="one Polyak step of the target actor and critic after every gradient step (critic, then actor)"),
]


#: How Tianshou's SAC update departs from the canonical one, as its parity probe measured them
#: (``rlcompare parity --adapters tianshou``; tianshou/algorithm/modelfree/ddpg.py and sac.py).
SAC_DEPARTURES = (
    entry("defaults.critic_loss_scale", 0.5, Fidelity.APPROXIMATE, "_minimize_critic_squared_loss", 1.0,
          "each critic's loss is mean((Q_i - y)^2) with its own optimizer, without the factor 1/2: its "
          "gradient is twice the canonical one (Adam's step barely changes)"),
    entry("defaults.squash_correction_eps", 1e-6, Fidelity.APPROXIMATE, "correct_log_prob_gaussian_tanh",
          1.1920928955078125e-07, "the tanh correction adds np.finfo(np.float32).eps, not 1e-6"),
)


# -------------------------------------------------------------------------------------------------
# the adapter
# -------------------------------------------------------------------------------------------------


class TianshouAdapter(Adapter):
    id = "tianshou"
    framework = "tianshou"
    summary = ("Tianshou 2.0: PPO, A2C, PG, DQN (discrete), SAC, TD3, DDPG (continuous); "
               "DummyVectorEnv / SubprocVectorEnv")
    import_name = "tianshou"
    distributions = ("tianshou", "torch")

    def capabilities(self) -> Capabilities:
        return Capabilities(
            algorithms=frozenset(SETTINGS),
            action_spaces=frozenset({"discrete", "continuous"}),
            vectorized_envs=True,
            rollout_workers=True,
            modes=frozenset({"sync"}),
            algorithm_action_spaces={name: frozenset({space}) for name, space in ACTION_SPACES.items()},
        )

    # -- translation -------------------------------------------------------------------------------

    def native_config(self, workload: WorkloadLike) -> tuple[dict[str, dict[str, Any]], list[FidelityEntry]]:
        """Native settings grouped by component (algorithm, trainer, optim, ...) and the fidelity entries."""
        flat, entries = map_settings(workload, SETTINGS[workload.algorithm])
        config: dict[str, dict[str, Any]] = {}
        for name, value in flat.items():
            component, keyword = name.split(".", 1)
            config.setdefault(component, {})[keyword] = value
        fixed, _why = _fixed_choices(workload.algorithm)  # the native config; no fidelity entry (not canonical)
        config.setdefault("algorithm", {}).update(fixed)
        if workload.algorithm in ("A2C", "PG"):
            # one full-batch gradient step per rollout, as A2C and PG are defined
            config.setdefault("trainer", {}).update(batch_size=None, update_step_num_repetitions=1)
        if workload.algorithm in DETERMINISTIC:
            # the actor's tanh output is in [-1, 1]: the policy clips and scales it to [low, high] for the env
            config["policy"].update(action_scaling=True, action_bound_method="clip")
        config["optim"].setdefault("class", "AdamOptimizerFactory")
        if workload.algorithm in ("PPO", "A2C"):
            config["optim"]["eps"] = ON_POLICY_OPTIM_EPS
            if config["optim"]["class"] == "RMSpropOptimizerFactory":
                config["optim"]["alpha"] = 0.99
        net = workload.network
        hidden = list(net.hidden_sizes)
        activation = f"torch.nn.{ACTIVATIONS[net.activation]}"
        shapes = _network_shapes(workload.algorithm, hidden)
        config["network"] = {"hidden_sizes": hidden, "activation": activation, "layout": shapes}
        if workload.algorithm == "DQN":
            init_note = "one Q-network and its target copy; PyTorch's default weight initialisation"
        else:
            init_note = "separate networks, no shared layers; PyTorch's default weight initialisation"
        if workload.algorithm == "PG":
            init_note = "one policy network, no value network; PyTorch's default weight initialisation"
        elif workload.algorithm in ON_POLICY:
            init_note += " (SB3 uses orthogonal initialisation for PPO/A2C)"
        entries.append(entry("network.hidden_sizes", hidden, Fidelity.EXACT, "Net(hidden_sizes)", shapes, init_note))
        entries.append(entry("network.activation", net.activation, Fidelity.EXACT, "Net(activation)", activation))
        venv, venv_entries = _parallelism(workload)
        config["venv"] = venv
        entries.extend(venv_entries)
        return config, apply_native_settings(workload, config, entries)

    def recommended_settings(self, env: str, algorithm: str) -> Recommendation | None:
        """Tianshou's own test script for the family and environment (:mod:`rlcompare_tianshou.examples`)."""
        from rlcompare_tianshou.examples import recommendation

        return recommendation(env, algorithm)

    def fidelity(self, workload: WorkloadLike) -> list[FidelityEntry]:
        entries = self.native_config(workload)[1]
        return [*entries, *SAC_DEPARTURES] if workload.algorithm == "SAC" else entries

    # -- training ----------------------------------------------------------------------------------

    def train(self, workload: WorkloadLike, context: TrainingContext) -> TrainingResult:
        config, _ = self.native_config(workload)
        setup = build(workload, config, context.env_factories(), context.seed)
        trace_schedule(setup, context)
        return train_with_setup(setup, context)

    # -- parity ------------------------------------------------------------------------------------

    def parity_update(self, probe: ParityProbe) -> ParityOutcome:
        """Tianshou's own buffer, targets and ``update`` on the probe (:mod:`rlcompare_tianshou.parity`)."""
        import importlib

        module, _, function = PARITY_UPDATES.get(probe.family, ":").partition(":")
        try:
            update = getattr(importlib.import_module(module), function, None) if module else None
        except ModuleNotFoundError:
            update = None
        if update is None:
            return ParityOutcome.unverifiable(f"no {probe.family} probe is implemented for Tianshou")
        return update(self, probe)


@hookimpl
def rlcompare_register_adapters(register: Register) -> None:
    register.add_adapter(TianshouAdapter)


def apply_native_settings(workload: WorkloadLike, config: dict[str, dict[str, Any]],
                          entries: list[FidelityEntry]) -> list[FidelityEntry]:
    """The native arm's settings (``workload.native``, from :meth:`TianshouAdapter.recommended_settings`) into
    the config, each with a fidelity entry (:func:`rlcompare.harness.fidelity.apply_native_settings`). The
    actor's and alpha's own optimizers copy the main one's settings before their own key."""
    from rlcompare_tianshou.examples import NATIVE_SETTINGS

    def put(setting: NativeSetting, _key: str, value: Any) -> None:
        component, keyword = setting.target.split(".", 1)
        if component in ("actor_optim", "alpha_optim"):
            config[component] = {**config["optim"], keyword: value}
        else:
            config.setdefault(component, {})[keyword] = value

    return apply_native(workload, entries, lambda key, _value: NATIVE_SETTINGS.get(key), put, "Tianshou")


def _fixed_choices(algorithm: str) -> tuple[dict[str, Any], str]:
    """Tianshou keywords with no canonical counterpart, pinned to the canonical (SB3-style) semantics."""
    if algorithm == "PPO":
        return ({"value_clip": False, "dual_clip": None, "recompute_advantage": False, "return_scaling": False},
                "clipped surrogate only: no value clipping, no dual clip, advantages computed once per "
                "rollout, no return scaling; GAE bootstraps on truncation")
    if algorithm == "A2C":
        return {"return_scaling": False}, "no return scaling; GAE bootstraps on truncation"
    if algorithm == "PG":
        return {}, "Monte Carlo returns (gae_lambda 1, no value network)"
    if algorithm == "DQN":
        return ({"huber_loss_delta": DQN_HUBER_DELTA, "n_step_return_horizon": 1},
                "Huber TD loss (delta 1) as in Nature DQN and SB3; 1-step targets")
    if algorithm == "TD3":
        return ({"n_step_return_horizon": 1},
                "two critics, each its own MSE loss and Adam (the gradient of SB3's summed loss), a tanh "
                "deterministic actor trained on the first critic; Polyak targets; 1-step targets")
    if algorithm == "DDPG":
        return ({"n_step_return_horizon": 1},
                "one critic (MSE loss), a tanh deterministic actor, Polyak targets; 1-step targets")
    return ({"n_step_return_horizon": 1},
            "two critics with Polyak targets, tanh-squashed Gaussian actor; 1-step targets")


def _network_shapes(algorithm: str, hidden: list[int]) -> dict[str, list[int]]:
    if algorithm == "PG":
        return {"actor": hidden}
    if algorithm in ON_POLICY:
        return {"actor": hidden, "critic": hidden}
    if algorithm in ("SAC", "TD3"):
        return {"actor": hidden, "critic1": hidden, "critic2": hidden}
    if algorithm == "DDPG":
        return {"actor": hidden, "critic": hidden}
    return {"q": hidden}


def _parallelism(workload: WorkloadLike) -> tuple[dict[str, Any], list[FidelityEntry]]:
    par = workload.parallelism
    n_envs = par.total_envs
    venv = {"class": "DummyVectorEnv" if par.workers == 1 else "SubprocVectorEnv", "n_envs": n_envs}
    entries = vector_env_fidelity(workload, "DummyVectorEnv", "SubprocVectorEnv", "SubprocVectorEnv(env_fns)")
    entries.append(entry("parallelism.mode", par.mode if par.workers == 1 else "sync", Fidelity.EXACT, "Collector",
                         "sync"))
    return venv, entries


# -------------------------------------------------------------------------------------------------
# the builder, shared by the adapter and the overhead benchmark's direct baseline
# -------------------------------------------------------------------------------------------------


@dataclass
class TianshouSetup:
    """Everything built for one training run; :meth:`run` trains, :attr:`env_steps` is Tianshou's count."""

    workload: WorkloadLike
    algorithm: Any
    collector: Any
    trainer_params: dict[str, Any]
    prefill_steps: int
    epsilon: Callable[[int], float] | None
    native: dict[str, Any] = field(default_factory=dict)
    #: The warm-up's actions: uniform random (canonical), or the exploring policy's (a native setting).
    prefill_with_policy: bool = False

    @property
    def policy(self) -> Any:
        return self.algorithm.policy

    @property
    def env_steps(self) -> int:
        """Env steps as Tianshou counts them: every step the training collector collected."""
        return int(self.collector.collect_step)

    def run(self, on_collect: Callable[[int], None]) -> None:
        """Train for the workload's budget; ``on_collect(steps)`` runs before every collect."""
        from tianshou.trainer import OffPolicyTrainerParams, OnPolicyTrainerParams

        budget = self.workload.env_steps
        on_collect(self.env_steps)
        if self.prefill_steps and not self.prefill_with_policy:
            # off-policy warm-up: uniform random actions, no updates (SB3's learning_starts)
            self.collector.collect(n_step=min(self.prefill_steps, budget), random=True)
        elif self.prefill_steps:  # the native arm's warm-up by the exploring policy, no updates
            from tianshou.utils.torch_utils import policy_within_training_step

            with policy_within_training_step(self.policy):
                self.collector.collect(n_step=min(self.prefill_steps, budget))
        remaining = budget - self.env_steps
        if remaining <= 0:
            return

        def training_fn(_epoch: int, _trainer_step: int) -> None:
            steps = self.env_steps
            if self.epsilon is not None:
                self.policy.set_eps_training(self.epsilon(steps))
            on_collect(steps)

        params_class = OnPolicyTrainerParams if self.workload.algorithm in ON_POLICY else OffPolicyTrainerParams
        params = params_class(
            training_collector=self.collector,
            test_collector=None,  # the harness evaluates, on its own environments
            max_epochs=1,
            epoch_num_steps=remaining,  # Tianshou stops after the collect that reaches it
            training_fn=training_fn,
            verbose=False,
            show_progress=False,
            **self.trainer_params,
        )
        # the collector was reset (and possibly pre-filled) already: keep its episodes and counts
        self.algorithm.create_trainer(params).run(reset_collectors=False)

    def policy_fn(self, deterministic: bool) -> Callable[[np.ndarray], np.ndarray]:
        """A batch-observations -> batch-actions numpy callable over the live policy."""
        import numpy as np
        import torch
        from tianshou.data import Batch, to_numpy
        from tianshou.utils.torch_utils import policy_within_training_step, torch_train_mode

        policy = self.policy
        # PPO/A2C/SAC: the distribution's mode when deterministic, a sample otherwise
        if hasattr(policy, "deterministic_eval"):
            policy.deterministic_eval = deterministic
        epsilon_greedy = hasattr(policy, "set_eps_inference")

        def act(observations: np.ndarray) -> np.ndarray:
            batch = Batch(obs=np.asarray(observations), info=None)
            with torch.no_grad(), policy_within_training_step(policy, enabled=False), \
                    torch_train_mode(policy, enabled=False):
                actions = to_numpy(policy(batch).act)
                if epsilon_greedy:
                    # DQN: greedy when deterministic, else epsilon-greedy at the current training epsilon
                    # (what SB3's DQN.predict does)
                    policy.set_eps_inference(0.0 if deterministic else policy.eps_training)
                    actions = policy.add_exploration_noise(actions, batch)
                return np.asarray(policy.map_action(actions))

        return act

    def close(self) -> None:
        if not self.collector.env.is_closed:
            self.collector.env.close()


def cache_compiled_helpers() -> str | None:
    """Keep the compiled code of Tianshou's numba helpers in the folder ``RLCOMPARE_NUMBA_CACHE`` names,
    and return it (None when the variable is unset, and nothing changes).

    Tianshou compiles its ``@njit`` helpers (buffer indexing, GAE, n-step returns, the segment tree)
    in every process that builds a buffer or an algorithm: 8 to 12 s of one CPU here, part of the
    run's start-up. Numba's own on-disk cache, switched on for those functions, compiles them once and
    later processes load them in under a second. Off by default, so that start-up measures what a
    Tianshou user pays; the test suite switches it on, and a run records the folder in its native
    configuration (``numba_cache``), so a start-up figure says which it is."""
    folder = os.environ.get(NUMBA_CACHE_ENV)
    if not folder:
        return None
    import importlib

    import numba
    from numba.core.caching import NullCache
    from numba.core.dispatcher import Dispatcher

    numba.config.CACHE_DIR = folder  # read when each function's cache is made
    for name in NUMBA_MODULES:
        module = importlib.import_module(name)
        for value in vars(module).values():
            if (isinstance(value, Dispatcher) and value.py_func.__module__ == name
                    and isinstance(value._cache, NullCache)):  # not yet switched on in this process
                value.enable_caching()
    return folder


def build(workload: WorkloadLike, config: dict[str, dict[str, Any]], env_fns: Sequence[Callable[[], Any]],
          seed: int) -> TianshouSetup:
    """Build networks, algorithm, vector env and collector for ``workload`` as ``config`` says."""
    numba_cache = cache_compiled_helpers()
    import numpy as np
    import torch
    from tianshou.data import Collector, VectorReplayBuffer
    from tianshou.env import DummyVectorEnv, SubprocVectorEnv

    random.seed(seed)
    np.random.seed(seed)  # Tianshou draws epsilon-greedy actions and replay samples from numpy's global RNG
    torch.manual_seed(seed)

    venv_config = config["venv"]
    if venv_config["class"] == "DummyVectorEnv":
        venv = DummyVectorEnv(list(env_fns))
    else:
        venv = SubprocVectorEnv(list(env_fns))
    # seed before the collector copies the action spaces (random pre-fill samples from those copies)
    venv.seed(seed)  # env i gets seed + i, as SB3 does
    observation_space = venv.observation_space[0]
    action_space = venv.action_space[0]
    n_envs = len(venv)

    algorithm_kwargs = dict(config["algorithm"])
    trainer_params = dict(config["trainer"])
    epsilon = None
    prefill = 0
    if workload.algorithm in ON_POLICY:
        algorithm = _build_on_policy(workload, config, algorithm_kwargs, observation_space, action_space)
        # emptied after every update; each env's sub-buffer holds exactly its rollout_steps
        buffer = VectorReplayBuffer(trainer_params["collection_step_num_env_steps"], n_envs)
        exploration_noise = False
    else:
        buffer_size = config["buffer"]["total_size"]
        buffer = VectorReplayBuffer(buffer_size, n_envs)
        prefill = config["prefill"]["n_step"]
        if workload.algorithm == "DQN":
            algorithm = _build_dqn(workload, config, algorithm_kwargs, observation_space, action_space)
            epsilon = (_piecewise_epsilon(config["exploration"]["schedule"]) if "schedule" in config["exploration"]
                       else _linear_epsilon(config["exploration"], workload.env_steps))
            algorithm.policy.set_eps_training(epsilon(0))
            exploration_noise = True  # epsilon-greedy is applied by the collector
        elif workload.algorithm in DETERMINISTIC:
            algorithm = _build_deterministic(workload, config, algorithm_kwargs, observation_space, action_space)
            exploration_noise = True  # the collector adds the policy's GaussianNoise to every action
        else:
            algorithm = _build_sac(workload, config, algorithm_kwargs, observation_space, action_space)
            exploration_noise = False  # SAC explores by sampling its own Gaussian
    collector = Collector(algorithm, venv, buffer, exploration_noise=exploration_noise)
    collector.reset()
    native = {
        "class": f"tianshou.algorithm.{workload.algorithm}",
        **{key: value for key, value in config.items() if key != "algorithm"},
        "algorithm": {key: _plain(value) for key, value in algorithm_kwargs.items()},
        "buffer": {"class": "VectorReplayBuffer", "total_size": buffer.maxsize, "buffer_num": n_envs},
        "collector_exploration_noise": exploration_noise,
        "numba_cache": numba_cache,
    }
    return TianshouSetup(workload, algorithm, collector, trainer_params, prefill, epsilon, native,
                         prefill_with_policy=bool(config.get("prefill", {}).get("with_policy", False)))


def trace_schedule(setup: TianshouSetup, context: TrainingContext) -> None:
    """Report the schedule Tianshou follows to ``context.trace``, by wrapping the built objects' own
    methods (a function call and a few integer operations per event):

    - ``gradient_step``: the step of ``Algorithm.Optimizer`` of the main loss (A2C/PPO: ``optim``,
      actor and critic together; DQN: ``optim``; SAC, TD3, DDPG: ``critic_optim``, the first
      critic's, once per ``_update_with_batch``);
    - ``target_sync``: ``_update_lagged_network_weights`` (DQN: the full copy, which
      ``_periodically_update_lagged_network_weights`` calls every ``target_update_freq`` updates
      counted from the first; SAC, DDPG: the Polyak step after every gradient step; TD3: the Polyak
      step of all targets after each actor step, every ``update_actor_freq``-th critic step);
    - ``exploration``: DQN's ``policy.set_eps_training``, which the trainer's ``training_fn`` calls
      before every collect, with the epsilon set (and the initial one when training starts);
    - ``update``: the first ``Algorithm.update`` after a collect (on-policy Tianshou calls it once per
      rollout; off-policy once per gradient step, all of them after the same collect).
    """
    algorithm, collector, trace = setup.algorithm, setup.collector, context.trace
    main = algorithm.critic_optim if setup.workload.algorithm in ACTOR_CRITIC_OFF_POLICY else algorithm.optim
    optimizer_step = main.step

    def traced_step(*args: Any, **kwargs: Any) -> Any:
        result = optimizer_step(*args, **kwargs)
        trace("gradient_step")
        return result

    main.step = traced_step
    update = algorithm.update
    last_collect = [-1]

    def traced_update(*args: Any, **kwargs: Any) -> Any:
        if collector.collect_step != last_collect[0]:
            last_collect[0] = collector.collect_step
            trace("update")
        return update(*args, **kwargs)

    algorithm.update = traced_update
    if hasattr(algorithm, "_lagged_networks"):
        sync = algorithm._update_lagged_network_weights

        def traced_sync() -> None:
            sync()
            trace("target_sync")

        algorithm._update_lagged_network_weights = traced_sync
    if setup.epsilon is not None:
        policy = algorithm.policy
        set_eps = policy.set_eps_training

        def traced_set_eps(eps: float) -> None:
            set_eps(eps)
            trace("exploration", value=float(eps))

        policy.set_eps_training = traced_set_eps
        trace("exploration", value=float(policy.eps_training))


def _plain(value: Any) -> Any:
    return value if value is None or isinstance(value, (bool, int, float, str)) else repr(value)


def _linear_epsilon(schedule: dict[str, Any], budget: int) -> Callable[[int], float]:
    start, end = float(schedule["initial_eps"]), float(schedule["final_eps"])
    decay_steps = schedule["fraction"] * budget

    def epsilon(env_steps: int) -> float:
        # SB3's linear schedule: from start to end over the first fraction of the budget, then flat
        return end if env_steps >= decay_steps else start + (end - start) * env_steps / decay_steps

    return epsilon


def _piecewise_epsilon(points: Sequence[Sequence[float]]) -> Callable[[int], float]:
    """Epsilon linear between ``(env steps, eps)`` points, flat before the first and after the last."""
    import numpy as np

    steps = [float(point[0]) for point in points]
    values = [float(point[1]) for point in points]

    def epsilon(env_steps: int) -> float:
        return float(np.interp(env_steps, steps, values))

    return epsilon


def _activation(workload: WorkloadLike) -> Any:
    import torch

    return getattr(torch.nn, ACTIVATIONS[workload.network.activation])


def _optim_factory(config: dict[str, dict[str, Any]], component: str = "optim") -> Any:
    """The optimizer ``config[component]`` describes (``actor_optim``, ``alpha_optim``: the native arm's own
    step sizes; absent, the shared ``optim``)."""
    from tianshou.algorithm.optim import AdamOptimizerFactory, RMSpropOptimizerFactory

    optim = dict(config.get(component) or config["optim"])
    name = optim.pop("class")
    factory_class = RMSpropOptimizerFactory if name == "RMSpropOptimizerFactory" else AdamOptimizerFactory
    return factory_class(**optim)


def _build_on_policy(workload: WorkloadLike, config: dict[str, dict[str, Any]], kwargs: dict[str, Any],
                     observation_space: Any, action_space: Any) -> Any:
    from tianshou.algorithm import A2C, PPO
    from tianshou.algorithm.modelfree.reinforce import DiscreteActorPolicy
    from tianshou.utils.net.common import Net
    from tianshou.utils.net.discrete import DiscreteActor, DiscreteCritic

    hidden = workload.network.hidden_sizes
    activation = _activation(workload)
    obs_shape = observation_space.shape
    actor = DiscreteActor(
        preprocess_net=Net(state_shape=obs_shape, hidden_sizes=hidden, activation=activation),
        action_shape=int(action_space.n),
        softmax_output=False,  # logits, for the default Categorical(logits=...) distribution
    )
    policy = DiscreteActorPolicy(actor=actor, action_space=action_space, observation_space=observation_space,
                                 deterministic_eval=True)
    if workload.algorithm == "PG":
        from tianshou.algorithm import Reinforce

        pg_kwargs = {**kwargs, "return_standardization": kwargs.get("return_standardization") == "running"}
        return Reinforce(policy=policy, optim=_optim_factory(config), **pg_kwargs)
    network = config["network"]
    trunk = actor.preprocess if network.get("shared") else Net(state_shape=obs_shape, hidden_sizes=hidden,
                                                                  activation=activation)
    critic = DiscreteCritic(preprocess_net=trunk)
    if network.get("orthogonal_init"):
        import torch

        for module in (*actor.modules(), *critic.modules()):
            if isinstance(module, torch.nn.Linear):
                torch.nn.init.orthogonal_(module.weight)
                torch.nn.init.zeros_(module.bias)
    algorithm_class = PPO if workload.algorithm == "PPO" else A2C
    return algorithm_class(policy=policy, critic=critic, optim=_optim_factory(config), **kwargs)


def _build_dqn(workload: WorkloadLike, config: dict[str, dict[str, Any]], kwargs: dict[str, Any],
               observation_space: Any, action_space: Any) -> Any:
    from tianshou.algorithm.modelfree.dqn import DiscreteQLearningPolicy
    from tianshou.utils.net.common import Net

    model = Net(state_shape=observation_space.shape, action_shape=int(action_space.n),
                hidden_sizes=workload.network.hidden_sizes, activation=_activation(workload))
    policy = DiscreteQLearningPolicy(model=model, action_space=action_space, observation_space=observation_space)
    kwargs = dict(kwargs)
    max_grad_norm = kwargs.pop("max_grad_norm")
    if max_grad_norm is None:  # the native arm: Tianshou's DQN as it is, unclipped
        from tianshou.algorithm import DQN

        return DQN(policy=policy, optim=_optim_factory(config), **kwargs)
    return _clipped_dqn_class(max_grad_norm)(policy=policy, optim=_optim_factory(config), **kwargs)


def _clipped_dqn_class(max_grad_norm: float) -> type:
    from tianshou.algorithm import DQN

    class ClippedDQN(DQN):
        """Tianshou's DQN whose optimizer clips the global gradient norm (Tianshou's own clipping,
        which its DQN does not switch on)."""

        def _create_policy_optimizer(self, optim: Any) -> Any:
            return self._create_optimizer(self.policy, optim, max_grad_norm=max_grad_norm)

    return ClippedDQN


def _build_sac(workload: WorkloadLike, config: dict[str, dict[str, Any]], kwargs: dict[str, Any],
               observation_space: Any, action_space: Any) -> Any:
    import numpy as np
    from tianshou.algorithm import SAC
    from tianshou.algorithm.modelfree.sac import AutoAlpha, SACPolicy
    from tianshou.utils.net.common import Net
    from tianshou.utils.net.continuous import ContinuousActorProbabilistic

    hidden = workload.network.hidden_sizes
    activation = _activation(workload)
    obs_shape, act_shape = observation_space.shape, action_space.shape
    actor = ContinuousActorProbabilistic(
        preprocess_net=Net(state_shape=obs_shape, hidden_sizes=hidden, activation=activation),
        action_shape=act_shape,
        unbounded=True,  # SAC squashes with tanh itself
        # state-dependent log-std, clamped to [-20, 2] as in SB3 (the native arm may say otherwise)
        conditioned_sigma=bool(config.get("actor", {}).get("conditioned_sigma", True)),
    )

    def critic() -> Any:
        return _concat_critic(workload, obs_shape, act_shape)

    policy = SACPolicy(actor=actor, action_space=action_space, observation_space=observation_space,
                       deterministic_eval=True)
    kwargs = dict(kwargs)
    optim = _optim_factory(config)
    if isinstance(kwargs["alpha"], str):  # 'auto', spelled out by _alpha for the report
        kwargs["alpha"] = AutoAlpha(target_entropy=-float(np.prod(act_shape)), log_alpha=0.0,
                                    optim=_optim_factory(config, "alpha_optim"))
    return SAC(policy=policy, policy_optim=optim, critic=critic(), critic_optim=optim, critic2=critic(),
               critic2_optim=optim, **kwargs)


def _concat_critic(workload: WorkloadLike, obs_shape: Any, act_shape: Any) -> Any:
    """A Q(s, a) critic of the workload's network on the observation concatenated with the action
    (SAC's, TD3's and DDPG's)."""
    from tianshou.utils.net.common import Net
    from tianshou.utils.net.continuous import ContinuousCritic

    return ContinuousCritic(preprocess_net=Net(state_shape=obs_shape, action_shape=act_shape,
                                               hidden_sizes=workload.network.hidden_sizes,
                                               activation=_activation(workload), concat=True))


def _build_deterministic(workload: WorkloadLike, config: dict[str, dict[str, Any]], kwargs: dict[str, Any],
                         observation_space: Any, action_space: Any) -> Any:
    """Tianshou's TD3 or DDPG: a tanh deterministic actor, one critic (DDPG) or two (TD3), Gaussian
    exploration noise on the action scaled to [-1, 1]."""
    import numpy as np
    from tianshou.algorithm import DDPG, TD3
    from tianshou.algorithm.modelfree.ddpg import ContinuousDeterministicPolicy
    from tianshou.exploration import GaussianNoise
    from tianshou.utils.net.common import Net
    from tianshou.utils.net.continuous import ContinuousActorDeterministic

    hidden = workload.network.hidden_sizes
    activation = _activation(workload)
    obs_shape, act_shape = observation_space.shape, action_space.shape
    actor = ContinuousActorDeterministic(
        preprocess_net=Net(state_shape=obs_shape, hidden_sizes=hidden, activation=activation),
        action_shape=act_shape,
        # tanh output in [-1, 1]; the policy scales it to [low, high] (as SB3's actor). The native arm may
        # scale it to the env's bound first, as Tianshou's scripts do (the policy then clips it to [-1, 1])
        max_action=(float(np.max(action_space.high)) if config["policy"].get("actor_max_action") == "env" else 1.0),
    )

    def critic() -> Any:
        return _concat_critic(workload, obs_shape, act_shape)

    policy_config = config["policy"]
    policy = ContinuousDeterministicPolicy(
        actor=actor, exploration_noise=GaussianNoise(mu=0.0, sigma=float(policy_config["exploration_noise"])),
        action_space=action_space, observation_space=observation_space,
        action_scaling=policy_config["action_scaling"], action_bound_method=policy_config["action_bound_method"])
    optim, actor_optim = _optim_factory(config), _optim_factory(config, "actor_optim")
    if workload.algorithm == "TD3":
        return TD3(policy=policy, policy_optim=actor_optim, critic=critic(), critic_optim=optim, critic2=critic(),
                   critic2_optim=optim, **kwargs)
    return DDPG(policy=policy, policy_optim=actor_optim, critic=critic(), critic_optim=optim, **kwargs)
