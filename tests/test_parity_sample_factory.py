"""Sample Factory's PPO parity probe (its own ``Learner`` on the probe's batch) and its schedule trace.

The probes run as ``rlcompare parity`` runs them: in a fresh interpreter of Sample Factory's own
environment (numpy<2, gymnasium<1.0), built with uv or reused. Measured: Sample Factory's update is
the canonical PPO update with three departures, each of which shows on at least one probe:

- ``no_truncation_bootstrap``: a truncated episode is cut like a terminated one
  (``value_bootstrap=False`` in the adapter's configuration);
- the value of the rollout's last observation is recomputed by the network being updated
  (``Learner._prepare_batch``), not the collecting policy's stored value;
- the policy ratio's lower clip bound is ``1 / (1 + clip)``, not ``1 - clip`` (``_calculate_losses``).

Each is a named variant of the reference (``no_truncation_bootstrap``, ``last_value_recomputed``,
``ratio_clip_reciprocal_low``), so the verdict is ``differs`` with the variants that show on the probe.
"""

from __future__ import annotations

import json

import pytest
from rlcompare_sample_factory import SampleFactoryAdapter

from rlcompare.execution.backend import BackendOptions, Limits
from rlcompare.execution.driver import Driver
from rlcompare.execution.local import LocalBackend
from rlcompare.harness.parity import ParityOutcome, ParityProbe
from rlcompare.parity.ppo import PPOReference
from rlcompare.parity.runner import (
    ParityRequest,
    answer_many,
    interpreter_for,
    parity_requests,
)
from rlcompare.parity.verdict import DIFFERS, ParityVerdict, compare
from rlcompare.plan.matrix import build_plan
from rlcompare.plan.placement import place_runs
from rlcompare.plugins.manager import build_plugin_manager
from rlcompare.spec.workload import workload_from_dict
from rlcompare.store.sqlite_store import Store

REFERENCE = PPOReference()
CASES = {case.name: case for case in REFERENCE.cases()}
ADAPTER = f"{SampleFactoryAdapter.__module__}:{SampleFactoryAdapter.__qualname__}"
#: The three departures of Sample Factory's update from the canonical one (module docstring).
DEPARTURES = frozenset({"no_truncation_bootstrap", "last_value_recomputed", "ratio_clip_reciprocal_low"})


def _explained(probe: ParityProbe, departures: frozenset[str] = DEPARTURES) -> ParityOutcome:
    """The reference PPO update with ``departures`` (variants of :class:`PPOReference`): what Sample
    Factory's learner is measured to compute."""
    return REFERENCE.expected(probe, departures)


# -- without Sample Factory ----------------------------------------------------------------------------


def test_both_ppo_probes_are_planned_for_sample_factory() -> None:
    plugins = build_plugin_manager(autoload=False)
    requests, verdicts = parity_requests(plugins.adapters, plugins.algorithms, ["sample-factory"], ["PPO"])
    assert verdicts == []
    assert sorted(request.case.name for request in requests) == ["continuous", "discrete"]


def test_a_family_other_than_ppo_is_unverifiable_without_importing_sample_factory() -> None:
    probe = ParityProbe(family="DQN", action_space={"kind": "discrete", "n": 2}, observation_dim=4, network={},
                        hyperparameters={}, weights={}, batch={})
    outcome = SampleFactoryAdapter().parity_update(probe)
    assert outcome.status == "unverifiable" and "APPO only" in outcome.reason


# -- the probes, in Sample Factory's own environment -----------------------------------------------------


@pytest.fixture(scope="module")
def answers() -> dict[str, tuple[ParityProbe, ParityOutcome, ParityVerdict]]:
    """Each probe answered by the adapter's ``parity_update`` in a fresh interpreter of Sample
    Factory's environment, and judged, as ``rlcompare parity`` does (:func:`rlcompare.parity.runner.answer_many`)."""
    asked = [(ParityRequest("sample-factory", SampleFactoryAdapter, REFERENCE, case),
              REFERENCE.build_probe(REFERENCE.case_workload(case))) for case in CASES.values()]
    found = {}
    for name, (_, probe), (verdict, outcome) in zip(CASES, asked, answer_many(asked, interpreter_for(SampleFactoryAdapter)),
                                                    strict=True):
        assert outcome is not None, verdict.summary()
        found[name] = (probe, outcome, verdict)
    return found


@pytest.mark.framework
@pytest.mark.timeout(900)
@pytest.mark.parametrize("case", sorted(CASES))
def test_verdict_is_differs_named_by_the_departures_that_show(
        answers: dict[str, tuple[ParityProbe, ParityOutcome, ParityVerdict]], case: str) -> None:
    probe, outcome, verdict = answers[case]
    assert outcome.status == "ran"
    shown = DEPARTURES if case == "continuous" else DEPARTURES - {"ratio_clip_reciprocal_low"}
    assert (verdict.status, verdict.variant) == (DIFFERS, tuple(sorted(shown)))
    checks = {check.part: check for check in verdict.checks}
    assert not checks["targets"].ok  # the GAE targets already differ: truncation and the last value


