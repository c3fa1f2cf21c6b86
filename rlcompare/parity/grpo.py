"""The reference GRPO update: group-relative advantages and the clipped token loss, on a fixed batch.

Equations (Shao et al. 2024, "DeepSeekMath", section 4.1; Yu et al. 2025, "DAPO"; Liu et al. 2025,
"Understanding R1-Zero-like training", for Dr. GRPO), with the choices the workload's
hyperparameters fix:

- **Advantages**: a completion's reward less its group's mean; with ``advantage_scaling = "group_std"``
  divided by the group's standard deviation (unbiased, as ``torch.std``) plus ``1e-4``.
- **Token loss**: ``-min(r A, clip(r, 1 - clip_low, 1 + clip_high) A) + kl_coef * kl`` with
  ``r = exp(logp - old_logp)`` and the KL estimator ``exp(ref - logp) - (ref - logp) - 1`` (Schulman's k3).
- **Aggregation** (``loss_aggregation``): ``token_mean`` sums the masked token losses and divides by the
  batch's completion tokens; ``sequence_mean`` averages each completion's tokens, then the completions;
  ``constant`` divides the sum by completions x ``max_new_tokens`` (the task's completion length).

The probe needs no model: its batch holds the token log-probabilities a policy gave (``per_token_logps``,
the quantity the loss is differentiated by), the old policy's and the reference model's, the completions'
token ids (``completion_ids``: each ends with ``<eos>``, except one cut off at the task's length, and is
padded with ``<pad>``) and their masks (every generated token, ``<eos>`` included: it is an action like any
other), and each completion's reward, for two prompts' groups (one with tied rewards). The adapter feeds them to its framework's own advantage and loss code in place of the
model's log-probabilities and returns the advantages (targets), the loss, and the loss's gradient with
respect to ``per_token_logps``: the gradient weighs each token as the aggregation does, so it names it.
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np

from rlcompare.harness.language_ids import DIGIT_ADDITION_ID, EOS_ID, PAD_ID, completion_tokens
from rlcompare.harness.parity import RAN, ParityOutcome, ParityProbe
from rlcompare.parity.networks import as_float32
from rlcompare.parity.reference import ProbeCase, ReferenceUpdate, Variant
from rlcompare.spec.workload import Workload

#: Added to a group's standard deviation before dividing by it (TRL's and the DeepSeekMath recipe's).
STD_EPS = 1e-4
GROUPS, GROUP_SIZE, MAX_NEW_TOKENS = 2, 4, 5
AGGREGATIONS = ("token_mean", "sequence_mean", "constant")
#: The probe's probability ratios (current over old), cycled over each completion's tokens: with the cases'
#: clips (0.2 below, 0.28 above) two fall below the lower clip, three inside, two between the clips' upper
#: ends and two past the upper clip.
RATIOS = (0.7, 0.77, 0.9, 1.0, 1.12, 1.23, 1.26, 1.4, 1.7)

_AGGREGATION = frozenset(f"aggregation_{name}" for name in AGGREGATIONS)
_SCALING = frozenset({"no_std_scaling", "group_std_scaling", "batch_std_scaling"})


def _aggregation_variant(name: str, description: str) -> Variant:
    return Variant(f"aggregation_{name}", description, "hyperparameters.loss_aggregation", "the workload's", name)


class GRPOReference(ReferenceUpdate):
    family = "GRPO"
    variants: ClassVar[dict[str, Variant]] = {variant.name: variant for variant in (
        _aggregation_variant("token_mean", "token losses averaged over every completion token of the batch (DAPO)"),
        _aggregation_variant("sequence_mean", "token losses averaged per completion, then over the completions "
                             "(the original GRPO)"),
        _aggregation_variant("constant", "token losses summed and divided by completions x max_new_tokens (Dr. GRPO)"),
        Variant("no_std_scaling", "advantages not divided by the group's standard deviation",
                "hyperparameters.advantage_scaling", "group_std", "none"),
        Variant("group_std_scaling", "advantages divided by the group's standard deviation although "
                "advantage_scaling is 'none'", "hyperparameters.advantage_scaling", "none", "group_std"),
        Variant("batch_std_scaling", "advantages divided by the standard deviation of the whole batch's rewards",
                "hyperparameters.advantage_scaling", "group_std", "batch_std"),
        Variant("population_std", "the group's standard deviation with n, not n - 1",
                "defaults.advantage_std", "unbiased", "population"),
        Variant("std_eps_1e-6", "1e-6 added to the standard deviation instead of 1e-4",
                "defaults.advantage_std_eps", STD_EPS, 1e-6),
        Variant("symmetric_clip", "the ratio clipped to 1 +- clip_low (clip_high ignored)",
                "hyperparameters.clip_high", "clip_high", "clip_low"),
        Variant("no_kl", "no KL penalty although kl_coef is set", "hyperparameters.kl_coef", "kl_coef", 0.0),
        Variant("kl_k1", "the KL penalty estimated as logp - ref (k1) instead of k3",
                "defaults.kl_estimator", "k3", "k1"),
        Variant("kl_times_ratio", "the KL penalty multiplied by the probability ratio (TRL's default "
                "use_bias_correction_kl)", "defaults.kl_importance_weight", False, True),
        Variant("eos_untrained", "the <eos> ending a completion is outside the loss (cut off the completion "
                "before its mask is made), and a completion that was only <eos> drops out of the per-completion "
                "means and counts", "defaults.eos_in_loss", True, False),
    )}
    exclusive: ClassVar[tuple[frozenset[str], ...]] = tuple(
        frozenset({a, b}) for group in (_AGGREGATION, _SCALING) for a in sorted(group) for b in sorted(group) if a < b
    ) + (frozenset({"no_kl", "kl_k1"}), frozenset({"no_kl", "kl_times_ratio"}))

    def cases(self) -> list[ProbeCase]:
        base = {"algorithm": "GRPO", "env": DIGIT_ADDITION_ID, "env_kwargs": {"max_new_tokens": MAX_NEW_TOKENS},
                "env_steps": GROUPS * GROUP_SIZE * MAX_NEW_TOKENS, "seeds": 1,
                "evaluation": {"interval_steps": GROUPS * GROUP_SIZE * MAX_NEW_TOKENS}}
        hyperparameters = {"group_size": GROUP_SIZE, "prompts_per_step": GROUPS, "clip_low": 0.2, "clip_high": 0.28,
                           "kl_coef": 0.04}
        cases = []
        for aggregation, scaling in (("token_mean", "group_std"), ("sequence_mean", "group_std"), ("constant", "none")):
            excluded = {f"aggregation_{aggregation}"}
            excluded |= {"no_std_scaling", "batch_std_scaling", "population_std", "std_eps_1e-6"} if scaling == "none" \
                else {"group_std_scaling"}
            cases.append(ProbeCase(aggregation, {
                **base, "id": f"parity-grpo-{aggregation.replace('_', '-')}",
                "hyperparameters": {**hyperparameters, "loss_aggregation": aggregation,
                                    "advantage_scaling": scaling}}, frozenset(excluded)))
        return cases

    def build_probe(self, workload: Workload, seed: int = 0) -> ParityProbe:
        rng = np.random.default_rng(9_000 + seed)
        hp = workload.hyperparameters
        completions = int(hp.prompts_per_step) * int(hp.group_size)
        length = completion_tokens(workload.env_kwargs)
        lengths = 1 + (np.arange(completions) * 3 + seed) % length  # every length from 1 to the task's
        mask = (np.arange(length)[None, :] < lengths[:, None]).astype(np.float64)
        logps = as_float32(-rng.uniform(0.05, 2.5, (completions, length)))
        # the old policy a little off: every completion has ratios below the lower clip, inside, between
        # 1 + clip_low and 1 + clip_high (where clip-higher shows) and past the upper clip; the reference further
        ratios = np.array(RATIOS)[(np.arange(completions)[:, None] + np.arange(length)[None, :]) % len(RATIOS)]
        old = as_float32(logps - np.log(ratios) + rng.normal(0.0, 0.005, logps.shape))
        ref = as_float32(logps + rng.normal(0.0, 0.5, logps.shape))
        # the first group's rewards all differ; every later group has a tie
        size = int(hp.group_size)
        grouped = [rng.permutation(np.linspace(0.0, 1.0, size))]
        for _ in range(1, int(hp.prompts_per_step)):
            group = rng.choice([0.0, 1 / 3, 2 / 3, 1.0], size)
            group[1] = group[0]
            grouped.append(group)
        rewards = as_float32(np.concatenate(grouped))
        batch = {"rewards": rewards, "completion_ids": probe_completion_ids(mask), "completion_mask": mask,
                 "per_token_logps": logps * mask,
                 "old_per_token_logps": old * mask, "ref_per_token_logps": ref * mask}
        return ParityProbe(family=self.family, action_space={"kind": "discrete", "n": 15}, observation_dim=0,
                           network={"language_model": workload.language_model.model_dump(mode="json")
                                    if workload.language_model is not None else {}},
                           hyperparameters=hp.model_dump(mode="json"), weights={}, batch=batch,
                           workload=workload.to_dict(), derived=workload.derived(), seed=seed)

    def expected(self, probe: ParityProbe, variants: frozenset[str] = frozenset()) -> ParityOutcome:
        import torch

        hp = probe.hyperparameters
        batch = probe.batch
        advantages = group_advantages(batch["rewards"], int(hp["group_size"]), hp["advantage_scaling"], variants)
        trained = np.asarray(batch["completion_mask"])
        if "eos_untrained" in variants:
            trained = trained * (np.asarray(batch["completion_ids"]) != EOS_ID)
        rows = torch.tensor(trained.sum(axis=1) > 0)  # every completion, unless eos_untrained emptied one
        mask = torch.tensor(trained)
        logps = torch.tensor(batch["per_token_logps"], requires_grad=True)
        old = torch.tensor(batch["old_per_token_logps"])
        ref = torch.tensor(batch["ref_per_token_logps"])
        adv = torch.tensor(advantages)[:, None]
        ratio = torch.exp(logps - old)
        clip_high = hp["clip_low"] if "symmetric_clip" in variants else hp["clip_high"]
        clipped = torch.clamp(ratio, 1 - hp["clip_low"], 1 + clip_high)
        per_token = -torch.min(ratio * adv, clipped * adv)
        if hp["kl_coef"] and "no_kl" not in variants:
            delta = ref - logps
            kl = -delta if "kl_k1" in variants else torch.exp(delta) - delta - 1
            if "kl_times_ratio" in variants:
                kl = kl * ratio
            per_token = per_token + hp["kl_coef"] * kl
        aggregation = next((name for name in AGGREGATIONS if f"aggregation_{name}" in variants), hp["loss_aggregation"])
        loss = aggregate(per_token[rows], mask[rows], aggregation)
        loss.backward()
        return ParityOutcome(RAN, targets={"advantages": advantages},
                             gradients={"per_token_logps": logps.grad.numpy() * batch["completion_mask"]},
                             losses={"policy": float(loss.detach())})


def probe_completion_ids(mask: np.ndarray) -> np.ndarray:
    """Token ids of completions whose lengths are the mask's rows: digits, then ``<eos>`` where the completion
    is shorter than the task's length (a full-length one was cut off by it); ``<pad>`` after the end."""
    width = mask.shape[1]
    ids = np.full(mask.shape, PAD_ID, dtype=np.int64)
    for row, length in enumerate(mask.sum(axis=1).astype(int)):
        ids[row, :length] = [3 + (index + row) % 10 for index in range(length)]
        if length < width:
            ids[row, length - 1] = EOS_ID
    return ids


