"""The built-in algorithm families, registered through the same hook as any plugin's.

Canonical hyperparameters, one model per family; defaults are the common reference values
(SB3 / CleanRL for the gradient methods, Salimans et al. 2017 for evolution strategies) except where
noted, and every field says what it means in framework-neutral terms.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, Strict

from rlcompare.harness.workload_view import WorkloadLike
from rlcompare.spec.families import AlgorithmFamily, CanonicalHyperparameters

# TOML and JSON carry types: strict types refuse a bool for a number and a string for either; a
# float field still takes an integer. Floats must be finite (CanonicalHyperparameters says so).
Int = Annotated[int, Strict()]
Float = Annotated[float, Strict()]
Bool = Annotated[bool, Strict()]


class PPOHyperparameters(CanonicalHyperparameters):
    """Proximal Policy Optimization (clipped surrogate objective, GAE)."""

    learning_rate: Float = Field(3e-4, gt=0, description="Adam step size, constant over training.")
    gamma: Float = Field(0.99, gt=0, le=1, description="Discount factor.")
    gae_lambda: Float = Field(0.95, ge=0, le=1, description="GAE lambda.")
    clip_range: Float = Field(0.2, gt=0, description="Policy ratio clip epsilon.")
    rollout_steps: Int = Field(128, gt=0, description="Steps collected per environment per update.")
    minibatch_size: Int = Field(64, gt=0, description="Transitions per gradient step.")
    epochs: Int = Field(10, gt=0, description="Passes over each rollout.")
    entropy_coef: Float = Field(0.0, ge=0, description="Entropy bonus coefficient.")
    value_coef: Float = Field(0.5, ge=0, description="Value-loss coefficient.")
    max_grad_norm: Float = Field(0.5, gt=0, description="Global gradient-norm clip.")
    normalize_advantage: Bool = Field(True, description="Normalize advantages per minibatch.")


class A2CHyperparameters(CanonicalHyperparameters):
    """Advantage Actor-Critic (synchronous)."""

    learning_rate: Float = Field(7e-4, gt=0, description="Optimizer step size, constant.")
    optimizer: Literal["adam", "rmsprop"] = Field(
        "adam", description="Optimizer; Adam by default because most frameworks use it for A2C."
    )
    gamma: Float = Field(0.99, gt=0, le=1, description="Discount factor.")
    gae_lambda: Float = Field(1.0, ge=0, le=1, description="GAE lambda (1.0: n-step returns).")
    rollout_steps: Int = Field(5, gt=0, description="Steps collected per environment per update.")
    entropy_coef: Float = Field(0.0, ge=0, description="Entropy bonus coefficient.")
    value_coef: Float = Field(0.5, ge=0, description="Value-loss coefficient.")
    max_grad_norm: Float = Field(0.5, gt=0, description="Global gradient-norm clip.")
    normalize_advantage: Bool = Field(False, description="Normalize advantages per update.")


class PGHyperparameters(CanonicalHyperparameters):
    """REINFORCE (Williams 1992), the vanilla policy gradient as the 2020 platform comparisons ran it
    (Tianshou's ``PGPolicy``, RLlib's ``PG``): discounted Monte Carlo returns over each rollout,
    standardized over the rollout's batch by default (the baseline of Tianshou's ``rew_norm``), and
    one full-batch Adam step per rollout on ``-mean(G log pi(a|s))``. No value network, no entropy
    bonus, no gradient clipping. An episode the rollout cuts off counts no reward after the cut, and
    one cut by its time limit none after its last step (a Monte Carlo return has no bootstrap)."""

    learning_rate: Float = Field(1e-3, gt=0, description="Adam step size (eps 1e-8, torch's default), constant.")
    gamma: Float = Field(0.99, gt=0, le=1, description="Discount factor.")
    rollout_steps: Int = Field(256, gt=0, description="Steps collected per environment per update.")
    return_standardization: Literal["batch", "none"] = Field(
        "batch", description="The baseline: 'batch' standardizes the rollout's returns, (G - mean) / (std + eps) "
        "with the population std and eps = float32 machine epsilon (Tianshou 0.2's rew_norm); 'none' uses them as "
        "they are (RLlib's PG).")


class DQNHyperparameters(CanonicalHyperparameters):
    """Deep Q-Network with a target network and an epsilon-greedy schedule."""

    learning_rate: Float = Field(1e-4, gt=0, description="Adam step size, constant.")
    gamma: Float = Field(0.99, gt=0, le=1, description="Discount factor.")
    buffer_size: Int = Field(100_000, gt=0, description="Replay buffer capacity in transitions.")
    learning_starts: Int = Field(1_000, ge=0, description="Env steps before the first update.")
    minibatch_size: Int = Field(64, gt=0, description="Transitions per gradient step.")
    train_every: Int = Field(4, gt=0, description="Env steps between updates.")
    gradient_steps: Int = Field(1, gt=0, description="Gradient steps per update.")
    target_update_interval: Int = Field(1_000, gt=0, description="Env steps between target syncs.")
    exploration_initial_eps: Float = Field(1.0, ge=0, le=1, description="Initial epsilon.")
    exploration_final_eps: Float = Field(0.05, ge=0, le=1, description="Final epsilon.")
    exploration_fraction: Float = Field(
        0.1, gt=0, le=1, description="Share of the budget over which epsilon decays linearly."
    )
    max_grad_norm: Float = Field(10.0, gt=0, description="Global gradient-norm clip.")
    double_q: Bool = Field(False, description="Double Q-learning targets.")


class SACHyperparameters(CanonicalHyperparameters):
    """Soft Actor-Critic with automatic entropy tuning by default."""

    learning_rate: Float = Field(3e-4, gt=0, description="Adam step size for actor, critics, alpha.")
    gamma: Float = Field(0.99, gt=0, le=1, description="Discount factor.")
    buffer_size: Int = Field(1_000_000, gt=0, description="Replay buffer capacity in transitions.")
    learning_starts: Int = Field(100, ge=0, description="Env steps before the first update.")
    minibatch_size: Int = Field(256, gt=0, description="Transitions per gradient step.")
    tau: Float = Field(0.005, gt=0, le=1, description="Polyak coefficient for target critics.")
    train_every: Int = Field(1, gt=0, description="Env steps between updates.")
    gradient_steps: Int = Field(1, gt=0, description="Gradient steps per update.")
    entropy_coef: Float | Literal["auto"] = Field("auto", description="Fixed alpha, or 'auto'.")


class TD3Hyperparameters(CanonicalHyperparameters):
    """Twin Delayed DDPG (Fujimoto et al. 2018): twin critics, target policy smoothing, delayed actor
    and target updates; Gaussian exploration noise. Defaults: SB3's TD3, with its usual Gaussian
    action noise of 0.1."""

    learning_rate: Float = Field(1e-3, gt=0, description="Adam step size for actor and critics, constant.")
    gamma: Float = Field(0.99, gt=0, le=1, description="Discount factor.")
    buffer_size: Int = Field(1_000_000, gt=0, description="Replay buffer capacity in transitions.")
    learning_starts: Int = Field(100, ge=0, description="Env steps before the first update.")
    minibatch_size: Int = Field(256, gt=0, description="Transitions per gradient step.")
    tau: Float = Field(0.005, gt=0, le=1, description="Polyak coefficient for the target actor and critics.")
    train_every: Int = Field(1, gt=0, description="Env steps between updates.")
    gradient_steps: Int = Field(1, gt=0, description="Critic gradient steps per update.")
    policy_delay: Int = Field(
        2, gt=0, description="Critic gradient steps per actor step; the targets move with each actor step."
    )
    target_policy_noise: Float = Field(
        0.2, ge=0, description="Std of the Gaussian noise on the target action, in units of the action range's half-width."
    )
    target_noise_clip: Float = Field(0.5, ge=0, description="Clip of that noise, in the same units.")
    exploration_noise: Float = Field(
        0.1, ge=0, description="Std of the Gaussian noise on the acting policy's action, in units of the action range's "
        "half-width; the warm-up's uniform random actions (before learning_starts) carry none, as in the authors' code."
    )


class DDPGHyperparameters(CanonicalHyperparameters):
    """Deep Deterministic Policy Gradient (Lillicrap et al. 2016) as the field runs it today: one
    critic, the actor and both targets updated at every gradient step, Gaussian exploration noise
    (not Ornstein-Uhlenbeck). Defaults: SB3's DDPG, with Gaussian action noise of 0.1."""

    learning_rate: Float = Field(1e-3, gt=0, description="Adam step size for actor and critic, constant.")
    gamma: Float = Field(0.99, gt=0, le=1, description="Discount factor.")
    buffer_size: Int = Field(1_000_000, gt=0, description="Replay buffer capacity in transitions.")
    learning_starts: Int = Field(100, ge=0, description="Env steps before the first update.")
    minibatch_size: Int = Field(256, gt=0, description="Transitions per gradient step.")
    tau: Float = Field(0.005, gt=0, le=1, description="Polyak coefficient for the target actor and critic.")
    train_every: Int = Field(1, gt=0, description="Env steps between updates.")
    gradient_steps: Int = Field(1, gt=0, description="Gradient steps per update.")
    exploration_noise: Float = Field(
        0.1, ge=0, description="Std of the Gaussian noise on the acting policy's action, in units of the action range's "
        "half-width; the warm-up's uniform random actions (before learning_starts) carry none, as in the authors' code."
    )


