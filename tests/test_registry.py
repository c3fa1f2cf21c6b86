"""The framework registry: schema v2, packaged data and its evidence, filtering, CLI and tables."""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tomllib
from datetime import date
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import pytest

from rlcompare.errors import PluginError, UnknownNameError, UsageError
from rlcompare.harness.protocol import Origin
from rlcompare.plugins.manager import BUILTIN_PLUGINS, build_plugin_manager
from rlcompare.plugins.register import Register
from rlcompare.registry.entries import (
    FIELDS,
    REQUIRED_FIELDS,
    TAXONOMY_FIELDS,
    FrameworkEntry,
    InvalidFrameworkEntryError,
    framework_entry_from_dict,
    unpublished_entry,
)
from rlcompare.registry.facts import EVIDENCE_SHAPES, MAX_EXCERPT_CHARS, UNKNOWN, Evidence, Release
from rlcompare.registry.fields import COMMON_FIELDS, CONTROL_FIELDS, LLM_FIELDS
from rlcompare.registry.frames import feature_matrix, registry_frame
from rlcompare.registry.loading import builtin_framework_files, load_builtin_entries, load_framework_file
from rlcompare.registry.queries import filter_entries, parse_condition
from rlcompare.registry.vocabulary import SURVEYS, WEIGHT_SYNC

ROOT = Path(__file__).resolve().parents[1]
FRAMEWORKS_DIR = ROOT / "rlcompare" / "registry" / "frameworks"
WITH_REGISTRY = (*BUILTIN_PLUGINS, "rlcompare.builtins.frameworks")
TODAY = date.today()

#: The seed survey's libraries and the other classic frameworks the registry started with.
CONTROL_IDS = {
    "rllib", "stable-baselines3", "tianshou", "rlpyt", "torchrl", "seed-rl", "fiber", "sample-factory", "srl",
    "pearl", "acme", "envpool", "cleanrl", "di-engine", "elegantrl", "malib", "msrl", "dopamine", "parl", "skrl",
    "pearl-meta",
}
#: The 16 libraries of hf-2026's table ("2. Libraries Surveyed").
HF_2026_IDS = {
    "areal", "art", "atropos", "miles", "nemo-rl", "oat", "open-instruct", "pipelinerl", "prime-rl", "roll",
    "skyrl", "slime", "torchforge", "tunix", "verl", "verifiers",
}
#: Libraries hf-2026 names outside its table: TRL (the authors' own) and MiniMax's Forge (no public code).
HF_2026_NAMED_IDS = {"trl", "minimax-forge"}
#: The 10 libraries of anyscale-2025's comparison.
ANYSCALE_2025_IDS = {"trl", "verl", "openrlhf", "ragen", "areal", "verifiers", "roll", "nemo-rl", "skyrl", "slime"}
COMPARISON_IDS = HF_2026_IDS | ANYSCALE_2025_IDS
#: Facts the issue requires, for every comparison library, from a primary source.
PRIMARY_FACTS = ("licence", "repository", "first_release_year", "orchestration")

REPO_EVIDENCE = {"repo": "example/fw", "commit": "0123456789abcdef0123456789abcdef01234567", "path": "LICENSE",
                 "excerpt": "MIT License"}
WEB_EVIDENCE = {"url": "https://example.org/fw", "accessed": date(2026, 11, 30), "excerpt": "Example framework"}


SEARCHED = 'searched = "README and LICENSE at the commit: nothing."'


def _unknown(searched: str = "README and LICENSE at the commit: nothing.") -> dict[str, Any]:
    return {"value": UNKNOWN, "searched": searched}


def _minimal_entry(domain: str = "control", **overrides: Any) -> dict[str, Any]:
    """A valid entry as a TOML-shaped table: every required fact unknown except the repository."""
    data: dict[str, Any] = {
        "schema_version": 2, "id": "examplefw", "name": "Example", "domain": domain, "as_of": date(2026, 11, 30),
        **{name: _unknown() for name in REQUIRED_FIELDS[domain]},
    }
    data["repository"] = {"value": "https://example.org/fw", "evidence": [WEB_EVIDENCE]}
    data.update(overrides)
    return data


def _toml_fact(name: str, fact: dict[str, Any]) -> str:
    lines = [f"[{name}]"]
    for key, value in fact.items():
        if key != "evidence":
            lines.append(f"{key} = {json.dumps(value)}")
    for item in fact.get("evidence", []):
        lines.append(f"[[{name}.evidence]]")
        lines += [f"{k} = {v.isoformat() if isinstance(v, date) else json.dumps(v)}" for k, v in item.items()]
    return "\n".join(lines) + "\n"


GOOD_TOML = (
    'schema_version = 2\nid = "examplefw"\nname = "Example"\ndomain = "control"\nas_of = 2026-11-30\n\n'
    + "\n".join(_toml_fact(name, fact) for name, fact in _minimal_entry().items() if isinstance(fact, dict))
)


