"""Rules across the facts of one registry entry (rlcompare.registry.consistency): each catches an entry
broken in its way, the shipped registry breaks none, and the evidence checker fails on a broken one."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import pytest

from rlcompare.registry.consistency import RULES, check_entries, check_entry
from rlcompare.registry.entries import FrameworkEntry
from rlcompare.registry.evidence import main as evidence_main
from rlcompare.registry.facts import Evidence, Fact
from rlcompare.registry.loading import load_builtin_entries

TODAY = dt.date(2026, 12, 1)


def _fact(value: Any, **extra: Any) -> Fact:
    if value not in ("unknown", "none"):
        extra.setdefault("evidence", [Evidence(url="https://example.org/docs", accessed=TODAY, excerpt="a test")])
    return Fact(value=value, as_of=TODAY, **extra)


def _with(entry: FrameworkEntry, **facts: Fact) -> FrameworkEntry:
    return FrameworkEntry.model_validate({**entry.model_dump(), **{k: v.model_dump() for k, v in facts.items()}})


@pytest.fixture(scope="module")
def entries() -> dict[str, FrameworkEntry]:
    return {entry.id: entry for entry in load_builtin_entries()}


def test_the_shipped_registry_breaks_no_rule(entries: dict[str, FrameworkEntry]) -> None:
    assert [violation.line() for violation in check_entries(entries.values())] == []


def test_every_rule_has_a_documented_reason() -> None:
    documented = Path(__file__).resolve().parents[1].joinpath("docs", "registry.md").read_text(encoding="utf-8")
    for rule in RULES:
        assert rule.reason
        assert f"`{rule.id}`" in documented, rule.id


def _llm(entries: dict[str, FrameworkEntry]) -> FrameworkEntry:
    """A published asynchronous LLM entry whose facts agree (slime: disaggregated, streams, bounded)."""
    return next(entry for entry in entries.values() if entry.domain == "llm"
                and entry.value("repository") != "none" and not check_entry(entry))


def test_shared_weights_under_concurrent_generation_imply_something_in_flight(entries) -> None:
    base = _llm(entries)
    broken = _with(base, synchronization=_fact(["stale-synchronous"]), weight_sync=_fact(["in-process"]),
                   partial_rollouts=_fact(["none"]), staleness=_fact(["depth-bounding"]))
    [violation] = check_entry(broken)
    assert violation.rule == "in-flight-continuation" and "in-process" in violation.detail
    for fixed in (["in-flight-continuation"], ["drain"]):
        assert not check_entry(_with(broken, partial_rollouts=_fact(fixed)))
    # synchronous generation has nothing in flight; broadcast weights do not touch the engine's memory mid-step
    assert not check_entry(_with(broken, synchronization=_fact(["synchronous"])))
    assert not check_entry(_with(broken, weight_sync=_fact(["nccl-broadcast"])))
    # several modes whose pairing the lists cannot tell (in-process for the synchronous one): no verdict
    assert not check_entry(_with(broken, synchronization=_fact(["synchronous", "stale-synchronous"]),
                                 weight_sync=_fact(["in-process", "nccl-broadcast"])))
    # a synchronous mode beside transfers that are all shared: the concurrent mode shares them too
    assert check_entry(_with(broken, synchronization=_fact(["synchronous", "stale-synchronous"])))


def test_an_asynchronous_library_states_its_staleness(entries) -> None:
    base = _with(_llm(entries), synchronization=_fact(["asynchronous"]), weight_sync=_fact(["nccl-broadcast"]))
    for staleness in (_fact(["none"]), _fact("unknown", searched="read the README")):
        [violation] = check_entry(_with(base, staleness=staleness))
        assert violation.rule == "asynchronous-staleness"
    assert not check_entry(_with(base, staleness=_fact(["version-rejection"])))
    unpublished = _with(base, staleness=_fact("unknown", searched="no code"), repository=_fact("none", note="internal"))
    assert not check_entry(unpublished)  # its authors' word is all there is: unknown stays legitimate


def test_an_established_absence_of_a_licence_is_not_unknown(entries) -> None:
    base = entries["stable-baselines3"]
    absent = _with(base, licence=_fact("unknown", searched="No LICENSE file at the commit and no licence in setup.py"))
    [violation] = check_entry(absent)
    assert violation.rule == "licence-absence"
    assert not check_entry(_with(base, licence=_fact("unknown", searched="the LICENSE file is unreadable here")))


def test_the_evidence_checker_fails_on_a_broken_rule(tmp_path: Path, entries, capsys) -> None:
    source = Path(__file__).resolve().parents[1] / "rlcompare" / "registry" / "frameworks" / "stable-baselines3.toml"
    text = source.read_text(encoding="utf-8")
    start = text.index("[licence]")
    end = text.index("\n[", start + 1)
    broken = text[:start] + '[licence]\nvalue = "unknown"\nsearched = "no LICENSE file at the commit"\n' + text[end:]
    path = tmp_path / "stable-baselines3.toml"
    path.write_text(broken, encoding="utf-8")
    assert evidence_main(["--mirrors", str(tmp_path), str(path)]) == 1
    out = capsys.readouterr().out
    assert "consistency rules: 1 broken" in out and "rule licence-absence" in out
    assert evidence_main(["--mirrors", str(tmp_path), str(source)]) == 0  # no clone: counted, not failed
