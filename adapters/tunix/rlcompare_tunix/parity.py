"""Tunix's own GRPO advantages and loss on the harness's probe (:mod:`rlcompare.parity.grpo`).

A ``GRPOLearner`` is built as a run builds it (an ``RLCluster`` over the harness's model, the run's
``GRPOConfig``), with its rollout answering the probe's completions the way Tunix's sampler returns
completions (``pad_output=False``: each cut before its first ``<eos>``, by Tunix's own
``np_find_first_eos_idx``) and its reward function returning the probe's rewards. Tunix's own
``_generate_and_compute_advantage`` then pads the completions, builds their mask
(``completion_ids != pad_id``) and computes the advantages with the registered estimator: they are
the targets. The loss is the learner's own (the ``loss_fn`` it installs in the actor trainer:
``grpo_loss_fn`` with its config, pad and eos ids) on that training example, with the probe's old and
reference log-probabilities, and with ``tunix.rl.common.compute_per_token_logps`` answering the probe's
per-token log-probabilities: ``jax.grad`` differentiates the loss with respect to them.
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np

from rlcompare.adapter import ParityOutcome, ParityProbe
from rlcompare.harness.language import BOS_ID, EOS_ID, PAD_ID, VOCABULARY, encode, task_of
from rlcompare.harness.parity import RAN
from rlcompare_tunix.model import HarnessTokenizer, build_model, make_mesh
from rlcompare_tunix.run import build_cluster, grpo_config


def grpo_loss(probe: ParityProbe, config: dict[str, Any]) -> ParityOutcome:
    os.environ.setdefault("JAX_PLATFORMS", "cpu")
    import jax
    import jax.numpy as jnp
    from tunix.generate import utils as generate_utils
    from tunix.rl import common
    from tunix.rl.grpo import grpo_learner as grpo_lib
    from tunix.rl.rollout import base_rollout

    workload = probe.workload_view()
    task = task_of(workload.env, workload.env_kwargs)
    batch = probe.batch
    mask = np.asarray(batch["completion_mask"], dtype=np.float64)
    ids = np.asarray(batch["completion_ids"], dtype=np.int32)
    rows, width = ids.shape
    group = int(config["num_generations"])
    # what Tunix's sampler returns for these completions: the tokens before the first <eos>
    tokens = [row[:generate_utils.np_find_first_eos_idx(row, EOS_ID)] for row in ids]
    tokenizer = HarnessTokenizer()
    prompt = "+".join(["1" * task.digits, "2" * task.digits]) + "="
    prompt_ids = np.array([[BOS_ID, *encode(prompt)]] * rows, dtype=np.int32)

    def probe_rollout(prompts: list[str], **_: Any) -> Any:
        return base_rollout.RolloutOutput(text=[tokenizer.decode(row.tolist()) for row in tokens], logits=[],
                                          tokens=tokens, left_padded_prompt_tokens=prompt_ids, logprobs=None)

    def probe_reward(prompts: list[str], completions: list[str], reward: np.ndarray, **_: Any) -> list[float]:
        return [float(value) for value in reward]

    if width != task.max_new_tokens:
        raise ValueError(f"the probe's completions are {width} tokens wide, its task's max_new_tokens "
                         f"{task.max_new_tokens}")
    mesh = make_mesh()
    model = build_model(workload.language_model.to_dict(), probe.seed, mesh)
    # the probe gives the reference and old log-probabilities: no model computes them, so the example is
    # made with beta 0 and one iteration, and the loss computed with the run's
    cluster = build_cluster(config, model, None, mesh, task, max_steps=1, seed=probe.seed)
    algo_config = grpo_config({**config, "beta": 0.0, "num_iterations": 1})
    learner = grpo_lib.GRPOLearner(rl_cluster=cluster, algo_config=algo_config, reward_fns=[probe_reward])
    cluster.generate = probe_rollout
    # as RLLearner.train sets them for one full batch
    learner._rollout_micro_batch_size = learner._compute_logps_micro_batch_size = rows // group
    example = learner._generate_and_compute_advantage(
        {"prompts": np.array([prompt] * rows), "reward": np.asarray(batch["rewards"], dtype=np.float64)})
    algo_config.beta = float(config["beta"])
    algo_config.num_iterations = int(config["num_iterations"])
    advantages = np.asarray(example.advantages, dtype=np.float64)
    tunix_mask = np.asarray(example.completion_mask, dtype=np.float64)
    example = example.replace(
        old_per_token_logps=jnp.asarray(np.asarray(batch["old_per_token_logps"], dtype=np.float32)),
        ref_per_token_logps=jnp.asarray(np.asarray(batch["ref_per_token_logps"], dtype=np.float32)))
    loss_fn = cluster.actor_trainer.loss_fn  # the learner's: grpo_loss_fn with its config, pad and eos ids
    compute_per_token_logps = common.compute_per_token_logps

    def loss_of(logps: Any) -> Any:
        def probe_logps(*_: Any, return_logits: bool = False, **__: Any) -> Any:
            logits = jnp.zeros((*logps.shape, len(VOCABULARY)), dtype=jnp.float32)  # entropy (a metric) only
            return (logps, logits) if return_logits else logps

        common.compute_per_token_logps = probe_logps
        try:
            loss, _ = loss_fn(cluster.actor_trainer.model, example, algo_config)
        finally:
            common.compute_per_token_logps = compute_per_token_logps
        return loss

    logps = jnp.asarray(np.asarray(batch["per_token_logps"], dtype=np.float32))
    loss, gradient = jax.value_and_grad(loss_of)(logps)
    gradient = np.asarray(gradient, dtype=np.float64) * mask
    untrained = int(mask.sum() - (tunix_mask * mask).sum())
    notes = (f"Tunix {config['loss_agg_mode']!r} loss, advantage_estimator={config['advantage_estimator']!r}, "
             f"kl_loss_mode={config['kl_loss_mode']!r}, groups of {group}",
             f"Tunix's completion mask holds {int(tunix_mask.sum())} of the probe's {int(mask.sum())} tokens: "
             f"{untrained} <eos> tokens are cut off by its sampler and never trained")
    return ParityOutcome(RAN, targets={"advantages": advantages}, gradients={"per_token_logps": gradient},
                         losses={"policy": float(loss)}, notes=notes,
                         defaults={"loss_agg_mode": config["loss_agg_mode"],
                                   "advantage_estimator": config["advantage_estimator"],
                                   "kl_loss_mode": config["kl_loss_mode"], "eos_in_loss": untrained == 0,
                                   "pad_id": PAD_ID})
