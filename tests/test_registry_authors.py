"""Authors' statements: the evidence an adapter author with no public repository can give about their
own framework. Accepted only for unpublished code, labelled as such in every output, never verified,
and never scored (a claim nobody can check may not beat or tie a verified fact)."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import pytest
from rlcompare_criteria.adapter_lookup import registry_value

from rlcompare.registry.entries import InvalidFrameworkEntryError, unpublished_entry
from rlcompare.registry.evidence import Mirrors, check_evidence
from rlcompare.registry.facts import AUTHOR_STATED, Evidence
from rlcompare.registry.loading import load_builtin_entries

STATED = {"author": "A. Author, lead maintainer of tinyac", "stated": dt.date(2026, 11, 30),
          "excerpt": "tinyac runs its environments in 8 sub-processes and has one learner"}


def _tinyac(**facts: object):
    return unpublished_entry("tinyac", "TinyAC", "control", where="in-house until 2027", source="tinyac.toml",
                             facts=facts)


def test_an_unpublished_framework_states_facts_in_its_authors_words() -> None:
    entry = _tinyac(architecture={"value": ["non-distributed"], "evidence": [STATED]},
                    simulation_parallelism={"value": ["vectorized-cpu"], "evidence": [STATED]})
    fact = entry.fact("architecture")
    assert fact.author_stated and fact.evidence[0].kind == "author"
    assert fact.evidence[0].source.startswith(AUTHOR_STATED) and "2026-11-30" in fact.evidence[0].describe()
    data = entry.to_json_dict()
    assert data["evidence"]["architecture"][0]["kind"] == "author"
    assert data["evidence"]["architecture"][0]["stated"] == "2026-11-30"
    assert data["sources"]["architecture"][0].startswith(AUTHOR_STATED)


def test_a_published_framework_cannot_rest_a_fact_on_its_authors_word() -> None:
    sb3 = next(entry for entry in load_builtin_entries() if entry.id == "stable-baselines3")
    data = sb3.model_dump()
    data["tests"] = {"value": True, "evidence": [STATED], "as_of": dt.date(2026, 12, 1)}
    with pytest.raises(ValueError, match=r"field 'tests.evidence': an authors' statement is evidence only for a "
                                         r"framework without public code"):
        type(sb3).model_validate(data)


@pytest.mark.parametrize(("item", "message"), [
    ({"author": "A. Author", "excerpt": "x"}, "a statement of the authors needs 'stated'"),
    ({"author": " ", "stated": dt.date(2026, 1, 1), "excerpt": "x"}, "must name who states it"),
    ({"author": "A", "stated": dt.date(2999, 1, 1), "excerpt": "x"}, "statement date 2999-01-01 is in the future"),
    ({"author": "A", "stated": dt.date(2026, 1, 1), "url": "https://a.org", "accessed": dt.date(2026, 1, 1),
      "excerpt": "x"}, "exactly one of"),
])
def test_a_malformed_statement_is_refused_naming_what_is_wrong(item: dict, message: str) -> None:
    with pytest.raises(InvalidFrameworkEntryError, match=message):
        _tinyac(tests={"value": True, "evidence": [item]})


def test_the_checker_counts_a_statement_as_unverifiable_and_the_criteria_never_score_it(tmp_path: Path) -> None:
    entry = _tinyac(tests={"value": True, "evidence": [STATED]}, licence={"value": "MIT", "evidence": [STATED]})
    status, _ = check_evidence(Mirrors(tmp_path), Evidence(**STATED))
    assert status == "not-checkable"
    for name in ("tests", "licence"):
        value, reason = registry_value(entry, (name,))
        assert value is None and reason == f"the registry has only its authors' statement of {name}, not verified"
    sb3 = next(entry for entry in load_builtin_entries() if entry.id == "stable-baselines3")
    assert registry_value(sb3, ("licence",))[0] == "MIT"  # a verified fact scores as before


def test_every_output_labels_the_statement(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    from rlcompare.cli import frameworks as cli

    entry = _tinyac(architecture={"value": ["non-distributed"], "evidence": [STATED]})
    monkeypatch.setattr(cli, "load_registry", lambda: ({"tinyac": entry}, []))
    import argparse

    cli.cmd_frameworks(argparse.Namespace(where=[], json=False))
    assert "non-distributed (authors)" in capsys.readouterr().out
    cli.cmd_show(argparse.Namespace(name="tinyac", json=False))
    shown = capsys.readouterr().out
    assert "architecture: non-distributed   [as of" in shown and AUTHOR_STATED in shown
    cli.cmd_show(argparse.Namespace(name="tinyac", json=True))
    assert json.loads(capsys.readouterr().out)["evidence"]["architecture"][0]["kind"] == "author"


def test_the_reports_registry_tables_label_the_statement() -> None:
    from rlcompare.reporting.tables import registry_evidence_table, taxonomy_table

    entry = _tinyac(architecture={"value": ["non-distributed"], "evidence": [STATED]})
    taxonomy = taxonomy_table(["tinyac"], {"tinyac": entry}).iloc[0]
    assert taxonomy["architecture"] == "non-distributed (authors)"
    evidence = registry_evidence_table(["tinyac"], {"tinyac": entry})
    stated = evidence[evidence["fact"] == "architecture"].iloc[0]
    assert stated["source"].startswith(AUTHOR_STATED) and stated["excerpt"] == STATED["excerpt"]
