"""RSL-RL's own PPO update on rlcompare's parity probe.

The runner is built by the adapter's own :class:`rlcompare_rsl_rl.run.RslRlRun` from the probe's
workload (the ``train_cfg`` that ``train()`` passes, over uncounted copies of the probe's env), and:

1. the probe's weights go into RSL-RL's own modules: the actor's ``MLPModel.mlp`` (Linear layers)
   and its ``GaussianDistribution.log_std_param`` (``std_type="log"``), the critic's ``MLPModel.mlp``;
2. the rollout enters RSL-RL's ``RolloutStorage`` through ``PPO.process_env_step``, the path a
   training step takes: the transition holds what ``PPO.act`` would have stored (the observation,
   the action taken, the collecting policy's value and log-probability), then ``process_env_step``
   records reward and done with the extras the adapter's env reports in training (no ``time_outs``
   while :data:`rlcompare_rsl_rl.REPORT_TIME_OUTS` is off);
3. ``PPO.compute_returns`` (RSL-RL's GAE) runs on the observation after the rollout; the critic
   answers the collecting policy's stored value for it (in training that is the same network:
   nothing updates the critic during a rollout; the probe's batch was collected by other weights);
4. ``PPO.update`` makes its one minibatch step, its optimizer wrapped in :class:`OneStep`.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Iterator
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
    from rlcompare_rsl_rl import RslRlAdapter
    from rlcompare_rsl_rl.run import RslRlRun


def build_run(adapter: RslRlAdapter, probe: ParityProbe) -> RslRlRun:
    """The adapter's own build of the probe's workload, on uncounted environments."""
    from rlcompare_rsl_rl.run import RslRlRun

    workload = probe.workload_view()
    train_cfg, _ = adapter.native_config(workload)
    factory = functools.partial(make_env, workload.env, dict(workload.env_kwargs))
    return RslRlRun(workload, train_cfg, [factory] * workload.parallelism.total_envs, probe.seed)


def load_weights(alg: Any, probe: ParityProbe) -> dict[str, Any]:
    """The probe's weights in RSL-RL's actor and critic; refuses parameters the probe has no name for."""
    actor, critic = alg.actor, alg.critic
    actor_layers, critic_layers = linear_layers(actor.mlp), linear_layers(critic.mlp)
    parameters = {**load_linear_stack(actor_layers, stack_names("policy", len(actor_layers)), probe.weights),
                  **load_linear_stack(critic_layers, stack_names("value", len(critic_layers)), probe.weights)}
    log_std = actor.distribution.log_std_param
    load_tensor(log_std, probe.weights["policy.log_std"])
    parameters["policy.log_std"] = log_std
    mapped = {id(parameter) for parameter in parameters.values()}
    unmapped = [name for module, prefix in ((actor, "actor"), (critic, "critic"))
                for name, parameter in module.named_parameters(prefix=prefix) if id(parameter) not in mapped]
    if unmapped:
        raise ValueError(f"RSL-RL's models have parameters the canonical networks do not: {', '.join(unmapped)}")
    return parameters


@contextlib.contextmanager
def collecting_value(critic: Any, observations: Any, values: Any) -> Iterator[list[bool]]:
    """Inside, the critic answers ``values`` for the very TensorDict ``observations`` (matched by
    identity): the collecting policy's stored value of the observation after the rollout. Yields a
    list that holds True once it answered."""
    original = critic.forward
    answered: list[bool] = []

    def forward(obs: Any, *args: Any, **kwargs: Any) -> Any:
        if obs is observations:
            answered.append(True)
            return values
        return original(obs, *args, **kwargs)

    critic.forward = forward
    try:
        yield answered
    finally:
        del critic.forward  # the instance attribute goes; the class's method is back


def fill_storage(run: RslRlRun, probe: ParityProbe) -> Any:
    """The probe's rollout through ``PPO.process_env_step``; returns the observation after it."""
    import numpy as np
    import torch
    from tensordict import TensorDict

    from rlcompare_rsl_rl import OBS_GROUP

    alg = run.alg
    batch = probe.batch
    steps, envs = batch["rewards"].shape
    tensor = lambda array: torch.as_tensor(np.asarray(array), dtype=torch.float32)  # noqa: E731
    observe = lambda array: TensorDict({OBS_GROUP: tensor(array)}, batch_size=[envs])  # noqa: E731
    alg.storage.clear()
    for t in range(steps):
        obs = observe(batch["obs"][t])
        actions = tensor(batch["actions"][t]).reshape(envs, -1)
        with torch.no_grad():  # what act() stores besides the behaviour policy's values and log-probabilities
            alg.actor(obs, stochastic_output=True)
            distribution_params = tuple(p.detach().clone() for p in alg.actor.output_distribution_params)
        transition = alg.transition
        transition.hidden_states = (None, None)
        transition.observations = obs
        transition.actions = actions
        transition.values = tensor(batch["old_values"][t]).reshape(envs, 1)
        transition.actions_log_prob = tensor(batch["old_log_prob"][t])
        transition.distribution_params = distribution_params
        following = batch["last_obs"] if t == steps - 1 else batch["obs"][t + 1]
        dones = torch.as_tensor(np.maximum(batch["terminated"][t], batch["truncated"][t]) > 0.5).long()
        # the extras the adapter's VecEnv reports (HarnessVecEnv.step)
        extras = ({"time_outs": torch.as_tensor((batch["truncated"][t] > 0.5) & (batch["terminated"][t] < 0.5))}
                  if run.env.report_time_outs else {})
        alg.process_env_step(observe(following), tensor(batch["rewards"][t]), dones, extras)
    return observe(batch["last_obs"])


