"""The criterion contract: what a criterion declares, what it receives and what it returns.

A criterion is an object registered through ``rlcompare_register_criteria`` with
``register.add_criterion(Criterion(...))``. It declares an id, a title, a category (performance or
development facilitation), a unit, a direction (is higher or lower better), its method in one
paragraph, and how its values are normalized for scoring. Its ``compute`` function receives a
:class:`ScoringData` (the store's runs and curves as pandas frames, the plugins, a measurement cache)
and returns a :class:`CriterionResult`: tidy frames of per-seed values and of missing cells with
their reasons. The scoring engine (:mod:`rlcompare.scoring`) turns those into
:class:`CriterionValue` cells with point estimates and confidence intervals.

This module imports neither numpy nor pandas at import time: listing criteria imports every
criterion module and must stay light.
"""

from __future__ import annotations

import json
import math
import os
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pandas as pd

    from rlcompare.plugins import Plugins

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


class MeasurementCache:
    """Expensive measurements (import time, API introspection, install size) kept in a JSON file,
    keyed by what determines them (distribution, version, Python), so scoring again is quick.

    The default file lives in the user's cache directory (``$RLCOMPARE_CACHE_DIR``, else
    ``$XDG_CACHE_HOME/rlcompare``, else ``~/.cache/rlcompare``), never next to a store. With
    ``refresh`` every key is measured again once (``rlcompare score --remeasure``).
    """

    def __init__(self, path: Path | None, refresh: bool = False, log: Callable[[str], None] | None = None) -> None:
        self.path = path
        self.refresh = refresh
        #: Told of each measurement before it is made (the first scoring on a machine times imports
        #: in fresh interpreters for a minute or two: the command says so instead of going quiet).
        self.log = log
        self._data: dict[str, Any] | None = None
        self._fresh: set[str] = set()

    @staticmethod
    def default_path() -> Path:
        from rlcompare.user_cache import cache_dir

        return cache_dir() / "measurements.json"

    @classmethod
    def default(cls, refresh: bool = False, log: Callable[[str], None] | None = None) -> MeasurementCache:
        return cls(cls.default_path(), refresh, log)

    def _load(self) -> dict[str, Any]:
        if self._data is None:
            self._data = {}
            if self.path is not None and self.path.is_file():
                try:
                    loaded = json.loads(self.path.read_text(encoding="utf-8"))
                    self._data = loaded if isinstance(loaded, dict) else {}
                except (OSError, ValueError):
                    self._data = {}  # a damaged cache is only a slower run, never an error
        return self._data

    def get_or_compute(self, key: str, compute: Callable[[], Any], what: str | None = None,
                       keep: Callable[[Any], bool] | None = None) -> Any:
        """The value kept under ``key``, else ``compute()``'s, kept unless ``keep`` says no (an error
        worth retrying); ``what`` names the measurement for the log (default: the key's first two parts)."""
        data = self._load()
        if key not in data or (self.refresh and key not in self._fresh):
            if self.log is not None:
                if what is None:
                    kind, _, rest = key.partition("|")
                    what = f"{kind} of {rest.split('|')[0][:60]}"
                where = "" if self.path is None else f"; kept in {self.path}"
                self.log(f"measuring {what} (once{where})")
            value = compute()
            if keep is not None and not keep(value):
                return value
            data[key] = value
            self._fresh.add(key)
            self._save()
        return data[key]

    def _save(self) -> None:
        if self.path is None:
            return
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            partial = self.path.with_name(self.path.name + f".{os.getpid()}.tmp")
            partial.write_text(json.dumps(self._data, indent=1, sort_keys=True), encoding="utf-8")
            os.replace(partial, self.path)
        except OSError:
            pass  # an unwritable cache only means measuring again next time


class ScoringData:
    """What every criterion's ``compute`` receives; frames are loaded and derived once, on demand."""

    def __init__(
        self,
        runs: pd.DataFrame,
        curves: Callable[[], pd.DataFrame] | pd.DataFrame | None = None,
        plugins: Plugins | None = None,
        cache: MeasurementCache | None = None,
        stale_runs: pd.DataFrame | None = None,
    ) -> None:
        self.runs = runs
        #: Runs of an older spec of a workload (another digest), left out of every criterion.
        self.stale_runs = stale_runs
        self._curves = curves
        self.plugins = plugins
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
