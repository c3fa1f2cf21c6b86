"""RLlib's own update on rlcompare's parity probes (new API stack, ``ray/rllib`` 2.60).

No Ray cluster is started: the adapter's ``AlgorithmConfig`` builds a local Learner
(``AlgorithmConfig.build_learner``, ``ray/rllib/algorithms/algorithm_config.py``), whose RLModule
gets the probe's weights. The probe's batch goes in as RLlib's own data: for PPO, the
``SingleAgentEpisode`` chunks an env runner's ``sample()`` returns, run through the Learner's own
learner-connector pipeline (``AddOneTsToEpisodesAndTruncate``, ``GeneralAdvantageEstimation``, ...)
and ``Learner.update``; RLlib's optimizers are wrapped in :class:`OneStep`.
"""

from __future__ import annotations

import contextlib
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
    import numpy as np

    from rlcompare_rllib import RLlibAdapter

#: Said with every outcome: the one change the probe makes to the adapter's config.
UNSEEDED = ("built without the config's seed: the probe's weights replace every seeded initialization and "
            "nothing is sampled (RLlib's seeding would only add torch.use_deterministic_algorithms)")

#: One episode chunk of the probe's rollout: (env index, first step, last step, ended by termination
#: or truncation rather than by the rollout's end).
Chunk = tuple[int, int, int, bool]


def build_learner(adapter: RLlibAdapter, probe: ParityProbe) -> tuple[Any, Any, Any]:
    """(config, learner, module): the config ``train()`` builds for the probe's workload, a local
    Learner built from it (``AlgorithmConfig.build_learner``: no Ray cluster, no env runner; the
    env only tells RLlib the spaces) and the Learner's single-agent RLModule."""
    from ray.rllib.core import DEFAULT_MODULE_ID

    workload = probe.workload_view()
    env = make_env(workload.env, dict(workload.env_kwargs))
    try:
        config = adapter.build_config(workload, probe.seed, workload.env)
        # no seed: the probe's weights replace every seeded initialization and nothing is sampled,
        # and RLlib's set_torch_seed would switch on torch.use_deterministic_algorithms, whose
        # import of torch._inductor alone takes seconds
        config.debugging(seed=None)
        learner = config.build_learner(env=env)
    finally:
        env.close()
    return config, learner, learner.module[DEFAULT_MODULE_ID]


def optimizers_of(learner: Any) -> dict[str, Any]:
    """The Learner's torch optimizers of its single module, by RLlib's optimizer name."""
    from ray.rllib.core import DEFAULT_MODULE_ID

    return dict(learner.get_optimizers_for_module(DEFAULT_MODULE_ID))


def module_results(results: dict[str, Any]) -> dict[str, float]:
    """The single module's scalar results of ``Learner.update`` (RLlib's ``Stats`` objects, peeked)."""
    from ray.rllib.core import DEFAULT_MODULE_ID

    out = {}
    for key, stats in (results.get(DEFAULT_MODULE_ID) or {}).items():
        value = stats.peek() if hasattr(stats, "peek") else stats
        try:
            out[key] = float(value)
        except (TypeError, ValueError):
            continue  # per-sample arrays (TD errors), not a loss term
    return out


# -- PPO -----------------------------------------------------------------------------------------


def episode_chunks(batch: dict[str, np.ndarray]) -> list[Chunk]:
    """The probe's rollout cut into the episode chunks RLlib's ``SingleAgentEnvRunner._sample``
    returns, in its order: the episodes that ended (termination or truncation), in the order they
    ended, then every env's ongoing chunk, cut at the rollout's end."""
    import numpy as np

    dones = np.maximum(batch["terminated"], batch["truncated"])
    steps, envs = dones.shape
    ended: list[Chunk] = []
    ongoing: list[Chunk] = []
    for env in range(envs):
        first = 0
        for t in range(steps):
            if dones[t, env]:
                ended.append((env, first, t, True))
                first = t + 1
        if first < steps:
            ongoing.append((env, first, steps - 1, False))
    return sorted(ended, key=lambda chunk: (chunk[2], chunk[0])) + ongoing