def _write_entry(tmp_path: Path, text: str, stem: str = "examplefw") -> Path:
    path = tmp_path / f"{stem}.toml"
    path.write_text(text, encoding="utf-8")
    return path


def _by_id() -> dict[str, FrameworkEntry]:
    return {entry.id: entry for entry in load_builtin_entries()}


def _own_repo(entry: FrameworkEntry) -> str:
    """``owner/name`` of the entry's repository URL, case-folded."""
    return urlparse(str(entry.value("repository"))).path.strip("/").removesuffix(".git").casefold()


# -- packaged data ---------------------------------------------------------------------------------


def test_every_packaged_entry_loads_and_both_comparisons_libraries_are_there() -> None:
    entries = load_builtin_entries()
    ids = [entry.id for entry in entries]
    assert len(entries) >= 40
    assert len(ids) == len(set(ids))
    assert ids == sorted(ids)
    assert CONTROL_IDS <= set(ids)
    assert COMPARISON_IDS <= set(ids), sorted(COMPARISON_IDS - set(ids))
    by_id = _by_id()
    assert {framework_id for framework_id in CONTROL_IDS if by_id[framework_id].domain != "control"} == set()
    assert {framework_id for framework_id in COMPARISON_IDS if by_id[framework_id].domain != "llm"} == set()


def test_file_names_match_ids_and_every_file_ships_as_package_data() -> None:
    files = sorted(path.name for path in FRAMEWORKS_DIR.glob("*.toml"))
    assert [item.name for item in builtin_framework_files()] == sorted(files, key=lambda n: n.removesuffix(".toml"))
    for path in FRAMEWORKS_DIR.glob("*.toml"):
        assert load_framework_file(path).id == path.stem


def _raw_entries() -> list[tuple[str, dict[str, Any]]]:
    return [(path.name, tomllib.loads(path.read_text(encoding="utf-8"))) for path in sorted(FRAMEWORKS_DIR.glob("*.toml"))]


def test_every_fact_has_well_formed_evidence_or_says_what_was_searched() -> None:
    # Read the raw TOML, independently of the schema, so that this check cannot be bypassed by it.
    shape_keys = {shape: set(keys) for shape, keys in EVIDENCE_SHAPES.items()}
    for file_name, data in _raw_entries():
        assert data["schema_version"] == 2, file_name
        facts = {name: fact for name, fact in data.items() if name in FIELDS}
        assert set(REQUIRED_FIELDS[data["domain"]]) <= set(facts), file_name
        for name, fact in facts.items():
            where = f"{file_name}: {name}"
            if fact["value"] == UNKNOWN:
                assert isinstance(fact.get("searched"), str) and fact["searched"].strip(), f"{where}: no 'searched'"
            elif not (name == "surveys" and fact["value"] == []):
                assert fact.get("evidence"), f"{where}: no evidence"
            for item in fact.get("evidence", []):
                excerpt = item.get("excerpt")
                assert isinstance(excerpt, str) and excerpt.strip(), f"{where}: empty excerpt"
                assert len(excerpt) <= MAX_EXCERPT_CHARS, f"{where}: excerpt of {len(excerpt)} characters"
                keys = set(item) - {"excerpt"}
                shapes = [shape for shape, allowed in shape_keys.items() if keys & allowed]
                assert len(shapes) == 1 and keys <= shape_keys[shapes[0]], f"{where}: evidence keys {sorted(keys)}"
                if shapes[0] == "repository":
                    assert keys == {"repo", "commit", "path"}, where
                    assert re.fullmatch(r"[0-9a-f]{40}", item["commit"]), f"{where}: commit {item['commit']!r}"
                    assert re.fullmatch(r"[\w.-]+/[\w.-]+", item["repo"]), f"{where}: repo {item['repo']!r}"
                elif shapes[0] == "web":
                    assert keys == {"url", "accessed"}, where
                    assert urlparse(item["url"]).scheme in ("http", "https"), where
                else:
                    assert "locator" in keys and len(keys & {"doi", "arxiv"}) == 1, where


def test_no_date_lies_in_the_future_and_as_of_dates_are_recent() -> None:
    for file_name, data in _raw_entries():
        assert isinstance(data["as_of"], date) and date(2024, 1, 1) <= data["as_of"] <= TODAY, file_name
        for name, fact in ((n, f) for n, f in data.items() if n in FIELDS):
            as_of = fact.get("as_of", data["as_of"])
            assert isinstance(as_of, date) and date(2024, 1, 1) <= as_of <= TODAY, f"{file_name}: {name}"
            for item in fact.get("evidence", []):
                if "accessed" in item:
                    assert isinstance(item["accessed"], date) and item["accessed"] <= TODAY, f"{file_name}: {name}"
        release = data["latest_release"]["value"]
        if isinstance(release, dict):
            assert isinstance(release["date"], date) and release["date"] <= TODAY, file_name
        year = data["first_release_year"]["value"]
        if isinstance(year, int):
            assert 1990 <= year <= TODAY.year, file_name


