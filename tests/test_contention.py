"""Contention recorded: the driver interleaves adapters, every run records the machine's load while
it ran, and every report format warns when compared timings were measured under different load."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pandas as pd
import pytest

from rlcompare.execution.driver import round_robin
from rlcompare.execution.runner import LocalRunner
from rlcompare.harness.machine_load import LoadSample
from rlcompare.store.contention import LOAD_TOLERANCE, contention_by_workload, contention_warnings
from rlcompare.store.sqlite_store import Store
from tests.conftest import plan_of
from tests.reporting_support import synthetic_runs
from tests.test_criteria_support import write_store
from tests.test_reporting import REPS, run_command

# -- the driver ------------------------------------------------------------------------------------------



def test_round_robin_takes_one_run_of_each_adapter_in_turn(fake_plugin: Path, tiny_workload: Path) -> None:
    plan = plan_of(tiny_workload, ["fake", "raising", "hungry"], seeds=3)
    planned = [run.run_id for run in plan.runs]
    assert planned[:3] == ["tiny__fake__s0", "tiny__fake__s1", "tiny__fake__s2"]  # the plan: seeds back to back
    ordered = [run.run_id for run in round_robin(plan.runs)]
    assert ordered == [f"tiny__{adapter}__s{seed}" for seed in range(3) for adapter in ("fake", "raising", "hungry")]
    # an adapter with fewer runs drops out of the turns; nothing is lost or repeated
    uneven = [run for run in plan.runs if run.run_id != "tiny__raising__s0"]
    assert [r.run_id for r in round_robin(uneven)] == [
        "tiny__fake__s0", "tiny__raising__s1", "tiny__hungry__s0", "tiny__fake__s1", "tiny__raising__s2",
        "tiny__hungry__s1", "tiny__fake__s2", "tiny__hungry__s2"]
    assert round_robin([]) == []


@pytest.fixture(scope="module")
def driven(tmp_path_factory: pytest.TempPathFactory) -> tuple[list[str], pd.DataFrame]:
    """A matrix of two adapters x 2 seeds, two at a time, as started (the order) and as stored."""
    from tests.conftest import GOOD_PLUGINS, TINY_WORKLOAD

    root = tmp_path_factory.mktemp("contention")
    spec = root / "tiny.toml"
    spec.write_text(TINY_WORKLOAD, encoding="utf-8")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(GOOD_PLUGINS), os.environ.get("PYTHONPATH")])))
        patch.syspath_prepend(str(GOOD_PLUGINS))
        patch.delenv("RLCOMPARE_DISABLE_PLUGIN_AUTOLOAD", raising=False)
        started: list[str] = []
        with Store(root / "runs.db") as store:
            LocalRunner(store, jobs=2, timeout_seconds=120, on_start=lambda run: started.append(run.run_id)).run(
                plan_of(spec, ["fake", "raising"], seeds=2))
            runs = store.runs_frame()
    return started, runs


def test_the_driver_starts_runs_round_robin_across_adapters(driven: tuple[list[str], pd.DataFrame]) -> None:
    started, _ = driven
    assert started == ["tiny__fake__s0", "tiny__raising__s0", "tiny__fake__s1", "tiny__raising__s1"]


def test_every_run_records_the_load_it_ran_under(driven: tuple[list[str], pd.DataFrame]) -> None:
    _, runs = driven
    runs = runs.set_index("run_id")
    assert set(runs["status"]) == {"ok", "failed"}  # a failed run records its load too: its worker ended
    for run_id, run in runs.iterrows():
        assert run["load_start"] >= 0 and run["load_end"] >= 0, run_id
        assert run["load_cpus"] == os.cpu_count()
        assert 0.0 <= run["cpu_steal"] <= 1.0  # /proc/stat is there on Linux
    # two at a time: the first two started together; none saw more than two in flight
    assert runs.loc["tiny__fake__s0", "runs_in_flight"] == 2 == runs.loc["tiny__raising__s0", "runs_in_flight"]
    assert set(runs["runs_in_flight"]) <= {1, 2}


def test_a_load_sample_tells_steal_and_load() -> None:
    start = LoadSample(load_1m=0.5, cpus=4, ticks=(100, 10_000))
    end = LoadSample(load_1m=1.5, cpus=4, ticks=(150, 11_000))
    load = start.until(end)
    assert (load.load_start, load.load_end, load.load_cpus) == (0.5, 1.5, 4)
    assert load.cpu_steal == pytest.approx(50 / 1_000)
    nowhere = LoadSample(load_1m=None, cpus=None, ticks=None).until(LoadSample(None, None, None))
    assert nowhere.to_dict() == {"load_start": None, "load_end": None, "load_cpus": None, "cpu_steal": None}


# -- the rule -------------------------------------------------------------------------------------------


def _runs(rows: list[tuple[str, str, str, float | None, float | None, int | None, float | None]]) -> pd.DataFrame:
    return pd.DataFrame(rows, columns=["workload_id", "adapter", "status", "load_start", "load_end", "load_cpus",
                                       "cpu_steal"]).assign(runs_in_flight=1)


def test_workloads_whose_adapters_ran_under_different_load_are_flagged_once() -> None:
    runs = _runs([
        ("w", "a", "ok", 0.2, 0.6, 2, None), ("w", "a", "ok", 0.2, 0.6, 2, None),  # 0.2 per CPU
        ("w", "b", "ok", 2.2, 3.0, 2, None), ("w", "b", "failed", 0.0, 0.0, 2, None),  # 1.3; failed: not timed
        ("v", "a", "ok", 0.2, 0.6, 2, None), ("v", "b", "ok", 1.0, 1.2, 2, None),  # 0.2 vs 0.55: within 0.5
        ("u", "a", "ok", 0.2, 0.6, 2, 0.0), ("u", "b", "ok", 0.2, 0.6, 2, 0.2),  # same load, 20% steal
        ("old", "a", "ok", None, None, None, None), ("old", "b", "ok", 3.0, 3.0, 2, None),  # no figures: no claim
    ])
    rows = {(r["workload"], r["adapter"]): r for r in contention_by_workload(runs)}
    assert rows[("w", "a")]["load_per_cpu"] == pytest.approx(0.2) and rows[("w", "a")]["runs"] == 2
    assert rows[("w", "b")]["load_per_cpu"] == pytest.approx(1.3) and rows[("w", "b")]["runs"] == 1
    assert ("old", "a") not in rows
    lines = contention_warnings(runs)
    assert [line.split(":")[0] for line in lines] == ["u", "w"]  # one line per flagged workload, sorted
    assert "a 0.20 over 2 runs; b 1.30 over 1 run" in lines[1] and f"more than {LOAD_TOLERANCE:g}" in lines[1]
    assert "b 0.20 (steal 20%)" in lines[0]
    assert contention_warnings(runs.iloc[:0]) == []
    assert contention_warnings(runs.drop(columns=["load_start"])) == []  # a store from before the figures


# -- reports --------------------------------------------------------------------------------------------


def _store(path: Path, beta_load: float) -> Path:
    """The synthetic store: every run at a load of 0.4 on 2 CPUs, beta's CartPole runs at ``beta_load``."""
    runs = synthetic_runs()
    for record, _ in runs:
        loaded = record.workload_id == "cart" and record.adapter == "beta"
        record.load_start = record.load_end = beta_load if loaded else 0.4
        record.load_cpus, record.cpu_steal, record.runs_in_flight = 2, 0.0, 1
    return write_store(path, runs)


