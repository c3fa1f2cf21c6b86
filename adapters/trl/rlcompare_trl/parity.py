"""TRL's own GRPO advantages and loss on the harness's probe (:mod:`rlcompare.parity.grpo`).

The probe's completions (token ids whose lengths are the probe's masks) go through TRL's own
``_generate_and_score_completions`` (sampling replaced by a ``rollout_func`` that returns them, the
reward function returning the probe's rewards): its advantages are the targets. Then
``GRPOTrainer._compute_loss`` runs on that batch with the probe's old and reference log-probabilities,
its per-token log-probabilities taken from the probe (``_get_per_token_logps_and_entropies`` answers
with them, as a leaf tensor): the loss, and its gradient with respect to those log-probabilities,
come from TRL's code alone.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from rlcompare.adapter import ParityOutcome, ParityProbe
from rlcompare.harness.language import task_of
from rlcompare.harness.parity import RAN
from rlcompare_trl.model import build_model, build_tokenizer, go_offline


def grpo_loss(probe: ParityProbe, config: dict[str, Any]) -> ParityOutcome:
    go_offline()
    import tempfile

    import torch
    from datasets import Dataset
    from trl import GRPOConfig, GRPOTrainer

    workload = probe.workload_view()
    task = task_of(workload.env, workload.env_kwargs)
    batch = probe.batch
    mask = np.asarray(batch["completion_mask"])
    ids = np.asarray(batch["completion_ids"], dtype=np.int64)
    completions = [row[:length].tolist() for row, length in zip(ids, mask.sum(axis=1).astype(int), strict=True)]
    rewards = [float(value) for value in batch["rewards"]]
    group = int(config["num_generations"])
    prompt = "1+2=" if task.digits == 1 else "1" * task.digits + "+" + "2" * task.digits + "="
    rows = [{"prompt": prompt, "reward": reward} for reward in rewards]
    tokenizer = build_tokenizer()

    def probe_rollout(prompts: list[str], trainer: Any) -> dict[str, Any]:
        return {"prompt_ids": tokenizer(prompts)["input_ids"], "completion_ids": completions, "logprobs": None}

    def probe_reward(prompts: list[str], completions: list[str], reward: list[float], **_: Any) -> list[float]:
        return list(reward)

    beta = float(config["beta"])
    settings = {**config, "beta": 0.0, "per_device_train_batch_size": len(rows)}  # the reference model: below
    torch.manual_seed(probe.seed)
    with tempfile.TemporaryDirectory() as scratch:
        trainer = GRPOTrainer(
            model=build_model(workload.language_model.to_dict(), probe.seed, task.sequence_length),
            reward_funcs=probe_reward, processing_class=tokenizer, rollout_func=probe_rollout,
            train_dataset=Dataset.from_list(rows),
            args=GRPOConfig(output_dir=scratch, max_steps=1, use_cpu=True, bf16=False, fp16=False,
                            gradient_checkpointing=False, report_to="none", save_strategy="no", disable_tqdm=True,
                            seed=probe.seed, **settings))
        trainer.model.train()
        trainer.current_gradient_accumulation_steps = 1  # set by Trainer's loop; _compute_loss reads it
        inputs = trainer._generate_and_score_completions([dict(row) for row in rows])
        advantages = inputs["advantages"].detach().double().numpy()
        if inputs["completion_mask"].shape != mask.shape or not np.array_equal(inputs["completion_mask"].numpy(), mask):
            raise RuntimeError(f"TRL's completion mask {inputs['completion_mask'].tolist()} is not the probe's")
        trainer.beta = beta  # the probe gives the reference log-probabilities: no reference model is needed
        logps = torch.tensor(np.asarray(batch["per_token_logps"], dtype=np.float32), requires_grad=True)

        def probe_logps(*_: Any, **__: Any) -> tuple[Any, Any, Any]:
            return logps, torch.zeros_like(logps), None

        trainer._get_per_token_logps_and_entropies = probe_logps
        inputs = dict(inputs)
        inputs["old_per_token_logps"] = torch.tensor(np.asarray(batch["old_per_token_logps"], dtype=np.float32))
        inputs["ref_per_token_logps"] = torch.tensor(np.asarray(batch["ref_per_token_logps"], dtype=np.float32))
        loss = trainer._compute_loss(trainer.model, inputs)
        loss.backward()
    gradient = logps.grad.detach().double().numpy() * mask
    notes = (f"TRL {config['loss_type']!r} loss, scale_rewards={config['scale_rewards']!r}, "
             f"use_bias_correction_kl={config['use_bias_correction_kl']}, groups of {group}",)
    return ParityOutcome(RAN, targets={"advantages": advantages}, gradients={"per_token_logps": gradient},
                         losses={"policy": float(loss.detach())}, notes=notes,
                         defaults={"loss_type": config["loss_type"], "scale_rewards": config["scale_rewards"]})
