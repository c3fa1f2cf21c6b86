"""Parity probes: the reference updates, the verdicts, the runner and its cache, what verdicts change
in fidelity and ranks, and adapters that silently differ (outside packages on an entry point)."""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from rlcompare.harness.measurement_cache import MeasurementCache
from rlcompare.harness.parity import RAN, UNVERIFIABLE, ParityOutcome, ParityProbe
from rlcompare.harness.schedule import ScheduleTrace
from rlcompare.parity import runner as parity_runner
from rlcompare.parity.corrections import corrected_fidelity, standing
from rlcompare.parity.dqn import DQNReference
from rlcompare.parity.ppo import PPOReference
from rlcompare.parity.runner import Interpreter, ParityRequest, answer_many, parity_requests, run_requests
from rlcompare.parity.schedules import canonical_schedule, schedule_differences
from rlcompare.parity.verdict import DIFFERS, VERIFIED, compare, judge
from rlcompare.plugins.manager import build_plugin_manager
from tests.conftest import ROOT

DIFFERS_PLUGINS = ROOT / "tests" / "plugins" / "paritydiffers"
LIAR_PLUGINS = ROOT / "tests" / "plugins" / "liar"
REFERENCES = [PPOReference(), DQNReference()]


def _probe(reference: Any, case: Any) -> ParityProbe:
    return reference.build_probe(reference.case_workload(case))


@pytest.fixture
def outside(monkeypatch: pytest.MonkeyPatch) -> None:
    """The two outside packages, on the path of this process and of every process it starts."""
    paths = [str(DIFFERS_PLUGINS), str(LIAR_PLUGINS)]
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([*paths, os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep))
    for path in paths:
        monkeypatch.syspath_prepend(path)
    monkeypatch.delenv("RLCOMPARE_DISABLE_PLUGIN_AUTOLOAD", raising=False)


# -- the references ---------------------------------------------------------------------------------


@pytest.mark.parametrize("reference", REFERENCES, ids=lambda r: r.family)
def test_probes_are_deterministic_and_hold_terminations_and_truncations(reference: Any) -> None:
    for case in reference.cases():
        probe, again = _probe(reference, case), _probe(reference, case)
        assert probe.digest() == again.digest()
        assert probe.batch["terminated"].any() and probe.batch["truncated"].any()
        # weights are float32 values, so a float32 framework starts exactly where the reference does
        for value in probe.weights.values():
            assert np.array_equal(value, value.astype(np.float32).astype(np.float64))


@pytest.mark.parametrize("reference", REFERENCES, ids=lambda r: r.family)
def test_every_variant_shows_on_some_probe(reference: Any) -> None:
    """A variant the probes cannot tell from the canonical update would name nothing."""
    shown = set()
    for case in reference.cases():
        probe = _probe(reference, case)
        canonical = reference.expected(probe)
        for name in reference.variants:
            if not all(check.ok for check in compare(reference.expected(probe, frozenset({name})), canonical, probe)):
                shown.add(name)
    assert shown == set(reference.variants)


def test_the_reference_gae_bootstraps_truncations_and_stops_at_terminations() -> None:
    reference = PPOReference()
    probe = _probe(reference, reference.cases()[0])
    batch = probe.batch
    with_bootstrap = reference.expected(probe).targets["advantages"]
    without = reference.expected(probe, frozenset({"no_truncation_bootstrap"})).targets["advantages"]
    truncated = batch["truncated"].astype(bool)
    # only the steps up to a truncation see its bootstrap, and the bootstrap is gamma * V(final)
    gamma = probe.hyperparameters["gamma"]
    t, e = np.argwhere(truncated)[0]
    assert with_bootstrap[t, e] - without[t, e] == pytest.approx(gamma * batch["terminal_values"][t, e])
    assert np.allclose(with_bootstrap[:, 1 - e], without[:, 1 - e])


# -- verdicts ---------------------------------------------------------------------------------------