def _ppo_episodes(probe: ParityProbe, module: Any, chunks: list[Chunk]) -> list[Any]:
    """Each chunk as the ``SingleAgentEpisode`` an env runner fills: observations (and the final
    one: the truncated episode's final observation, the next observation where the rollout cut the
    chunk), actions, rewards, the episode's terminated/truncated flag, and the sampling module's
    ``action_logp`` in ``extra_model_outputs``."""
    import numpy as np
    from ray.rllib.core.columns import Columns
    from ray.rllib.env.single_agent_episode import SingleAgentEpisode

    batch = probe.batch
    dist_inputs = int(module.pi.net.mlp[-1].out_features) * (1 if probe.discrete else 2)
    episodes = []
    for env, first, last, done in chunks:
        steps = range(first, last + 1)
        # a terminated episode's final observation is never bootstrapped (its value is gated by
        # terminated); the probe's terminal_obs slot stands in for it
        final = batch["terminal_obs"][last, env] if done else batch["last_obs"][env]
        actions = ([int(batch["actions"][t, env]) for t in steps] if probe.discrete
                   else [batch["actions"][t, env].astype(np.float32) for t in steps])
        episodes.append(SingleAgentEpisode(
            observations=[batch["obs"][t, env].astype(np.float32) for t in steps] + [final.astype(np.float32)],
            actions=actions, rewards=[float(batch["rewards"][t, env]) for t in steps],
            terminated=bool(done and batch["terminated"][last, env]),
            truncated=bool(done and batch["truncated"][last, env]),
            extra_model_outputs={
                Columns.ACTION_LOGP: [np.float32(batch["old_log_prob"][t, env]) for t in steps],
                # the sampling policy's distribution inputs are not in the probe; RLlib's loss reads
                # them only for its KL term, which the adapter switches off (use_kl_loss=False)
                Columns.ACTION_DIST_INPUTS: [np.zeros(dist_inputs, dtype=np.float32)] * len(steps),
            },
            len_lookback_buffer=0, observation_space=module.observation_space, action_space=module.action_space,
        ).to_numpy())
    return episodes


def _stored_values(batch: dict[str, np.ndarray], chunks: list[Chunk]) -> list[float]:
    """The values RLlib's GAE connector computes, row by row of its batch, as the sampling policy's
    stored values: each chunk's steps, then its artificial bootstrap step (the final observation's
    value: ``terminal_values`` where the episode ended, 0 where it terminated, ``last_values`` where
    the rollout cut it)."""
    values: list[float] = []
    for env, first, last, done in chunks:
        values.extend(float(value) for value in batch["old_values"][first:last + 1, env])
        values.append(float(batch["terminal_values"][last, env]) if done else float(batch["last_values"][env]))
    return values


@contextlib.contextmanager
def _gae_over_stored_values(module: Any, values: list[float], record: dict[str, Any]) -> Iterator[None]:
    """Inside, the module's value pass *without* embeddings (the one ``GeneralAdvantageEstimation``
    makes over the whole batch, ``connectors/learner/general_advantage_estimation.py``) returns the
    probe's stored values, and RLlib's ``compute_value_targets`` records what it computed.

    Why: RLlib does not store the sampling policy's values; its GAE connector recomputes them with
    the Learner's module at the start of ``Learner.update``, which in synchronous PPO holds the very
    weights the env runners sampled with. The probe's weights are those of a policy one epoch
    later, so the values the sampling policy had are handed to RLlib where it computes them.
    The loss's own value pass (with the forward pass's embeddings) is left alone."""
    import torch
    from ray.rllib.connectors.learner import general_advantage_estimation

    stored = torch.tensor(values, dtype=torch.float32)
    compute_values = module.compute_values
    compute_value_targets = general_advantage_estimation.compute_value_targets

    def values_of_sampling_policy(batch: Any, embeddings: Any = None) -> Any:
        if embeddings is not None:
            return compute_values(batch, embeddings=embeddings)
        if len(batch["obs"]) != len(stored):
            raise RuntimeError(f"RLlib's GAE batch has {len(batch['obs'])} rows, the probe's chunks {len(stored)}")
        return stored

    def recorded(**kwargs: Any) -> Any:
        targets = compute_value_targets(**kwargs)
        record.update(values=kwargs["values"], value_targets=targets)
        return targets

    module.compute_values = values_of_sampling_policy
    general_advantage_estimation.compute_value_targets = recorded
    try:
        yield
    finally:
        del module.compute_values  # the class's method again
        general_advantage_estimation.compute_value_targets = compute_value_targets


