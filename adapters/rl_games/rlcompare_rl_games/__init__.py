"""rl_games 1.6.5 adapter: PPO (``a2c_discrete`` / ``a2c_continuous``, rl_games' PPO agents) and SAC
(``sac``), built by rl_games' own ``Runner`` and trained by the agents' own ``train()`` loop.

rl_games' agents read their environments through a vectorized environment of its ``IVecEnv``
interface (``rl_games/common/ivecenv.py``), created by ``vecenv.create_vec_env`` from a configuration
registered with ``env_configurations.register``, whose ``vecenv_type`` names a constructor registered
with ``vecenv.register`` (``rl_games/common/vecenv.py``): the way Isaac Gym and Isaac Lab hand their
simulators to rl_games. The adapter registers a harness-backed one (:class:`rlcompare_rl_games.run.HarnessVecEnv`):
every sub-environment comes from the harness's env factories (counted), stepped in turn in the
training process, reset in the same step when its episode ends, as ``IVecEnv`` requires.

The agent is made as rl_games' ``Runner.run_train`` makes it (``Runner.load_config(params)`` then
``runner.algo_factory.create(name, base_name='run', params=...)``), without ``torch.compile``
(which ``run_train`` switches on by default) and without restoring a checkpoint. Its own ``train()``
runs; the harness hooks in through rl_games' observer interface (``AlgoObserver.after_print_stats``,
which ``train()`` calls once the epoch's frames are added to ``agent.frame``): an ``update`` trace,
the evaluation checkpoint, and the stop once the framework's own frame count reaches the budget
(``max_frames`` is not used: ``A2CBase`` reads it as ``np.max(max_frames, max_steps)``, which treats
``max_steps`` as an axis, and the loop would only compare after the epoch anyway).

Everything rl_games writes (tensorboard summaries, the experiment folder) goes into the run directory;
checkpoint saving is off (``save_frequency=0``, ``save_best_after`` past any run).

rl-games 1.6.5 pins ``psutil<6`` (never imported by its code) and pulls wandb, opencv-python,
setproctitle and tensorboard, which the main environment does not hold (and whose psutil it must not
downgrade): the adapter always runs in an environment of its own (:attr:`RlGamesAdapter.requires_isolation`),
built by ``rlcompare env build rl-games`` with uv, with the main environment's torch, numpy and gymnasium.
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

#: rl_games' name of each family's agent (``Runner.algo_factory``) for discrete / continuous actions.
AGENTS = {"discrete": "a2c_discrete", "continuous": "a2c_continuous"}
ACTION_SPACES = {"PPO": frozenset({"discrete", "continuous"}), "SAC": frozenset({"continuous"})}
ACTIVATIONS = {"tanh": "tanh", "relu": "relu"}
#: Past any run's epoch count: rl_games then never saves a "best" checkpoint on its own.
NO_CHECKPOINTS = 10**12


# -------------------------------------------------------------------------------------------------
# PPO: rl_games' A2CBase configuration (rl_games/common/a2c_common.py)
# -------------------------------------------------------------------------------------------------


def _batch(workload: WorkloadLike) -> int:
    """Transitions per epoch: ``horizon_length x num_actors`` (``A2CBase.batch_size``)."""
    return workload.hyperparameters.rollout_steps * workload.parallelism.total_envs  # type: ignore[no-any-return]


def _minibatch(value: int, workload: WorkloadLike) -> int:
    """rl_games refuses a minibatch size that does not divide the batch (``A2CBase.__init__``): the
    divisor of the batch closest to the canonical size (ties: the larger)."""
    batch = _batch(workload)
    divisors = [size for size in range(1, batch + 1) if batch % size == 0]
    return min(divisors, key=lambda size: (abs(size - value), -size))


def _judge_minibatch(value: int, workload: WorkloadLike) -> tuple[Fidelity, str]:
    batch = _batch(workload)
    native = _minibatch(value, workload)
    if native == batch:
        return Fidelity.EXACT if value == native else Fidelity.APPROXIMATE, (
            f"one minibatch of the whole rollout ({batch} transitions)"
            + ("" if value == native else f"; {value} does not divide it: rounded to {native}"))
    note = (f"{batch // native} minibatches of {native} per epoch, cut as fixed contiguous slices of the rollout in "
            "env-major order (PPODataset without permute: the same minibatches, in the same order, every epoch; "
            "each holds whole stretches of single environments), not reshuffled each epoch")
    if value != native:
        note += f"; {value} does not divide the {batch}-transition rollout: rounded to {native}"
    return Fidelity.APPROXIMATE, note


def _judge_advantages(value: bool, _workload: WorkloadLike) -> tuple[Fidelity, str]:
    if value:
        return Fidelity.APPROXIMATE, ("normalized once over the whole rollout before the epochs "
                                      "((A - mean) / (std + 1e-8), unbiased std; prepare_dataset), not per minibatch")
    return Fidelity.EXACT, "normalize_advantage=False"


def _critic_coef(value: float, _workload: WorkloadLike) -> float:
    return 2.0 * value


PPO_SETTINGS: list[Setting] = [
    Setting("learning_rate", "learning_rate",
            note="lr_schedule=None (IdentityScheduler): constant; one Adam over the whole model"),
    Setting("gamma", "gamma"),
    Setting("gae_lambda", "tau", note="rl_games calls GAE's lambda tau (discount_values)"),
    Setting("clip_range", "e_clip", note="ratio clipped to [1 - e_clip, 1 + e_clip]; clip_value=False"),
    Setting("rollout_steps", "horizon_length", note="steps per environment per epoch, as canonical"),
    Setting("minibatch_size", "minibatch_size", convert=_minibatch, judge=_judge_minibatch),
    Setting("epochs", "mini_epochs"),
    Setting("entropy_coef", "entropy_coef", note="loss - entropy_coef * mean entropy"),
    Setting("value_coef", "critic_coef", convert=_critic_coef,
            note="rl_games' loss adds 0.5 * critic_coef * mean((R - V)^2): critic_coef = 2 x value_coef"),
    Setting("max_grad_norm", "grad_norm", note="truncate_grads=True: clip_grad_norm_ over the whole model"),
    Setting("normalize_advantage", "normalize_advantage", judge=_judge_advantages),
]

#: How rl_games' PPO update departs from the canonical one, as its parity probe measures it
#: (``rlcompare parity --adapters rl-games``; rl_games/algos_torch/a2c_*.py, common/a2c_common.py).
PPO_DEPARTURES = (
    entry("defaults.adam_eps", 1e-5, Fidelity.APPROXIMATE, "optim.Adam(eps)", 1e-8,
          "rl_games' PPO agents build Adam(eps=1e-08, fused=True)"),
    entry("defaults.truncation_bootstrap", True, Fidelity.APPROXIMATE, "value_bootstrap", False,
          "a truncated episode is cut like a terminated one (value_bootstrap=False); rl_games' own bootstrap "
          "(value_bootstrap=True with info['time_outs']) would add gamma * V(s_t) of the observation before the "
          "last step, not gamma * V(final observation), which the reference has no variant for"),
)

PPO_FIXED: dict[str, Any] = {
    "ppo": True,
    "lr_schedule": None,
    "clip_value": False,
    "truncate_grads": True,
    "normalize_input": False,
    "normalize_value": False,
    "normalize_rms_advantage": False,
    "value_bootstrap": False,
    "use_smooth_clamp": False,
    "weight_decay": 0.0,
    "mixed_precision": False,
    "seq_length": 1,  # RNN sequences only; the default 4 would have to divide every batch
    "reward_shaper": {},
    "bounds_loss_coef": 0.0,  # continuous: the soft-bound loss is computed and weighted by 0
    "clip_actions": False,  # continuous: the Gaussian acts in env units; the env clips (HarnessVecEnv)
}


# -------------------------------------------------------------------------------------------------
# SAC: rl_games' SACAgent configuration (rl_games/algos_torch/sac_agent.py)
# -------------------------------------------------------------------------------------------------


def _updates_per_step(value: int, workload: WorkloadLike) -> int:
    """rl_games' SAC makes ``num_updates_per_step`` gradient steps after every vector step."""
    hp = workload.hyperparameters
    return max(1, round(value * workload.parallelism.total_envs / hp.train_every))


