"""Citable matrices: the content digest, bundles, ``verify`` and ``score --bundle``."""

from __future__ import annotations

import gzip
import json
import random
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rlcompare.cli import report as reporting_cli
from rlcompare.cli import score as score_cli
from rlcompare.plugins.manager import Plugins
from rlcompare.reporting.canonical import canonical_bytes, digest
from rlcompare.reporting.inputs import inputs_from_frames
from rlcompare.scoring.criteria import ALL_WORKLOADS, DEVELOPMENT, HIGHER, Criterion, CriterionResult
from rlcompare.scoring.engine import ScoringOptions
from rlcompare.scoring.profiles import get_profile
from rlcompare.store.records import json_columns, run_columns
from rlcompare.store.sqlite_store import CURVE_COLUMNS
from tests.reporting_support import report_plugins, synthetic_runs, synthetic_store
from tests.test_reporting import run_command

REPS = "300"
#: What the recorded development criterion "measures" on this machine; changed to prove replay.
MACHINE = {"value": 4.0, "calls": 0}


def _measured(data: Any) -> CriterionResult:
    MACHINE["calls"] += 1
    return CriterionResult.build([(a, ALL_WORKLOADS, 0, MACHINE["value"] + i) for i, a in enumerate(data.adapters)])


def plugins_with_measurement() -> Plugins:
    plugins = report_plugins()
    plugins.register.criteria["machine_measure"] = Criterion(
        id="machine_measure", title="A measurement of this machine", category=DEVELOPMENT, unit="units",
        direction=HIGHER, method="Read from the machine that scores.", compute=_measured)
    return plugins


