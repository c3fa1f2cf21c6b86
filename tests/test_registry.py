"""The framework registry: schema, packaged data, sources, filtering, CLI and feature matrix."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tomllib
from datetime import date
from pathlib import Path

import pytest

from rlcompare.errors import UnknownNameError, UsageError
from rlcompare.plugins import BUILTIN_PLUGINS, build_plugin_manager
from rlcompare.registry import (
    FIELDS,
    TAXONOMY_FIELDS,
    FrameworkEntry,
    InvalidFrameworkEntryError,
    builtin_framework_files,
    feature_matrix,
    filter_entries,
    framework_entry_from_dict,
    load_builtin_entries,
    load_framework_file,
    parse_condition,
    registry_frame,
    source_kind,
)

ROOT = Path(__file__).resolve().parents[1]
FRAMEWORKS_DIR = ROOT / "rlcompare" / "frameworks"
WITH_REGISTRY = (*BUILTIN_PLUGINS, "rlcompare.builtin_frameworks")

REQUIRED_IDS = {
    "rllib", "stable-baselines3", "tianshou", "rlpyt", "torchrl", "seed-rl", "fiber", "sample-factory", "srl",
    "pearl", "acme", "envpool", "cleanrl", "di-engine", "elegantrl", "malib", "msrl", "dopamine", "parl", "skrl",
}
#: Named by the project as among the 16 libraries the survey compares.
SURVEY_IDS = {"rllib", "rlpyt", "torchrl", "seed-rl", "fiber", "sample-factory", "srl", "pearl"}


def _minimal_entry(**overrides: object) -> dict[str, object]:
    """A valid entry as a TOML-shaped table: every fact unknown except the repository."""
    source = ["https://example.org/fw"]
    data: dict[str, object] = {
        "schema_version": 1, "id": "examplefw", "name": "Example", "as_of": date(2026, 11, 30),
        **{name: {"value": "unknown", "sources": source} for name in FIELDS},
    }
    data["repository"] = {"value": "https://example.org/fw", "sources": source}
    data.update(overrides)
    return data


def _write_entry(tmp_path: Path, text: str, stem: str = "examplefw") -> Path:
    path = tmp_path / f"{stem}.toml"
    path.write_text(text, encoding="utf-8")
    return path


GOOD_TOML = """\
schema_version = 1
id = "examplefw"
name = "Example"
as_of = 2026-11-30
""" + "".join(
    f'\n[{name}]\nvalue = "unknown"\nsources = ["https://example.org/fw"]\n' for name in FIELDS if name != "repository"
) + '\n[repository]\nvalue = "https://example.org/fw"\nsources = ["https://example.org/fw"]\n'


# -- packaged data ---------------------------------------------------------------------------------


def test_every_packaged_entry_loads_and_the_required_frameworks_are_there() -> None:
    entries = load_builtin_entries()
    ids = [entry.id for entry in entries]
    assert len(entries) >= 20
    assert len(ids) == len(set(ids))
    assert REQUIRED_IDS <= set(ids)
    assert ids == sorted(ids)


def test_file_names_match_ids_and_every_file_ships_as_package_data() -> None:
    files = sorted(path.name for path in FRAMEWORKS_DIR.glob("*.toml"))
    assert [item.name for item in builtin_framework_files()] == sorted(files, key=lambda n: n.removesuffix(".toml"))
    for path in FRAMEWORKS_DIR.glob("*.toml"):
        assert load_framework_file(path).id == path.stem


def test_survey_entries_are_marked() -> None:
    by_id = {entry.id: entry for entry in load_builtin_entries()}
    for framework_id in SURVEY_IDS:
        fact = by_id[framework_id].in_survey
        assert fact.value is True, framework_id
        assert "doi:10.1145/3703453" in fact.sources
    for framework_id in set(by_id) - SURVEY_IDS:
        assert by_id[framework_id].in_survey.value in (False, "unknown"), framework_id


def test_pearl_entry_documents_which_pearl_the_survey_means() -> None:
    by_id = {entry.id: entry for entry in load_builtin_entries()}
    assert "arXiv:2201.09568" in by_id["pearl"].in_survey.sources
    assert "pearl-meta" in by_id["pearl"].notes
    assert by_id["pearl-meta"].in_survey.value != True  # noqa: E712 - a tri-state, not a truth test


def test_every_source_is_a_url_doi_or_arxiv_id_and_every_as_of_date_parses() -> None:
    # Read the raw TOML, independently of the schema, so that this check cannot be bypassed by it.
    for path in sorted(FRAMEWORKS_DIR.glob("*.toml")):
        data = tomllib.loads(path.read_text(encoding="utf-8"))
        default_as_of = data.get("as_of")
        for name in FIELDS:
            fact = data[name]
            assert fact["sources"], f"{path.name}: {name} has no source"
            for source in fact["sources"]:
                assert source_kind(source) is not None, f"{path.name}: {name}: malformed source {source!r}"
            as_of = fact.get("as_of", default_as_of)
            if isinstance(as_of, str):
                as_of = date.fromisoformat(as_of)
            assert isinstance(as_of, date), f"{path.name}: {name}: as_of {as_of!r} is not a date"
            assert date(2024, 1, 1) <= as_of <= date(2026, 12, 31), f"{path.name}: {name}: implausible as_of"


@pytest.mark.parametrize(("text", "kind"), [
    ("https://github.com/ray-project/ray", "url"),
    ("http://example.org/x?y=1", "url"),
    ("doi:10.1145/3703453", "doi"),
    ("arXiv:2411.05614", "arxiv"),
    ("arXiv:1909.01500v2", "arxiv"),
    ("arXiv:cs/0112017", "arxiv"),
    ("github.com/ray-project/ray", None),
    ("ftp://example.org/x", None),
    ("https://localhost/x", None),
    ("https://exa mple.org", None),
    ("10.1145/3703453", None),
    ("arXiv:241105614", None),
    ("the README", None),
])
def test_source_kinds(text: str, kind: str | None) -> None:
    assert source_kind(text) == kind


def test_algorithm_names_are_canonical_and_sb3_covers_the_workload_algorithms() -> None:
    from rlcompare.workload import ALGORITHMS

    for entry in load_builtin_entries():
        if not entry.algorithms.is_unknown:
            assert all(name == name.upper() for name in entry.algorithms.value), entry.id
    sb3 = {entry.id: entry for entry in load_builtin_entries()}["stable-baselines3"]
    assert set(ALGORITHMS) <= set(sb3.algorithms.value)


def test_every_adapters_framework_is_in_the_registry() -> None:
    plugins = build_plugin_manager(builtins=WITH_REGISTRY, autoload=False)
    # Other built-ins' import problems are theirs to report; the registry's own plugin must be clean.
    assert not [error for error in plugins.errors if error.plugin == "rlcompare.builtin_frameworks"]
    assert plugins.adapters, "no built-in adapter registered"
    for adapter_id, adapter_class in plugins.adapters.items():
        assert adapter_class.framework in plugins.frameworks, f"adapter {adapter_id!r}: {adapter_class.framework!r}"


# -- schema ----------------------------------------------------------------------------------------


def test_a_valid_entry_from_a_file(tmp_path: Path) -> None:
    entry = load_framework_file(_write_entry(tmp_path, GOOD_TOML))
    assert entry.id == "examplefw"
    assert entry.licence.is_unknown
    assert entry.repository.as_of == date(2026, 11, 30)  # inherited from the file-level as_of


@pytest.mark.parametrize(("change", "field", "expected"), [
    ('[backend]\nvalue = "unknown"', '[backend]\nvalue = ["pytorh"]', "did you mean 'pytorch'"),
    ('[multi_agent]\nvalue = "unknown"', '[multi_agent]\nvalue = "yes"', "expected true, false or 'unknown'"),
    ('[first_release_year]\nvalue = "unknown"', "[first_release_year]\nvalue = 19", "expected a year"),
    ('[algorithms]\nvalue = "unknown"', '[algorithms]\nvalue = ["ppo"]', "does not match"),
    ('[algorithms]\nvalue = "unknown"', '[algorithms]\nvalue = ["PPO", "PPO"]', "listed twice"),
    ('[licence]\nvalue = "unknown"', '[licence]\nvalue = "MIT licence, roughly"', "SPDX"),
    ('[docs]\nvalue = "unknown"\nsources = ["https://example.org/fw"]',
     '[docs]\nvalue = "unknown"\nsources = ["see the README"]', "is not a URL"),
    ('[docs]\nvalue = "unknown"\nsources = ["https://example.org/fw"]', "[docs]\nvalue = \"unknown\"\nsources = []",
     "at least 1 item"),
    ('[ci]\nvalue = "unknown"', '[ci]\nvalue = "unknown"\nas_of = "last week"', "valid date"),
    ('[ci]\nvalue = "unknown"', '[ci]\nvalue = true\ncomplete = true', "list values only"),
    ('[ci]\nvalue = "unknown"', '[ci]\nvalue = true\nsource = ["https://example.org"]', "did you mean 'sources'"),
])
def test_a_malformed_entry_is_rejected_naming_its_file_and_field(
    tmp_path: Path, change: str, field: str, expected: str
) -> None:
    assert change in GOOD_TOML
    path = _write_entry(tmp_path, GOOD_TOML.replace(change, field, 1))
    with pytest.raises(InvalidFrameworkEntryError) as caught:
        load_framework_file(path)
    message = str(caught.value)
    assert message.startswith(f"{path}: ")
    assert f"'{field.splitlines()[0].strip('[]')}" in message
    assert expected in message
    assert "\n" not in message


@pytest.mark.parametrize(("data", "expected"), [
    (_minimal_entry(repository={"value": "unknown", "sources": ["https://example.org"]}),
     "field 'repository.value': must be known"),
    (_minimal_entry(licence="MIT"), "field 'licence': expected a table with value, sources and as_of"),
    ({k: v for k, v in _minimal_entry().items() if k != "tests"}, "field 'tests' is required"),
    (_minimal_entry(licence={"value": "MIT"}), "field 'licence.sources' is required"),
    (_minimal_entry(backends={"value": ["jax"], "sources": ["https://example.org"]}),
     "field 'backends' is not a known setting; did you mean 'backend'?"),
    (_minimal_entry(schema_version=2), "field 'schema_version': unsupported version 2"),
    (_minimal_entry(id="Example FW"), "field 'id'"),
    (_minimal_entry(architecture={"value": ["centralised"], "sources": ["https://example.org"]}),
     "did you mean 'centralized'?"),
])
def test_schema_errors_are_one_line_and_name_the_field(data: dict[str, object], expected: str) -> None:
    with pytest.raises(InvalidFrameworkEntryError) as caught:
        framework_entry_from_dict(data, "somewhere.toml")
    assert str(caught.value).startswith("somewhere.toml: ")
    assert expected in str(caught.value)


def test_file_name_must_match_the_id(tmp_path: Path) -> None:
    path = _write_entry(tmp_path, GOOD_TOML, stem="otherfw")
    with pytest.raises(InvalidFrameworkEntryError, match=r"field 'id': 'examplefw' does not match the file name"):
        load_framework_file(path)


def test_invalid_toml_and_missing_file_are_reported(tmp_path: Path) -> None:
    with pytest.raises(InvalidFrameworkEntryError, match="not valid TOML"):
        load_framework_file(_write_entry(tmp_path, "id = \n"))
    with pytest.raises(InvalidFrameworkEntryError, match="cannot read"):
        load_framework_file(tmp_path / "nothere.toml")


def test_unknown_is_a_value_and_complete_lists_are_explicit() -> None:
    entry = framework_entry_from_dict(_minimal_entry(
        backend={"value": ["jax"], "sources": ["arXiv:2411.05614"], "complete": True},
        synchronization={"value": [], "sources": ["doi:10.1145/3703453"]},
    ), "inline")
    assert entry.backend.complete and entry.backend.value == ("jax",)
    assert entry.synchronization.value == ()
    assert entry.multi_agent.is_unknown
    assert str(entry.backend) == "jax"
    with pytest.raises(InvalidFrameworkEntryError, match="known lists only"):
        framework_entry_from_dict(_minimal_entry(
            backend={"value": "unknown", "sources": ["arXiv:2411.05614"], "complete": True}), "inline")


# -- plugins ---------------------------------------------------------------------------------------


def test_a_third_party_plugin_brings_its_own_entry(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    table = _minimal_entry(id="thirdfw", name="Third")
    table["as_of"] = "2026-11-30"
    (tmp_path / "thirdfw_plugin.py").write_text(
        "import datetime\nfrom rlcompare import hookimpl\nfrom rlcompare.registry import framework_entry_from_dict\n\n"
        f"TABLE = {table!r}\n\n"
        "@hookimpl\ndef rlcompare_register_frameworks(register):\n"
        "    register.add_framework(framework_entry_from_dict(TABLE, 'thirdfw_plugin', datetime.date(2026, 11, 30)))\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    plugins = build_plugin_manager(builtins=(*WITH_REGISTRY, "thirdfw_plugin"), autoload=False)
    assert not [error for error in plugins.errors if error.plugin in ("thirdfw_plugin", "rlcompare.builtin_frameworks")]
    assert isinstance(plugins.frameworks["thirdfw"], FrameworkEntry)
    assert plugins.plugin_origin("framework", "thirdfw") == "thirdfw_plugin"
    assert plugins.plugin_origin("framework", "rllib") == "rlcompare.builtin_frameworks"


def test_a_duplicate_framework_id_is_reported(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "dupfw_plugin.py").write_text(
        "from rlcompare import hookimpl\nfrom rlcompare.registry import load_builtin_entries\n\n"
        "@hookimpl\ndef rlcompare_register_frameworks(register):\n"
        "    register.add_framework(load_builtin_entries()[0])\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    plugins = build_plugin_manager(builtins=(*WITH_REGISTRY, "dupfw_plugin"), autoload=False)
    assert any("already registered by 'rlcompare.builtin_frameworks'" in str(error) for error in plugins.errors)


# -- filtering -------------------------------------------------------------------------------------


def test_where_filters_lists_booleans_and_unknowns() -> None:
    entries = load_builtin_entries()
    asynchronous_pytorch = filter_entries(entries, ["synchronization=asynchronous", "backend=pytorch"])
    assert asynchronous_pytorch
    for entry in asynchronous_pytorch:
        assert "asynchronous" in entry.synchronization.value and "pytorch" in entry.backend.value
    assert {e.id for e in filter_entries(entries, ["in_survey=true"])} == SURVEY_IDS
    assert {e.id for e in filter_entries(entries, ["id=rllib,seed-rl"])} == {"rllib", "seed-rl"}
    assert {e.id for e in filter_entries(entries, ["backend=JAX"])} >= {"acme", "dopamine"}
    assert "pearl" in {e.id for e in filter_entries(entries, ["licence=unknown"])}
    assert {e.id for e in filter_entries(entries, ["license=MIT"])} >= {"stable-baselines3", "tianshou"}
    assert filter_entries(entries, ["algorithms=ppo"])


@pytest.mark.parametrize(("text", "error", "expected"), [
    ("synchronisation=asynchronous", UnknownNameError, "unknown --where key 'synchronisation'; did you mean "
                                                       "'synchronization'?"),
    ("synchronization=async", UsageError, "did you mean 'asynchronous'?"),
    ("multi_agent=maybe", UsageError, "takes true, false or unknown"),
    ("first_release_year=recent", UsageError, "takes a year"),
    ("backend", UsageError, "expected KEY=VALUE"),
    ("backend=", UsageError, "expected a value"),
])
def test_bad_where_expressions_are_one_line_usage_errors(text: str, error: type[Exception], expected: str) -> None:
    with pytest.raises(error) as caught:
        parse_condition(text)
    assert expected in str(caught.value)
    assert getattr(caught.value, "exit_status", None) == 2


# -- command line ----------------------------------------------------------------------------------


@pytest.fixture
def cli() -> argparse.ArgumentParser:
    from rlcompare.registry_cli import add_commands

    parser = argparse.ArgumentParser(prog="rlcompare")
    add_commands(parser.add_subparsers(dest="command"))
    return parser


def _run(cli: argparse.ArgumentParser, argv: list[str]) -> int:
    from rlcompare.registry_cli import COMMANDS

    args = cli.parse_args(argv)
    return COMMANDS[args.command](args)


def test_frameworks_json_lists_every_entry_with_sources_for_each_taxonomy_field(
    cli: argparse.ArgumentParser, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _run(cli, ["frameworks", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert isinstance(data, list) and len(data) >= 20
    for item in data:
        assert item["id"] and item["sources"]
        for name in (*TAXONOMY_FIELDS, *FIELDS):
            assert item["sources"][name], f"{item['id']}: no sources for {name}"
            date.fromisoformat(item["as_of"][name])


def test_frameworks_where_filters_the_json(cli: argparse.ArgumentParser, capsys: pytest.CaptureFixture[str]) -> None:
    assert _run(cli, ["frameworks", "--json", "--where", "synchronization=asynchronous",
                      "--where", "backend=pytorch"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data and all("asynchronous" in d["synchronization"] and "pytorch" in d["backend"] for d in data)


def test_frameworks_table_and_show(cli: argparse.ArgumentParser, capsys: pytest.CaptureFixture[str]) -> None:
    assert _run(cli, ["frameworks", "--where", "in_survey=true"]) == 0
    table = capsys.readouterr().out
    assert "seed-rl" in table and "stable-baselines3" not in table
    assert _run(cli, ["show", "framework", "seed-rl"]) == 0
    shown = capsys.readouterr().out
    assert "SEED RL (seed-rl)" in shown
    assert "source: arXiv:1910.06591" in shown
    assert "as of 2026-11-30" in shown
    assert _run(cli, ["show", "framework", "rllib", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["id"] == "rllib"


def test_show_unknown_framework_says_did_you_mean(cli: argparse.ArgumentParser) -> None:
    with pytest.raises(UnknownNameError, match="unknown framework 'rlib'; did you mean 'rllib'"):
        _run(cli, ["show", "framework", "rlib"])


def test_where_without_equals_is_an_argparse_error(
    cli: argparse.ArgumentParser, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as caught:
        cli.parse_args(["frameworks", "--where", "backend"])
    assert caught.value.code == 2
    assert "expected KEY=VALUE" in capsys.readouterr().err


def test_listing_frameworks_imports_no_rl_library_nor_pandas() -> None:
    code = (
        "import argparse, sys\nfrom rlcompare.registry_cli import add_commands, COMMANDS\n"
        "p = argparse.ArgumentParser(); add_commands(p.add_subparsers(dest='command'))\n"
        "for argv in (['frameworks', '--json'], ['show', 'framework', 'rllib']):\n"
        "    a = p.parse_args(argv); assert COMMANDS[a.command](a) == 0\n"
        "heavy = sorted(m for m in ('torch', 'ray', 'stable_baselines3', 'tianshou', 'torchrl', 'skrl', 'gymnasium',"
        " 'jax', 'tensorflow', 'pandas') if m in sys.modules)\n"
        "print('HEAVY', heavy, file=sys.stderr)\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert result.returncode == 0, result.stderr
    assert "HEAVY []" in result.stderr


# -- tables ----------------------------------------------------------------------------------------


def test_feature_matrix_is_a_nullable_boolean_table() -> None:
    matrix = feature_matrix()
    assert list(matrix.index) == [entry.id for entry in load_builtin_entries()]
    assert set(matrix.columns.get_level_values("dimension")) == {*TAXONOMY_FIELDS, "features"}
    assert all(str(dtype) == "boolean" for dtype in matrix.dtypes)
    assert bool(matrix.loc["seed-rl", ("synchronization", "asynchronous")]) is True
    # A complete list makes absence a fact; an incomplete one leaves it unknown (<NA>).
    assert bool(matrix.loc["stable-baselines3", ("architecture", "centralized")]) is False
    assert matrix.loc["acme", ("architecture", "gossip")] is matrix.loc["acme", ("architecture", "gossip")]
    assert str(matrix.loc["acme", ("architecture", "gossip")]) == "<NA>"
    assert str(matrix.loc["pearl", ("synchronization", "synchronous")]) == "<NA>"
    assert bool(matrix.loc["pearl", ("features", "evolutionary")]) is True
    only_sync = feature_matrix(dimensions=["synchronization"], include_features=False)
    assert set(only_sync.columns.get_level_values("dimension")) == {"synchronization"}
    with pytest.raises(UnknownNameError):
        feature_matrix(dimensions=["synchronisation"])


def test_registry_frame_has_one_row_per_framework() -> None:
    frame = registry_frame()
    assert len(frame) == len(load_builtin_entries())
    assert frame.loc["seed-rl", "licence"] == "Apache-2.0"
    assert frame.loc["rllib", "first_release_year"] == 2017


def test_a_broken_packaged_file_is_reported_after_the_valid_ones_register(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import rlcompare.builtin_frameworks as builtin

    good = _write_entry(tmp_path, GOOD_TOML)
    bad = _write_entry(tmp_path, GOOD_TOML, stem="brokenfw")  # its id does not match the file name
    monkeypatch.setattr(builtin, "builtin_framework_files", lambda: [bad, good])
    plugins = build_plugin_manager(builtins=("rlcompare.builtin_frameworks",), autoload=False)
    assert list(plugins.frameworks) == ["examplefw"]
    [error] = plugins.errors
    assert error.plugin == "rlcompare.builtin_frameworks"
    assert f"{bad}: field 'id'" in str(error)


def test_registered_tables_are_validated_and_bad_ones_reported() -> None:
    from rlcompare.registry import entries_from_registered

    good = _minimal_entry(id="tablefw")
    entries, problems = entries_from_registered({
        "tablefw": good, "rllib": load_builtin_entries()[0], "badfw": {"id": "badfw"},
    })
    assert set(entries) == {"tablefw", "rllib"}
    assert len(problems) == 1 and problems[0].startswith("framework 'badfw': ")
