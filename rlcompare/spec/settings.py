"""Which settings a fidelity report speaks of, and which of them count.

A workload's *canonical settings* are its family's hyperparameters (``hyperparameters.<name>``),
its network (``network.*``) and its parallelism (``parallelism.*``): what every adapter receives
and must map. An adapter's fidelity report covers them; besides them it may list only the settings
of the family's reference update's variants (``defaults.adam_eps``, ...: how the framework departs
from the canonical update, which the parity probe checks), never anything else. The driver and the
parity corrections add entries of their own (``parity.<family>``, ``schedule.<aspect>``, the
variants a probe found).

The fidelity share (the ``setting_fidelity`` criterion, and ``rlcompare plan --json``) is computed
here, from plain data, so that the plan's preview and the score can never disagree:

- it averages over the *counted* settings only (:func:`counted_settings`: every hyperparameter of
  the family, the network's hidden sizes and activation, the envs per worker and the workers):
  the same denominator for every adapter on a workload, whatever its report lists. A counted
  setting missing from the report counts as unsupported; entries outside the canonical set never
  add to the share (they cannot pad it);
- exact counts 1, approximate 0.5, unsupported 0; where the parity probe did not verify the
  family's update, exact counts as approximate (declared, not checked);
- a *departure* (a ``defaults.*`` or ``schedule.*`` entry that is not exact: a variant the probe
  found or the adapter declared, a schedule the driver traced) only ever lowers the share: it adds
  what it misses of one setting (0.5 approximate, 1 unsupported) to the denominator. An exact
  departure entry changes nothing. ``parity.<family>`` entries act through the standing above only.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

#: Network and parallelism settings every fidelity report covers (``parallelism.threads_per_worker``
#: is pinned by the harness; ``parallelism.mode`` is covered by adapters that offer async sampling).
STRUCTURAL_SETTINGS = ("network.hidden_sizes", "network.activation", "parallelism.envs_per_worker",
                       "parallelism.workers")
#: What a language workload's report covers instead: its ``language_model`` (the harness's architecture and
#: initial weights, loaded into the framework's own model) in place of the network.
LANGUAGE_STRUCTURAL_SETTINGS = ("language_model", "parallelism.envs_per_worker", "parallelism.workers")
#: Canonical settings a report may list but that do not count (not every adapter must cover them;
#: ``parallelism.simulation`` by the adapters that honour EnvPool, ``parallelism.seeds_per_program`` by those
#: that train several seeds in one program; the others refuse them).
OPTIONAL_SETTINGS = ("parallelism.mode", "parallelism.threads_per_worker", "parallelism.simulation",
                     "parallelism.seeds_per_program")
#: Prefixes of the entries that describe departures from the canonical update or schedule.
DEPARTURE_PREFIXES = ("defaults.", "schedule.")
#: Prefix of the entry the parity corrections add for the whole update.
PARITY_PREFIX = "parity."
#: What each fidelity status is worth.
STATUS_SCORES = {"exact": 1.0, "approximate": 0.5, "unsupported": 0.0}


def structural_settings(language: bool = False) -> tuple[str, ...]:
    """The settings besides the hyperparameters a report covers: a language workload's
    (:data:`LANGUAGE_STRUCTURAL_SETTINGS`) or any other's (:data:`STRUCTURAL_SETTINGS`)."""
    return LANGUAGE_STRUCTURAL_SETTINGS if language else STRUCTURAL_SETTINGS


def counted_settings(hyperparameters: Iterable[str], language: bool = False) -> tuple[str, ...]:
    """The settings the fidelity share averages over, for a family whose hyperparameters are named
    ``hyperparameters`` (the model's field names, or the keys of a stored workload's table), on a
    language workload (one with a ``language_model``) or not."""
    names = [f"hyperparameters.{name}" for name in hyperparameters if name != "algorithm"]
    return (*names, *structural_settings(language))


def canonical_settings(hyperparameters: Iterable[str], language: bool = False) -> frozenset[str]:
    """Every canonical setting of such a family: the counted ones and :data:`OPTIONAL_SETTINGS`."""
    return frozenset((*counted_settings(hyperparameters, language), *OPTIONAL_SETTINGS))


def outside_settings(settings: Iterable[str], hyperparameters: Iterable[str],
                     variant_settings: Iterable[str] = (), language: bool = False) -> list[str]:
    """The settings of an adapter's report that it may not list: neither canonical nor the setting
    of a variant of the family's reference update (in report order, each once)."""
    allowed = canonical_settings(hyperparameters, language) | frozenset(variant_settings)
    return list(dict.fromkeys(setting for setting in settings if setting not in allowed))


def is_departure(setting: str) -> bool:
    """Whether ``setting`` names a departure from the canonical update or schedule."""
    return setting.startswith(DEPARTURE_PREFIXES)


def fidelity_share(entries: Sequence[Mapping[str, Any]], hyperparameters: Iterable[str],
                   verified: bool, language: bool = False) -> float | None:
    """The fidelity share of one run's report (plain entries: ``setting`` and ``status``); None when
    there is nothing to count (a family without hyperparameters and no structural settings cannot
    happen, but a report of no entries can: it counts every setting unsupported)."""
    counted = counted_settings(hyperparameters, language)
    if not counted:
        return None
    status: dict[str, str] = {}
    departures: dict[str, float] = {}
    for item in entries:
        setting, value = str(item.get("setting")), str(item.get("status"))
        score = STATUS_SCORES.get(value, 0.0)
        if setting in counted:
            status[setting] = value if setting not in status else _worse(status[setting], value)
        elif is_departure(setting):
            departures[setting] = min(departures.get(setting, 1.0), score)
    total = 0.0
    for setting in counted:
        value = status.get(setting, "unsupported")
        if value == "exact" and not verified:
            value = "approximate"
        total += STATUS_SCORES.get(value, 0.0)
    missed = sum(1.0 - score for score in departures.values())
    return total / (len(counted) + missed)


def _worse(left: str, right: str) -> str:
    return left if STATUS_SCORES.get(left, 0.0) <= STATUS_SCORES.get(right, 0.0) else right