@pytest.mark.framework
@pytest.mark.timeout(900)
@pytest.mark.parametrize("case", sorted(CASES))
def test_update_is_canonical_ppo_with_the_three_departures(
        answers: dict[str, tuple[ParityProbe, ParityOutcome, ParityVerdict]], case: str) -> None:
    probe, outcome, _ = answers[case]
    checks = compare(outcome, _explained(probe), probe)
    assert [check.part for check in checks] == ["targets", "gradients", "updates"]
    assert all(check.ok for check in checks), [check.describe() for check in checks]
    # far inside the tolerances: float32 against float64
    assert max(check.error for check in checks if check.part != "updates") < 1e-5
    # each departure is needed where it shows: the ratio's lower bound only binds on the continuous probe
    needed = DEPARTURES if case == "continuous" else DEPARTURES - {"ratio_clip_reciprocal_low"}
    for departure in needed:
        assert not all(check.ok for check in compare(outcome, _explained(probe, DEPARTURES - {departure}), probe)), \
            departure


@pytest.mark.framework
@pytest.mark.timeout(900)
@pytest.mark.parametrize("case", sorted(CASES))
def test_every_canonical_parameter_is_loaded_stepped_and_read_back(
        answers: dict[str, tuple[ParityProbe, ParityOutcome, ParityVerdict]], case: str) -> None:
    probe, outcome, _ = answers[case]
    assert set(outcome.updated) == set(outcome.gradients) == set(probe.weights)
    assert ("policy.log_std" in outcome.updated) is (case == "continuous")
    assert set(outcome.targets) == {"advantages", "returns"}
    assert outcome.targets["advantages"].shape == probe.batch["rewards"].shape
    assert set(outcome.losses) == {"policy", "value", "entropy", "total"}
    assert any("recomputes the value of the rollout's last observation" in note for note in outcome.notes)


@pytest.mark.framework
@pytest.mark.timeout(900)
def test_defaults_are_read_back_from_the_built_learner(
        answers: dict[str, tuple[ParityProbe, ParityOutcome, ParityVerdict]]) -> None:
    defaults = answers["discrete"][1].defaults
    assert {key: defaults[key] for key in (
        "algo", "with_vtrace", "optimizer", "adam_eps", "ppo_clip_value", "normalize_returns", "normalize_input",
        "exploration_loss", "max_grad_norm", "value_bootstrap", "learning_rate_schedule", "grad_clip_scope",
        "initialization", "actor_critic_share_weights", "use_rnn", "kl_loss_coeff")} == {
        "algo": "APPO", "with_vtrace": False, "optimizer": "Adam", "adam_eps": 1e-5, "ppo_clip_value": 1e9,
        "normalize_returns": False, "normalize_input": False, "exploration_loss": "entropy", "max_grad_norm": 0.5,
        "value_bootstrap": False, "learning_rate_schedule": "constant", "grad_clip_scope": "joint",
        "initialization": "orthogonal(gain=1)", "actor_critic_share_weights": False, "use_rnn": False,
        "kl_loss_coeff": 0.0}
    assert defaults["ratio_clip"] == pytest.approx([1 / 1.2, 1.2])
    assert defaults["learning_rate"] == pytest.approx(3e-4)
    assert answers["continuous"][1].defaults["log_std_init"] == 0.0


# -- the schedule, traced on a real run ------------------------------------------------------------------


@pytest.mark.framework
@pytest.mark.timeout(1800)  # Sample Factory starts its env-info process and its components: minutes when loaded
def test_serial_run_traces_one_update_per_rollout_and_every_optimizer_step(
        tmp_path_factory: pytest.TempPathFactory) -> None:
    """512 env steps, rollouts of 32 steps of 2 envs: 8 updates of 2 epochs x 2 minibatches."""
    workload = workload_from_dict({
        "id": "sf-schedule", "env": "CartPole-v1", "algorithm": "PPO", "env_steps": 512, "seeds": 1,
        "parallelism": {"envs_per_worker": 2}, "hyperparameters": {"rollout_steps": 32, "minibatch_size": 32,
                                                                   "epochs": 2},
        "evaluation": {"interval_steps": 256, "episodes": 1}}, "test")
    plugins = build_plugin_manager(autoload=False)
    plan = place_runs(plugins.adapters, build_plan(plugins.plan_catalogue(), [workload], ["sample-factory"]))
    store = Store(tmp_path_factory.mktemp("sf-schedule") / "runs.db")
    summary = Driver(store, LocalBackend(Limits(900, None), BackendOptions(jobs=1))).run(plan)
    assert [o.status for o in summary.outcomes] == ["ok"], [o.record.traceback for o in summary.outcomes]
    run = store.runs_frame().set_index("run_id").loc["sf-schedule__sample-factory__s0"]
    schedule = run["schedule_json"]
    schedule = json.loads(schedule) if isinstance(schedule, str) else schedule
    rollout = 32 * 2
    updates, steps = schedule["update"], schedule["gradient_step"]
    assert updates["count"] == 512 // rollout
    assert steps["count"] == updates["count"] * 2 * 2
    # serial and sync: each update is traced as soon as the learner has trained on its rollout
    assert (updates["first_env_step"], updates["last_env_step"]) == (rollout, 512)
    assert updates["min_interval_env_steps"] == updates["max_interval_env_steps"] == rollout
    assert updates["mean_interval_gradient_steps"] == 4
