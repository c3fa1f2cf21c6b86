"""The criterion contract: what a criterion declares, what it receives and what it returns.

A criterion is an object registered through ``rlcompare_register_criteria`` with
``register.add_criterion(Criterion(...))``. It declares an id, a title, a category (performance or
development facilitation), a unit, a direction (is higher or lower better), its method in one
paragraph, and how its values are normalized for scoring. Its ``compute`` function receives a
:class:`ScoringData` (the store's runs and curves as pandas frames, the scoring catalogue, a measurement cache)
and returns a :class:`CriterionResult`: tidy frames of per-seed values and of missing cells with
their reasons. The scoring engine (:mod:`rlcompare.scoring`) turns those into
:class:`CriterionValue` cells with point estimates and confidence intervals.

This module imports neither numpy nor pandas at import time: listing criteria imports every
criterion module and must stay light.
"""

from __future__ import annotations

import dataclasses
import json
import math
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any

from rlcompare.harness.contract import Adapter
from rlcompare.harness.measurement_cache import MeasurementCache
from rlcompare.harness.protocol import UNKNOWN_ORIGIN, Origin
from rlcompare.parity.corrections import STANDING_TIER, standing
from rlcompare.registry.entries import FrameworkEntry

if TYPE_CHECKING:
    import pandas as pd

PERFORMANCE = "performance"
DEVELOPMENT = "development"
CATEGORIES = (PERFORMANCE, DEVELOPMENT)

HIGHER = "higher"
LOWER = "lower"
DIRECTIONS = (HIGHER, LOWER)

#: Normalizations the scoring engine knows; each is documented in docs/criteria.md.
#: ``return``: (v - untrained) / (threshold - untrained) per workload; ``ratio``: relative to the
#: best adapter's mean; ``share``: already in [0, 1]; ``half-life``: 0.5 ** (v / half_life).
NORMALIZATIONS = ("return", "ratio", "share", "half-life")

#: The workload id of a cell that belongs to an adapter rather than to one workload
#: (development-facilitation criteria).
ALL_WORKLOADS = "*"

VALUE_COLUMNS = ("adapter", "workload_id", "seed", "value")
MISSING_COLUMNS = ("adapter", "workload_id", "reason")

_ID_PATTERN = re.compile(r"^[a-z][a-z0-9_]*$")


@dataclass(frozen=True)
class Criterion:
    """One scoring criterion.

    ``compute`` returns per-seed values; ``+inf`` marks a seed for which the measured event did not
    happen within the budget (e.g. the success threshold was never reached): it is left out of the
    raw estimate, counted in the cell's note, and scores 0 after normalization.
    """

    id: str
    title: str
    category: str
    unit: str
    direction: str
    method: str
    compute: Callable[[ScoringData], CriterionResult]
    normalization: str = "ratio"
    #: False for criteria with one value per adapter (workload id :data:`ALL_WORKLOADS`).
    per_workload: bool = True
    #: Only for the ``half-life`` normalization: the value at which the score halves.
    half_life: float = 365.0
    #: ``premeasure(data, alongside_runs)`` measures ahead, into ``data.cache``, what ``compute`` will
    #: read from it for ``data.adapters`` (fresh interpreters, installed files), so that the first
    #: scoring finds it cached. ``rlcompare run`` calls it in a process of its own, in the matrix's
    #: tail and after it, with one row per adapter of the plan in ``data.runs`` (columns ``adapter``,
    #: ``framework``, ``status`` ``"planned"`` and ``environment_json``: the adapter environment its
    #: runs use, or None). With ``alongside_runs`` runs are in flight on the machine: a figure that
    #: depends on the machine's load (a timing) must not be made then; it is made by the call once the
    #: runs are over (``alongside_runs`` False), which keeps what it measures as scoring would. It
    #: returns one line per measurement it made but did not keep (printed by ``run``).
    #: ``data.warm_adapters`` names the adapters whose framework this command's runs have imported.
    #: None: nothing worth measuring ahead.
    premeasure: Callable[[ScoringData, bool], list[str]] | None = None

    def __post_init__(self) -> None:
        where = f"criterion {self.id!r}"
        if not isinstance(self.id, str) or not _ID_PATTERN.match(self.id):
            raise ValueError(f"{where}: id must match {_ID_PATTERN.pattern}")
        if self.category not in CATEGORIES:
            raise ValueError(f"{where}: category must be one of {CATEGORIES}, got {self.category!r}")
        if self.direction not in DIRECTIONS:
            raise ValueError(f"{where}: direction must be one of {DIRECTIONS}, got {self.direction!r}")
        if self.normalization not in NORMALIZATIONS:
            raise ValueError(f"{where}: normalization must be one of {NORMALIZATIONS}, got {self.normalization!r}")
        if not callable(self.compute):
            raise ValueError(f"{where}: compute must be callable")
        if self.premeasure is not None and not callable(self.premeasure):
            raise ValueError(f"{where}: premeasure must be callable or None")
        if self.normalization == "half-life" and not self.half_life > 0:
            raise ValueError(f"{where}: half_life must be positive")

    def describe(self) -> dict[str, Any]:
        """The criterion's declaration, as listed and reported."""
        return {
            "id": self.id, "title": self.title, "category": self.category, "unit": self.unit,
            "direction": self.direction, "method": self.method, "normalization": self.normalization,
            "per_workload": self.per_workload,
        }