@pytest.fixture(scope="module")
def reports(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("contention-reports")
    found = {}
    with pytest.MonkeyPatch.context() as patch:
        from rlcompare.cli import report as reporting_cli
        from rlcompare.cli import score as score_cli
        from tests.reporting_support import report_plugins

        patch.setattr(score_cli, "load_plugins", report_plugins)
        patch.setattr(reporting_cli, "load_plugins", report_plugins)
        for name, beta in (("loaded", 3.0), ("even", 0.6)):
            store = _store(root / f"{name}.db", beta)
            assert run_command(["report", "--store", str(store), "--out", str(root / name),
                                "--format", "md,html,latex,csv,json", "--reps", REPS]) == 0
            found[name] = root / name
    return found


WARNING = ("cart: timing figures (start-up, throughput, memory) were measured under different machine load, as "
           "load average per CPU: alpha 0.20 (steal 0%) over 3 runs; beta 1.50 (steal 0%) over 2 runs")


def test_every_report_format_warns_when_timings_were_measured_under_different_load(reports: dict[str, Path]) -> None:
    markdown = (reports["loaded"] / "rlcompare-report.md").read_text()
    assert "> **Warning: timings measured under different machine load.**" in markdown
    assert markdown.count("> - cart: timing figures") == 1 and WARNING in markdown
    assert "calib-w1: timing" not in markdown  # the workloads measured alike are not named
    assert markdown.index("different machine load") < markdown.index("## Ranking")
    html = (reports["loaded"] / "rlcompare-report.html").read_text()
    assert "<strong>Warning: timings measured under different machine load.</strong>" in html
    assert html.count("<li>cart: timing figures") == 1
    latex = (reports["loaded"] / "rlcompare-report.tex").read_text()
    assert "\\textbf{Warning: timings measured under different machine load.}" in latex
    assert latex.count("\\item cart: timing figures") == 1 and "(steal 0\\%)" in latex
    table = pd.read_csv(reports["loaded"] / "rlcompare-report-csv" / "contention.csv")
    flagged = table[table["different_contention"]]
    assert sorted(flagged["adapter"]) == ["alpha", "beta"] and set(flagged["workload"]) == {"cart"}
    document = json.loads((reports["loaded"] / "rlcompare-report.json").read_text())
    rows = {(r["workload"], r["adapter"]): r for r in document["tables"]["contention"]}
    assert rows[("cart", "beta")]["load_per_cpu"] == pytest.approx(1.5) and rows[("cart", "beta")]["different_contention"]
    assert not rows[("calib-w1", "beta")]["different_contention"]
    runs = {r["run_id"]: r for r in document["tables"]["runs"]}
    assert runs["cart__beta__s0"]["load_start"] == 3.0 and runs["cart__beta__s0"]["runs_in_flight"] == 1


def test_reports_of_timings_measured_alike_carry_no_warning(reports: dict[str, Path]) -> None:
    for name in ("rlcompare-report.md", "rlcompare-report.html", "rlcompare-report.tex"):
        assert "different machine load" not in (reports["even"] / name).read_text()
    table = pd.read_csv(reports["even"] / "rlcompare-report-csv" / "contention.csv")
    assert not table["different_contention"].any() and len(table) > 0
