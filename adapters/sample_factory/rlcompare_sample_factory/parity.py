"""Sample Factory's own learner on rlcompare's PPO parity probe.

Sample Factory 2.1's only algorithm is APPO; with the adapter's configuration (``with_vtrace=False``,
``async_rl=False``, one epoch of one minibatch on the probe) one call of its ``Learner.train``
(``sample_factory/algo/learning/learner.py``) is one PPO minibatch step. The probe builds that
learner from the adapter's own configuration (:meth:`SampleFactoryRun.configure`: the command line
``train()`` parses), without a runner, sampler or any process, and:

1. loads the probe's weights into the learner's ``ActorCriticSeparateWeights``
   (``sample_factory/model/actor_critic.py``): with ``actor_critic_share_weights=False``, no RNN core
   (``ModelCoreIdentity``) and no decoder layers (``decoder_mlp_layers=[]``: ``MlpDecoder`` is an
   identity), the actor is ``actor_encoder.mlp_head`` (Linear + activation per hidden layer) then
   ``action_parameterization.distribution_linear``, and the critic is ``critic_encoder.mlp_head``
   then ``critic_linear``: exactly the canonical separate policy and value MLPs. The continuous
   policy's ``action_parameterization.learned_stddev`` holds the state-independent *log* standard
   deviation (``ContinuousActionDistribution`` exponentiates it);
2. fills the trajectory buffer the batcher hands the learner (``alloc_trajectory_tensors`` in
   ``sample_factory/algo/utils/shared_buffers.py``: ``[trajectories, rollout (+1)]``, one trajectory
   per env) with the probe's batch;
3. runs ``Learner.train`` on it: ``_prepare_batch`` (the value of the last observation, GAE in
   ``gae_advantages``, returns) then ``_train`` (``_calculate_losses``, clipping, the optimizer step),
   with the optimizer wrapped in :class:`OneStep`.
"""

from __future__ import annotations

import math
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rlcompare.adapter import ParityOutcome, ParityProbe
from rlcompare.harness.parity import RAN
from rlcompare.harness.parity_torch import OneStep, load_linear_stack, load_tensor, stack_names, values_of

if TYPE_CHECKING:
    from rlcompare_sample_factory import SampleFactoryAdapter


def _linear_layers(module: Any) -> list[Any]:
    """The Linear layers of ``module`` in forward order, ``torch.jit.script``-ed ones included
    (Sample Factory scripts its MLP encoders: their layers are ``RecursiveScriptModule``\\ s whose
    ``original_name`` is ``Linear``, which :func:`rlcompare.harness.parity_torch.linear_layers` misses)."""
    import torch

    return [layer for layer in module.modules()
            if isinstance(layer, torch.nn.Linear) or getattr(layer, "original_name", None) == "Linear"]


def _refusal(cfg: Any) -> str | None:
    """Why the built model cannot stand for the canonical separate policy and value MLPs, if it cannot."""
    if cfg.actor_critic_share_weights:
        return "actor_critic_share_weights=True: one encoder feeds both heads, not separate policy and value MLPs"
    if cfg.use_rnn:
        return "use_rnn=True: an RNN core sits between the encoder and the heads"
    if list(cfg.decoder_mlp_layers):
        return f"decoder_mlp_layers={list(cfg.decoder_mlp_layers)}: extra layers after the core"
    if cfg.with_vtrace:
        return "with_vtrace=True: V-trace targets replace GAE"
    if cfg.num_epochs != 1 or cfg.num_batches_per_epoch != 1:
        return (f"{cfg.num_epochs} epoch(s) of {cfg.num_batches_per_epoch} minibatch(es) on the probe: one optimizer "
                "step needs one of each")
    return None


