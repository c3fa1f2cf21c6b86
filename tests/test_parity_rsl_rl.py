"""RSL-RL's own PPO update on rlcompare's parity probe, judged against the reference update."""

from __future__ import annotations

import pytest

from rlcompare.parity.ppo import PPOReference
from rlcompare.parity.reference import declared_variants
from rlcompare.parity.runner import ParityRequest, ask_many, interpreter_for, parity_requests
from rlcompare.parity.verdict import DIFFERS, ParityVerdict, compare
from rlcompare.plugins.manager import BUILTIN_PLUGINS, build_plugin_manager

pytestmark = pytest.mark.framework

#: RSL-RL's PPO.update against the canonical one (rsl_rl/algorithms/ppo.py): torch's Adam with its
#: default eps 1e-8 (resolve_optimizer passes only the learning rate), the gradient norm clipped for
#: the actor and the critic separately, and truncations cut like terminations (the adapter's VecEnv
#: reports no time_outs; with them RSL-RL would bootstrap from V(s_t), which no variant names).
VARIANTS = ("adam_eps_1e-8", "grad_clip_per_network", "no_truncation_bootstrap")


@pytest.fixture(scope="module")
def continuous() -> tuple[object, object]:
    """The continuous probe and RSL-RL's answer, asked in this interpreter."""
    from rlcompare_rsl_rl import RslRlAdapter

    reference = PPOReference()
    case = next(case for case in reference.cases() if case.name == "continuous")
    probe = reference.build_probe(reference.case_workload(case))
    return probe, RslRlAdapter().parity_update(probe)


def test_only_the_continuous_probe_is_asked() -> None:
    plugins = build_plugin_manager((*BUILTIN_PLUGINS, "rlcompare_rsl_rl"), autoload=False)
    requests, _ = parity_requests(plugins.adapters, plugins.algorithms, ["rsl-rl"])
    assert [(request.reference.family, request.case.name) for request in requests] == [("PPO", "continuous")]


def test_rsl_rl_ppo_differs_by_the_declared_variants_only() -> None:
    """As ``rlcompare parity`` asks: a fresh interpreter, the adapter's declarations tried first."""
    from rlcompare_rsl_rl import RslRlAdapter

    reference = PPOReference()
    case = next(case for case in reference.cases() if case.name == "continuous")
    workload = reference.case_workload(case)
    declared = declared_variants(reference, RslRlAdapter().fidelity(workload))
    assert declared >= frozenset(VARIANTS)  # max_grad_norm (approximate) also names no_grad_clip, which the judge drops
    request = ParityRequest("rsl-rl", RslRlAdapter, reference, case, declared)
    (verdict,) = ask_many([(request, reference.build_probe(workload))], interpreter_for(RslRlAdapter))
    assert isinstance(verdict, ParityVerdict)
    assert verdict.status == DIFFERS and verdict.variant == VARIANTS, verdict.summary()
    # against the canonical update itself: the targets differ (truncations cut), so do gradient and step
    assert {check.part: check.ok for check in verdict.checks} == {"targets": False, "gradients": False,
                                                                 "updates": False}, verdict.summary()


def test_each_declared_variant_is_needed(continuous: tuple[object, object]) -> None:
    probe, outcome = continuous
    reference = PPOReference()
    explained = frozenset(VARIANTS)
    assert all(check.ok for check in compare(outcome, reference.expected(probe, explained), probe))
    for name in VARIANTS:
        assert not all(check.ok for check in compare(outcome, reference.expected(probe, explained - {name}), probe)), name


def test_defaults_read_back_from_the_built_runner(continuous: tuple[object, object]) -> None:
    _, outcome = continuous
    defaults = outcome.defaults
    assert defaults["optimizer"] == "Adam" and defaults["adam_eps"] == 1e-8
    assert defaults["log_std_init"] == 0.0 and defaults["std_parameterization"] == "log"
    assert defaults["value_clipping"] == "off" and defaults["learning_rate_schedule"] == "constant"
    assert defaults["advantage_normalization"] == "per minibatch"
    assert defaults["observation_normalization"] is False and defaults["truncation_bootstrap"] is False
    assert outcome.losses["value"] > 0