class ESHyperparameters(CanonicalHyperparameters):
    """Evolution strategies in the style of Salimans et al. (2017): Gaussian perturbations of the
    policy network's parameters, a search gradient from their returns, an Adam step on the mean.
    The policy network is the workload's ``network``; there is no value network."""

    population_size: Int = Field(
        50, gt=1, le=100_000, description="Perturbed policies evaluated per generation (pairs when antithetic)."
    )
    sigma: Float = Field(0.1, gt=0, description="Standard deviation of the parameter noise, fixed over training.")
    learning_rate: Float = Field(0.01, gt=0, description="Adam step size on the mean parameters.")
    antithetic: Bool = Field(True, description="Mirrored sampling: every perturbation +e is paired with -e.")
    centered_ranks: Bool = Field(
        True, description="Fitness shaping: returns replaced by their ranks scaled to [-0.5, 0.5]."
    )
    episodes_per_candidate: Int = Field(
        1, gt=0, le=1_000, description="Episodes averaged into the return of one perturbed policy."
    )


class GRPOHyperparameters(CanonicalHyperparameters):
    """Group Relative Policy Optimization (Shao et al. 2024, DeepSeekMath) for a language model on a
    verifiable task: each prompt's ``group_size`` sampled completions are scored by the harness's task,
    a completion's advantage is its reward less its group's mean (divided by the group's standard
    deviation when ``advantage_scaling`` says so), and the policy takes a clipped-ratio step on its
    tokens. The completion length is the task's (``env_kwargs.max_new_tokens``): the environment ends the
    episode there. The optimizer is Adam (no weight decay) at a constant step size."""

    learning_rate: Float = Field(1e-3, gt=0, description="Adam step size (no weight decay), constant.")
    group_size: Int = Field(8, gt=1, le=1_024, description="Completions sampled per prompt (the group).")
    prompts_per_step: Int = Field(8, gt=0, le=4_096, description="Prompts per optimizer step; each step learns from "
                                  "prompts_per_step x group_size completions.")
    iterations: Int = Field(1, gt=0, le=64, description="Optimizer steps on each generated batch (GRPO's mu); with "
                            "more than one, the old policy's log-probabilities are the ones it was sampled with.")
    clip_low: Float = Field(0.2, ge=0, le=1, description="Lower clip of the probability ratio: 1 - clip_low.")
    clip_high: Float = Field(0.2, ge=0, description="Upper clip of the probability ratio: 1 + clip_high (DAPO's "
                             "clip-higher when above clip_low).")
    kl_coef: Float = Field(0.0, ge=0, description="Coefficient of the KL penalty to the initial (reference) model, "
                           "estimated per token as exp(ref - logp) - (ref - logp) - 1; 0: no reference model.")
    loss_aggregation: Literal["token_mean", "sequence_mean", "constant"] = Field(
        "token_mean", description="How per-token losses become the loss: 'token_mean' averages over every "
        "completion token of the batch (DAPO); 'sequence_mean' averages each completion's tokens, then the "
        "completions (the original GRPO); 'constant' sums them and divides by completions x max_new_tokens "
        "(Dr. GRPO).")
    advantage_scaling: Literal["group_std", "none"] = Field(
        "group_std", description="Divide each advantage by its group's reward standard deviation (unbiased, "
        "plus 1e-4), or not (Dr. GRPO).")
    temperature: Float = Field(1.0, gt=0, description="Sampling temperature of the completions.")
    max_grad_norm: Float = Field(1.0, gt=0, description="Global gradient-norm clip.")