def _ppo_parameters(module: Any, probe: ParityProbe) -> dict[str, Any]:
    """The probe's weights in RLlib's DefaultPPOTorchRLModule: actor encoder + ``pi`` head, critic
    encoder + ``vf`` head (separate: ``vf_share_layers=False``), the free log-std of ``pi``."""
    layers = len(probe.network["hidden_sizes"]) + 1
    parameters = {
        **load_linear_stack([*linear_layers(module.encoder.actor_encoder), *linear_layers(module.pi)],
                            stack_names("policy", layers), probe.weights),
        **load_linear_stack([*linear_layers(module.encoder.critic_encoder), *linear_layers(module.vf)],
                            stack_names("value", layers), probe.weights),
    }
    if not probe.discrete:
        load_tensor(module.pi.log_std, probe.weights["policy.log_std"])
        parameters["policy.log_std"] = module.pi.log_std
    return parameters


def ppo_update(adapter: RLlibAdapter, probe: ParityProbe) -> ParityOutcome:
    """One PPO step: the probe's rollout as episodes through RLlib's learner connectors (GAE and
    advantage standardization in ``GeneralAdvantageEstimation``), then one ``Learner.update`` pass
    (``PPOTorchLearner.compute_loss_for_module``, ``TorchLearner``'s clipping and Adam step)."""
    import numpy as np
    from ray.rllib.core import DEFAULT_MODULE_ID
    from ray.rllib.evaluation.postprocessing import Postprocessing
    from ray.rllib.policy.sample_batch import MultiAgentBatch, SampleBatch

    config, learner, module = build_learner(adapter, probe)
    if config.use_kl_loss:
        return ParityOutcome.unverifiable("the config uses RLlib's KL loss, which needs the sampling policy's "
                                          "distribution inputs; the probe does not hold them")
    if not probe.discrete and not hasattr(module.pi, "log_std"):
        return ParityOutcome.unverifiable("RLlib's policy head computes a state-dependent log-std "
                                          "(free_log_std=False); the probe's log-std is one free parameter")
    log_std_init = module.pi.log_std.detach().numpy().tolist() if not probe.discrete else None
    parameters = _ppo_parameters(module, probe)
    batch = probe.batch
    chunks = episode_chunks(batch)
    episodes = _ppo_episodes(probe, module, chunks)

    # RLlib's learner-connector pipeline, as Learner._make_batch_if_necessary runs it on episodes
    record: dict[str, Any] = {}
    with _gae_over_stored_values(module, _stored_values(batch, chunks), record):
        data = learner._learner_connector(rl_module=learner.module, batch={}, episodes=episodes, shared_data={},
                                          metrics=learner.metrics)
    train_batch = MultiAgentBatch({mid: SampleBatch(columns) for mid, columns in data.items()},
                                  env_steps=sum(len(episode) for episode in episodes))
    rows = len(train_batch.policy_batches[DEFAULT_MODULE_ID])

    # the targets on the probe's [steps, envs] grid: RLlib's rows are each chunk's steps, then one
    # artificial bootstrap row per chunk (AddOneTsToEpisodesAndTruncate)
    values = np.asarray(record["values"], dtype=np.float64)
    value_targets = np.asarray(record["value_targets"], dtype=np.float64)
    standardized = data[DEFAULT_MODULE_ID][Postprocessing.ADVANTAGES].detach().numpy().astype(np.float64)
    shape = batch["rewards"].shape
    advantages, returns = np.zeros(shape), np.zeros(shape)
    bootstrap_rows = []
    row = 0
    for env, first, last, _ in chunks:
        for t in range(first, last + 1):
            advantages[t, env] = value_targets[row] - values[row]
            returns[t, env] = value_targets[row]
            row += 1
        bootstrap_rows.append(row)  # the chunk's artificial bootstrap row
        row += 1

    optimizers = optimizers_of(learner)
    with OneStep(*optimizers.values()) as step:
        # the probe's one minibatch is the whole batch: minibatch_size=None is one pass over it
        # (with minibatch_size=16 RLlib would count the 4 artificial rows and step twice)
        results = learner.update(batch=train_batch, timesteps={}, num_epochs=1, minibatch_size=None)
    if step.steps != 1:
        return ParityOutcome.unverifiable(f"RLlib made {step.steps} optimizer steps on one minibatch")
    scalars = module_results(results)
    extra = standardized[bootstrap_rows]
    return ParityOutcome(
        RAN, targets={"advantages": advantages, "returns": returns},
        gradients=step.gradients_of(parameters), updated=values_of(parameters),
        losses={"policy": scalars.get("policy_loss", float("nan")), "value": scalars.get("vf_loss", float("nan")),
                "entropy": -scalars.get("entropy", float("nan")), "total": scalars.get("total_loss", float("nan"))},
        notes=(
            UNSEEDED,
            "RLlib recomputes the sampling policy's values in its GAE learner connector (with the Learner's "
            "weights, those the env runners sampled with in synchronous PPO); the probe's stored values were "
            "handed to that value pass",
            f"RLlib's train batch has {rows} rows for {int(np.prod(shape))} transitions: one artificial bootstrap "
            "row per episode chunk (AddOneTsToEpisodesAndTruncate), masked out of the loss but not out of the "
            f"advantage standardization (their standardized advantages: {np.round(extra, 3).tolist()})",
            f"minibatch_size={config.minibatch_size} counts those rows too: one epoch over this batch is "
            f"{-(-rows // config.minibatch_size)} minibatch steps in a training run; the probe makes one pass "
            "over the whole batch (minibatch_size=None)",
            "the probe's actions are the module's own (normalize_actions: RLlib's Gaussian acts in [-1, 1] "
            "and its actions are rescaled to the env's bounds)" if not probe.discrete else "discrete actions",
        ),
        defaults={**_ppo_defaults(config, learner, optimizers, probe.discrete),
                  **({"log_std_init": log_std_init} if log_std_init is not None else {})},
    )