def test_a_framework_that_does_a_variant_is_named_by_it() -> None:
    reference = DQNReference()
    case = reference.cases()[0]
    probe = _probe(reference, case)
    as_framework = reference.expected(probe, frozenset({"mse_loss"}))
    verdict = judge(reference, case, probe, as_framework, "someone")
    assert verdict.status == DIFFERS and verdict.variant == ("mse_loss",)
    assert judge(reference, case, probe, reference.expected(probe), "someone").status == VERIFIED
    two = reference.expected(probe, frozenset({"double_q", "adam_eps_1e-5"}))
    assert judge(reference, case, probe, two, "someone").variant == ("adam_eps_1e-5", "double_q")


def test_an_update_no_variant_explains_differs_unexplained_and_silence_is_unverifiable() -> None:
    reference = PPOReference()
    case = reference.cases()[0]
    probe = _probe(reference, case)
    canonical = reference.expected(probe)
    scrambled = dataclasses.replace(canonical, gradients={k: -v for k, v in canonical.gradients.items()},
                                    updated={k: probe.weights[k] - (v - probe.weights[k])
                                             for k, v in canonical.updated.items()})
    verdict = judge(reference, case, probe, scrambled, "someone")
    assert verdict.status == DIFFERS and verdict.variant == () and "no known variant" in verdict.reason
    empty = judge(reference, case, probe, ParityOutcome(RAN), "someone")
    assert empty.status == UNVERIFIABLE
    declared = judge(reference, case, probe, ParityOutcome.unverifiable("no access to its loss"), "someone")
    assert declared.status == UNVERIFIABLE and declared.reason == "no access to its loss"


def test_probe_and_outcome_round_trip_through_files(tmp_path: Path) -> None:
    reference = PPOReference()
    probe = _probe(reference, reference.cases()[1])
    probe.save(tmp_path / "probe.npz")
    again = ParityProbe.load(tmp_path / "probe.npz")
    assert again.digest() == probe.digest() and again.workload_view().algorithm == "PPO"
    outcome = reference.expected(probe)
    outcome.save(tmp_path / "outcome.npz")
    back = ParityOutcome.load(tmp_path / "outcome.npz")
    assert all(np.array_equal(back.gradients[k], v) for k, v in outcome.gradients.items())
    assert back.losses == outcome.losses


# -- a real framework, and adapters that silently differ ---------------------------------------------


@pytest.mark.framework
def test_sb3_is_verified_on_every_ppo_and_dqn_probe() -> None:
    plugins = build_plugin_manager(autoload=False)
    requests, none = parity_requests(plugins.adapters, plugins.algorithms, ["sb3"], ["PPO", "DQN"])
    verdicts = run_requests(requests, MeasurementCache(None))
    assert none == [] and len(verdicts) == 4
    assert {(v.family, v.case, v.status) for v in verdicts} == {
        ("PPO", "discrete", VERIFIED), ("PPO", "continuous", VERIFIED),
        ("DQN", "discrete", VERIFIED), ("DQN", "discrete-clipped", VERIFIED)}
    ppo = next(v for v in verdicts if v.family == "PPO")
    assert ppo.defaults["adam_eps"] == 1e-5 and all(check.error < 1e-3 for check in ppo.checks)


@pytest.mark.framework
def test_an_adapter_whose_update_silently_differs_is_caught_with_the_variant(outside: None, tmp_path: Path) -> None:
    plugins = build_plugin_manager()
    requests, _ = parity_requests(plugins.adapters, plugins.algorithms, ["sb3-vclip", "sb3-eps"], ["PPO"])
    cache = MeasurementCache(tmp_path / "parity.json")
    verdicts = run_requests(requests, cache)
    found = {(v.adapter, v.case): (v.status, v.variant) for v in verdicts}
    assert found == {("sb3-vclip", "discrete"): (DIFFERS, ("value_clipping",)),
                     ("sb3-vclip", "continuous"): (DIFFERS, ("value_clipping",)),
                     ("sb3-eps", "discrete"): (DIFFERS, ("adam_eps_1e-8",)),
                     ("sb3-eps", "continuous"): (DIFFERS, ("adam_eps_1e-8",))}
    # the probe corrects the fidelity report the adapter declared (all exact)
    workload = PPOReference().case_workload(PPOReference().cases()[0])
    declared = [entry.to_dict() for entry in plugins.adapter("sb3-vclip").fidelity(workload)]
    corrected = corrected_fidelity(declared, [v.to_dict() for v in verdicts if v.adapter == "sb3-vclip"],
                                   plugins.algorithms["PPO"].parity, "PPO")
    added = {entry["setting"]: entry for entry in corrected[len(declared):]}
    assert added["defaults.value_clipping"]["status"] == "approximate"
    assert added["defaults.value_clipping"]["native_value"] == "clip_range"
    assert added["parity.PPO"]["status"] == "exact"  # explained: the difference is named above
    # the second time, a lookup: no process is started, and no probe is built (which imports torch)
    original = subprocess.run
    subprocess.run = lambda *a, **k: pytest.fail("probed again instead of using the cache")  # type: ignore[assignment]
    try:
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(PPOReference, "build_probe", lambda *a, **k: pytest.fail("built a probe again"))
            assert [v.to_dict()["status"] for v in run_requests(requests, MeasurementCache(tmp_path / "parity.json"))] \
                == [v.status for v in verdicts]
    finally:
        subprocess.run = original  # type: ignore[assignment]