def group_advantages(rewards: np.ndarray, group_size: int, scaling: str,
                     variants: frozenset[str] = frozenset()) -> np.ndarray:
    """Each reward less its group's mean, scaled as ``scaling`` (and the variants) say."""
    grouped = np.asarray(rewards, dtype=np.float64).reshape(-1, group_size)
    centred = grouped - grouped.mean(axis=1, keepdims=True)
    if "no_std_scaling" in variants:
        scaling = "none"
    elif "group_std_scaling" in variants:
        scaling = "group_std"
    elif "batch_std_scaling" in variants:
        scaling = "batch_std"
    if scaling == "none":
        return centred.reshape(-1)
    ddof = 0 if "population_std" in variants else 1
    eps = 1e-6 if "std_eps_1e-6" in variants else STD_EPS
    if scaling == "batch_std":
        std = np.full((grouped.shape[0], 1), grouped.std(ddof=ddof))
    else:
        std = grouped.std(axis=1, ddof=ddof, keepdims=True)
    return (centred / (std + eps)).reshape(-1)


def aggregate(per_token: object, mask: object, aggregation: str) -> object:
    """The loss from masked per-token losses (torch tensors), as ``aggregation`` says."""
    masked = per_token * mask  # type: ignore[operator]
    if aggregation == "token_mean":
        return masked.sum() / mask.sum().clamp(min=1.0)  # type: ignore[attr-defined]
    if aggregation == "sequence_mean":
        return (masked.sum(dim=1) / mask.sum(dim=1).clamp(min=1.0)).mean()  # type: ignore[attr-defined]
    if aggregation == "constant":
        return masked.sum() / (mask.shape[0] * mask.shape[1])  # type: ignore[attr-defined]
    raise ValueError(f"unknown loss aggregation {aggregation!r}")