def _ppo_defaults(config: Any, learner: Any, optimizers: dict[str, Any], discrete: bool) -> dict[str, Any]:
    """What RLlib built, read back from the config, the Learner and its optimizers."""
    pieces = [type(piece).__name__ for piece in learner._learner_connector.connectors]
    return {
        **common_defaults(config, learner, optimizers, None if discrete else "none (Gaussian)"),
        "value_clipping": ("off" if config.vf_clip_param == float("inf")
                           else f"squared error clamped to [0, {config.vf_clip_param}]"),
        "vf_clip_param": str(config.vf_clip_param), "use_kl_loss": bool(config.use_kl_loss),
        "kl_coeff": float(config.kl_coeff), "entropy_coeff": config.entropy_coeff,
        "vf_loss_coeff": float(config.vf_loss_coeff), "clip_param": float(config.clip_param),
        "lambda": float(config.lambda_), "num_epochs": int(config.num_epochs),
        "minibatch_size": config.minibatch_size, "shuffle_batch_per_epoch": bool(config.shuffle_batch_per_epoch),
        "advantage_normalization": ("over the train batch including one artificial bootstrap row per episode chunk, "
                                    "biased std, (A - mean) / max(std, 1e-4)" if "GeneralAdvantageEstimation" in pieces
                                    else "none"),
        "value_loss": "mse (no factor 1/2)", "learner_connector": pieces,
        "vf_share_layers": bool(config.model_config.get("vf_share_layers")),
        "free_log_std": bool(config.model_config.get("free_log_std")),
    }


def common_defaults(config: Any, learner: Any, optimizers: dict[str, Any], squashing: str | None = None) -> dict[str, Any]:
    """What every family's Learner uses, read back from the config and its optimizers;
    ``squashing``: how the policy bounds its actions before RLlib rescales them (continuous only)."""
    first = next(iter(optimizers.values()))
    model = config.model_config
    kernel = model.get("fcnet_kernel_initializer")
    rates = [config.lr] if config.lr is not None else [getattr(config, f"{part}_lr", None)
                                                      for part in ("actor", "critic", "alpha")]
    defaults = {
        "optimizer": type(first).__name__,
        "adam_eps": first.defaults.get("eps"),
        "optimizers": {name: type(optimizer).__name__ for name, optimizer in optimizers.items()},
        "initialization": f"{kernel}" if kernel else "torch default (kaiming uniform a=sqrt 5), biases uniform",
        # RLlib's default env-to-module pipeline has no observation filter (one comes only from a
        # connector the config adds), and no piece of the learner pipeline scales rewards
        "observation_normalization": config._env_to_module_connector is not None,
        "reward_normalization": any("reward" in type(piece).__name__.lower()
                                    for piece in learner._learner_connector.connectors),
        "learning_rate_schedule": ("constant" if all(isinstance(rate, (int, float)) for rate in rates)
                                   else str(rates)),
        "grad_clip": config.grad_clip, "grad_clip_by": config.grad_clip_by,
        "grad_clip_scope": f"per optimizer ({', '.join(optimizers)})" if config.grad_clip is not None else "none",
        "gamma": float(config.gamma),
    }
    if squashing is not None:
        rescaled = "rescaled from [-1, 1] to the env's bounds, then clipped" if config.normalize_actions else (
            "clipped to the env's bounds" if config.clip_actions else "sent to the env as they are")
        defaults["action_squashing"] = f"{squashing}; {rescaled}"
        defaults["normalize_actions"] = bool(config.normalize_actions)
    return defaults