def _actor_critic_parameters(actor_critic: Any, probe: ParityProbe) -> dict[str, Any]:
    """The probe's weights in Sample Factory's ActorCriticSeparateWeights (see the module docstring)."""
    layers = len(probe.network["hidden_sizes"]) + 1
    parameterization = actor_critic.action_parameterization
    parameters = {
        **load_linear_stack([*_linear_layers(actor_critic.actor_encoder), *_linear_layers(actor_critic.actor_decoder),
                             parameterization.distribution_linear], stack_names("policy", layers), probe.weights),
        **load_linear_stack([*_linear_layers(actor_critic.critic_encoder),
                             *_linear_layers(actor_critic.critic_decoder), actor_critic.critic_linear],
                            stack_names("value", layers), probe.weights),
    }
    if not probe.discrete:
        # holds log(std): ContinuousActionDistribution (algo/utils/action_distributions.py) exponentiates it
        load_tensor(parameterization.learned_stddev, probe.weights["policy.log_std"])
        parameters["policy.log_std"] = parameterization.learned_stddev
    return parameters


def _trajectory_buffer(cfg: Any, env_info: Any, probe: ParityProbe) -> Any:
    """The probe's batch in the layout Sample Factory's batcher hands ``Learner.train``: one
    trajectory per env, ``rollout + 1`` observations (the last one is the rollout's next
    observation, whose value ``_prepare_batch`` computes) and ``rollout`` steps of the rest."""
    import numpy as np
    import torch
    from sample_factory.algo.utils.shared_buffers import alloc_trajectory_tensors
    from sample_factory.model.model_utils import get_rnn_size

    batch = probe.batch
    steps, envs = batch["rewards"].shape
    buffer = alloc_trajectory_tensors(env_info, envs, steps, get_rnn_size(cfg), torch.device("cpu"), False)

    def tensor(array: np.ndarray) -> Any:  # [T, N, ...] -> [N, T, ...]
        return torch.as_tensor(np.swapaxes(np.asarray(array), 0, 1).copy(), dtype=torch.float32)

    (obs_key,) = buffer["obs"].keys()  # a plain Box observation is wrapped as {"obs": ...}
    buffer["obs"][obs_key][:, :steps] = tensor(batch["obs"])
    buffer["obs"][obs_key][:, steps] = torch.as_tensor(batch["last_obs"], dtype=torch.float32)
    buffer["rnn_states"].zero_()
    actions = tensor(batch["actions"])
    buffer["actions"][:] = actions.unsqueeze(-1) if probe.discrete else actions
    # the behaviour policy's distribution parameters only feed the KL statistics (kl_loss_coeff=0)
    buffer["action_logits"].zero_()
    buffer["log_prob_actions"][:] = tensor(batch["old_log_prob"])
    buffer["values"][:, :steps] = tensor(batch["old_values"])
    # overwritten by _prepare_batch with the learner's own value of the last observation
    buffer["values"][:, steps] = torch.as_tensor(batch["last_values"], dtype=torch.float32)
    buffer["rewards"][:] = tensor(batch["rewards"])
    # the sampler's record_env_step: done = terminated | truncated, time_out = truncated
    buffer["dones"][:] = tensor(np.maximum(batch["terminated"], batch["truncated"])) > 0.5
    buffer["time_outs"][:] = tensor(batch["truncated"]) > 0.5
    buffer["policy_id"][:] = 0
    buffer["policy_version"][:] = 0  # collected by the learner's current version: no sample is too old
    return buffer


