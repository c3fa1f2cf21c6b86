"""SB3's own update on rlcompare's parity probes: the probe's weights loaded into SB3's policy, the
probe's batch into SB3's buffers, and SB3's own code doing the rest (GAE in ``RolloutBuffer``, the
losses and the optimizer step in ``train()``)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from rlcompare.adapter import ParityOutcome, ParityProbe, make_env
from rlcompare.harness.parity import RAN
from rlcompare.harness.parity_torch import (
    OneStep,
    linear_layers,
    load_linear_stack,
    load_tensor,
    stack_names,
    values_of,
)

if TYPE_CHECKING:
    from rlcompare_sb3 import StableBaselines3Adapter


def _model(adapter: StableBaselines3Adapter, probe: ParityProbe) -> tuple[Any, Any]:
    from stable_baselines3.common.vec_env import DummyVecEnv

    workload = probe.workload_view()
    env = DummyVecEnv([lambda: make_env(workload.env, dict(workload.env_kwargs))] * workload.parallelism.total_envs)
    model, _, _ = adapter.build_model(workload, env, probe.seed)
    return model, env


def _replay_batch(model: Any, batch: dict[str, Any], discrete: bool = False) -> int:
    """The probe's batch added to SB3's ``ReplayBuffer`` as its collection stores transitions
    (truncations as ``TimeLimit.truncated`` infos; continuous actions in the policy's ``[-1, 1]``
    space), and the buffer's sampler replaced by its own ``_get_samples`` over the batch in order, so
    that the minibatch is the batch itself through SB3's own sample assembly. Returns its size."""
    import numpy as np

    size = len(batch["rewards"])
    buffer = model.replay_buffer
    for i in range(size):
        done = bool(batch["terminated"][i] or batch["truncated"][i])
        info = {"TimeLimit.truncated": bool(batch["truncated"][i] and not batch["terminated"][i])}
        action = np.array([[int(batch["actions"][i])]]) if discrete else batch["actions"][i][None].astype(np.float32)
        buffer.add(batch["obs"][i][None].astype(np.float32), batch["next_obs"][i][None].astype(np.float32),
                   action, np.array([batch["rewards"][i]], dtype=np.float32), np.array([done]), [info])
    buffer.sample = lambda batch_size, env=None: buffer._get_samples(np.arange(size), env=env)
    return size


@contextmanager
def _keeping_td_target(module: Any, loss: str) -> Iterator[dict[str, Any]]:
    """Inside the block, the loss function ``F.<loss>`` the SB3 module ``module`` trains with also
    keeps the TD target of its first call (``kept["q_target"]``: SAC and TD3 call it once per critic,
    with the same target) and the value of its last (``kept["loss"]``); after it, the function again."""
    original = getattr(module.F, loss)
    kept: dict[str, Any] = {}

    def keeping(current: Any, target_values: Any, *args: Any, **kwargs: Any) -> Any:
        kept.setdefault("q_target", target_values.detach().reshape(-1).double().numpy().copy())
        value = original(current, target_values, *args, **kwargs)
        kept["loss"] = float(value.detach())
        return value

    setattr(module.F, loss, keeping)
    try:
        yield kept
    finally:
        setattr(module.F, loss, original)


def _actor_critic_parameters(policy: Any, probe: ParityProbe) -> dict[str, Any]:
    """The probe's weights in SB3's ActorCriticPolicy: policy trunk + action_net, value trunk + value_net."""
    layers = len(probe.network["hidden_sizes"]) + 1
    parameters = {
        **load_linear_stack([*linear_layers(policy.mlp_extractor.policy_net), policy.action_net],
                            stack_names("policy", layers), probe.weights),
        **load_linear_stack([*linear_layers(policy.mlp_extractor.value_net), policy.value_net],
                            stack_names("value", layers), probe.weights),
    }
    if not probe.discrete:
        load_tensor(policy.log_std, probe.weights["policy.log_std"])
        parameters["policy.log_std"] = policy.log_std
    return parameters


def ppo_update(adapter: StableBaselines3Adapter, probe: ParityProbe) -> ParityOutcome:
    """One PPO minibatch step: the batch in SB3's ``RolloutBuffer``, its GAE, its ``train()``."""
    import numpy as np
    import torch

    model, env = _model(adapter, probe)
    try:
        policy = model.policy
        parameters = _actor_critic_parameters(policy, probe)
        batch = probe.batch
        gamma = float(probe.hyperparameters["gamma"])
        # SB3's collect_rollouts bootstraps a truncated episode by adding gamma * V(final observation)
        # to its last reward; the probe holds that value, from the policy that collected the batch
        rewards = batch["rewards"] + gamma * batch["terminal_values"] * batch["truncated"]
        dones = np.maximum(batch["terminated"], batch["truncated"])
        buffer = model.rollout_buffer
        buffer.reset()
        steps, envs = rewards.shape
        episode_starts = np.ones(envs, dtype=np.float32)
        for t in range(steps):
            buffer.add(batch["obs"][t].astype(np.float32), batch["actions"][t], rewards[t].astype(np.float32),
                       episode_starts, torch.as_tensor(batch["old_values"][t], dtype=torch.float32),
                       torch.as_tensor(batch["old_log_prob"][t], dtype=torch.float32))
            episode_starts = dones[t].astype(np.float32)
        buffer.compute_returns_and_advantage(last_values=torch.as_tensor(batch["last_values"], dtype=torch.float32),
                                             dones=dones[-1])
        targets = {"advantages": buffer.advantages.copy(), "returns": buffer.returns.copy()}
        model._current_progress_remaining = 1.0  # the learning-rate and clip-range schedules at their start
        with OneStep(policy.optimizer) as step:
            model.train()
        if step.steps != 1:
            return ParityOutcome.unverifiable(f"SB3 made {step.steps} optimizer steps on one minibatch")
        losses = {name.removeprefix("train/"): float(value) for name, value in model.logger.name_to_value.items()
                  if name in ("train/policy_gradient_loss", "train/value_loss", "train/entropy_loss", "train/loss")}
        return ParityOutcome(
            RAN, targets=targets, gradients=step.gradients_of(parameters), updated=values_of(parameters),
            losses=losses, defaults=_defaults(model),
            notes=("a truncated episode's bootstrap (gamma * V(final observation)) is added to its reward as "
                   "SB3's collect_rollouts adds it",),
        )
    finally:
        env.close()


def _defaults(model: Any) -> dict[str, Any]:
    """What SB3 built, read back from the model (not from the adapter's mapping)."""
    policy = model.policy
    optimizer = policy.optimizer
    defaults: dict[str, Any] = {"optimizer": type(optimizer).__name__,
                                "adam_eps": optimizer.defaults.get("eps"),
                                "orthogonal_init": bool(getattr(policy, "ortho_init", False)),
                                "observation_normalization": False, "share_features_extractor":
                                bool(getattr(policy, "share_features_extractor", False))}
    for name in ("clip_range_vf", "target_kl", "normalize_advantage", "ent_coef", "vf_coef", "max_grad_norm",
                 "use_sde"):
        value = getattr(model, name, None)
        if value is not None and not callable(value):
            defaults[name] = value
    if hasattr(policy, "log_std"):
        defaults["log_std_init"] = policy.log_std_init  # the value SB3 starts log-std at (the probe overwrote it)
    return defaults