@pytest.fixture(autouse=True)
def plugins_for_commands(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(score_cli, "load_plugins", plugins_with_measurement)
    monkeypatch.setattr(reporting_cli, "load_plugins", plugins_with_measurement)


@pytest.fixture(scope="module")
def bundled(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("bundle")
    store = synthetic_store(root / "store.db")
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(reporting_cli, "load_plugins", plugins_with_measurement)
        assert run_command(["bundle", "--store", str(store), "--out", str(root / "matrix.json"), "--reps", REPS]) == 0
    return root


def _tampered(source: Path, target: Path, change: Any) -> Path:
    document = json.loads(source.read_text())
    change(document)
    target.write_text(json.dumps(document))
    return target


# -- bundles -------------------------------------------------------------------------------------------


def test_bundle_holds_what_the_matrix_was_computed_from(bundled: Path) -> None:
    document = json.loads((bundled / "matrix.json").read_text())
    inputs = document["inputs"]
    assert document["format"] == "rlcompare-bundle" and document["digest"] == digest(inputs)
    assert {"runs", "curves", "workloads", "hosts", "criteria", "measurements", "profile", "options",
            "rlcompare_version"} <= set(inputs)
    assert len(inputs["runs"]) == 18 and {run["run_id"] for run in inputs["runs"]} >= {"cart__beta__s2"}
    assert inputs["hosts"] == {"abc123": json.loads(json.dumps(inputs["hosts"]["abc123"]))}
    assert all("workload_json" not in run for run in inputs["runs"])  # one copy of each spec
    run = next(r for r in inputs["runs"] if r["run_id"] == "cart__alpha__s0")
    assert run["fidelity_json"][1]["setting"] == "hyperparameters.gae_lambda" and run["versions_json"]["alpha-lib"]
    assert inputs["profile"]["name"] == "balanced" and inputs["options"]["reps"] == int(REPS)
    assert inputs["measurements"]["machine_measure"]["values"][0] == ["alpha", "*", 0, 4]
    assert document["citation"]["digest"] == document["digest"]


def test_verify_passes_without_measuring_again(bundled: Path, capsys: pytest.CaptureFixture[str],
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(MACHINE, "value", 99.0)  # this machine now measures something else
    calls = MACHINE["calls"]
    capsys.readouterr()
    assert run_command(["verify", str(bundled / "matrix.json")]) == 0
    out = capsys.readouterr().out
    assert "verified" in out and json.loads((bundled / "matrix.json").read_text())["digest"] in out
    assert MACHINE["calls"] == calls  # replayed from the bundle, not measured


def test_score_bundle_prints_the_stores_matrix(bundled: Path, capsys: pytest.CaptureFixture[str]) -> None:
    capsys.readouterr()
    assert run_command(["score", "--store", str(bundled / "store.db"), "--json", "--reps", REPS]) == 0
    from_store = json.loads(capsys.readouterr().out)
    assert run_command(["score", "--bundle", str(bundled / "matrix.json"), "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == from_store
    assert run_command(["score", "--bundle", str(bundled / "matrix.json"), "--json", "--profile", "performance"]) == 0
    assert json.loads(capsys.readouterr().out)["profile"]["name"] == "performance"


def test_verify_names_the_run_and_the_scores_a_tampered_bundle_changed(
        bundled: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    def raise_a_return(document: dict[str, Any]) -> None:
        run = next(r for r in document["inputs"]["runs"] if r["run_id"] == "cart__beta__s0")
        run["final_return_mean"] = 180.0

    path = _tampered(bundled / "matrix.json", tmp_path / "tampered.json", raise_a_return)
    capsys.readouterr()
    assert run_command(["verify", str(path)]) == 1
    err = capsys.readouterr().err
    assert "does NOT verify" in err and "digest differs: stated sha256:" in err
    assert "inputs changed: runs" in err and "runs changed: cart__beta__s0" in err
    assert "cells[final_return, beta, cart].point: stated 95, recomputed 140" in err


def test_verify_names_a_changed_score_when_the_inputs_are_intact(
        bundled: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    def flatter(document: dict[str, Any]) -> None:
        document["matrix"]["adapters"][1]["score"]["point"] = 0.99

    path = _tampered(bundled / "matrix.json", tmp_path / "flattered.json", flatter)
    capsys.readouterr()
    assert run_command(["verify", str(path)]) == 1
    err = capsys.readouterr().err
    assert "digest differs" not in err
    stated = json.loads((bundled / "matrix.json").read_text(encoding="utf-8"))["matrix"]["adapters"][1]["score"]["point"]
    assert stated != 0.99
    assert (f"scores differ (1 numbers): adapters[beta].score.point: stated 0.99, recomputed {json.dumps(stated)}\n"
            in err)


def test_gzip_bundles_and_files_that_are_not_bundles(bundled: Path, tmp_path: Path,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    packed = tmp_path / "matrix.json.gz"
    packed.write_bytes(gzip.compress((bundled / "matrix.json").read_bytes()))
    assert run_command(["verify", str(packed)]) == 0
    other = tmp_path / "other.json"
    other.write_text('{"hello": 1}')
    capsys.readouterr()
    assert run_command(["verify", str(other)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1] == f"rlcompare: error: {other}: not an rlcompare bundle (format is not 'rlcompare-bundle')"


# -- the digest ------------------------------------------------------------------------------------------


def test_a_bundle_verifies_where_a_refusal_was_followed_by_runs_and_a_spec_changed(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The matrix is scored from the store's current runs (a pair's refusal record superseded by runs of
    that pair made since, runs of an older spec kept apart); verification scores the bundle's inputs
    the same way, so the missing-data reason of a pair whose later runs all timed out is theirs in both."""
    from tests.test_criteria_support import curve, run_record, workload_spec, write_store

    pend = workload_spec("pend", env="Pendulum-v1", algorithm="SAC", threshold=-250.0)
    older = {**pend, "env_steps": 500}  # the same workload id under an earlier spec
    runs = [(run_record(pend, "alpha", seed, final_return=-200.0 - seed, throughput=400.0, startup=1.0,
                        finished_at=2e9 + seed), curve([(0, 0.0, -1200.0), (1000, 1.0, -200.0 - seed)]))
            for seed in range(2)]
    runs.append((run_record(pend, "beta", -1, status="unsupported", error="no recommendation then",
                            finished_at=1e9), []))
    runs += [(run_record(pend, "beta", seed, status="timeout", error="killed by the 300 s timeout",
                         finished_at=2e9 + 10 + seed), []) for seed in range(2)]
    stale = run_record(older, "alpha", 5, final_return=-900.0, throughput=1.0, startup=1.0, finished_at=1.5e9)
    runs.append((stale, curve([(0, 0.0, -1200.0), (500, 1.0, -900.0)])))
    store = write_store(tmp_path / "store.db", runs)
    assert run_command(["bundle", "--store", str(store), "--out", str(tmp_path / "b.json"), "--reps", REPS]) == 0
    document = json.loads((tmp_path / "b.json").read_text())
    assert {"pend__beta__s-1", "pend__alpha__s5"} <= {run["run_id"] for run in document["inputs"]["runs"]}
    capsys.readouterr()
    assert run_command(["verify", str(tmp_path / "b.json")]) == 0, capsys.readouterr().out
    missing = json.dumps(document["matrix"])
    assert "no valid seed (2 timeout)" in missing and "no recommendation then" not in missing


def test_canonical_form_ignores_number_spelling_and_key_order() -> None:
    a = {"b": [1, 2.5, float("inf")], "a": {"y": np.float64(3.0), "x": None}}
    b = {"a": {"x": None, "y": 3}, "b": [1.0, np.float32(2.5).item(), np.inf]}
    assert canonical_bytes(a) == canonical_bytes(b) == b'{"a":{"x":null,"y":3},"b":[1,2.5,"Infinity"]}'
    assert digest(a) == digest(b) and digest({"v": 0.1}) != digest({"v": 0.1 + 1e-17 * 3})


BASE = synthetic_runs()
PLUGINS = report_plugins()


def _frames() -> tuple[pd.DataFrame, pd.DataFrame]:
    rows, points = [], []
    for record, curve in BASE:
        row = record.row()
        for column in json_columns():
            if row[column] is not None:
                row[column] = json.dumps(row[column], sort_keys=True)
        rows.append(row)
        points += [{**{c: getattr(p, c, None) for c in CURVE_COLUMNS}, "run_id": record.run_id, "returns_json": "[]"}
                   for p in curve]
    return pd.DataFrame(rows, columns=list(run_columns())), pd.DataFrame(points, columns=list(CURVE_COLUMNS))


def _digest(runs: pd.DataFrame, curves: pd.DataFrame, profile: str = "balanced", reps: int = 300) -> str:
    inputs = inputs_from_frames(runs, curves, {}, PLUGINS, {}, get_profile(profile), ScoringOptions(reps=reps))
    return inputs.digest()


def _respell(value: Any, rng: random.Random) -> str:
    """JSON text of ``value`` with keys in a random order and numbers spelled another way."""
    if isinstance(value, dict):
        items = list(value.items())
        rng.shuffle(items)
        return "{" + ", ".join(f"{json.dumps(k)}: {_respell(v, rng)}" for k, v in items) + "}"
    if isinstance(value, list):
        return "[" + ",".join(_respell(v, rng) for v in value) + "]"
    if isinstance(value, float) and np.isfinite(value):
        return rng.choice([repr(value), f"{value:.17g}", f"{value:.17e}"])
    if isinstance(value, int) and not isinstance(value, bool):
        return rng.choice([str(value), f"{value}.0", f"{value}e0"])
    return json.dumps(value)


RUNS, CURVES = _frames()
BASE_DIGEST = _digest(RUNS, CURVES)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**32 - 1))
def test_digest_ignores_run_order_dict_order_and_number_spelling(seed: int) -> None:
    rng = random.Random(seed)
    runs = RUNS.sample(frac=1.0, random_state=seed % 2**31)
    runs = runs[rng.sample(list(runs.columns), len(runs.columns))].copy()
    for column in json_columns():
        runs[column] = [None if text is None else _respell(json.loads(text), rng) for text in runs[column]]
    curves = CURVES.sample(frac=1.0, random_state=seed % 2**31)
    assert _digest(runs, curves) == BASE_DIGEST


NUMERIC = ["final_return_mean", "throughput", "startup_seconds", "peak_rss_bytes", "env_steps", "seed"]


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(row=st.integers(0, len(RUNS) - 1), what=st.sampled_from(["number", "text", "json", "curve", "drop"]),
       column=st.sampled_from(NUMERIC))
def test_digest_changes_when_any_input_changes(row: int, what: str, column: str) -> None:
    runs, curves = RUNS.copy(), CURVES.copy()
    if what == "number":
        value = runs.at[row, column]
        runs[column] = runs[column].astype(object)
        runs.at[row, column] = 1.0 if pd.isna(value) else np.nextafter(float(value), np.inf)
    elif what == "text":
        runs.at[row, "error"] = (runs.at[row, "error"] or "") + "!"
    elif what == "json":
        spec = json.loads(runs.at[row, "workload_json"])
        spec["env_steps"] += 1
        runs.at[row, "workload_json"] = json.dumps(spec)
    elif what == "curve":
        curves.at[row % len(curves), "return_mean"] += 1e-9
    else:
        runs = runs.drop(index=row)
    assert _digest(runs, curves) != BASE_DIGEST


def test_digest_covers_the_profile_the_options_and_the_version(monkeypatch: pytest.MonkeyPatch) -> None:
    assert _digest(RUNS, CURVES, profile="performance") != BASE_DIGEST
    assert _digest(RUNS, CURVES, reps=400) != BASE_DIGEST
    import rlcompare

    monkeypatch.setattr(rlcompare, "__version__", "9.9.9")
    assert _digest(RUNS, CURVES) != BASE_DIGEST


def test_the_published_reference_bundle_verifies_and_its_digest_is_the_one_cited() -> None:
    """reports/quick is cited by digest in reports/README.md: the bundle must verify with the
    installed criteria, and the README, the BibTeX and the CFF must all cite its digest."""
    from tests.conftest import ROOT, run_cli

    quick = ROOT / "reports" / "quick"
    document = json.loads((quick / "rlcompare-bundle.json").read_text(encoding="utf-8"))
    done = run_cli(["verify", str(quick / "rlcompare-bundle.json")])
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"verified: digest {document['digest']}" in done.stdout
    for cited in (ROOT / "reports" / "README.md", quick / "rlcompare-matrix.bib", quick / "CITATION.cff",
                  quick / "rlcompare-report.md"):
        assert document["digest"] in cited.read_text(encoding="utf-8"), cited