def _judge_update_rate(_value: int, workload: WorkloadLike) -> tuple[Fidelity, str]:
    hp = workload.hyperparameters
    envs = workload.parallelism.total_envs
    rate = hp.gradient_steps * envs / hp.train_every
    what = f"rl_games' SAC makes num_updates_per_step gradient steps after every vector step ({envs} env steps)"
    if hp.train_every == envs:
        return Fidelity.EXACT, what
    return Fidelity.APPROXIMATE, f"{what}: {rate:g} per vector step rounded to {max(1, round(rate))}"


def _warmup(value: int, workload: WorkloadLike) -> int:
    """rl_games acts at random in epochs 1 .. num_warmup_steps - 1 (``train_epoch``: ``epoch_num <
    num_warmup_steps``, counted from 1) and updates from epoch ``num_warmup_steps`` on, after its step:
    ``ceil(learning_starts / num_actors) + 1`` gives SB3's schedule (random actions for the first
    ``learning_starts`` env steps, the first update after the next step)."""
    return math.ceil(value / workload.parallelism.total_envs) + 1


def _judge_warmup(value: int, workload: WorkloadLike) -> tuple[Fidelity, str]:
    envs = workload.parallelism.total_envs
    note = ("num_warmup_steps = ceil(learning_starts / num_actors) + 1: uniform random actions in the bounds for the "
            "first learning_starts env steps, no update before the next vector step")
    if value % envs == 0:
        return Fidelity.EXACT, note
    return Fidelity.APPROXIMATE, f"{note}; rounded up to whole vector steps of {envs} envs"