@pytest.mark.framework
def test_the_careful_liar_is_unverified_and_ranks_below_the_verified_adapter(outside: None, tmp_path: Path) -> None:
    """It claims PPO, runs an evolution strategy, names every setting exact: nothing it claims can be
    verified, so it may not rank above SB3, whose PPO update the probe verified."""
    workload = tmp_path / "tiny.toml"
    workload.write_text('id = "tiny-ppo"\nenv = "CartPole-v1"\nalgorithm = "PPO"\nenv_steps = 2048\nseeds = 2\n'
                        '[evaluation]\ninterval_steps = 1024\nepisodes = 2\n')
    store = tmp_path / "runs.db"
    run = subprocess.run([sys.executable, "-m", "rlcompare", "run", "--workload", str(workload), "--adapters",
                          "sb3,liar", "--store", str(store), "--jobs", "2"], capture_output=True, text=True,
                         timeout=900)  # the test run's measurement cache: SB3's figures are measured once a run
    assert run.returncode == 0, run.stderr
    scored = subprocess.run([sys.executable, "-m", "rlcompare", "score", "--store", str(store), "--json"],
                            capture_output=True, text=True, timeout=600)
    assert scored.returncode == 0, scored.stderr
    matrix = json.loads(scored.stdout)
    assert matrix["parity"] == {"sb3": "verified", "liar": "unverified"}
    ranks = {row["adapter"]: row["rank"] for row in matrix["adapters"]}
    assert ranks["sb3"] < ranks["liar"]
    fidelity = {cell["adapter"]: cell["point"] for cell in matrix["cells"] if cell["criterion"] == "setting_fidelity"}
    assert fidelity["liar"] <= 0.5 < fidelity["sb3"]  # its "exact" claims count as approximate, unverified


# -- what verdicts change ----------------------------------------------------------------------------


def test_standings_order_unexplained_below_unverified_below_verified() -> None:
    verified = [{"status": "verified"}, {"status": "differs", "variant": ["adam_eps_1e-8"]}]
    assert standing(verified) == "verified"
    assert standing([{"status": "verified"}, {"status": "unverifiable"}]) == "unverified"
    assert standing([{"status": "verified"}, {"status": "differs", "variant": []}]) == "unexplained"
    assert standing(None) == "unverified"
    assert standing([{"status": "not-applicable"}]) == "not-applicable"