# -------------------------------------------------------------------------------------------------
# budget grains: env steps one update (or generation) covers, across every env
# -------------------------------------------------------------------------------------------------


def rollout_grain(workload: WorkloadLike) -> int:
    """On-policy: one rollout of ``rollout_steps`` in every env."""
    return int(workload.hyperparameters.rollout_steps) * workload.parallelism.total_envs


def update_grain(workload: WorkloadLike) -> int:
    """Off-policy: one update interval of ``train_every`` steps in every env."""
    return int(workload.hyperparameters.train_every) * workload.parallelism.total_envs


def generation_grain(workload: WorkloadLike) -> int:
    """Evolution strategies: one generation, every candidate's episodes at their longest; with
    antithetic sampling candidates come in mirrored pairs, so an odd population's generation holds
    one more (a whole pair). An environment without a step limit has no bound on a generation: then
    the whole budget."""
    hp = workload.hyperparameters
    # gymnasium loads here, when a grain is asked for: listing families stays light
    from rlcompare.harness.counted_envs import episode_step_limit

    limit = episode_step_limit(workload.env, workload.env_kwargs)
    if limit is None:
        return workload.env_steps
    population = int(hp.population_size)
    if hp.antithetic:
        population += population % 2
    return population * int(hp.episodes_per_candidate) * limit