def _alpha(value: float | str, _workload: WorkloadLike) -> dict[str, Any]:
    if value == "auto":
        return {"learnable_temperature": True, "init_alpha": 1.0, "target_entropy_coef": 1.0}
    return {"learnable_temperature": False, "init_alpha": float(value)}


def _judge_alpha(value: float | str, _workload: WorkloadLike) -> tuple[Fidelity, str]:
    floor = "the actor's loss uses max(alpha, 0.01) (SACAgent.min_alpha)"
    if value == "auto":
        return Fidelity.APPROXIMATE, (f"learnable_temperature=True from init_alpha=1.0, target entropy -dim(A); "
                                      f"{floor}, so a temperature learned below 0.01 acts as 0.01 there")
    if float(value) >= 0.01:
        return Fidelity.EXACT, f"fixed init_alpha, learnable_temperature=False ({floor})"
    return Fidelity.APPROXIMATE, f"fixed init_alpha, learnable_temperature=False; {floor}"


SAC_SETTINGS: list[Setting] = [
    Setting("learning_rate", "actor_lr/critic_lr/alpha_lr", convert=lambda value, _: [value, value, value],
            note="the same rate for actor, critics and temperature; torch's Adam defaults otherwise (eps 1e-8)"),
    Setting("gamma", "gamma"),
    Setting("buffer_size", "replay_buffer_size", note="VectorizedReplayBuffer capacity in transitions"),
    Setting("learning_starts", "num_warmup_steps", convert=_warmup, judge=_judge_warmup),
    Setting("minibatch_size", "batch_size", note="uniform sampling from the replay buffer"),
    Setting("tau", "critic_tau", note="Polyak step of the target critics after every gradient step"),
    Setting("train_every", None, judge=_judge_update_rate),
    Setting("gradient_steps", "num_updates_per_step", convert=_updates_per_step, judge=_judge_update_rate),
    Setting("entropy_coef", "learnable_temperature/init_alpha", convert=_alpha, judge=_judge_alpha),
]

#: How rl_games' SAC update departs from the canonical one (rl_games/algos_torch/sac_agent.py,
#: sac_helper.py, network_builder.py), read from its source; its parity probe is unverifiable (below).
SAC_DEPARTURES = (
    entry("defaults.alpha_loss", "log_alpha", Fidelity.APPROXIMATE, "update_actor_and_alpha", "alpha",
          "the temperature's loss is mean(alpha * (-log pi - target_entropy)), on alpha, not on log_alpha"),
    entry("defaults.squash_correction_eps", 1e-6, Fidelity.APPROXIMATE, "SquashedNormal", 0.0,
          "log pi through rl_games' TanhTransform: 2 * (log 2 - u - softplus(-2u)), the exact correction, no 1e-6"),
    entry("defaults.actor_scale_mapping", "exp(clamp(log_std, -20, 2))", Fidelity.APPROXIMATE, "DiagGaussianActor",
          "exp(-5 + 3.5 * (tanh(log_std) + 1))",
          "the log-std output is mapped by tanh into log_std_bounds [-5, 2] (the bounds of rl_games' own SAC "
          "configurations), not clamped to [-20, 2]"),
    entry("defaults.critic_action_space", "[-1, 1]", Fidelity.APPROXIMATE, "rescale_actions", "env bounds",
          "the critics take the action rescaled to the env's bounds, and the replay buffer stores it so"),
    entry("defaults.truncation_bootstrap", True, Fidelity.APPROXIMATE, "value_bootstrap", False,
          "a truncated episode is stored as terminated (value_bootstrap=False); rl_games' own handling stores the "
          "observation before the last step as the next observation, not the final one"),
)