def test_ranks_put_an_unexplained_difference_below_everything_whatever_its_score(tmp_path: Path) -> None:
    from rlcompare.scoring.engine import ScoringOptions, score_store
    from rlcompare.scoring.profiles import get_profile
    from tests.test_criteria_support import BUILTINS_WITH_CRITERIA, run_record, workload_spec, write_store

    spec = workload_spec("w", threshold=100.0)
    verdicts = {"fast": [{"status": "differs", "variant": [], "case": "discrete"}],
                "mid": [{"status": "unverifiable", "case": "discrete"}],
                "slow": [{"status": "verified", "case": "discrete"}]}
    speeds = {"fast": 3000.0, "mid": 2000.0, "slow": 1000.0}
    runs = [(dataclasses.replace(run_record(spec, adapter, seed, final_return=90.0, throughput=speeds[adapter]),
                                 parity_json=verdicts[adapter]), []) for adapter in verdicts for seed in range(2)]
    path = write_store(tmp_path / "s.db", runs)
    from rlcompare.store.sqlite_store import Store

    plugins = build_plugin_manager(builtins=BUILTINS_WITH_CRITERIA, autoload=False)
    with Store(path) as store:
        matrix = score_store(store, plugins.scoring_catalogue(), get_profile("performance"), ScoringOptions(reps=200))
    assert matrix.overall["fast"].score.point > matrix.overall["slow"].score.point  # faster, and
    assert [matrix.overall[a].rank for a in ("slow", "mid", "fast")] == [1, 2, 3]  # ranked by standing first
    assert matrix.to_dict()["parity"] == {"fast": "unexplained", "mid": "unverified", "slow": "verified"}


# -- schedules ----------------------------------------------------------------------------------------


def test_a_traced_schedule_is_compared_with_the_canonical_one() -> None:
    workload = {"algorithm": "DQN", "env_steps": 10_000, "parallelism": {"envs_per_worker": 1, "workers": 1},
                "hyperparameters": {"learning_starts": 1000, "train_every": 4, "gradient_steps": 1,
                                    "target_update_interval": 500, "exploration_initial_eps": 1.0,
                                    "exploration_final_eps": 0.05, "exploration_fraction": 0.1}}
    assert canonical_schedule(workload)["target_sync_interval_gradient_steps"] == 125
    canonical, lagging = ScheduleTrace(), ScheduleTrace()
    for step in range(1, 10_001):
        if step > 1000 and step % 4 == 0:
            canonical.record("gradient_step", step)
            lagging.record("gradient_step", step)
        if step % 500 == 0:
            canonical.record("target_sync", step)
        if step % 10 == 0:  # a framework that counts the interval in gradient steps: 50x too rarely
            if step > 1000 and step % 2_000 == 0:
                lagging.record("target_sync", step)
        eps = max(0.05, 1.0 - 0.95 * step / 1000)
        canonical.record("exploration", step, eps)
        lagging.record("exploration", step, max(0.05, 1.0 - 0.95 * step / 5000))
    assert schedule_differences(workload, canonical.summary()) == []
    found = {difference.aspect: difference for difference in schedule_differences(workload, lagging.summary())}
    assert "target_sync_interval_gradient_steps" in found and "exploration" in found
    assert "canonical 125" in found["target_sync_interval_gradient_steps"].text


def test_target_syncs_with_no_gradient_step_between_count_once() -> None:
    """The zoo's CartPole DQN: 128 gradient steps every 256 env steps, a copy every 10 env steps. A
    copy every 10 env steps during collection and one copy per collected batch leave the same target
    for each burst (no difference); a copy every 5 gradient steps inside the burst does not."""
    workload = {"algorithm": "DQN", "env_steps": 10_240, "parallelism": {"envs_per_worker": 1, "workers": 1},
                "hyperparameters": {"learning_starts": 1024, "train_every": 256, "gradient_steps": 128,
                                    "target_update_interval": 10, "exploration_initial_eps": 1.0,
                                    "exploration_final_eps": 0.05, "exploration_fraction": 0.1}}
    assert canonical_schedule(workload)["target_sync_interval_gradient_steps"] == 128
    every_ten, per_batch, inside = ScheduleTrace(), ScheduleTrace(), ScheduleTrace()
    for step in range(1, 10_241):
        if step % 10 == 0:
            every_ten.record("target_sync", step)
        if step % 256 == 0:
            per_batch.record("target_sync", step)
        if step > 1024 and step % 256 == 0:
            for gradient in range(128):
                for trace in (every_ten, per_batch, inside):
                    trace.record("gradient_step", step)
                if gradient % 5 == 4:
                    inside.record("target_sync", step)
            for trace in (every_ten, per_batch, inside):
                trace.record("update", step)
    assert every_ten.summary()["target_sync"]["count"] > 10 * every_ten.summary()["target_sync"]["effective_count"]
    assert schedule_differences(workload, every_ten.summary()) == []
    assert schedule_differences(workload, per_batch.summary()) == []
    found = {difference.aspect: difference for difference in schedule_differences(workload, inside.summary())}
    assert {"target_sync_interval_gradient_steps", "target_sync_max_gradient_steps"} <= set(found)
    assert "canonical 128" in found["target_sync_interval_gradient_steps"].text