def test_comparisons_libraries_list_their_surveys_with_an_excerpt_from_them() -> None:
    entries = load_builtin_entries()
    hf = {entry.id for entry in filter_entries(entries, ["survey=hf-2026"])}
    anyscale = {entry.id for entry in filter_entries(entries, ["survey=anyscale-2025"])}
    assert hf == HF_2026_IDS | HF_2026_NAMED_IDS
    assert ANYSCALE_2025_IDS <= anyscale
    by_id = _by_id()
    for survey_id, ids in (("hf-2026", hf), ("anyscale-2025", anyscale)):
        survey = SURVEYS[survey_id]
        for framework_id in ids:
            items = by_id[framework_id].surveys.evidence
            assert any(
                (item.repo, item.path) in survey.files or str(item.url).startswith(survey.urls) for item in items
            ), f"{framework_id}: no excerpt read from {survey_id}"


def test_comparisons_libraries_have_primary_sources_for_licence_repository_release_year_and_orchestration() -> None:
    by_id = _by_id()
    for framework_id in sorted(COMPARISON_IDS):
        entry = by_id[framework_id]
        own = _own_repo(entry)
        for name in PRIMARY_FACTS:
            fact = entry.fact(name)
            assert fact is not None and not fact.is_unknown, f"{framework_id}: {name} is not known"
            primary = [item for item in fact.evidence
                       if item.kind == "paper" or (item.kind == "repository" and str(item.repo).casefold() == own)]
            assert primary, f"{framework_id}: {name} has no evidence from its repository ({own}) or paper"


def test_algorithm_names_are_canonical_and_sb3_covers_the_workload_algorithms() -> None:
    from rlcompare.spec.workload import ALGORITHMS

    for entry in load_builtin_entries():
        if not entry.algorithms.is_unknown:
            assert all(name == name.upper() for name in entry.algorithms.value), entry.id
    sb3 = _by_id()["stable-baselines3"]
    assert set(ALGORITHMS) <= set(sb3.algorithms.value)


def test_corrections_of_the_re_verification_hold() -> None:
    by_id = _by_id()
    assert not {"A3C", "COMA"} & set(by_id["torchrl"].algorithms.value)
    assert "CROSSQ" not in by_id["skrl"].algorithms.value
    assert not {"dm_env", "isaacgym", "brax"} & set(by_id["skrl"].env_apis.value)
    assert all(item.repo == "alex-petrenko/sample-factory" for item in by_id["sample-factory"].backend.evidence)
    assert [item.path for item in by_id["cleanrl"].offline_rl.evidence] == ["docs/index.md"]
    assert by_id["stable-baselines3"].first_release_year.value == 2020
    assert by_id["torchrl"].first_release_year.value == 2022
    assert by_id["skrl"].first_release_year.value == 2022


def test_latest_release_is_read_the_way_the_development_criteria_read_it() -> None:
    from rlcompare_criteria.adapter_lookup import registry_value

    sb3 = _by_id()["stable-baselines3"]
    value, reason = registry_value(sb3, ("latest_release",))
    assert reason is None and isinstance(value, Release)
    assert isinstance(sb3.latest_release.value.date, date)
    assert value.date <= TODAY and value.version


def test_every_adapters_framework_is_in_the_registry() -> None:
    plugins = build_plugin_manager(builtins=WITH_REGISTRY, autoload=False)
    # Other built-ins' import problems are theirs to report; the registry's own plugin must be clean.
    assert not [error for error in plugins.errors if error.plugin == "rlcompare.builtins.frameworks"]
    assert plugins.adapters, "no built-in adapter registered"
    for adapter_id, adapter_class in plugins.adapters.items():
        assert adapter_class.framework in plugins.frameworks, f"adapter {adapter_id!r}: {adapter_class.framework!r}"


# -- schema ----------------------------------------------------------------------------------------


def test_a_valid_entry_from_a_file(tmp_path: Path) -> None:
    entry = load_framework_file(_write_entry(tmp_path, GOOD_TOML))
    assert entry.id == "examplefw" and entry.domain == "control"
    assert entry.licence.is_unknown and entry.licence.searched
    assert entry.repository.as_of == date(2026, 11, 30)  # inherited from the file-level as_of
    assert entry.weight_sync is None and entry.value("weight_sync") is None  # another domain's axis
    assert entry.repository.sources == ("https://example.org/fw",)


