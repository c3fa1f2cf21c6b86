"""SBX adapter: Stable-Baselines3's algorithms in JAX (PPO, DQN, SAC, TD3, DDPG), on SB3's own vectorized
environments.

SBX (``sbx-rl``) subclasses SB3's ``OnPolicyAlgorithm`` and ``OffPolicyAlgorithm``: the rollout loop, the
buffers (SB3's ``RolloutBuffer`` and ``ReplayBuffer``, GAE included), the exploration schedule, the
train-frequency logic and the vectorized environments are SB3's own code; the networks are Flax modules,
the optimizers Optax transformations and the losses jitted JAX functions. So this adapter keeps the SB3
adapter's mapping wherever SBX runs SB3's code, and marks where SBX's JAX side departs from it (read in
SBX's source, ``sbx/<algo>/<algo>.py`` and ``sbx/<algo>/policies.py``, and measured by the parity
probes):

- **PPO** (``sbx/ppo/ppo.py`` ``_one_update``): actor and critic are two networks with two Optax chains
  (``sbx/ppo/policies.py`` ``build``), each ``clip_by_global_norm(max_grad_norm)`` then Adam (eps 1e-5):
  the gradient norm is clipped per network, not jointly; advantages are normalized per minibatch with
  ``advantages.std()``, JAX's biased standard deviation. Flax's default initialization (LeCun-normal
  kernels, zero biases; ``ortho_init=False``), not SB3's orthogonal one.
- **DQN** (``sbx/dqn``): ``optax.adam`` without any gradient clipping; ``QNetwork`` has exactly two
  hidden layers of ``net_arch[0]`` units; otherwise SB3's target copy, Huber loss and epsilon schedule.
- **SAC** (``sbx/sac``): log-probabilities through TensorFlow Probability's ``Tanh`` bijector, whose
  log-det-Jacobian is exact (no ``1e-6`` inside the logarithm as SB3 has); the temperature steps after
  the actor (on the same sample, so the same loss as SB3's order).
- **TD3, DDPG** (``sbx/td3/td3.py`` ``_train``): critic loss ``0.5 * sum_i mean((Q_i - y)^2)``; the
  actor's loss uses ``min_i Q_i`` (TD3), not the first critic; every critic step is followed by a Polyak
  step of the target critics *and* the target actor, before and regardless of the (delayed) actor step.
  SBX's DDPG gives its critic ``qf_learning_rate=1e-3`` unless told otherwise: the adapter passes the
  canonical learning rate to both.

Parallelism is SB3's, as in the SB3 adapter: ``workers == 1`` steps ``envs_per_worker`` environments
in-process (DummyVecEnv); ``workers > 1`` uses SubprocVecEnv, one environment per subprocess.

JAX runs on the CPU (``JAX_PLATFORMS=cpu``) with XLA's intra-op thread pool pinned to the workload's
``threads_per_worker`` (``PJRT_NPROC``, :mod:`rlcompare.harness.jax_threads`), set before JAX is imported
(:func:`configure_jax`); JAX's compile time is measured apart (:class:`rlcompare_sbx.training.CompileClock`)
and recorded in the native configuration: in start-up (before ``context.start_training()``), in training,
and in the harness's evaluations (each new batch size compiles SBX's jitted action selection).
"""

from __future__ import annotations

import os
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
    map_settings,
    only_if,
    vector_env_fidelity,
)

if TYPE_CHECKING:
    from rlcompare.adapter import TrainingContext
    from rlcompare.plugins.register import Register

#: The framework's environment: SBX and JAX (CPU only) pinned to releases that install together here,
#: with the main environment's Stable-Baselines3, torch (CPU build), numpy and gymnasium, so that an SBX
#: run and an SB3 run differ by the JAX side alone.
ENVIRONMENT_REQUIRES = (
    "sbx-rl==0.28.0", "jax[cpu]==0.10.2", "jaxlib==0.10.2", "flax==0.12.8", "optax==0.2.8",
    "tfp-nightly==0.26.0.dev20261027", "stable-baselines3==2.9.2", "torch==2.13.0", "gymnasium==1.2.2",
    "numpy==2.4.6",
)