def ppo_update(adapter: RslRlAdapter, probe: ParityProbe) -> ParityOutcome:
    """One PPO minibatch step of RSL-RL's ``PPO`` on the probe (module docstring)."""
    import torch

    if probe.discrete:
        return ParityOutcome.unverifiable("RSL-RL's PPO has no categorical distribution: continuous actions only")
    run = build_run(adapter, probe)
    try:
        alg = run.alg
        if alg.num_learning_epochs != 1 or alg.num_mini_batches != 1:
            return ParityOutcome.unverifiable(f"the probe's workload mapped to {alg.num_learning_epochs} epochs of "
                                              f"{alg.num_mini_batches} minibatches, not one step")
        fresh_log_std = float(alg.actor.distribution.log_std_param.detach().mean())
        parameters = load_weights(alg, probe)
        last_obs = fill_storage(run, probe)
        last_values = torch.as_tensor(probe.batch["last_values"], dtype=torch.float32).reshape(-1, 1)
        with collecting_value(alg.critic, last_obs, last_values) as answered:
            alg.compute_returns(last_obs)
        if not answered:
            raise RuntimeError("RSL-RL's compute_returns did not ask its critic for the last observation's value")
        storage = alg.storage
        targets = {"advantages": storage.advantages.squeeze(-1).double().numpy().copy(),
                   "returns": storage.returns.squeeze(-1).double().numpy().copy()}
        alg.train_mode()
        with OneStep(alg.optimizer) as step:
            losses = alg.update()
        if step.steps != 1:
            return ParityOutcome.unverifiable(f"RSL-RL's PPO made {step.steps} optimizer steps on one minibatch")
        return ParityOutcome(
            RAN, targets=targets, gradients=step.gradients_of(parameters), updated=values_of(parameters),
            losses={"policy": float(losses["surrogate"]), "value": float(losses["value"]),
                    "entropy": -float(losses["entropy"])},
            defaults=read_defaults(run, fresh_log_std),
            notes=(
                "policy = the actor MLPModel's mlp + GaussianDistribution.log_std_param (std_type='log'); value = "
                "the critic MLPModel's mlp: every parameter of both models mapped",
                "the rollout went through PPO.process_env_step with the extras the adapter's env reports "
                f"(time_outs: {run.env.report_time_outs}), then "
                "PPO.compute_returns (GAE) and PPO.update (one Adam step); the critic answered the collecting "
                "policy's stored value for the observation after the rollout",
                "the stored distribution parameters (read only by the adaptive learning-rate schedule, which the "
                "adapter turns off) are the probe's own policy's",
            ),
        )
    finally:
        run.close()


def read_defaults(run: RslRlRun, fresh_log_std: float) -> dict[str, Any]:
    """What the built runner really uses, read back from its objects."""
    alg = run.alg
    optimizer = alg.optimizer
    actor = alg.actor
    distribution = actor.distribution
    return {
        "optimizer": type(optimizer).__name__,
        "adam_eps": optimizer.defaults.get("eps"),
        "adam_betas": list(optimizer.defaults.get("betas", ())),
        "initialization": "PyTorch's default Linear init (kaiming_uniform, a=sqrt 5): MLPModel leaves it",
        "observation_normalization": bool(actor.obs_normalization or alg.critic.obs_normalization),
        "reward_normalization": "none",
        "action_squashing": "none",
        "action_bounds": "clipped to the action space by the adapter's VecEnv",
        "log_std_init": fresh_log_std,
        "std_parameterization": distribution.std_type,
        "learning_rate_schedule": "constant" if alg.schedule != "adaptive" else f"adaptive (desired_kl {alg.desired_kl})",
        "value_clipping": f"max(clipped, unclipped), clip_param {alg.clip_param}" if alg.use_clipped_value_loss else "off",
        "value_loss": "mse",
        "value_loss_scale": 1.0,
        "grad_clip_scope": "per network",
        "max_grad_norm": alg.max_grad_norm,
        "advantage_normalization": ("per minibatch" if alg.normalize_advantage_per_mini_batch
                                    else "whole rollout"),
        "advantage_std": "unbiased",
        "truncation_bootstrap": "gamma * V(s_t) (time_outs)" if run.env.report_time_outs else False,
        "num_learning_epochs": alg.num_learning_epochs,
        "num_mini_batches": alg.num_mini_batches,
        "rnd": alg.rnd is not None,
        "symmetry": alg.symmetry is not None,
    }
