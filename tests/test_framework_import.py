"""The framework's cold import and public API, measured by each run's worker where it imports the
framework anyway (first thing in its fresh interpreter), stored with the run and read by the
development criteria instead of interpreters started after the matrix."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from rlcompare_criteria import cold_import

from rlcompare.harness.framework_import import time_framework_import
from rlcompare.harness.protocol import ProtocolError, RunResult, RunSpec
from rlcompare.scoring.criteria import MeasurementCache, ScoringData
from rlcompare.store.sqlite_store import Store
from tests.test_criteria_development import _criterion, _plugins, _values
from tests.test_criteria_support import run_record, workload_spec, write_store

ROOT = Path(__file__).resolve().parents[1]

#: A framework package that takes a known time to import and says what was imported before it.
_SLOW_FRAMEWORK = '''
import sys, time
BEFORE = sorted(name for name in ("numpy", "gymnasium", "torch", "rlcompare.harness.context") if name in sys.modules)
time.sleep(0.3)


def documented(x: int) -> int:
    """Documented and typed."""
    return x


def bare(x):
    return x
'''


@pytest.fixture
def slow_framework(tmp_path: Path) -> Path:
    package = tmp_path / "slowfw"
    package.mkdir()
    (package / "__init__.py").write_text(_SLOW_FRAMEWORK, encoding="utf-8")
    (package / "agents.py").write_text("from slowfw import documented\n", encoding="utf-8")
    return tmp_path


def _in_fresh_interpreter(code: str, path: Path) -> Any:
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                          env={"PATH": "/usr/bin:/bin", "PYTHONPATH": f"{path}:{ROOT}"})
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_the_worker_times_the_framework_first_thing_and_walks_its_api(slow_framework: Path) -> None:
    """The worker module imports nothing heavy before the timed import (numpy, gymnasium and the
    harness's context come after), the sleep shows in the seconds, the API walk counts what the
    package defines, and a module that fails is an error (first) or a skip (further), not a crash."""
    code = ("import json\nimport rlcompare.harness.worker as worker\n"
            "measured = worker.measure_framework({'framework_modules': ['slowfw', 'slowfw.agents', 'slowfw.absent']})\n"
            "import slowfw\n"
            "print(json.dumps({'measured': measured, 'before': slowfw.BEFORE,\n"
            "                  'none': worker.measure_framework({}), 'bad': worker.measure_framework({'framework_modules': 3})}))")
    answer = _in_fresh_interpreter(code, slow_framework)
    timing = answer["measured"]["import"]
    assert answer["before"] == []
    assert timing["modules"] == ["slowfw", "slowfw.agents", "slowfw.absent"]
    assert timing["seconds"] >= 0.3 and timing["cpu_seconds"] < timing["seconds"]
    assert timing["skipped"] == ["slowfw.absent: ModuleNotFoundError"]
    assert answer["measured"]["api"] == {"objects": 2, "documented": 1, "functions": 2, "typed": 1, "modules": 2}
    assert answer["none"] is None and answer["bad"] is None
    failed = _in_fresh_interpreter("import json\nfrom rlcompare.harness.framework_import import measure_in_this_interpreter\n"
                                   "print(json.dumps(measure_in_this_interpreter(['nosuchfw'])))", slow_framework)
    assert failed == {"import": {"modules": ["nosuchfw"], "error": "ModuleNotFoundError: No module named 'nosuchfw'"}}


def test_fresh_interpreters_of_the_criterion_run_the_same_code(slow_framework: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The criterion's fresh interpreters measure with the worker's functions: the same API counts,
    the same seconds order of magnitude."""
    monkeypatch.setenv("PYTHONPATH", f"{slow_framework}:{ROOT}")
    timed = cold_import.time_cold_import(["slowfw", "slowfw.agents"], repeats=1, warm_up=False, walk_api=True)
    assert timed["seconds"][0] >= 0.3
    assert timed["api"] == {"objects": 2, "documented": 1, "functions": 2, "typed": 1, "modules": 2}
    assert time_framework_import([]) == {"modules": [], "error": "no framework modules to import"}


def test_the_spec_carries_the_modules_and_the_result_carries_the_measurement() -> None:
    spec = RunSpec(run_id="w__a__s0", adapter="a", adapter_class="m:A", framework="f", seed=0, workload={},
                   workload_derived={}, run_dir="/tmp/x", launched_at=0.0, framework_modules=("fw", "fw.agents"))
    assert RunSpec.from_dict(json.loads(json.dumps(spec.to_dict()))).framework_modules == ("fw", "fw.agents")
    with pytest.raises(ProtocolError, match="'framework_modules' must be a list of names"):
        RunSpec.from_dict({**spec.to_dict(), "framework_modules": ["fw", 3]})
    result = RunResult(run_id="w__a__s0", status="ok", development={"import": {"seconds": 1.0}})
    assert RunResult.from_dict(json.loads(json.dumps(result.to_dict()))).development == {"import": {"seconds": 1.0}}
    with pytest.raises(ProtocolError, match="field 'development'"):
        RunResult.from_dict({**result.to_dict(), "development": [1]})


@settings(max_examples=40, deadline=None)
@given(st.one_of(st.none(), st.integers(), st.text(), st.lists(st.one_of(st.text(), st.integers()), max_size=3),
                 st.dictionaries(st.text(max_size=5), st.integers(), max_size=2)))
def test_any_framework_modules_value_is_a_clear_protocol_error_or_a_tuple(value: Any) -> None:
    base = RunSpec(run_id="r", adapter="a", adapter_class="m:A", framework="f", seed=0, workload={},
                   workload_derived={}, run_dir="/tmp/x", launched_at=0.0).to_dict()
    try:
        spec = RunSpec.from_dict({**base, "framework_modules": value})
    except ProtocolError as error:
        assert "framework_modules" in str(error)
    else:
        assert all(isinstance(name, str) for name in spec.framework_modules)


def _store(tmp_path: Path, timings: dict[str, list[float | None]], refused: tuple[str, ...] = ()) -> ScoringData:
    """A store with one run per timing (None: a run that recorded no development measurement), and a
    refused pair for each adapter in ``refused``."""
    spec = workload_spec("w")
    runs = [(run_record(spec, adapter, -1, "unsupported", framework=f"{adapter}-fw"), []) for adapter in refused]
    for adapter, seconds in timings.items():
        for seed, value in enumerate(seconds):
            record = run_record(spec, adapter, seed, framework=f"{adapter}-fw", final_return=1.0)
            if value is not None:
                record = dataclasses.replace(record, development_json={
                    "import": {"modules": ["pluggy"], "seconds": value, "cpu_seconds": value, "skipped": []},
                    "api": {"objects": 10, "documented": 4, "functions": 8, "typed": 2, "modules": 1}})
            runs.append((record, []))
    path = write_store(tmp_path / "store.db", runs)
    with Store(path) as store:
        return ScoringData(store.runs_frame(), catalogue=_plugins(None).scoring_catalogue(),
                           cache=MeasurementCache(tmp_path / "cache.json"))


def test_the_runs_own_timings_are_used_when_every_adapter_has_them(tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """One sample per run, no interpreter started; the API's counts come from a run too."""
    monkeypatch.setattr(cold_import, "measure_cold_import",
                        lambda *a: (_ for _ in ()).throw(AssertionError("timed in a fresh interpreter")))
    data = _store(tmp_path, {"plug": [0.5, 0.7, None], "bare": [0.2]})
    assert _values(_criterion("cold_import").compute(data)) == {"plug": [0.5, 0.7], "bare": [0.2]}
    assert _values(_criterion("docstring_coverage").compute(data))["plug"] == [pytest.approx(0.4)]
    assert _values(_criterion("type_hint_coverage").compute(data))["plug"] == [pytest.approx(0.25)]


def test_one_adapter_without_them_has_every_adapter_timed_in_fresh_interpreters(tmp_path: Path) -> None:
    """A score never mixes the two methods: with ``bare``'s runs untimed, ``plug`` is timed afresh
    too (its runs' 50 s would otherwise stand beside a fresh interpreter's figure)."""
    data = _store(tmp_path, {"plug": [50.0], "bare": [None]})
    samples = _values(_criterion("cold_import").compute(data))["plug"]
    assert len(samples) == cold_import.IMPORT_REPEATS and all(0 < s < 30 for s in samples)
    assert any(key.startswith("import|pluggy|") for key in json.loads(data.cache.path.read_text(encoding="utf-8")))


def test_an_adapter_refused_everywhere_does_not_send_the_others_to_fresh_interpreters(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """It has no run to time it: it alone is timed in fresh interpreters (``bare`` declares no import
    name, so its cell says that), and ``plug`` keeps its runs' own samples."""
    fresh: list[str] = []
    real = cold_import.measure_cold_import
    monkeypatch.setattr(cold_import, "measure_cold_import", lambda data, adapter: fresh.append(adapter) or real(data, adapter))
    data = _store(tmp_path, {"plug": [0.5, 0.6]}, refused=("bare",))
    result = _criterion("cold_import").compute(data)
    assert _values(result) == {"plug": [0.5, 0.6]}
    assert fresh == ["bare"]
    assert {row.adapter: row.reason for row in result.missing.itertuples()} == {
        "bare": "adapter 'bare' declares no import name"}