SAC_FIXED: dict[str, Any] = {
    "num_steps_per_episode": 1,  # one vector step per epoch: the harness checks the budget after each
    "policy_frequency": 1,  # the actor and temperature step after every critic step (default 2)
    "critic_grad_clip": 0.0,  # no gradient clipping (default 5.0)
    "value_bootstrap": False,
    "normalize_input": False,
    "mixed_precision": False,
    "reward_shaper": {},
}
#: rl_games' SAC actor maps its log-std output with tanh into these bounds (DiagGaussianActor); the
#: canonical actor clamps it to [-20, 2], but through tanh those bounds would start every log-std near -9
#: (a nearly deterministic actor): rl_games' own SAC configurations (configs/brax, configs/mujoco) use [-5, 2].
SAC_LOG_STD_BOUNDS = [-5.0, 2.0]


# -------------------------------------------------------------------------------------------------
# the adapter
# -------------------------------------------------------------------------------------------------


class RlGamesAdapter(Adapter):
    id = "rl-games"
    framework = "rl-games"
    summary = "rl_games: PPO (a2c_discrete, a2c_continuous) and SAC, its own train() on a harness IVecEnv"
    import_name = "rl_games"
    distributions = ("rl-games", "torch", "gymnasium", "numpy")
    install_requires = ("rl-games==1.6.5", "torch==2.13.0", "numpy==2.4.6", "gymnasium==1.2.2")
    #: rl-games 1.6.5 pins psutil<6 and pulls wandb, opencv-python, setproctitle and tensorboard: it runs
    #: in an environment of its own (built with uv by :mod:`rlcompare.pyenvs`, torch pinned to the CPU
    #: build, numpy and gymnasium at the main environment's versions).
    environment_requires = install_requires
    requires_isolation = True

    def capabilities(self) -> Capabilities:
        return Capabilities(
            algorithms=frozenset(ACTION_SPACES),
            action_spaces=frozenset({"discrete", "continuous"}),
            vectorized_envs=True,
            rollout_workers=False,
            modes=frozenset({"sync"}),
            algorithm_action_spaces=dict(ACTION_SPACES),
        )

    # -- translation -------------------------------------------------------------------------------

    def native_config(self, workload: WorkloadLike) -> tuple[dict[str, Any], list[FidelityEntry]]:
        """rl_games' ``params`` (``network`` and ``config``; ``algo``, ``model`` and the env's name are
        added by the run, which knows the action space) and the fidelity entries."""
        if workload.algorithm == "SAC":
            return self._sac_config(workload)
        return self._ppo_config(workload)

    def _ppo_config(self, workload: WorkloadLike) -> tuple[dict[str, Any], list[FidelityEntry]]:
        config, entries = map_settings(workload, PPO_SETTINGS)
        config.update(PPO_FIXED)
        config["num_actors"] = workload.parallelism.total_envs
        net = workload.network
        network = {"name": "actor_critic", "separate": True,
                   "mlp": {"units": list(net.hidden_sizes), "activation": ACTIVATIONS[net.activation],
                           "initializer": {"name": "default"}}}
        entries.append(entry(
            "network.hidden_sizes", list(net.hidden_sizes), Fidelity.EXACT, "network.mlp.units", list(net.hidden_sizes),
            "separate actor and critic MLPs (separate=True), a linear logits / mu head and a linear value head; "
            "continuous: a state-independent log-std parameter from 0 (fixed_sigma=True, const_initializer 0, "
            "continuous_a2c_logstd); PyTorch's default weight initialisation (initializer 'default'), every bias "
            "zeroed by rl_games"))
        entries.append(entry("network.activation", net.activation, Fidelity.EXACT, "network.mlp.activation",
                             ACTIVATIONS[net.activation]))
        entries.extend(_parallelism_entries(workload))
        return {"network": network, "config": config}, [*entries, *PPO_DEPARTURES]

    def _sac_config(self, workload: WorkloadLike) -> tuple[dict[str, Any], list[FidelityEntry]]:
        flat, entries = map_settings(workload, SAC_SETTINGS)
        config: dict[str, Any] = {}
        for name, value in flat.items():
            if name == "actor_lr/critic_lr/alpha_lr":
                config.update(actor_lr=value[0], critic_lr=value[1], alpha_lr=value[2])
            elif name == "learnable_temperature/init_alpha":
                config.update(value)
            else:
                config[name] = value
        config.update(SAC_FIXED)
        config["num_actors"] = workload.parallelism.total_envs
        net = workload.network
        hidden = list(net.hidden_sizes)
        network = {"name": "soft_actor_critic", "separate": True, "log_std_bounds": list(SAC_LOG_STD_BOUNDS),
                   "space": {"continuous": {}},
                   "mlp": {"units": hidden, "activation": ACTIVATIONS[net.activation],
                           "initializer": {"name": "default"}}}
        if hidden:
            entries.append(entry(
                "network.hidden_sizes", hidden, Fidelity.APPROXIMATE, "network.mlp.units", hidden,
                "an actor MLP with one linear head of 2 x dim(A) outputs (mean, log-std), the log-std mapped by tanh "
                f"into log_std_bounds {SAC_LOG_STD_BOUNDS} (DiagGaussianActor), not clamped; twin critics "
                "(DoubleQCritic) and their targets; PyTorch's default weights, zero biases"))
        else:
            entries.append(entry("network.hidden_sizes", hidden, Fidelity.UNSUPPORTED, None, None,
                                 "rl_games' SAC actor and critics need a hidden layer (DiagGaussianActor reads the "
                                 "last hidden layer's width)"))
        entries.append(entry("network.activation", net.activation, Fidelity.EXACT, "network.mlp.activation",
                             ACTIVATIONS[net.activation]))
        entries.extend(_parallelism_entries(workload))
        return {"network": network, "config": config}, [*entries, *SAC_DEPARTURES]

    def fidelity(self, workload: WorkloadLike) -> list[FidelityEntry]:
        return self.native_config(workload)[1]

    # -- training ----------------------------------------------------------------------------------

    def train(self, workload: WorkloadLike, context: TrainingContext) -> TrainingResult:
        from rlcompare.adapter import train_with_setup
        from rlcompare_rl_games.run import build

        params, _ = self.native_config(workload)
        setup = build(workload, params, context.env_factories(), context.seed, context.run_dir / "rl_games",
                      trace=context.trace)
        return train_with_setup(setup, context)

    # -- parity ------------------------------------------------------------------------------------

    def parity_update(self, probe: ParityProbe) -> ParityOutcome:
        """rl_games' own ``train_epoch`` on the probe (:mod:`rlcompare_rl_games.parity`)."""
        if probe.family == "PPO":
            from rlcompare_rl_games.parity import ppo_update

            return ppo_update(self, probe)
        if probe.family == "SAC":
            return ParityOutcome.unverifiable(SAC_UNVERIFIABLE)
        return ParityOutcome.unverifiable(f"rl_games has no {probe.family} agent (PPO and SAC only)")


#: Why the SAC probe cannot be answered by rl_games' own update.
SAC_UNVERIFIABLE = (
    "rl_games' SAC actor (DiagGaussianActor) has one linear head for mean and log-std whose log-std output is "
    "mapped by tanh into log_std_bounds, where the probe's actor clamps a separate log-std head to [-20, 2]: no "
    "setting of the bounds makes the two actors compute the same function, so the probe's actor cannot be loaded "
    "into it (nor its target computation and steps compared)")


def _parallelism_entries(workload: WorkloadLike) -> list[FidelityEntry]:
    par = workload.parallelism
    return [
        entry("parallelism.envs_per_worker", par.envs_per_worker, Fidelity.EXACT, "num_actors", par.total_envs,
              "an rl_games IVecEnv of the harness's environments (HarnessVecEnv), stepped in turn in the training "
              "process, each reset in the step its episode ends"),
        entry("parallelism.workers", par.workers, Fidelity.EXACT, "HarnessVecEnv", 1, "in the training process"),
    ]


@hookimpl
def rlcompare_register_adapters(register: Register) -> None:
    register.add_adapter(RlGamesAdapter)