@pytest.mark.parametrize(("change", "field", "expected"), [
    ('[backend]\nvalue = "unknown"', '[backend]\nvalue = ["pytorh"]', "did you mean 'pytorch'"),
    ('[multi_agent]\nvalue = "unknown"', '[multi_agent]\nvalue = "yes"', "expected true, false or 'unknown'"),
    ('[first_release_year]\nvalue = "unknown"', "[first_release_year]\nvalue = 19", "expected a year"),
    ('[algorithms]\nvalue = "unknown"', '[algorithms]\nvalue = ["ppo"]', "does not match"),
    ('[licence]\nvalue = "unknown"', '[licence]\nvalue = "MIT licence, roughly"', "SPDX"),
    ('[ci]\nvalue = "unknown"\nsearched', '[ci]\nvalue = true\nsearched', "needs at least one item with an excerpt"),
    (f'[ci]\nvalue = "unknown"\n{SEARCHED}', '[ci]\nvalue = "unknown"',
     "'ci.searched' is required"),
    ('[ci]\nvalue = "unknown"', '[ci]\nvalue = "unknown"\nas_of = "last week"', "valid date"),
    ('[ci]\nvalue = "unknown"', '[ci]\nvalue = "unknown"\nas_of = 2999-01-01', "in the future"),
    ('[ci]\nvalue = "unknown"', '[ci]\nvalue = "unknown"\nevidences = []', "did you mean 'evidence'"),
    ('[[repository.evidence]]\nurl', '[[repository.evidence]]\nrepo = "a/b"\nurl', "exactly one of"),
    ('[[repository.evidence]]\nurl = "https://example.org/fw"\naccessed = 2026-11-30',
     '[[repository.evidence]]\nrepo = "example/fw"\ncommit = "abc123"\npath = "README.md"', "40 lower-case hex"),
    ('[[repository.evidence]]\nurl = "https://example.org/fw"\naccessed = 2026-11-30',
     '[[repository.evidence]]\nrepo = "example/fw"\npath = "README.md"', "needs 'commit'"),
    ('[[repository.evidence]]\nurl = "https://example.org/fw"\naccessed = 2026-11-30',
     '[[repository.evidence]]\narxiv = "2411.05614"', "needs 'locator'"),
    ('[[repository.evidence]]\nurl = "https://example.org/fw"\naccessed = 2026-11-30',
     '[[repository.evidence]]\ndoi = "doi:10.1145/3703453"\nlocator = "Table 3"', "is not a DOI"),
    ('excerpt = "Example framework"', 'excerpt = "  "', "non-empty verbatim excerpt"),
    ('excerpt = "Example framework"', f'excerpt = "{"x" * (MAX_EXCERPT_CHARS + 1)}"', "quote at most 300"),
    ('[latest_release]\nvalue = "unknown"', '[latest_release]\nvalue = { version = "1.0" }', "field 'latest_release.value'"),
    (f'[surveys]\nvalue = "unknown"\n{SEARCHED}', '[surveys]\nvalue = ["hf-2026"]\n[[surveys.evidence]]\n'
     'url = "https://example.org/x"\naccessed = 2026-11-30\nexcerpt = "Example"', "no excerpt from hf-2026"),
    ('[surveys]\nvalue = "unknown"', '[surveys]\nvalue = ["hf-2025"]', "did you mean 'hf-2026'"),
    ('[surveys]\nvalue = "unknown"', "[surveys]\nvalue = []", "an empty survey list needs a note"),
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
    assert expected in message
    assert "\n" not in message


def test_every_missing_required_field_is_named_in_one_line(tmp_path: Path) -> None:
    kept = {"repository"}
    text = GOOD_TOML.split("\n[")[0] + "\n" + _toml_fact("repository", _minimal_entry()["repository"])
    with pytest.raises(InvalidFrameworkEntryError) as caught:
        load_framework_file(_write_entry(tmp_path, text))
    message = str(caught.value)
    missing = [name for name in REQUIRED_FIELDS["control"] if name not in kept]
    assert f"{len(missing)} required fields missing for a control entry" in message
    assert all(f"'{name}'" in message for name in missing)
    assert "\n" not in message


def test_the_domain_decides_which_axes_are_required() -> None:
    assert set(REQUIRED_FIELDS["control"]) == {*COMMON_FIELDS, *CONTROL_FIELDS}
    assert set(REQUIRED_FIELDS["llm"]) == {*COMMON_FIELDS, *LLM_FIELDS}
    llm = framework_entry_from_dict(_minimal_entry("llm"), "inline")
    assert llm.architecture is None and llm.weight_sync.is_unknown
    assert llm.axes[:2] == ("orchestration", "placement")
    without = {key: value for key, value in _minimal_entry("llm").items() if key not in ("weight_sync", "placement")}
    with pytest.raises(InvalidFrameworkEntryError, match="2 required fields missing for a llm entry: 'weight_sync', "
                                                         "'placement'"):
        framework_entry_from_dict(without, "inline")
    # an llm entry may state control axes too, validated by the same vocabulary
    both = _minimal_entry("llm", architecture={"value": ["centralised"], "evidence": [WEB_EVIDENCE]})
    with pytest.raises(InvalidFrameworkEntryError, match="did you mean 'centralized'"):
        framework_entry_from_dict(both, "inline")


@pytest.mark.parametrize(("data", "expected"), [
    (_minimal_entry(repository=_unknown()), "field 'repository.value': must be known"),
    (_minimal_entry(licence="MIT"), "field 'licence': expected a table"),
    (_minimal_entry(licence={"value": "MIT"}), "field 'licence.evidence' needs at least one item"),
    (_minimal_entry(backends={"value": ["jax"], "evidence": [WEB_EVIDENCE]}),
     "field 'backends' is not a known setting; did you mean 'backend'?"),
    (_minimal_entry(schema_version=1), "field 'schema_version': unsupported version 1"),
    (_minimal_entry(id="Example FW"), "field 'id'"),
    ({**_minimal_entry(), "domain": "robotics"}, "field 'domain'"),
    (_minimal_entry("llm", weight_sync={"value": ["nccl"], "evidence": [WEB_EVIDENCE]}),
     "did you mean 'nccl-broadcast'?"),
    (_minimal_entry(licence={"value": "MIT", "evidence": [{**REPO_EVIDENCE, "url": "https://example.org"}]}),
     "field 'licence.evidence.0': an evidence item is exactly one of"),
])
def test_schema_errors_are_one_line_and_name_the_field(data: dict[str, Any], expected: str) -> None:
    with pytest.raises(InvalidFrameworkEntryError) as caught:
        framework_entry_from_dict(data, "somewhere.toml")
    assert str(caught.value).startswith("somewhere.toml: ")
    assert expected in str(caught.value)
    assert "\n" not in str(caught.value)


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
        backend={"value": ["jax"], "evidence": [REPO_EVIDENCE], "complete": True},
        synchronization={"value": [], "evidence": [WEB_EVIDENCE], "complete": True},
        surveys={"value": [], "complete": True, "note": "In none of the comparisons' tables."},
        latest_release={"value": {"version": "1.2.0", "date": "2025-07-25"}, "evidence": [WEB_EVIDENCE]},
    ), "inline")
    assert entry.backend.complete and entry.backend.value == ("jax",)
    assert entry.synchronization.value == ()
    assert entry.surveys.value == () and entry.surveys.evidence == ()
    assert entry.multi_agent.is_unknown
    assert str(entry.backend) == "jax"
    assert entry.latest_release.value == Release(version="1.2.0", date=date(2025, 7, 25))
    assert entry.to_json_dict()["latest_release"] == {"version": "1.2.0", "date": "2025-07-25"}
    with pytest.raises(InvalidFrameworkEntryError, match="known lists only"):
        framework_entry_from_dict(_minimal_entry(backend={**_unknown(), "complete": True}), "inline")