def completions_grain(workload: WorkloadLike) -> int:
    """GRPO: one optimizer step's batch, every completion at the task's longest, in env steps
    (generated tokens)."""
    from rlcompare.harness.language_ids import completion_tokens

    hp = workload.hyperparameters
    return int(hp.prompts_per_step) * int(hp.group_size) * completion_tokens(workload.env_kwargs)


BOTH = frozenset({"discrete", "continuous"})

BUILTIN_FAMILIES: tuple[AlgorithmFamily, ...] = (
    AlgorithmFamily("PPO", "Proximal Policy Optimization (clipped surrogate, GAE), on-policy",
                    PPOHyperparameters, BOTH, "gradient", "rollout", rollout_grain),
    AlgorithmFamily("A2C", "Advantage Actor-Critic, synchronous, on-policy",
                    A2CHyperparameters, BOTH, "gradient", "rollout", rollout_grain),
    AlgorithmFamily("PG", "Vanilla policy gradient (REINFORCE) with Monte Carlo returns standardized over the batch, on-policy",
                    PGHyperparameters, BOTH, "gradient", "rollout", rollout_grain),
    AlgorithmFamily("DQN", "Deep Q-Network with target network and epsilon-greedy exploration, off-policy",
                    DQNHyperparameters, frozenset({"discrete"}), "gradient", "update", update_grain),
    AlgorithmFamily("SAC", "Soft Actor-Critic with automatic entropy tuning, off-policy",
                    SACHyperparameters, frozenset({"continuous"}), "gradient", "update", update_grain),
    AlgorithmFamily("TD3", "Twin Delayed DDPG: twin critics, target policy smoothing, delayed actor updates, off-policy",
                    TD3Hyperparameters, frozenset({"continuous"}), "gradient", "update", update_grain),
    AlgorithmFamily("DDPG", "Deep Deterministic Policy Gradient with Gaussian exploration noise, off-policy",
                    DDPGHyperparameters, frozenset({"continuous"}), "gradient", "update", update_grain),
    AlgorithmFamily("ES", "Evolution strategies (OpenAI-ES style): Gaussian parameter noise, ranked returns",
                    ESHyperparameters, BOTH, "evolutionary", "generation", generation_grain),
    AlgorithmFamily("GRPO", "Group Relative Policy Optimization of a language model on a verifiable task "
                    "(group-normalized rewards, clipped ratio), on-policy",
                    GRPOHyperparameters, frozenset({"discrete"}), "gradient", "update", completions_grain,
                    task="language"),
)


def builtin_families() -> dict[str, AlgorithmFamily]:
    """The built-in families by name: what a workload may name when no plugin adds more."""
    return {family.name: family for family in BUILTIN_FAMILIES}
