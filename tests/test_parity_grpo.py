"""The GRPO reference: its probe, its loss against an independent numpy computation of each aggregation,
and every named variant visible on some probe (no framework: numpy and torch in the main environment)."""

from __future__ import annotations

import numpy as np
import pytest

from rlcompare.harness.language_ids import EOS_ID, PAD_ID
from rlcompare.parity.grpo import GRPOReference, group_advantages
from rlcompare.parity.verdict import DIFFERS, TOLERANCES, VERIFIED, compare, judge

GRPO = GRPOReference()
CASES = {case.name: case for case in GRPO.cases()}


def _probe(name: str, seed: int = 0):
    return GRPO.build_probe(GRPO.case_workload(CASES[name]), seed)


def test_the_probe_holds_every_length_a_cut_off_completion_a_tie_and_ratios_past_both_clips() -> None:
    probe = _probe("token_mean")
    batch = probe.batch
    mask, ids = batch["completion_mask"], batch["completion_ids"]
    lengths = mask.sum(axis=1).astype(int)
    assert set(lengths) == set(range(1, mask.shape[1] + 1))
    for row, length in zip(ids, lengths, strict=True):
        assert (row[length:] == PAD_ID).all()
        assert (row[length - 1] == EOS_ID) == (length < mask.shape[1])  # a full-length one was cut off
    groups = batch["rewards"].reshape(2, 4)
    assert len(set(groups[0])) == 4 and groups[1][0] == groups[1][1]
    ratios = np.exp(batch["per_token_logps"] - batch["old_per_token_logps"])[mask > 0]
    assert (ratios < 0.8).any() and (ratios > 1.28).any()
    again = _probe("token_mean")
    assert probe.digest() == again.digest() and probe.digest() != _probe("token_mean", seed=1).digest()


def _numpy_loss(batch: dict, hp: dict) -> float:
    """The token loss and its aggregation written out again in numpy, from the papers' formulas."""
    mask = batch["completion_mask"]
    adv = group_advantages(batch["rewards"], hp["group_size"], hp["advantage_scaling"])[:, None]
    logp, old, ref = batch["per_token_logps"], batch["old_per_token_logps"], batch["ref_per_token_logps"]
    ratio = np.exp(logp - old)
    per_token = -np.minimum(ratio * adv, np.clip(ratio, 1 - hp["clip_low"], 1 + hp["clip_high"]) * adv)
    per_token += hp["kl_coef"] * (np.exp(ref - logp) - (ref - logp) - 1)
    if hp["loss_aggregation"] == "token_mean":
        return float((per_token * mask).sum() / mask.sum())
    if hp["loss_aggregation"] == "sequence_mean":
        return float(((per_token * mask).sum(axis=1) / mask.sum(axis=1)).mean())
    return float((per_token * mask).sum() / mask.size)


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_reference_loss_and_its_gradient_are_the_formulas(name: str) -> None:
    probe = _probe(name)
    outcome = GRPO.expected(probe)
    hp = probe.hyperparameters
    assert outcome.losses["policy"] == pytest.approx(_numpy_loss(probe.batch, hp), rel=1e-9)
    # the gradient by central differences, token by token
    batch = {key: np.array(value, dtype=np.float64) for key, value in probe.batch.items()}
    numeric = np.zeros_like(batch["per_token_logps"])
    for index in zip(*np.nonzero(batch["completion_mask"]), strict=True):
        for sign in (1, -1):
            moved = dict(batch, per_token_logps=batch["per_token_logps"].copy())
            moved["per_token_logps"][index] += sign * 1e-6
            numeric[index] += sign * _numpy_loss(moved, hp) / 2e-6
    assert np.allclose(outcome.gradients["per_token_logps"], numeric, atol=1e-7)
    grouped = batch["rewards"].reshape(-1, 4)
    centred = grouped - grouped.mean(axis=1, keepdims=True)
    want = centred if hp["advantage_scaling"] == "none" else centred / (grouped.std(axis=1, ddof=1, keepdims=True) + 1e-4)
    assert np.allclose(outcome.targets["advantages"], want.reshape(-1))


@pytest.mark.parametrize("variant", sorted(GRPO.variants))
def test_every_variant_shows_on_some_probe(variant: str) -> None:
    shown = []
    for name, case in CASES.items():
        if variant in case.excluded:
            continue
        probe = _probe(name)
        checks = compare(GRPO.expected(probe, frozenset({variant})), GRPO.expected(probe), probe)
        shown.append(any(check.error > TOLERANCES[check.part] for check in checks))
    assert any(shown), f"{variant} is invisible on every probe"


def test_a_framework_that_scales_by_the_population_std_is_named_and_the_canonical_one_verified() -> None:
    probe = _probe("sequence_mean")
    case = CASES["sequence_mean"]
    assert judge(GRPO, case, probe, GRPO.expected(probe), "canonical").status == VERIFIED
    verdict = judge(GRPO, case, probe, GRPO.expected(probe, frozenset({"population_std", "kl_times_ratio"})), "x")
    assert verdict.status == DIFFERS and verdict.variant == ("kl_times_ratio", "population_std")
    constant = judge(GRPO, CASES["constant"], _probe("constant"),
                     GRPO.expected(_probe("constant"), frozenset({"aggregation_token_mean"})), "x")
    assert constant.status == DIFFERS and constant.variant == ("aggregation_token_mean",)