@dataclass
class CriterionResult:
    """What a criterion computes: tidy per-seed values and the cells it could not fill, with why.

    ``values`` has columns ``adapter, workload_id, seed, value``; ``missing`` has
    ``adapter, workload_id, reason``. ``labels`` holds text shown instead of the number (a licence
    name); ``notes`` holds a short remark shown next to it (where a figure came from).
    """

    values: pd.DataFrame
    missing: pd.DataFrame
    labels: dict[tuple[str, str], str] = field(default_factory=dict)
    notes: dict[tuple[str, str], str] = field(default_factory=dict)

    @classmethod
    def build(
        cls,
        values: pd.DataFrame | Iterable[tuple[str, str, int, float]] | None = None,
        missing: pd.DataFrame | Iterable[tuple[str, str, str]] | None = None,
        labels: Mapping[tuple[str, str], str] | None = None,
        notes: Mapping[tuple[str, str], str] | None = None,
    ) -> CriterionResult:
        """A result from frames or from row tuples; either may be left out."""
        import pandas as pd

        def frame(data: Any, columns: tuple[str, ...]) -> pd.DataFrame:
            if data is None:
                return pd.DataFrame({column: [] for column in columns})
            if isinstance(data, pd.DataFrame):
                return data.loc[:, list(columns)].reset_index(drop=True)
            return pd.DataFrame(list(data), columns=list(columns))

        value_frame = frame(values, VALUE_COLUMNS)
        value_frame["value"] = value_frame["value"].astype(float)
        return cls(value_frame, frame(missing, MISSING_COLUMNS), dict(labels or {}), dict(notes or {}))


@dataclass(frozen=True, eq=False)  # per-seed values are an array: compare cells with to_dict()
class CriterionValue:
    """One cell of the matrix: a criterion's value for one adapter on one workload (or overall).

    ``values`` are the finite per-seed values behind the estimate; ``point``/``low``/``high`` are
    their mean and 95% stratified-bootstrap interval. A missing cell has ``missing`` set to the
    reason and no numbers: missing is never shown or scored as zero.
    """

    criterion: str
    adapter: str
    workload_id: str
    values: Sequence[float] = ()
    point: float | None = None
    low: float | None = None
    high: float | None = None
    n: int = 0
    censored: int = 0
    missing: str | None = None
    label: str | None = None
    note: str | None = None

    @property
    def is_missing(self) -> bool:
        return self.missing is not None

    def to_dict(self) -> dict[str, Any]:
        def clean(value: float | None) -> float | None:
            return None if value is None or not math.isfinite(value) else float(value)

        return {
            "criterion": self.criterion, "adapter": self.adapter, "workload": self.workload_id,
            "point": clean(self.point), "low": clean(self.low), "high": clean(self.high), "n": self.n,
            "censored": self.censored, "missing": self.missing, "label": self.label, "note": self.note,
        }


