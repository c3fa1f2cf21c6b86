"""Rules that facts of one registry entry must satisfy together.

Each fact is checked on its own when an entry loads (its value against its field's vocabulary, its
evidence's shape). Some wrong values only show against another fact of the same entry: an entry
whose generation runs concurrently with training and whose weights are updated in place cannot
have nothing in flight at a weight update; an asynchronous library must say how it handles stale
samples. These rules catch that class of error. They are run by the registry's tests and by the
evidence checker (``python -m rlcompare.registry.evidence``), and each is documented in
docs/registry.md with its reason.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from rlcompare.registry.entries import FrameworkEntry
from rlcompare.registry.facts import UNKNOWN, Fact


@dataclass(frozen=True)
class Violation:
    """One rule an entry breaks, and how."""

    entry: str
    rule: str
    detail: str

    def line(self) -> str:
        return f"{self.entry}: rule {self.rule}: {self.detail}"


@dataclass(frozen=True)
class Rule:
    """A rule across the facts of one entry: ``check`` returns what is wrong, or None."""

    id: str
    reason: str
    check: Callable[[FrameworkEntry], str | None]


def _values(fact: Fact | None) -> tuple[str, ...] | None:
    """A list fact's values; None when not stated or unknown."""
    if fact is None or fact.value == UNKNOWN:
        return None
    value = fact.value
    return tuple(value) if isinstance(value, tuple) else (value,)


#: Generation that runs while the trainer updates: the survey's terms and the buffer designs.
CONCURRENT_SYNCHRONIZATION = frozenset({"asynchronous", "stale-synchronous"})
#: Weight transfers that write into the memory the inference engine generates from.
SHARED_WEIGHTS = frozenset({"in-process", "cuda-ipc"})


def _published(entry: FrameworkEntry) -> bool:
    """Whether the entry's code is public: only then can an unknown be settled from it (an unpublished
    framework's facts come from what its authors say, and unknown is often all there is)."""
    return entry.value("repository") not in (None, "none")


def _in_flight_continuation(entry: FrameworkEntry) -> str | None:
    synchronization = _values(entry.synchronization)
    weight_sync = _values(entry.weight_sync)
    partial = _values(entry.partial_rollouts)
    if not synchronization or not weight_sync or partial is None:
        return None
    concurrent = CONCURRENT_SYNCHRONIZATION & set(synchronization)
    shared = SHARED_WEIGHTS & set(weight_sync)
    # a library with a synchronous mode and another transfer may pair the shared one with the synchronous
    # mode only (nothing in flight there): the lists do not say which goes with which, so no verdict
    ambiguous = "synchronous" in synchronization and bool(set(weight_sync) - SHARED_WEIGHTS)
    if concurrent and shared and not ambiguous and set(partial) == {"none"}:
        return (f"synchronization {', '.join(sorted(concurrent))} with weight_sync {', '.join(sorted(shared))} "
                "updates the weights generation reads while it runs, so sequences in flight continue on new "
                "weights; partial_rollouts says 'none' (in-flight-continuation, drain or abort-resume, with "
                "evidence)")
    return None


def _asynchronous_staleness(entry: FrameworkEntry) -> str | None:
    if entry.domain != "llm":
        return None
    synchronization = _values(entry.synchronization)
    concurrent = CONCURRENT_SYNCHRONIZATION & set(synchronization or ())
    if not concurrent:
        return None
    staleness = _values(entry.staleness)
    if staleness is None and _published(entry):
        return (f"synchronization {', '.join(sorted(concurrent))} trains on samples of older policies; "
                "staleness is unknown (state how they are bounded or corrected)")
    if staleness is not None and set(staleness) == {"none"}:
        return (f"synchronization {', '.join(sorted(concurrent))} trains on samples of older policies; "
                "staleness says 'none'")
    return None


#: A searched note that establishes there is no licence (rather than failing to find one).
ABSENT_LICENCE = re.compile(r"\bno licen[cs]e\b|\bno (?:LICENSE|COPYING)\b|\bwithout a licen[cs]e\b", re.IGNORECASE)


def _licence_absence(entry: FrameworkEntry) -> str | None:
    fact = entry.licence
    if fact is None or fact.value != UNKNOWN or not _published(entry):
        return None
    if ABSENT_LICENCE.search(fact.searched):
        return ("licence is unknown but its searched note establishes that the code has none: record "
                "that (value 'NONE', the SPDX term for no licence) with the evidence of its absence")
    return None


RULES: tuple[Rule, ...] = (
    Rule("in-flight-continuation",
         "Generation that runs while training updates weights it shares in place (in-process, CUDA IPC) "
         "cannot have nothing in flight at a weight update.", _in_flight_continuation),
    Rule("asynchronous-staleness",
         "An asynchronous or stale-synchronous LLM library trains on samples of older policies: how it bounds "
         "or corrects them is a fact to state.", _asynchronous_staleness),
    Rule("licence-absence",
         "The absence of a licence is a fact (no open-source licence), not an unknown.", _licence_absence),
)


def check_entry(entry: FrameworkEntry, rules: Iterable[Rule] = RULES) -> list[Violation]:
    """Every rule ``entry`` breaks."""
    return [Violation(entry.id, rule.id, detail) for rule in rules if (detail := rule.check(entry)) is not None]


def check_entries(entries: Iterable[FrameworkEntry], rules: Iterable[Rule] = RULES) -> list[Violation]:
    rules = tuple(rules)
    return [violation for entry in entries for violation in check_entry(entry, rules)]