def ppo_update(adapter: SampleFactoryAdapter, probe: ParityProbe) -> ParityOutcome:
    """One APPO minibatch step (GAE, no V-trace) of Sample Factory's ``Learner`` on the probe."""
    import numpy as np
    import torch
    from sample_factory.algo.learning.learner import Learner
    from sample_factory.algo.utils.env_info import extract_env_info
    from sample_factory.algo.utils.make_env import make_env_func_batched
    from sample_factory.algo.utils.misc import TRAIN_STATS
    from sample_factory.algo.utils.model_sharing import ParameterServer
    from sample_factory.cfg.arguments import preprocess_cfg

    from rlcompare.adapter import make_env
    from rlcompare_sample_factory import SampleFactoryRun

    workload = probe.workload_view()
    factories = [lambda: make_env(workload.env, dict(workload.env_kwargs))] * workload.parallelism.total_envs
    with tempfile.TemporaryDirectory(prefix="rlcompare-sf-parity-") as scratch:
        run = SampleFactoryRun(workload, probe.seed, Path(scratch) / "sample_factory", factories)
        cfg = run.configure()
        refusal = _refusal(cfg)
        if refusal is not None:
            return ParityOutcome.unverifiable(f"the adapter's configuration for the probe has {refusal}",
                                              **_defaults(cfg, None))
        # what the runner's init does before it builds the learner, in this process: the env's
        # spaces (Sample Factory asks a spawned process), then the configuration's checks
        env = make_env_func_batched(cfg, env_config=None)
        try:
            env_info = extract_env_info(env, cfg)
        finally:
            env.close()
        if not preprocess_cfg(cfg, env_info):
            return ParityOutcome.unverifiable("Sample Factory refused the adapter's configuration for the probe")
        policy_versions = torch.zeros([cfg.num_policies], dtype=torch.int32)
        learner = Learner(cfg, env_info, policy_versions, 0, ParameterServer(0, policy_versions, cfg.serial_mode))
        learner.init()  # the actor-critic, Adam, the learning-rate schedule (no checkpoint in the scratch dir)
        parameters = _actor_critic_parameters(learner.actor_critic, probe)
        unmapped = [name for name, parameter in learner.actor_critic.named_parameters()
                    if not any(parameter is mapped for mapped in parameters.values())]
        if unmapped:
            return ParityOutcome.unverifiable(f"Sample Factory's actor-critic has parameters the canonical networks "
                                              f"do not: {', '.join(unmapped)}", **_defaults(cfg, learner))

        prepared: dict[str, Any] = {}
        prepare = learner._prepare_batch  # noqa: SLF001 - read its GAE targets, then hand them on unchanged

        def prepare_and_keep(batch: Any) -> Any:
            buff, size, invalids = prepare(batch)
            prepared.update(advantages=buff["advantages"].clone(), returns=buff["returns"].clone(),
                            last_values=batch["values"][:, -1].clone(), invalids=invalids)
            return buff, size, invalids

        learner._prepare_batch = prepare_and_keep  # noqa: SLF001
        buffer = _trajectory_buffer(cfg, env_info, probe)
        with OneStep(learner.optimizer) as step:
            stats = learner.train(buffer)
        if step.steps != 1 or stats is None:
            return ParityOutcome.unverifiable(f"Sample Factory's learner made {step.steps} optimizer steps on one "
                                              f"minibatch ({prepared.get('invalids')} invalid samples)")

        steps, envs = probe.batch["rewards"].shape
        targets = {name: prepared[name].reshape(envs, steps).T.double().numpy()
                   for name in ("advantages", "returns")}
        train_stats = stats.get(TRAIN_STATS) or {}
        losses = {}
        if train_stats:
            # Sample Factory's value_loss carries value_loss_coeff, its exploration_loss -coeff * entropy
            losses = {"policy": float(train_stats["policy_loss"]), "total": float(train_stats["loss"]),
                      "value": float(train_stats["value_loss"]) / cfg.value_loss_coeff}
            if cfg.exploration_loss_coeff:
                losses["entropy"] = float(train_stats["exploration_loss"]) / cfg.exploration_loss_coeff
        last_values = prepared["last_values"].double().numpy()
        return ParityOutcome(
            RAN, targets=targets, gradients=step.gradients_of(parameters), updated=values_of(parameters),
            losses=losses, defaults=_defaults(cfg, learner),
            notes=(
                "policy = actor_encoder's MLP + action_parameterization.distribution_linear (+ learned_stddev, the "
                "log-std); value = critic_encoder's MLP + critic_linear; cores and decoders are identities "
                "(use_rnn=False, decoder_mlp_layers=[]): the canonical separate networks, every parameter mapped",
                "the batch enters Sample Factory's trajectory buffer as its batcher hands it to Learner.train; the "
                "sampler's reward_scale and reward_clip (identity in the adapter's configuration) are not applied",
                "Learner._prepare_batch recomputes the value of the rollout's last observation with the network "
                "being updated (the probe's weights), where canonical GAE uses the collecting policy's stored "
                "value: their largest difference on this probe is "
                f"{float(np.max(np.abs(last_values - probe.batch['last_values']))):.3g}; in sync mode both are "
                "the same network, so only policy lag (async) makes it show in training",
                _truncation_note(cfg),
                "policy ratio clipped to [1/(1+clip), 1+clip] and clamped to [0.05, 20] (_calculate_losses)",
                "the behaviour policy's action_logits (only read for KL statistics, kl_loss_coeff=0) are zeros",
            ),
        )


