"""rejax's PPO parity probe: its own ``calculate_gae`` and ``update`` on the probe's batch, judged against
the reference update.

The probes run as ``rlcompare parity`` runs them: in a fresh interpreter of rejax's own environment
(jax 0.5.3, gymnax 0.0.9), built with uv or reused. Measured: rejax's PPO update is the canonical one
with the departures its fidelity report declares (``rlcompare_rejax.PPO_DEPARTURES``): Adam's eps
1e-8, advantages normalized with the biased std, the value loss halved and clipped CleanRL-style
(max of clipped and unclipped), no bootstrap at truncation, and gradients clipped *element-wise*
(``optax.clip``) rather than by their global norm (the reference's ``grad_clip_per_element``); without
that variant the continuous probe is not explained.
"""

from __future__ import annotations

from typing import ClassVar

import pytest
from rlcompare_rejax import RejaxAdapter

from rlcompare.harness.parity import ParityOutcome, ParityProbe
from rlcompare.parity.ppo import PPOReference
from rlcompare.parity.reference import Variant, declared_variants
from rlcompare.parity.runner import (
    ParityRequest,
    answer_many,
    interpreter_for,
    parity_requests,
)
from rlcompare.parity.verdict import DIFFERS, ParityVerdict, judge
from rlcompare.plugins.manager import BUILTIN_PLUGINS, build_plugin_manager


class ReferenceWithoutElementClip(PPOReference):
    """The PPO reference as it was before ``grad_clip_per_element``: what rejax's update cannot be explained by."""

    variants: ClassVar[dict[str, Variant]] = {name: variant for name, variant in PPOReference.variants.items()
                                              if name != "grad_clip_per_element"}
    exclusive = tuple(pair for pair in PPOReference.exclusive if "grad_clip_per_element" not in pair)


REFERENCE = PPOReference()
CASES = {case.name: case for case in REFERENCE.cases()}
ADAPTER = f"{RejaxAdapter.__module__}:{RejaxAdapter.__qualname__}"
#: The variants that explain each probe. On the discrete probe no gradient element reaches
#: max_grad_norm, so the element-wise clip shows as no clipping at all.
EXPECTED = {
    "discrete": ("adam_eps_1e-8", "advantage_std_biased", "half_value_loss", "no_grad_clip",
                 "no_truncation_bootstrap", "value_clipping_max"),
    "continuous": ("adam_eps_1e-8", "advantage_std_biased", "grad_clip_per_element", "half_value_loss",
                   "no_truncation_bootstrap", "value_clipping_max"),
}


def test_both_ppo_probes_are_planned_for_rejax() -> None:
    plugins = build_plugin_manager((*BUILTIN_PLUGINS, "rlcompare_rejax"), autoload=False)
    requests, verdicts = parity_requests(plugins.adapters, plugins.algorithms, ["rejax"], ["PPO"])
    assert verdicts == []
    assert sorted(request.case.name for request in requests) == ["continuous", "discrete"]


def test_a_family_other_than_ppo_is_unverifiable_without_importing_jax() -> None:
    probe = ParityProbe(family="DQN", action_space={"kind": "discrete", "n": 2}, observation_dim=4, network={},
                        hyperparameters={}, weights={}, batch={})
    outcome = RejaxAdapter().parity_update(probe)
    assert outcome.status == "unverifiable" and "DQN" in outcome.reason


def test_the_fidelity_report_declares_the_element_wise_clip() -> None:
    workload = REFERENCE.case_workload(CASES["continuous"])
    declared = declared_variants(REFERENCE, RejaxAdapter().fidelity(workload))
    assert set(EXPECTED["continuous"]) <= declared and "grad_clip_per_network" not in declared


@pytest.fixture(scope="module")
def answers() -> dict[str, tuple[ParityProbe, ParityOutcome]]:
    """Each probe answered by the adapter's ``parity_update`` in a fresh interpreter of rejax's
    environment, as ``rlcompare parity`` asks it (:func:`rlcompare.parity.runner.answer_many`)."""
    asked = [(ParityRequest("rejax", RejaxAdapter, REFERENCE, case), REFERENCE.build_probe(REFERENCE.case_workload(case)))
             for case in CASES.values()]
    found = {}
    for name, (_, probe), (verdict, outcome) in zip(CASES, asked, answer_many(asked, interpreter_for(RejaxAdapter)),
                                                    strict=True):
        assert outcome is not None, verdict.summary()
        found[name] = (probe, outcome)
    return found


def _verdict(reference: PPOReference, name: str, probe: ParityProbe, outcome: ParityOutcome) -> ParityVerdict:
    workload = reference.case_workload(CASES[name])
    declared = declared_variants(reference, RejaxAdapter().fidelity(workload))
    return judge(reference, CASES[name], probe, outcome, "rejax", None, declared)


@pytest.mark.framework
@pytest.mark.parametrize("name", sorted(CASES))
def test_rejax_ppo_update_is_explained_by_its_declared_departures(
        answers: dict[str, tuple[ParityProbe, ParityOutcome]], name: str) -> None:
    probe, outcome = answers[name]
    assert outcome.status == "ran", outcome.reason
    assert outcome.defaults["grad_clip_scope"] == "per element" and outcome.defaults["adam_eps"] == 1e-8
    verdict = _verdict(REFERENCE, name, probe, outcome)
    assert verdict.status == DIFFERS and verdict.variant == EXPECTED[name], verdict.summary()


@pytest.mark.framework
def test_without_the_element_wise_variant_the_continuous_probe_is_unexplained(
        answers: dict[str, tuple[ParityProbe, ParityOutcome]]) -> None:
    probe, outcome = answers["continuous"]
    verdict = _verdict(ReferenceWithoutElementClip(), "continuous", probe, outcome)
    assert verdict.status == DIFFERS and not verdict.variant