@pytest.mark.parametrize(("item", "source"), [
    (REPO_EVIDENCE, "https://github.com/example/fw/blob/0123456789abcdef0123456789abcdef01234567/LICENSE"),
    (WEB_EVIDENCE, "https://example.org/fw"),
    ({"arxiv": "2411.05614", "locator": "Table 3", "excerpt": "x"}, "arXiv:2411.05614, Table 3"),
    ({"doi": "10.1145/3703453", "locator": "Section 4", "excerpt": "x"}, "doi:10.1145/3703453, Section 4"),
])
def test_evidence_names_its_source_as_one_citable_string(item: dict[str, Any], source: str) -> None:
    assert Evidence.model_validate(item).source == source


# -- plugins ---------------------------------------------------------------------------------------


def test_a_third_party_plugin_brings_its_own_entry(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    table = _minimal_entry(id="thirdfw", name="Third")
    table["as_of"] = "2026-11-30"
    (tmp_path / "thirdfw_plugin.py").write_text(
        "import datetime\nfrom rlcompare import hookimpl\nfrom rlcompare.registry.entries import framework_entry_from_dict\n\n"
        f"TABLE = {table!r}\n\n"
        "@hookimpl\ndef rlcompare_register_frameworks(register):\n"
        "    register.add_framework(framework_entry_from_dict(TABLE, 'thirdfw_plugin', datetime.date(2026, 11, 30)))\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    plugins = build_plugin_manager(builtins=(*WITH_REGISTRY, "thirdfw_plugin"), autoload=False)
    assert not [error for error in plugins.errors if error.plugin in ("thirdfw_plugin", "rlcompare.builtins.frameworks")]
    assert isinstance(plugins.frameworks["thirdfw"], FrameworkEntry)
    assert plugins.plugin_origin("framework", "thirdfw") == "thirdfw_plugin"
    assert plugins.plugin_origin("framework", "rllib") == "rlcompare.builtins.frameworks"


def test_a_duplicate_framework_id_is_reported(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "dupfw_plugin.py").write_text(
        "from rlcompare import hookimpl\nfrom rlcompare.registry.loading import load_builtin_entries\n\n"
        "@hookimpl\ndef rlcompare_register_frameworks(register):\n"
        "    register.add_framework(load_builtin_entries()[0])\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    plugins = build_plugin_manager(builtins=(*WITH_REGISTRY, "dupfw_plugin"), autoload=False)
    first = load_builtin_entries()[0].id
    assert any(f"framework id {first!r} is registered by both 'rlcompare.builtins.frameworks'" in str(error)
               and "'dupfw_plugin'" in str(error) for error in plugins.errors)
    assert first not in plugins.frameworks  # neither contender keeps it


# -- filtering -------------------------------------------------------------------------------------


def test_where_filters_lists_booleans_and_unknowns() -> None:
    entries = load_builtin_entries()
    asynchronous_pytorch = filter_entries(entries, ["synchronization=asynchronous", "backend=pytorch"])
    assert asynchronous_pytorch
    for entry in asynchronous_pytorch:
        assert "asynchronous" in entry.synchronization.value and "pytorch" in entry.backend.value
    assert {e.id for e in filter_entries(entries, ["id=rllib,seed-rl"])} == {"rllib", "seed-rl"}
    assert {e.id for e in filter_entries(entries, ["backend=JAX"])} >= {"acme", "dopamine"}
    assert "skrl" in {e.id for e in filter_entries(entries, ["institution=unknown"])}
    assert {e.id for e in filter_entries(entries, ["license=MIT"])} >= {"stable-baselines3", "tianshou"}
    assert {e.id for e in filter_entries(entries, ["multi_agent=true"])} >= {"rllib", "tianshou", "skrl"}
    assert filter_entries(entries, ["algorithms=ppo"])
    assert {e.id for e in filter_entries(entries, ["latest_release=2.9.2"])} == {"stable-baselines3"}


def test_where_filters_on_the_llm_axes_and_surveys() -> None:
    entries = load_builtin_entries()
    llm = {e.id for e in filter_entries(entries, ["domain=llm"])}
    assert COMPARISON_IDS <= llm and not CONTROL_IDS & llm
    nccl = filter_entries(entries, ["weight_sync=nccl-broadcast"])
    assert {e.id for e in nccl} >= {"pipelinerl", "skyrl", "slime", "verl"}
    assert all("nccl-broadcast" in e.weight_sync.value for e in nccl)
    assert not CONTROL_IDS & {e.id for e in nccl}  # an axis an entry does not state matches nothing
    ray_disaggregated = filter_entries(entries, ["orchestration=ray", "placement=disaggregated"])
    assert ray_disaggregated and all(e.domain == "llm" for e in ray_disaggregated)
    assert filter_entries(entries, ["survey=hf-2026"]) == filter_entries(entries, ["surveys=hf-2026"])


@pytest.mark.parametrize(("text", "error", "expected"), [
    ("synchronisation=asynchronous", UnknownNameError, "unknown --where key 'synchronisation'; did you mean "
                                                       "'synchronization'?"),
    ("synchronization=async", UsageError, "did you mean 'asynchronous'?"),
    ("weight_sync=nccl", UsageError, "did you mean 'nccl-broadcast'?"),
    ("survey=hf2026", UsageError, "did you mean 'hf-2026'?"),
    ("domain=lm", UsageError, "did you mean 'llm'?"),
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


def test_the_vocabulary_has_the_values_the_comparisons_use() -> None:
    assert "nccl-broadcast" in WEIGHT_SYNC
    assert FIELDS["placement"].allowed == ("colocated", "disaggregated")
    assert set(SURVEYS) == {"liu-2024", "hf-2026", "anyscale-2025"}


# -- command line ----------------------------------------------------------------------------------


@pytest.fixture
def cli() -> argparse.ArgumentParser:
    from rlcompare.cli import frameworks, show

    parser = argparse.ArgumentParser(prog="rlcompare")
    subparsers = parser.add_subparsers(dest="command")
    frameworks.add_commands(subparsers)
    show.add_commands(subparsers)  # `show framework ID` lives beside `show run ID`
    return parser


def _run(cli: argparse.ArgumentParser, argv: list[str]) -> int:
    from rlcompare.cli import frameworks, show

    args = cli.parse_args(argv)
    return {**frameworks.COMMANDS, **show.COMMANDS}[args.command](args)


def test_frameworks_json_carries_every_fact_with_its_evidence(
    cli: argparse.ArgumentParser, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _run(cli, ["frameworks", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert isinstance(data, list) and len(data) >= 40
    for item in data:
        assert item["schema_version"] == 2 and item["domain"] in ("control", "llm")
        for name in REQUIRED_FIELDS[item["domain"]]:
            assert name in item, f"{item['id']}: no {name}"
            date.fromisoformat(item["as_of"][name])
            if item[name] == UNKNOWN:
                assert item["searched"][name], f"{item['id']}: {name}"
            elif item[name] != []:
                assert item["evidence"][name] and item["sources"][name], f"{item['id']}: {name}"
                assert all(e["excerpt"] and e["source"] for e in item["evidence"][name])


def test_frameworks_where_filters_the_json(cli: argparse.ArgumentParser, capsys: pytest.CaptureFixture[str]) -> None:
    assert _run(cli, ["frameworks", "--json", "--where", "weight_sync=nccl-broadcast",
                      "--where", "survey=hf-2026"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data and all("nccl-broadcast" in d["weight_sync"] and "hf-2026" in d["surveys"] for d in data)


def test_frameworks_tables_show_each_domains_axes(cli: argparse.ArgumentParser, capsys: pytest.CaptureFixture[str]) -> None:
    assert _run(cli, ["frameworks"]) == 0
    tables = capsys.readouterr().out
    assert "control frameworks" in tables and "llm frameworks" in tables
    assert "architecture" in tables and "weight_sync" in tables
    assert _run(cli, ["frameworks", "--where", "domain=control"]) == 0
    control = capsys.readouterr().out
    assert "seed-rl" in control and "weight_sync" not in control and "verl" not in control


def test_show_prints_each_fact_with_its_evidence(cli: argparse.ArgumentParser, capsys: pytest.CaptureFixture[str]) -> None:
    assert _run(cli, ["show", "framework", "stable-baselines3"]) == 0
    shown = capsys.readouterr().out
    assert "Stable-Baselines3 (stable-baselines3), domain control" in shown
    assert "source: https://github.com/DLR-RM/stable-baselines3/blob/" in shown
    assert "> The MIT License" in shown
    assert "source: https://pypi.org/pypi/stable-baselines3/json (accessed 2026-12-01)" in shown
    assert "surveys: unknown" in shown and "searched: " in shown
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
        "import argparse, sys\nfrom rlcompare.cli import frameworks, show\n"
        "p = argparse.ArgumentParser(); s = p.add_subparsers(dest='command')\n"
        "frameworks.add_commands(s); show.add_commands(s); COMMANDS = {**frameworks.COMMANDS, **show.COMMANDS}\n"
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
    assert bool(matrix.loc["sample-factory", ("synchronization", "asynchronous")]) is True
    # A complete list makes absence a fact; an incomplete one leaves it unknown (<NA>).
    assert bool(matrix.loc["stable-baselines3", ("architecture", "centralized")]) is False
    assert str(matrix.loc["tianshou", ("simulation_parallelism", "gpu-batch")]) == "<NA>"
    assert str(matrix.loc["verl", ("architecture", "centralized")]) == "<NA>"  # not a control entry
    assert bool(matrix.loc["skrl", ("features", "evolutionary")]) is True
    llm = feature_matrix(dimensions=["weight_sync", "placement"], include_features=False)
    assert bool(llm.loc["verl", ("weight_sync", "nccl-broadcast")]) is True
    assert str(llm.loc["rllib", ("placement", "colocated")]) == "<NA>"
    with pytest.raises(UnknownNameError):
        feature_matrix(dimensions=["synchronisation"])


def test_registry_frame_has_one_row_per_framework() -> None:
    frame = registry_frame()
    assert len(frame) == len(load_builtin_entries())
    assert frame.loc["stable-baselines3", "licence"] == "MIT"
    assert frame.loc["rllib", "first_release_year"] == 2017
    assert frame.loc["stable-baselines3", "latest_release"]["version"] == "2.9.2"
    assert frame.loc["stable-baselines3", "weight_sync"] is None
    assert set(frame["domain"]) == {"control", "llm"}


def test_a_broken_packaged_file_is_reported_after_the_valid_ones_register(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import rlcompare.builtins.frameworks as builtin

    good = _write_entry(tmp_path, GOOD_TOML)
    bad = _write_entry(tmp_path, GOOD_TOML, stem="brokenfw")  # its id does not match the file name
    monkeypatch.setattr(builtin, "builtin_framework_files", lambda: [bad, good])
    plugins = build_plugin_manager(builtins=("rlcompare.builtins.frameworks",), autoload=False)
    assert list(plugins.frameworks) == ["examplefw"]
    [error] = plugins.errors
    assert error.plugin == "rlcompare.builtins.frameworks"
    assert f"{bad}: field 'id'" in str(error)


def test_registered_tables_are_validated_when_registered_and_bad_ones_refused() -> None:
    register = Register(current=Origin("tableplugin"))
    register.add_framework(_minimal_entry(id="tablefw"))  # a plain table, validated into an entry
    register.add_framework(load_builtin_entries()[0])
    with pytest.raises(PluginError, match=r"^plugin 'tableplugin' failed: framework 'badfw': "):
        register.add_framework({"id": "badfw"})
    assert set(register.frameworks) == {"tablefw", load_builtin_entries()[0].id}
    assert all(isinstance(entry, FrameworkEntry) for entry in register.frameworks.values())


def test_a_new_entry_learns_every_missing_field_in_one_line() -> None:
    """A plugin author's first try (id and name only) hears of every field it lacks at once."""
    with pytest.raises(InvalidFrameworkEntryError) as caught:
        framework_entry_from_dict({"id": "newfw", "name": "New"}, "framework 'newfw'")
    message = str(caught.value)
    assert "\n" not in message
    assert "field 'schema_version' is required (= 2)" in message
    assert "field 'domain' is required" in message
    assert all(f"'{name}'" in message for name in COMMON_FIELDS), message
    with pytest.raises(InvalidFrameworkEntryError) as caught:
        framework_entry_from_dict({"id": "newfw", "name": "New", "domain": "control"}, "framework 'newfw'")
    message = str(caught.value)
    assert "\n" not in message and "schema_version" in message
    assert f"{len(REQUIRED_FIELDS['control'])} required fields missing for a control entry" in message
    assert all(f"'{name}'" in message for name in REQUIRED_FIELDS["control"]), message


def test_minimax_forge_has_no_repository_and_is_sourced_from_its_authors_post() -> None:
    forge = _by_id()["minimax-forge"]
    assert forge.domain == "llm" and forge.name == "MiniMax Forge"
    assert forge.value("repository") == "none" and "not released" in forge.repository.note
    assert forge.value("institution") == "MiniMax"
    assert forge.value("surveys") == ("hf-2026",)
    assert forge.value("latest_release") == "none"
    assert forge.value("first_release_year") == 2026 and "not released" in forge.first_release_year.note
    assert forge.licence.is_unknown and forge.licence.searched
    post = "https://www.minimax.io/news/forge-scalable-agent-rl-framework-and-algorithm"
    for name in ("institution", "first_release_year", "algorithms", "synchronization"):
        assert post in forge.fact(name).sources, name
    assert any("internal RL framework Forge" in item.excerpt for item in forge.repository.evidence)
    # Every fact is either quoted from the post or hf-2026, or unknown with what was searched.
    for name, fact in forge.facts().items():
        if fact.is_unknown:
            assert fact.searched, name
        else:
            assert all(item.kind == "web" and item.url.startswith("https://www.minimax.io/")
                       or (item.repo, item.path) in SURVEYS["hf-2026"].files for item in fact.evidence), name
    assert filter_entries(load_builtin_entries(), ["survey=hf-2026", "repository=none"]) == [forge]


@pytest.mark.parametrize("domain", ["control", "llm"])
def test_unpublished_entry_states_every_required_fact_of_its_domain(domain: str) -> None:
    entry = unpublished_entry("labfw", "LabFW", domain, where="In-house at Example Lab; out with the paper.",
                              source="labfw_rlcompare", as_of=date(2026, 11, 30))
    assert entry.id == "labfw" and entry.domain == domain
    assert entry.value("repository") == "none" and entry.repository.note == "In-house at Example Lab; out with the paper."
    assert list(entry.value("surveys")) == []
    for name in REQUIRED_FIELDS[domain]:
        fact = entry.fact(name)
        assert fact is not None, name
        if name not in ("repository", "surveys"):
            assert fact.is_unknown and "LabFW is unpublished" in fact.searched, name
    other = LLM_FIELDS if domain == "control" else CONTROL_FIELDS
    assert all(entry.fact(name) is None for name in other)


def test_unpublished_entry_takes_cited_facts_and_rejects_bad_ones_naming_the_field() -> None:
    licence = {"value": "MIT", "evidence": [WEB_EVIDENCE]}
    entry = unpublished_entry("labfw", "LabFW", "control", where="In-house.", source="labfw_rlcompare",
                              facts={"licence": licence})
    assert entry.value("licence") == "MIT" and entry.licence.evidence[0].url == "https://example.org/fw"
    assert entry.latest_release.as_of == date.today()  # as_of defaults to the day it is built
    with pytest.raises(InvalidFrameworkEntryError, match=r"^labfw_rlcompare: field 'licence\.value': 'not a licence!' is not an SPDX"):
        unpublished_entry("labfw", "LabFW", "control", where="In-house.", source="labfw_rlcompare",
                          facts={"licence": {"value": "not a licence!", "evidence": [WEB_EVIDENCE]}})
    with pytest.raises(InvalidFrameworkEntryError, match=r"^labfw_rlcompare: .*'id'"):
        unpublished_entry("Lab FW", "LabFW", "control", where="In-house.", source="labfw_rlcompare")
    with pytest.raises(InvalidFrameworkEntryError, match=r"repository.note"):
        unpublished_entry("labfw", "LabFW", "control", where="", source="labfw_rlcompare")
    with pytest.raises(InvalidFrameworkEntryError, match=r"^labfw_rlcompare: facts may .*got 'id', 'repository'$"):
        unpublished_entry("labfw", "LabFW", "control", where="In-house.", source="labfw_rlcompare",
                          facts={"id": "other", "repository": {"value": "https://example.org/fw"}})


def test_a_framework_without_a_public_repository_declares_none_with_a_note() -> None:
    unpublished = {"value": "none", "note": "In-house code at Example Lab; to be published with the paper."}
    entry = framework_entry_from_dict(_minimal_entry(repository=unpublished), "inline")
    assert entry.value("repository") == "none" and entry.repository.evidence == ()
    with pytest.raises(InvalidFrameworkEntryError, match="field 'repository.note': a repository of 'none' needs a note"):
        framework_entry_from_dict(_minimal_entry(repository={"value": "none"}), "inline")
    with pytest.raises(InvalidFrameworkEntryError, match="'ftp://example.org/fw' is not an http"):
        framework_entry_from_dict(_minimal_entry(repository={"value": "ftp://example.org/fw",
                                                             "evidence": [WEB_EVIDENCE]}), "inline")