def _truncation_note(cfg: Any) -> str:
    if cfg.value_bootstrap:
        # Learner._prepare_batch: rewards += gamma * values[:, :-1] * time_outs * dones
        return ("a truncated step's reward gets gamma * V(s_t), the value of the observation before the last step "
                "(value_bootstrap=True), not gamma * V(final observation)")
    return ("a truncated episode is cut like a terminated one (value_bootstrap=False: no bootstrap of "
            "gamma * V(final observation))")


def _defaults(cfg: Any, learner: Any) -> dict[str, Any]:
    """What Sample Factory built, read back from its parsed configuration and its learner."""
    clip = float(cfg.ppo_clip_ratio)
    defaults: dict[str, Any] = {
        "algo": cfg.algo, "with_vtrace": bool(cfg.with_vtrace), "async_rl": bool(cfg.async_rl),
        "serial_mode": bool(cfg.serial_mode),
        "initialization": f"{cfg.policy_initialization}(gain={cfg.policy_init_gain:g})",
        "observation_normalization": bool(cfg.normalize_input),
        "normalize_input": bool(cfg.normalize_input),
        "reward_normalization": bool(cfg.normalize_returns),
        "normalize_returns": bool(cfg.normalize_returns),
        "reward_scale": float(cfg.reward_scale), "reward_clip": float(cfg.reward_clip),
        "action_squashing": f"tanh(scale={cfg.continuous_tanh_scale:g})" if cfg.continuous_tanh_scale > 0 else "none",
        # the samplers (algo/sampling/) hand the env the sampled action as it is
        "action_bounds": "not enforced (the env's own clipping, if any)",
        "log_std_init": math.log(cfg.initial_stddev), "adaptive_stddev": bool(cfg.adaptive_stddev),
        "learning_rate_schedule": cfg.lr_schedule,
        # Learner._value_loss: max of the clipped and unclipped squared errors, clipped by ppo_clip_value
        "value_clipping": f"max(clipped, unclipped), ppo_clip_value={cfg.ppo_clip_value:g}",
        "ppo_clip_value": float(cfg.ppo_clip_value),
        "value_loss": "mse", "value_loss_scale": 1.0, "value_loss_coeff": float(cfg.value_loss_coeff),
        "advantage_normalization": "always, per minibatch", "advantage_std": "unbiased (torch.std_mean), "
                                                                         "clamped below at 1e-7",
        "ppo_clip_ratio": clip, "ratio_clip": [1.0 / (1.0 + clip), 1.0 + clip], "ratio_clamp": [0.05, 20.0],
        "exploration_loss": cfg.exploration_loss, "exploration_loss_coeff": float(cfg.exploration_loss_coeff),
        "kl_loss_coeff": float(cfg.kl_loss_coeff), "max_grad_norm": float(cfg.max_grad_norm),
        "grad_clip_scope": "joint",  # clip_grad_norm_ over actor_critic.parameters()
        "value_bootstrap": bool(cfg.value_bootstrap), "truncation_bootstrap": bool(cfg.value_bootstrap),
        "actor_critic_share_weights": bool(cfg.actor_critic_share_weights), "use_rnn": bool(cfg.use_rnn),
        "max_policy_lag": int(cfg.max_policy_lag), "shuffle_minibatches": bool(cfg.shuffle_minibatches),
        "optimizer": cfg.optimizer, "adam_eps": float(cfg.adam_eps),
        "adam_betas": [float(cfg.adam_beta1), float(cfg.adam_beta2)],
    }
    if learner is not None:
        optimizer = learner.optimizer
        defaults["optimizer"] = type(optimizer).__name__
        defaults["adam_eps"] = optimizer.defaults.get("eps")
        defaults["adam_betas"] = list(optimizer.defaults.get("betas", ()))
        defaults["learning_rate"] = optimizer.param_groups[0]["lr"]
    return defaults