@pytest.mark.framework
def test_an_answer_is_kept_judged_again_without_asking_and_two_askers_take_turns(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An adapter's answer to a probe is kept: asked again, it is judged again from the file (no process);
    another interpreter (another framework) or ``keep=False`` (``--refresh``) asks; two askers of the same
    adapter at once start one process between them."""
    import threading

    from rlcompare_sb3 import StableBaselines3Adapter

    reference = PPOReference()
    case = reference.cases()[0]
    asked = [(ParityRequest("sb3", StableBaselines3Adapter, reference, case), _probe(reference, case))]
    interpreter = Interpreter(sys.executable, "test-kept", {})
    started = []
    real_ask = parity_runner._ask_process  # a fresh interpreter, or a fork of a warm parent (rlcompare.pyenvs.warm)

    def counted(*args: Any, **kwargs: Any) -> Any:
        started.append(args)
        return real_ask(*args, **kwargs)

    monkeypatch.setattr(parity_runner, "_ask_process", counted)
    results: list[Any] = []
    askers = [threading.Thread(target=lambda: results.append(answer_many(asked, interpreter, answers=tmp_path)))
              for _ in range(2)]
    for asker in askers:
        asker.start()
    for asker in askers:
        asker.join()
    assert len(started) == 1 and len(results) == 2
    (first, outcome), (second, kept) = results[0][0], results[1][0]
    assert first.status == VERIFIED and first.to_dict() == second.to_dict()
    assert outcome is not None and kept is not None
    assert all(np.array_equal(outcome.gradients[name], kept.gradients[name]) for name in outcome.gradients)
    assert len(list(tmp_path.glob("*.npz"))) == 1
    monkeypatch.setattr(parity_runner, "_ask_process",
                        lambda *a, **k: pytest.fail("asked again instead of judging the kept answer"))
    assert answer_many(asked, interpreter, answers=tmp_path)[0][0].to_dict() == first.to_dict()
    with pytest.raises(pytest.fail.Exception, match="asked again"):
        answer_many(asked, Interpreter(sys.executable, "another framework", {}), answers=tmp_path)
    with pytest.raises(pytest.fail.Exception, match="asked again"):
        answer_many(asked, interpreter, answers=tmp_path, keep=False)


def test_a_probe_in_an_adapter_environment_gets_a_runs_environment_there_and_keeps_the_import_path(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Asked warm, a probe in an adapter's own environment is forked from the parent that environment's
    one-thread runs are forked from (a run's variables: rlcompare.execution.backend.worker_environment),
    with the driver's import path kept (an outside adapter's package may be on it only)."""
    from rlcompare_sb3 import StableBaselines3Adapter

    from rlcompare.pyenvs.processes import process_environment
    from rlcompare.pyenvs.warm import WARM_START_ENV

    python = str(tmp_path / "environment" / "bin" / "python")
    monkeypatch.setenv(WARM_START_ENV, "1")
    monkeypatch.delenv("PYTHONPATH", raising=False)
    asked: dict[str, str] = {}
    monkeypatch.setattr(parity_runner, "run_module",
                        lambda python, module, argv, modules, timeout, env: asked.update(env) or (0, ""))
    parity_runner._ask_process(python, StableBaselines3Adapter, ["PPO"], 10)
    assert asked == process_environment(os.environ, 1, python)  # a one-thread run's, in that environment
    assert asked["VIRTUAL_ENV"] == str(tmp_path / "environment")
    assert asked["PATH"].split(os.pathsep)[0] == str(tmp_path / "environment" / "bin")
    monkeypatch.setenv("PYTHONPATH", "/an/outside/package")
    asked.clear()
    parity_runner._ask_process(python, StableBaselines3Adapter, ["PPO"], 10)
    assert asked["PYTHONPATH"] == "/an/outside/package" and asked["VIRTUAL_ENV"] == str(tmp_path / "environment")