def _per_vec_step(value: int, workload: WorkloadLike) -> int:
    # SB3's OffPolicyAlgorithm (which SBX runs) counts train_freq in calls to VecEnv.step, each stepping every env.
    return max(1, value // workload.parallelism.total_envs)


def _divisible_by_envs(value: int, workload: WorkloadLike) -> tuple[Fidelity, str]:
    envs = workload.parallelism.total_envs
    if value % envs == 0:
        return Fidelity.EXACT, f"train_freq counts vector steps of {envs} envs (SB3's OffPolicyAlgorithm)"
    return Fidelity.APPROXIMATE, f"rounded to a multiple of {envs} envs"


def _judge_grad_clip(_value: float, _workload: WorkloadLike) -> tuple[Fidelity, str]:
    return (Fidelity.APPROXIMATE,
            "optax.clip_by_global_norm(max_grad_norm) in each of SBX's two optimizer chains: the actor's and "
            "the critic's gradients are clipped separately, each to this norm, not jointly (sbx/ppo/policies.py)")


def _judge_advantage_normalization(value: bool, _workload: WorkloadLike) -> tuple[Fidelity, str]:
    if not value:
        return Fidelity.EXACT, "no normalization"
    return (Fidelity.APPROXIMATE,
            "per minibatch, (A - mean) / (std + 1e-8) with jnp's std, the biased one (ddof 0): canonical is the "
            "unbiased std (sbx/ppo/ppo.py _one_update)")


def _ent_coef(value: Any, _workload: WorkloadLike) -> Any:
    # SBX asserts a float for a fixed coefficient (an int 0 would fail); "auto" / "auto_<x>" stay strings
    return value if isinstance(value, str) else float(value)


SETTINGS: dict[str, list[Setting]] = {
    "PPO": [
        Setting("learning_rate", "learning_rate", note="the actor's and the critic's Adam (optax.inject_hyperparams)"),
        Setting("gamma", "gamma"),
        Setting("gae_lambda", "gae_lambda", note="SB3's RolloutBuffer.compute_returns_and_advantage"),
        Setting("rollout_steps", "n_steps", note="per environment, as canonical"),
        Setting("entropy_coef", "ent_coef"),
        Setting("value_coef", "vf_coef", note="vf_coef * mean((R - V)^2), stepped by the critic's own optimizer"),
        Setting("max_grad_norm", "max_grad_norm", judge=_judge_grad_clip),
        Setting("normalize_advantage", "normalize_advantage", judge=_judge_advantage_normalization),
        Setting("clip_range", "clip_range"),
        Setting("minibatch_size", "batch_size"),
        Setting("epochs", "n_epochs"),
    ],
    "DQN": [
        Setting("learning_rate", "learning_rate"),
        Setting("gamma", "gamma"),
        Setting("buffer_size", "buffer_size"),
        Setting("learning_starts", "learning_starts"),
        Setting("minibatch_size", "batch_size"),
        Setting("train_every", "train_freq", convert=_per_vec_step, judge=_divisible_by_envs),
        Setting("gradient_steps", "gradient_steps",
                note="sampled at once (batch_size x gradient_steps) and scanned with jax.lax.scan"),
        Setting("target_update_interval", "target_update_interval",
                note="env steps, as canonical (SBX divides by the number of envs, as SB3)"),
        Setting("exploration_initial_eps", "exploration_initial_eps"),
        Setting("exploration_final_eps", "exploration_final_eps"),
        Setting("exploration_fraction", "exploration_fraction"),
        Setting("max_grad_norm", None, judge=lambda _value, _workload: (
            Fidelity.UNSUPPORTED, "SBX's DQN applies optax.adam without gradient clipping (sbx/dqn/policies.py)")),
        Setting("double_q", None, judge=only_if(False, "SBX's DQN has no double-Q targets")),
    ],
}
#: What SBX's off-policy actor-critics (SAC, TD3, DDPG) share.
_OFF_POLICY_ACTOR_CRITIC = [
    Setting("learning_rate", "learning_rate",
            note="also qf_learning_rate, the critics' Adam (SBX's DDPG would give its critic 1e-3 otherwise)"),
    Setting("gamma", "gamma"),
    Setting("buffer_size", "buffer_size"),
    Setting("learning_starts", "learning_starts"),
    Setting("minibatch_size", "batch_size"),
    Setting("train_every", "train_freq", convert=_per_vec_step, judge=_divisible_by_envs),
    Setting("gradient_steps", "gradient_steps",
            note="sampled at once (batch_size x gradient_steps) and looped with jax.lax.fori_loop"),
]
SETTINGS["SAC"] = [
    *_OFF_POLICY_ACTOR_CRITIC,
    Setting("tau", "tau", note="a Polyak step of the target critics after every critic step"),
    Setting("entropy_coef", "ent_coef", convert=_ent_coef,
            note="'auto': log_ent_coef learned from 1.0, target entropy -dim(A) (sbx/sac/sac.py EntropyCoef)"),
]


def _judge_exploration_noise(value: float, workload: WorkloadLike) -> tuple[Fidelity, str]:
    note = ("SB3's NormalActionNoise(sigma), one draw per env (VectorizedActionNoise with several), added to the "
            "action scaled to [-1, 1], then clipped there (SB3's OffPolicyAlgorithm._sample_action, which SBX runs)")
    if value > 0 and int(workload.hyperparameters.learning_starts) > 0:  # type: ignore[union-attr]
        return Fidelity.APPROXIMATE, (f"{note}; it is added to the warm-up's uniform random actions too "
                                      "(learning_starts env steps), where canonically they carry none")
    return Fidelity.EXACT, note


def _judge_deterministic_tau(_value: float, _workload: WorkloadLike) -> tuple[Fidelity, str]:
    return (Fidelity.APPROXIMATE,
            "a Polyak step of the target critics and the target actor after every critic step, taken before the "
            "actor's step: the target actor follows the actor from before its step (canonical: after it, and only "
            "with the actor's step; sbx/td3/td3.py _train)")


def _judge_policy_delay(value: int, _workload: WorkloadLike) -> tuple[Fidelity, str]:
    note = ("the actor steps after every policy_delay-th critic step (the canonical phase: critic steps d, 2d, ...)")
    if value == 1:
        return Fidelity.EXACT, note
    return Fidelity.APPROXIMATE, (f"{note}, but the target networks move after every critic step, not every "
                                  f"{value}-th with the actor (sbx/td3/td3.py _train)")


_EXPLORATION_NOISE = Setting("exploration_noise", "action_noise", judge=_judge_exploration_noise)
_DETERMINISTIC_COMMON = [
    *_OFF_POLICY_ACTOR_CRITIC,
    Setting("tau", "tau", judge=_judge_deterministic_tau),
    _EXPLORATION_NOISE,
]
SETTINGS["TD3"] = [
    *_DETERMINISTIC_COMMON,
    Setting("policy_delay", "policy_delay", judge=_judge_policy_delay),
    Setting("target_policy_noise", "target_policy_noise", note="on the target action scaled to [-1, 1]"),
    Setting("target_noise_clip", "target_noise_clip"),
]
SETTINGS["DDPG"] = list(_DETERMINISTIC_COMMON)
#: The families whose actor is deterministic (SBX's ``TD3Policy``; DDPG is TD3 with one critic).
_DETERMINISTIC = ("TD3", "DDPG")

#: How SBX's updates depart from the canonical ones (``docs/parity.md``), as read in its source and
#: measured by the parity probes (``rlcompare parity --adapters sbx``). Each entry names the variant's
#: setting with SBX's value as the native value, so the judge tries them.
PPO_DEPARTURES = (
    entry("defaults.grad_clip_scope", "joint", Fidelity.APPROXIMATE, "optax.chain(clip_by_global_norm, adam)",
          "per network", "two optimizer chains, the actor's and the critic's, each clipping its own gradient "
          "(sbx/ppo/policies.py PPOPolicy.build)"),
    entry("defaults.adam_eps", 1e-5, Fidelity.EXACT, "optimizer_kwargs['eps']", 1e-5,
          "optax.adam(eps=1e-5), outside the square root as torch's Adam (sbx/ppo/policies.py)"),
)
#: Only where advantages are normalized (the biased std shows there alone).
PPO_ADVANTAGE_STD = entry("defaults.advantage_std", "unbiased", Fidelity.APPROXIMATE, "jnp.std", "biased",
                          "advantages.std() in sbx/ppo/ppo.py _one_update: ddof 0")
SAC_DEPARTURES = (
    entry("defaults.squash_correction_eps", 1e-6, Fidelity.APPROXIMATE, "tfp.bijectors.Tanh", 0.0,
          "log pi through TensorFlow Probability's Tanh bijector, whose log-det-Jacobian "
          "2 (log 2 - u - softplus(-2u)) is exact: no 1e-6 inside the logarithm (sbx/common/distributions.py)"),
)
_CRITIC_LOSS_HALF = entry("defaults.critic_loss_scale", 1.0, Fidelity.APPROXIMATE, "mse_loss", 0.5,
                          "0.5 * sum_i mean((y - Q_i)^2) (sbx/td3/td3.py update_critic): half the canonical "
                          "gradient")
TD3_DEPARTURES = (
    _CRITIC_LOSS_HALF,
    entry("defaults.actor_q", "Q_1", Fidelity.APPROXIMATE, "jnp.min(qf_pi, axis=0)", "min_i Q_i",
          "the actor maximizes the minimum of the critics, not the first critic (sbx/td3/td3.py update_actor)"),
)
DDPG_DEPARTURES = (_CRITIC_LOSS_HALF,)
DEPARTURES: dict[str, tuple[FidelityEntry, ...]] = {"PPO": PPO_DEPARTURES, "SAC": SAC_DEPARTURES,
                                                    "TD3": TD3_DEPARTURES, "DDPG": DDPG_DEPARTURES}

#: flax.linen's activation functions, by canonical name.
ACTIVATIONS = {"tanh": "tanh", "relu": "relu"}
_INITIALIZATION = ("Flax's default initialization: LeCun-normal kernels, zero biases (SB3: orthogonal, gain sqrt 2 "
                   "on hidden layers)")
#: Where each family's parity probe is answered (``module:function``).
PARITY_UPDATES = {"PPO": "rlcompare_sbx.parity:ppo_update", "DQN": "rlcompare_sbx.parity_off_policy:dqn_update",
                  "SAC": "rlcompare_sbx.parity_off_policy:sac_update",
                  "TD3": "rlcompare_sbx.parity_off_policy:td3_update",
                  "DDPG": "rlcompare_sbx.parity_off_policy:td3_update"}


class SBXAdapter(Adapter):
    id = "sbx"
    framework = "sbx"
    summary = "SBX (Stable-Baselines3 in JAX): PPO, DQN, SAC, TD3, DDPG; SB3's DummyVecEnv / SubprocVecEnv"
    import_name = "sbx"
    distributions = ("sbx-rl", "jax", "jaxlib", "flax", "optax", "tfp-nightly", "stable-baselines3", "torch",
                     "gymnasium", "numpy")
    install_requires = ENVIRONMENT_REQUIRES
    environment_requires = ENVIRONMENT_REQUIRES
    #: JAX stays out of the main environment: SBX always runs in its own.
    requires_isolation = True

    def capabilities(self) -> Capabilities:
        return Capabilities(
            algorithms=frozenset(SETTINGS),
            action_spaces=frozenset({"discrete", "continuous"}),
            vectorized_envs=True,
            rollout_workers=True,
            modes=frozenset({"sync"}),
            algorithm_action_spaces={"DQN": frozenset({"discrete"}), "SAC": frozenset({"continuous"}),
                                     "TD3": frozenset({"continuous"}), "DDPG": frozenset({"continuous"})},
        )

    # -- translation -------------------------------------------------------------------------------

    def native_config(self, workload: WorkloadLike) -> tuple[dict[str, Any], list[FidelityEntry]]:
        algorithm = workload.algorithm
        kwargs, entries = map_settings(workload, SETTINGS[algorithm])
        if algorithm in ("SAC", *_DETERMINISTIC):
            kwargs["qf_learning_rate"] = kwargs["learning_rate"]
        net = workload.network
        hidden = list(net.hidden_sizes)
        activation = f"flax.linen.{ACTIVATIONS[net.activation]}"
        if algorithm == "DQN":
            kwargs["policy_kwargs"], network_entry = _dqn_network(hidden)
        else:
            net_arch = {"pi": hidden, "vf": hidden} if algorithm == "PPO" else {"pi": hidden, "qf": hidden}
            kwargs["policy_kwargs"] = {"net_arch": net_arch}
            network_entry = entry("network.hidden_sizes", hidden, Fidelity.EXACT, "policy_kwargs.net_arch", net_arch,
                                  "separate actor and critic networks; " + _INITIALIZATION)
        kwargs["policy_kwargs"]["activation_fn"] = activation
        entries.append(network_entry)
        entries.append(entry("network.activation", net.activation, Fidelity.EXACT, "policy_kwargs.activation_fn",
                             activation))
        # SB3's vector envs, which SBX trains on
        entries.extend(vector_env_fidelity(workload, "DummyVecEnv", "SubprocVecEnv", "SubprocVecEnv(n_envs)"))
        entries.extend(DEPARTURES.get(algorithm, ()))
        if algorithm == "PPO" and workload.hyperparameters.normalize_advantage:  # type: ignore[union-attr]
            entries.append(PPO_ADVANTAGE_STD)
        return kwargs, entries

    def fidelity(self, workload: WorkloadLike) -> list[FidelityEntry]:
        return self.native_config(workload)[1]

    # -- training ----------------------------------------------------------------------------------

    def build_model(self, workload: WorkloadLike, env: Any, seed: int) -> tuple[Any, dict[str, Any]]:
        """The SBX algorithm for ``workload`` on the vector env ``env``: (model, its keyword arguments)."""
        from rlcompare_sbx.training import build_model

        kwargs, _ = self.native_config(workload)
        return build_model(workload, kwargs, env, seed)

    def train(self, workload: WorkloadLike, context: TrainingContext) -> TrainingResult:
        from rlcompare_sbx.training import train

        return train(self, workload, context)

    # -- parity ------------------------------------------------------------------------------------

    def parity_update(self, probe: ParityProbe) -> ParityOutcome:
        """SBX's own buffers and jitted update on the probe (:mod:`rlcompare_sbx.parity`)."""
        import importlib

        target = PARITY_UPDATES.get(probe.family)
        if target is None:
            return ParityOutcome.unverifiable(f"SBX has no {probe.family} update")
        module, _, function = target.partition(":")
        return getattr(importlib.import_module(module), function)(self, probe)


def _dqn_network(hidden: list[int]) -> tuple[dict[str, Any], FidelityEntry]:
    """SBX's ``QNetwork`` (sbx/dqn/policies.py): always two hidden layers of ``net_arch[0]`` units."""
    note = "SBX's QNetwork: two hidden layers of net_arch[0] units; " + _INITIALIZATION
    if len(hidden) == 2 and hidden[0] == hidden[1]:
        return {"net_arch": hidden}, entry("network.hidden_sizes", hidden, Fidelity.EXACT, "policy_kwargs.net_arch",
                                           hidden, note)
    if hidden:
        return {"net_arch": hidden}, entry("network.hidden_sizes", hidden, Fidelity.APPROXIMATE,
                                           "policy_kwargs.net_arch", [hidden[0], hidden[0]],
                                           f"{note}: builds {[hidden[0], hidden[0]]}")
    return {}, entry("network.hidden_sizes", hidden, Fidelity.UNSUPPORTED, None, None,
                     "SBX's QNetwork always has two hidden layers: its default [256, 256] runs")


def configure_jax(threads: int) -> dict[str, str]:
    """Set JAX's and XLA's environment before JAX is imported: the CPU platform only, and XLA's CPU
    thread pools pinned to ``threads`` (the harness pins torch and BLAS the same way). Returns what was
    set. Without effect once JAX is imported (then the variables only record what was asked)."""
    from rlcompare.harness.jax_threads import thread_environment

    settings = {"JAX_PLATFORMS": "cpu", **thread_environment(threads, os.environ.get("XLA_FLAGS", ""))}
    os.environ.update(settings)
    return settings


@hookimpl
def rlcompare_register_adapters(register: Register) -> None:
    register.add_adapter(SBXAdapter)