@dataclass(frozen=True)
class ScoringCatalogue:
    """The plugins' contribution to a scoring (built by the plugin manager, or by hand in a test)."""

    criteria: Mapping[str, Criterion]
    adapters: Mapping[str, type[Adapter]] = field(default_factory=dict)
    frameworks: Mapping[str, FrameworkEntry] = field(default_factory=dict)
    criterion_origins: Mapping[str, Origin] = field(default_factory=dict)

    def criterion_origin(self, criterion_id: str) -> Origin:
        """Which plugin and distribution registered the criterion."""
        return self.criterion_origins.get(criterion_id, UNKNOWN_ORIGIN)

    def with_criteria(self, criteria: Mapping[str, Criterion]) -> ScoringCatalogue:
        """The same catalogue scoring ``criteria`` instead."""
        return dataclasses.replace(self, criteria=dict(criteria))


class ScoringData:
    """What every criterion's ``compute`` receives; frames are loaded and derived once, on demand."""

    def __init__(
        self,
        runs: pd.DataFrame,
        curves: Callable[[], pd.DataFrame] | pd.DataFrame | None = None,
        catalogue: ScoringCatalogue | None = None,
        cache: MeasurementCache | None = None,
        stale_runs: pd.DataFrame | None = None,
        warm_adapters: frozenset[str] = frozenset(),
    ) -> None:
        self.runs = runs
        #: Adapters whose framework a run of this command has just imported: its files are read
        #: from memory, so a timing needs no discarded warm-up import.
        self.warm_adapters = warm_adapters
        #: Runs of an older spec of a workload (another digest), left out of every criterion.
        self.stale_runs = stale_runs
        self._curves = curves
        #: The adapter classes and registry entries development criteria read (None: none known).
        self.catalogue = catalogue
        self.cache = cache if cache is not None else MeasurementCache(None)
        self._memo: dict[str, Any] = {}

    def memo(self, key: str, compute: Callable[[], Any]) -> Any:
        """``compute()`` once per scoring, shared by the criteria that need the same derived frame."""
        if key not in self._memo:
            self._memo[key] = compute()
        return self._memo[key]

    @cached_property
    def curves(self) -> pd.DataFrame:
        """Evaluation points (run_id, env_steps, train_seconds, return_mean, ...)."""
        import pandas as pd

        source = self._curves
        if callable(source):
            source = source()
        if source is None:
            return pd.DataFrame({"run_id": [], "env_steps": [], "train_seconds": [], "return_mean": []})
        return source

    @cached_property
    def ok_runs(self) -> pd.DataFrame:
        return self.runs[self.runs["status"] == "ok"]

    @cached_property
    def attempted_runs(self) -> pd.DataFrame:
        """Runs that started (ok, failed or timeout), not pairs refused up front."""
        return self.runs[self.runs["status"] != "unsupported"]

    @cached_property
    def adapters(self) -> list[str]:
        """Every adapter that appears in the store, refused pairs included."""
        return sorted(self.runs["adapter"].unique().tolist())

    @cached_property
    def adapter_frameworks(self) -> dict[str, str]:
        rows = self.runs.drop_duplicates("adapter")
        return dict(zip(rows["adapter"].tolist(), rows["framework"].tolist(), strict=True))

    @cached_property
    def measured_at(self) -> float | None:
        """When the newest run finished (POSIX seconds): "now" for age criteria, so that scoring
        the same store again gives the same numbers."""
        import pandas as pd

        newest = pd.to_numeric(self.runs.get("finished_at"), errors="coerce").max()
        return None if newest is None or not math.isfinite(newest) else float(newest)

    @cached_property
    def workload_specs(self) -> dict[str, dict[str, Any]]:
        """Parsed workload JSON per workload digest (parsed once per distinct spec, not per run)."""
        unique = self.runs.drop_duplicates("workload_digest")
        return {
            digest: json.loads(text) if isinstance(text, str) else {}
            for digest, text in zip(unique["workload_digest"], unique["workload_json"], strict=True)
        }

    def evaluation_interval(self, digest: str) -> int | None:
        """The evaluation interval (env steps) of the workload with ``digest``, None where unrecorded:
        the resolution at which a time to threshold is read on the evaluation grid."""
        interval = (self.workload_specs.get(digest, {}).get("evaluation") or {}).get("interval_steps")
        return int(interval) if interval else None

    @cached_property
    def untrained_returns(self) -> dict[str, float]:
        """Mean evaluation return at env step 0 per workload, over every adapter's ok runs: the
        untrained reference of the ``return`` normalization."""
        curves = self.curves
        if curves.empty:
            return {}
        start = curves[curves["env_steps"] == 0]
        ok = self.ok_runs[["run_id", "workload_id"]]
        joined = start[["run_id", "return_mean"]].merge(ok, on="run_id")
        return joined.groupby("workload_id")["return_mean"].mean().to_dict()

    @cached_property
    def parity_standing(self) -> dict[str, str] | None:
        """Per adapter, the lowest standing of its parity verdicts over the families it ran
        (:mod:`rlcompare.parity.corrections`); None when no run records any (stores and bundles
        from before parity probes: nobody is then ranked by it)."""
        runs = self.attempted_runs
        if "parity_json" not in runs or runs["parity_json"].isna().all():
            return None
        found: dict[str, str] = {}
        latest = runs.drop_duplicates(["adapter", "workload_id"], keep="last")
        for adapter, text in zip(latest["adapter"], latest["parity_json"], strict=True):
            verdicts = json.loads(text) if isinstance(text, str) else text
            state = standing(verdicts if isinstance(verdicts, list) else None)
            if adapter not in found or STANDING_TIER[state] < STANDING_TIER[found[adapter]]:
                found[adapter] = state
        return {adapter: found.get(adapter, "unverified") for adapter in self.adapters}

    @cached_property
    def success_thresholds(self) -> dict[str, float]:
        """The success threshold per workload, where the workload sets one."""
        known = self.runs[["workload_id", "success_threshold"]].dropna().drop_duplicates("workload_id", keep="last")
        return dict(zip(known["workload_id"], known["success_threshold"].astype(float), strict=True))

    @cached_property
    def unrunnable(self) -> pd.DataFrame:
        """(adapter, workload_id, reason) for every pair without a single ok seed: refused up front,
        or every seed failed or timed out. Performance criteria report these cells as missing."""
        import pandas as pd

        runs = self.runs
        has_ok = (runs["status"] == "ok").groupby([runs["adapter"], runs["workload_id"]], sort=False).any()
        bad_pairs = has_ok[~has_ok].index
        if len(bad_pairs) == 0:
            return pd.DataFrame({column: [] for column in MISSING_COLUMNS})
        bad = runs.set_index(["adapter", "workload_id"]).loc[bad_pairs].reset_index()
        rows = []
        for (adapter, workload_id), group in bad.groupby(["adapter", "workload_id"], sort=True):
            rows.append((adapter, workload_id, _unrunnable_reason(group)))
        return pd.DataFrame(rows, columns=list(MISSING_COLUMNS))

    def missing_where_unrunnable(self, extra: Iterable[tuple[str, str, str]] = ()) -> pd.DataFrame:
        """:attr:`unrunnable` plus ``extra`` rows, as a missing frame."""
        import pandas as pd

        extra_frame = pd.DataFrame(list(extra), columns=list(MISSING_COLUMNS))
        if extra_frame.empty:
            return self.unrunnable
        return pd.concat([self.unrunnable, extra_frame], ignore_index=True)


def _unrunnable_reason(group: pd.DataFrame) -> str:
    statuses = group["status"].tolist()
    first_error = next((str(error) for error in group["error"].tolist() if isinstance(error, str) and error), "")
    if "unsupported" in statuses:
        return f"refused before running: {first_error}" if first_error else "refused before running"
    counts = ", ".join(f"{statuses.count(status)} {status}"
                       for status in ("invalid", "failed", "timeout", "interrupted") if status in statuses)
    reason = f"no valid seed ({counts})"
    if first_error:
        reason += f": {first_error.splitlines()[0][:160]}"
    return reason
