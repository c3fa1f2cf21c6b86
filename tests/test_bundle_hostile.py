"""Bundles from anywhere: ``verify`` and ``score --bundle`` read them defensively.

Whatever a bundle file holds (too many bytes, a gzip that inflates without end, JSON nested without
end, a field of the wrong type, an unknown key, an option that asks for endless computation, a
citation that does not match its inputs), the answer is one line and exit status 2 for a file that is
not a well-formed bundle, or the named differences and exit status 1 for one that is but does not
verify: never a traceback, a hang or an allocation failure.
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import dataclasses
import gzip
import io
import json
import os
import tracemalloc
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rlcompare.cli import options as cli_options
from rlcompare.cli import report as reporting_cli
from rlcompare.cli import score as score_cli
from rlcompare.errors import RLCompareError, UsageError
from rlcompare.plugins.manager import Plugins
from rlcompare.reporting import bundle as bundle_module
from rlcompare.reporting.bundle import Verification, bundle_document, read_bundle, verify_bundle, write_bundle
from rlcompare.reporting.bundle_schema import MAX_ADAPTERS, MAX_DEPTH
from rlcompare.reporting.canonical import digest
from rlcompare.reporting.citation import citation_of
from rlcompare.reporting.inputs import score_inputs, score_store_recorded
from rlcompare.scoring.criteria import ScoringCatalogue
from rlcompare.scoring.engine import ScoringOptions
from rlcompare.scoring.option_bounds import MAX_REPS, MIN_REPS, OPTION_BOUNDS, SEED_LIMIT
from rlcompare.scoring.profiles import get_profile
from rlcompare.store.sqlite_store import Store
from tests.reporting_support import report_plugins, synthetic_store
from tests.test_reporting import run_command

#: A few criteria of each kind keep each scoring of the bundle near a tenth of a second: performance
#: ones computed again, development ones (recorded) replayed.
CRITERIA = ("final_return", "time_to_threshold_steps", "throughput", "completion_rate", "glue_lines", "licence",
            "setting_fidelity")


def few_criteria_plugins() -> Plugins:
    plugins = report_plugins()
    for cid in [cid for cid in plugins.register.criteria if cid not in CRITERIA]:
        del plugins.register.criteria[cid]
    return plugins


@pytest.fixture(scope="module")
def catalogue() -> ScoringCatalogue:
    return few_criteria_plugins().scoring_catalogue()


@pytest.fixture(scope="module")
def valid(tmp_path_factory: pytest.TempPathFactory, catalogue: ScoringCatalogue) -> dict[str, Any]:
    """A small bundle that verifies: 20 synthetic runs (with curves, a failed and a refused one)."""
    root = tmp_path_factory.mktemp("hostile")
    with Store(synthetic_store(root / "store.db")) as store:
        scored = score_store_recorded(store, catalogue, get_profile("balanced"),
                                      ScoringOptions(reps=MIN_REPS, stability_samples=MIN_REPS))
    document = bundle_document(scored.inputs, scored.matrix, citation_of(scored.inputs, scored.matrix), "store.db")
    assert set(document["inputs"]["measurements"]) >= {"setting_fidelity", "licence"}
    return json.loads(json.dumps(document))


@pytest.fixture(autouse=True)
def plugins_for_commands(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(score_cli, "load_plugins", few_criteria_plugins)
    monkeypatch.setattr(reporting_cli, "load_plugins", few_criteria_plugins)


def _write(path: Path, document: Any) -> Path:
    path.write_text(json.dumps(document), encoding="utf-8")
    return path


def _refused(path: Path) -> str:
    """The one line ``read_bundle`` refuses ``path`` with (after the file name)."""
    with pytest.raises(UsageError) as caught:
        read_bundle(path)
    text = str(caught.value)
    assert "\n" not in text and text.startswith(f"{path}: "), text
    return text.removeprefix(f"{path}: ")


def _cli(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, list[str]]:
    capsys.readouterr()
    status = run_command(argv)
    return status, capsys.readouterr().err.strip().splitlines()


def _rehashed(document: dict[str, Any]) -> dict[str, Any]:
    """``document`` with its digests and citation made consistent with its (changed) inputs, as a
    bundle written from them would be."""
    inputs = document["inputs"]
    stated = digest(inputs)
    document.update(digest=stated, sections={name: digest(inputs.get(name)) for name in bundle_module.SECTIONS},
                    run_digests=bundle_module._run_digests(inputs))
    document["citation"].update(digest=stated, key="rlcompare_" + stated[7:19])
    return document


def test_the_small_bundle_verifies(valid: dict[str, Any], catalogue: ScoringCatalogue, tmp_path: Path) -> None:
    result = verify_bundle(_write(tmp_path / "b.json", valid), catalogue)
    assert result.ok, result.lines()
    assert "its citation" in result.lines()[0]


# -- size -------------------------------------------------------------------------------------------


def test_a_file_larger_than_the_limit_is_refused_before_it_is_read(tmp_path: Path) -> None:
    huge = tmp_path / "huge.json"
    with huge.open("wb") as handle:  # 5 GiB, sparse: nothing is written and nothing must be read
        handle.truncate(5 * 2**30)
    assert bundle_module.MAX_BUNDLE_BYTES < 5 * 2**30
    tracemalloc.start()
    try:
        message = _refused(huge)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert message == "5120 MiB, larger than a bundle may be (256 MiB)"
    assert peak < 2**20


def test_a_stream_without_end_is_read_no_further_than_the_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    if not Path("/dev/zero").exists():
        pytest.skip("no /dev/zero on this platform")
    monkeypatch.setattr(bundle_module, "MAX_BUNDLE_BYTES", 3 * 2**20)
    assert _refused(Path("/dev/zero")) == "larger than a bundle may be (3 MiB)"


def test_a_named_pipe_nobody_writes_to_is_read_as_empty_not_waited_on(tmp_path: Path) -> None:
    if not hasattr(os, "mkfifo"):
        pytest.skip("no named pipes on this platform")
    os.mkfifo(tmp_path / "pipe")
    assert _refused(tmp_path / "pipe").startswith("not an rlcompare bundle (not JSON: Expecting value")


def test_a_gzip_that_inflates_past_the_limit_stops_there(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """1 GiB of spaces in 1 MB of gzip (1024 members of 1 MiB each); the limit set to 4 MiB: reading
    stops after it, so the memory spent stays near the limit, never near the gigabyte."""
    member = gzip.compress(b" " * 2**20, mtime=0)
    bomb = tmp_path / "bomb.json.gz"
    bomb.write_bytes(gzip.compress(b'{"format": "rlcompare-bundle", "x": "', mtime=0) + member * 1024)
    assert bomb.stat().st_size < 2 * 2**20
    monkeypatch.setattr(bundle_module, "MAX_BUNDLE_BYTES", 4 * 2**20)
    tracemalloc.start()
    try:
        message = _refused(bomb)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert message == "inflates to more than a bundle may be (4 MiB)"
    assert peak < 16 * 2**20


def test_a_bundle_under_the_limit_reads_and_the_limit_counts_inflated_bytes(
        valid: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    packed = write_bundle(tmp_path / "b.json.gz", valid)
    size = len(gzip.decompress(packed.read_bytes()))
    monkeypatch.setattr(bundle_module, "MAX_BUNDLE_BYTES", size)
    assert read_bundle(packed).digest == valid["digest"]
    monkeypatch.setattr(bundle_module, "MAX_BUNDLE_BYTES", size - 1)
    assert packed.stat().st_size < size - 1
    assert _refused(packed) == f"inflates to more than a bundle may be ({size - 1} bytes)"


def test_a_broken_gzip_is_one_line(valid: dict[str, Any], tmp_path: Path) -> None:
    packed = write_bundle(tmp_path / "b.json.gz", valid).read_bytes()
    for name, payload in (("cut", packed[: len(packed) // 2]), ("flipped", packed[:40] + b"\xff" * 20 + packed[60:])):
        path = tmp_path / f"{name}.json.gz"
        path.write_bytes(payload)
        assert _refused(path).startswith("not an rlcompare bundle (not gzip: ")


# -- depth and text -----------------------------------------------------------------------------------


def test_json_nested_past_what_python_parses_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    deep = tmp_path / "deep.json"
    deep.write_text('{"format": "rlcompare-bundle", "x": ' + "[" * 200_000 + "]" * 200_000 + "}")
    for command in (["verify", str(deep)], ["score", "--bundle", str(deep)]):
        status, err = _cli(command, capsys)
        assert (status, err) == (2, [f"rlcompare: error: {deep}: not an rlcompare bundle (nested deeper than "
                                     f"{MAX_DEPTH} levels)"])


def test_nesting_is_bounded_where_a_bundle_holds_free_form_data(valid: dict[str, Any], tmp_path: Path) -> None:
    document = copy.deepcopy(valid)
    spec = next(iter(document["inputs"]["workloads"]))
    nested: Any = "bottom"
    for _ in range(MAX_DEPTH):
        nested = [nested]
    document["inputs"]["workloads"][spec]["env_kwargs"] = nested
    message = _refused(_write(tmp_path / "deep.json", document))
    assert message.startswith(f'inputs.workloads["{spec}"].env_kwargs[0][0][0][0]... (')
    assert message.endswith(f"levels down): nested deeper than {MAX_DEPTH} levels")


@pytest.mark.parametrize(("text", "reason"), [
    ('{"format": "rlcompare-bundle", "x": NaN}', "not JSON: NaN is not JSON"),
    ('{"format": "rlcompare-bundle", "x": -Infinity}', "not JSON: -Infinity is not JSON"),
    ('{"format": "rlcompare-bundle", "x": ' + "9" * 5000 + "}", "not JSON: Exceeds the limit"),
])
def test_what_json_does_not_allow_is_refused(text: str, reason: str, tmp_path: Path) -> None:
    path = tmp_path / "b.json"
    path.write_text(text)
    assert _refused(path).startswith(f"not an rlcompare bundle ({reason}")


def test_text_that_is_not_unicode_is_refused(valid: dict[str, Any], tmp_path: Path) -> None:
    text = json.dumps(valid).replace('"balanced"', '"\\ud800"', 1)
    path = tmp_path / "b.json"
    path.write_text(text)
    assert _refused(path) == "citation.profile: text that is not valid Unicode"
    (tmp_path / "latin1.json").write_bytes(json.dumps(valid).replace("balanced", "b\u00e9").encode("latin-1"))
    assert _refused(tmp_path / "latin1.json").startswith("not an rlcompare bundle (not JSON: 'utf-8' codec")


# -- types --------------------------------------------------------------------------------------------


def _run_index(document: dict[str, Any], status: str = "ok") -> int:
    return next(i for i, run in enumerate(document["inputs"]["runs"]) if run["status"] == status)


def _first_measurement(document: dict[str, Any]) -> dict[str, Any]:
    return document["inputs"]["measurements"]["setting_fidelity"]


WRONG_TYPES = [
    ("runs as a string", lambda d: d["inputs"].__setitem__("runs", "all of them"),
     'inputs.runs: expected a list, got "all of them"'),
    ("a null curve point", lambda d: d["inputs"]["curves"].__setitem__(2, None),
     "inputs.curves[2]: expected an object, got null"),
    ("a null in a curve's returns", lambda d: d["inputs"]["curves"][0]["returns_json"].append(None),
     "inputs.curves[0].returns_json[0]: expected a number, got null"),
    ("a string return", lambda d: d["inputs"]["runs"][_run_index(d)].__setitem__("final_return_mean", "high"),
     "inputs.runs[{run}].final_return_mean: expected a number, got \"high\""),
    ("an object as run id", lambda d: d["inputs"]["runs"][_run_index(d)].__setitem__("run_id", {"id": 1}),
     'inputs.runs[{run}].run_id: expected text, got {{"id": 1}}'),
    ("a boolean seed", lambda d: d["inputs"]["runs"][_run_index(d)].__setitem__("seed", True),
     "inputs.runs[{run}].seed: expected a whole number (64-bit), got true"),
    ("an unknown status", lambda d: d["inputs"]["runs"][_run_index(d)].__setitem__("status", "great"),
     "inputs.runs[{run}].status: expected 'ok', 'invalid', 'failed', 'timeout', 'interrupted' or 'unsupported', "
     'got "great"'),
    ("a time no date has", lambda d: d["inputs"]["runs"][_run_index(d)].__setitem__("finished_at", 1e300),
     "inputs.runs[{run}].finished_at: expected a time (POSIX seconds, before the year 10000), got 1e+300"),
    ("an unknown run column", lambda d: d["inputs"]["runs"][_run_index(d)].__setitem__("throughputt", 1),
     "inputs.runs[{run}].throughputt: not a field a bundle has here; did you mean 'throughput'?"),
    ("an unknown option key", lambda d: d["inputs"]["options"].__setitem__("repz", 300),
     "inputs.options.repz: not a field a bundle has here; did you mean 'reps'?"),
    ("a missing seed", lambda d: d["inputs"]["runs"][_run_index(d)].__delitem__("seed"),
     "inputs.runs[{run}].seed: required, and missing"),
    ("a measured value as text", lambda d: _first_measurement(d)["values"][0].__setitem__(3, "many"),
     "inputs.measurements.setting_fidelity.values[0][3]: expected a number, got \"many\""),
    ("a measured row too long", lambda d: _first_measurement(d)["values"][0].append(1),
     "inputs.measurements.setting_fidelity.values[0]: expected at most 4 entries, got"),
    ("a measurement of an adapter without runs", lambda d: _first_measurement(d)["values"][0].__setitem__(0, "zzz"),
     "inputs.measurements.setting_fidelity.values[0][0]: adapter 'zzz' has no run in inputs.runs"),
    ("a measurement of a workload without runs", lambda d: _first_measurement(d)["notes"][0].__setitem__(1, "nowhere"),
     "inputs.measurements.setting_fidelity.notes[0][1]: workload 'nowhere' has no run in inputs.runs"),
    ("a profile category unknown", lambda d: d["inputs"]["profile"]["categories"].__setitem__("speed", 1),
     "inputs.profile.categories: unknown category 'speed' (expected performance, development)"),
    ("a negative weight", lambda d: d["inputs"]["profile"]["weights"].__setitem__("throughput", -1),
     "inputs.profile.weights.throughput: expected a non-negative number, got -1"),
    ("a recorded criterion of no category",
     lambda d: next(c for c in d["inputs"]["criteria"] if c["id"] == "licence").__setitem__("category", "taste"),
     "inputs.criteria[{licence}]: recorded criterion 'licence': category must be one of ('performance', "
     "'development'), got 'taste'"),
    ("a run id twice", lambda d: d["inputs"]["runs"].append(copy.deepcopy(d["inputs"]["runs"][0])),
     "inputs.runs[{runs}].run_id: {first_run!r} appears twice"),
    ("a spec that is not there", lambda d: d["inputs"]["workloads"].clear(),
     "inputs.runs[0].workload_digest: no spec"),
    ("a digest that is not one", lambda d: d.__setitem__("digest", "md5:00"),
     'digest: expected a digest (sha256: and 64 hexadecimal digits), got "md5:00"'),
    ("a citation without authors", lambda d: d["citation"].__setitem__("authors", []),
     "citation.authors: expected at least 1 entries, got []"),
    ("a matrix that is a list", lambda d: d.__setitem__("matrix", []), "matrix: expected an object, got []"),
    ("an inputs version from elsewhere", lambda d: d["inputs"].__setitem__("inputs_version", 2),
     "inputs.inputs_version: expected 1, got 2"),
]


@pytest.mark.parametrize(("change", "expected"), [case[1:] for case in WRONG_TYPES], ids=[case[0] for case in WRONG_TYPES])
def test_a_field_of_the_wrong_type_is_named_before_anything_is_computed(
        change: Any, expected: str, valid: dict[str, Any], tmp_path: Path) -> None:
    document = copy.deepcopy(valid)
    change(document)
    message = _refused(_write(tmp_path / "b.json", document))
    places = {"run": _run_index(valid), "runs": len(valid["inputs"]["runs"]), "first_run": valid["inputs"]["runs"][0]["run_id"],
              "licence": next(i for i, c in enumerate(valid["inputs"]["criteria"]) if c["id"] == "licence")}
    assert message.startswith(expected.format(**places)), message


@pytest.mark.parametrize("command", ["verify", "score"])
def test_the_commands_answer_a_wrong_type_in_one_line_with_status_2(
        command: str, valid: dict[str, Any], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    document = copy.deepcopy(valid)
    document["inputs"]["runs"][3]["run_id"] = {"id": 1}
    path = _write(tmp_path / "b.json", document)
    status, err = _cli(["verify", str(path)] if command == "verify" else ["score", "--bundle", str(path)], capsys)
    assert (status, err) == (2, [f'rlcompare: error: {path}: inputs.runs[3].run_id: expected text, got {{"id": 1}}'])


def test_adapters_beyond_what_a_matrix_can_be_scored_for_are_refused(valid: dict[str, Any], tmp_path: Path) -> None:
    document = copy.deepcopy(valid)
    runs = document["inputs"]["runs"]
    template = next(run for run in runs if run["status"] == "unsupported")
    runs += [{**template, "run_id": f"many__{i}", "adapter": f"a{i}"} for i in range(MAX_ADAPTERS)]
    assert _refused(_write(tmp_path / "b.json", document)).startswith(
        f"inputs.runs: {MAX_ADAPTERS + 2} adapters on 4 workloads, more than a bundle may hold (at most "
        f"{MAX_ADAPTERS} adapters,")


# -- options ------------------------------------------------------------------------------------------


def test_every_scoring_option_has_bounds() -> None:
    assert set(OPTION_BOUNDS) == {field.name for field in dataclasses.fields(ScoringOptions)}
    defaults = ScoringOptions()
    for name, bound in OPTION_BOUNDS.items():
        assert bound.holds(getattr(defaults, name)), name


@pytest.mark.parametrize("reps", [MIN_REPS - 1, MIN_REPS, MAX_REPS, MAX_REPS + 1, 10**9])
def test_the_command_line_and_bundles_accept_the_same_repetitions(
        reps: int, valid: dict[str, Any], tmp_path: Path) -> None:
    accepted = MIN_REPS <= reps <= MAX_REPS
    try:
        cli_options.repetitions(str(reps))
        cli_accepts = True
    except argparse.ArgumentTypeError:
        cli_accepts = False
    document = copy.deepcopy(valid)
    document["inputs"]["options"]["reps"] = reps
    path = _write(tmp_path / "b.json", document)
    if accepted:
        assert cli_accepts and read_bundle(path).inputs.options_object().reps == reps
    else:
        assert not cli_accepts
        assert _refused(path) == f"inputs.options.reps: expected a whole number from {MIN_REPS} to {MAX_REPS}, got {reps}"


@pytest.mark.parametrize("seed", [-1, 0, SEED_LIMIT - 1, SEED_LIMIT])
def test_the_command_line_and_bundles_accept_the_same_seeds(seed: int, valid: dict[str, Any], tmp_path: Path) -> None:
    accepted = 0 <= seed < SEED_LIMIT
    try:
        cli_options.bootstrap_seed(str(seed))
        cli_accepts = True
    except argparse.ArgumentTypeError:
        cli_accepts = False
    document = copy.deepcopy(valid)
    document["inputs"]["options"]["seed"] = seed
    path = _write(tmp_path / "b.json", document)
    assert cli_accepts == accepted
    if accepted:
        read_bundle(path)
    else:
        assert _refused(path).startswith("inputs.options.seed: expected a whole number from 0 to 4294967295")


@pytest.mark.parametrize(("name", "value"), [
    ("reps", 1e9), ("reps", 300.5), ("reps", "2000"), ("reps", None), ("reps", True), ("confidence", 1),
    ("confidence", 0), ("confidence", -0.5), ("concentration", 0), ("concentration", 1e300), ("profile_points", 1),
    ("profile_points", 10**6), ("stability_samples", 0), ("stability_samples", MAX_REPS + 1), ("seed", 1.5),
])
def test_an_option_out_of_bounds_is_refused(name: str, value: Any, valid: dict[str, Any], tmp_path: Path,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    document = copy.deepcopy(valid)
    document["inputs"]["options"][name] = value
    path = _write(tmp_path / "b.json", document)
    assert _refused(path).startswith(f"inputs.options.{name}: expected ")
    if (name, value) == ("reps", 1e9):  # what once computed until killed
        status, err = _cli(["score", "--bundle", str(path), "--json"], capsys)
        assert status == 2 and err == [f"rlcompare: error: {path}: inputs.options.reps: expected a whole number "
                                       f"from {MIN_REPS} to {MAX_REPS}, got 1000000000.0"]


def test_options_at_the_edges_of_their_bounds_score(valid: dict[str, Any], catalogue: ScoringCatalogue,
                                                   tmp_path: Path) -> None:
    edges = {"reps": MIN_REPS, "seed": SEED_LIMIT - 1, "confidence": 1e-9, "stability_samples": MAX_REPS,
             "concentration": OPTION_BOUNDS["concentration"].low, "profile_points": int(OPTION_BOUNDS["profile_points"].high)}
    for name, value in edges.items():
        assert OPTION_BOUNDS[name].holds(value), name
    for changed in (edges, {**edges, "confidence": 1 - 1e-9, "concentration": OPTION_BOUNDS["concentration"].high}):
        document = copy.deepcopy(valid)
        document["inputs"]["options"] = changed
        bundle = read_bundle(_write(tmp_path / "b.json", _rehashed(document)))
        matrix = score_inputs(bundle.inputs, catalogue)
        assert matrix.options.confidence == changed["confidence"] and matrix.overall


# -- the citation ---------------------------------------------------------------------------------------


def test_verify_checks_the_citation_against_the_inputs(valid: dict[str, Any], catalogue: ScoringCatalogue,
                                                       tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    document = copy.deepcopy(valid)
    document["citation"].update(title="A better matrix", authors=["Someone Else"], runs=99,
                                digest="sha256:" + "a" * 64, date="2001-01-01")
    path = _write(tmp_path / "forged.json", document)
    result = verify_bundle(path, catalogue)
    assert not result.ok and result.digest == result.stated_digest and not result.score_differences
    stated = valid["citation"]
    assert result.statement_differences == [
        f'citation.date: stated "2001-01-01", recomputed "{stated["date"]}"',
        f'citation.digest: stated "sha256:{"a" * 64}", recomputed "{valid["digest"]}"',
        f'citation.runs: stated 99, recomputed {stated["runs"]}',
        f'citation.title: stated "A better matrix", recomputed {json.dumps(stated["title"])[:77]}...',
    ]
    status, err = _cli(["verify", str(path)], capsys)
    assert status == 1 and err[0] == f"{path}: does NOT verify"
    assert err[1].startswith("  citation and digests differ from the inputs (4 entries): citation.date: ")


def test_verify_checks_the_stated_version_and_the_section_and_run_digests(
        valid: dict[str, Any], catalogue: ScoringCatalogue, tmp_path: Path) -> None:
    document = copy.deepcopy(valid)
    run = document["inputs"]["runs"][0]["run_id"]
    document["rlcompare_version"] = "99.0"
    document["sections"]["profile"] = "sha256:" + "b" * 64
    document["run_digests"][run] = "sha256:" + "c" * 64
    result = verify_bundle(_write(tmp_path / "b.json", document), catalogue)
    assert not result.ok and result.digest == result.stated_digest
    assert result.statement_differences == [
        f"sections.profile: stated sha256:{'b' * 64}, recomputed {valid['sections']['profile']}",
        f"run_digests.{run}: stated sha256:{'c' * 64}, recomputed {valid['run_digests'][run]}",
        f"rlcompare_version: stated 99.0, recomputed {valid['inputs']['rlcompare_version']}",
    ]


def test_a_citation_made_consistent_with_changed_inputs_still_fails_on_the_scores(
        valid: dict[str, Any], catalogue: ScoringCatalogue, tmp_path: Path) -> None:
    document = copy.deepcopy(valid)
    run = document["inputs"]["runs"][_run_index(document)]
    run["final_return_mean"] += 1000
    result = verify_bundle(_write(tmp_path / "b.json", _rehashed(document)), catalogue)
    assert not result.ok and not result.statement_differences and result.score_differences


# -- anything at all --------------------------------------------------------------------------------------


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    yield prefix
    if prefix == ("matrix",):  # compared number by number: a change there is a difference, not a danger
        return
    children = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for key, child in children:
        yield from _paths(child, (*prefix, key))


ODD_VALUES = st.sampled_from([
    None, True, False, 0, -1, 7, 2**63, -(2**70), 1.5, -0.0, 1e308, "", "x", "NaN", "Infinity", "ok", "2026-01-01",
    "sha256:" + "0" * 64, [], [None], ["x", "y", 1, 2.0], {}, {"x": 1}, {"status": "differs"}, [{"status": "verified"}],
]) | st.text(max_size=6) | st.integers() | st.floats(allow_nan=False, allow_infinity=False)
#: Values of the kind already there, which the schema lets through to the scoring: names the bundle
#: uses elsewhere or nowhere, extreme and ordinary numbers.
KIN_VALUES = st.fixed_dictionaries({
    str: st.sampled_from(["alpha", "beta", "cart", "calib-w1", "pend", "*", "zzz", "", "ok", "failed", "unsupported",
                          "NaN", "Infinity", "-Infinity", "two\nlines", "\x1b[2J"]) | st.text(max_size=4),
    int: st.sampled_from([0, -1, 1, 2, 2**31, 2**63 - 1, -(2**63)]) | st.integers(-10, 10**6),
    float: st.sampled_from([0.0, -0.0, 1e308, -1e308, 5e-324, 0.5]) | st.floats(allow_nan=False, allow_infinity=False),
})
KINDS = ["drop", "retype", "insert", "respell"]


@st.composite
def mutations(draw: st.DrawFn, paths: dict[tuple[Any, ...], list[tuple[Any, ...]]]
              ) -> list[tuple[str, tuple[Any, ...], Any, dict[type, Any]]]:
    """One to three changes, each in a part of the bundle drawn first (so that the few measurements
    are hit as often as the many curve points), then at a path in it."""
    parts = sorted(paths, key=str)
    return [(draw(st.sampled_from(KINDS)), draw(st.sampled_from(parts).flatmap(lambda part: st.sampled_from(paths[part]))),
             draw(ODD_VALUES), draw(KIN_VALUES))
            for _ in range(draw(st.integers(1, 2)))]


def _mutate(document: Any, kind: str, path: tuple[Any, ...], value: Any, kin: dict[type, Any]) -> None:
    """Drop the field at ``path``, give it ``value`` (retype), insert ``value`` into it, or give it
    another value of its own kind (respell)."""
    parent = document
    for key in path[:-1]:
        try:
            parent = parent[key]
        except (KeyError, IndexError, TypeError):
            return  # an earlier mutation removed the way there
    if not path:
        return
    key, value = path[-1], copy.deepcopy(value)  # never the same object twice (nor inside itself)
    if not isinstance(parent, (dict, list)) or (isinstance(parent, dict) and key not in parent) \
            or (isinstance(parent, list) and not (isinstance(key, int) and key < len(parent))):
        return
    current = parent[key]
    if kind == "drop":
        del parent[key]
    elif kind == "respell":
        parent[key] = (not current if isinstance(current, bool) else kin.get(type(current), value))
    elif kind == "retype" or not isinstance(current, (dict, list)):
        parent[key] = value
    elif isinstance(current, dict):
        current["x" if value is None else str(value)[:8]] = value
    else:
        current.insert(len(str(value)) % (len(current) + 1), value)


@pytest.fixture(scope="module")
def all_paths(valid: dict[str, Any]) -> dict[tuple[Any, ...], list[tuple[Any, ...]]]:
    """Every path of the bundle, by part: each input section, the matrix, and the rest."""
    grouped: dict[tuple[Any, ...], list[tuple[Any, ...]]] = {}
    for path in list(_paths(valid))[1:]:
        part = path[:2] if path[0] == "inputs" else path[:1] if path[0] == "matrix" else ("header",)
        grouped.setdefault(part, []).append(path)
    return grouped


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(data=st.data())
def test_any_change_to_a_bundle_is_read_or_refused_in_one_line(
        data: st.DataObject, valid: dict[str, Any], all_paths: dict[tuple[Any, ...], list[tuple[Any, ...]]],
        catalogue: ScoringCatalogue,
        tmp_path_factory: pytest.TempPathFactory) -> None:
    """Fields dropped, retyped, inserted or respelled anywhere (one or two at once): ``read_bundle`` returns
    or raises the bad-input error, and what it returns ``verify`` recomputes (any difference named,
    exit status 1) without the scoring ever failing on the inputs' shape."""
    document = copy.deepcopy(valid)
    for kind, path, value, kin in data.draw(mutations(all_paths)):
        _mutate(document, kind, path, value, kin)
    path = tmp_path_factory.mktemp("mutated", numbered=True) / "b.json"
    path.write_text(json.dumps(document), encoding="utf-8")
    try:
        read_bundle(path)
    except UsageError as error:
        assert error.exit_status == 2 and "\n" not in str(error) and str(error).startswith(f"{path}: ")
        return
    try:
        result = verify_bundle(path, catalogue)
    except RLCompareError as error:
        assert "\n" not in str(error)
        return
    assert isinstance(result, Verification)
    assert not [problem for problem in result.problems if "inputs are malformed" in problem], result.problems
    assert all(line.isprintable() for line in result.lines())
    if result.recomputed is not None:  # what `score --bundle` prints of it
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            score_cli.render(result.recomputed)
        json.dumps(result.recomputed.to_dict(), default=str)


@settings(max_examples=100, deadline=None)
@given(payload=st.binary(max_size=64) | st.binary(max_size=64).map(lambda raw: gzip.compress(raw, mtime=0)))
def test_any_bytes_are_read_or_refused_in_one_line(payload: bytes, tmp_path_factory: pytest.TempPathFactory) -> None:
    path = tmp_path_factory.mktemp("bytes", numbered=True) / "b.json"
    path.write_bytes(payload)
    _refused(path)
