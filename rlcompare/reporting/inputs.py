"""What a scoring matrix is computed from, as data: :class:`ScoringInputs`.

The inputs of a matrix are the store's runs and evaluation curves, the criteria (with the plugin
and distribution each came from), the weight profile, the scoring options and the rlcompare
version, plus the *measurements* of the development-facilitation criteria: those read the
installed packages, the adapter code and the registry of the machine that scored, not the store,
so the values they returned are recorded as they were and replayed when the inputs are scored
again. Performance criteria are computed again from the runs and curves.

:func:`score_store_recorded` scores a store through :func:`rlcompare.scoring.score_store` (the
path ``rlcompare score`` takes) and returns the matrix with its inputs; :func:`score_inputs`
scores inputs read back from a bundle; :meth:`ScoringInputs.digest` is the content digest a
citation carries: sha256 over the canonical serialization (:mod:`rlcompare.reporting.canonical`)
of everything above, so it does not depend on the order of runs or dict keys or on how a number
is spelled, and changes when any input changes.
"""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import rlcompare
from rlcompare.errors import RLCompareError
from rlcompare.harness.measurement_cache import MeasurementCache
from rlcompare.reporting.canonical import canonical, digest
from rlcompare.scoring.criteria import Criterion, CriterionResult, ScoringCatalogue, ScoringData
from rlcompare.scoring.profiles import WeightProfile
from rlcompare.store import records

if TYPE_CHECKING:  # numpy and pandas: loaded when a matrix is scored, not when a bundle is read
    import pandas as pd

    from rlcompare.scoring.engine import ScoreMatrix, ScoringOptions
    from rlcompare.store.sqlite_store import Store

#: Version of the inputs document (bumped when its shape changes).
INPUTS_VERSION = 1
#: Curve columns as stored, with their types (``returns_json`` is held as a list).
CURVE_TYPES: dict[str, str] = {
    "run_id": "TEXT", "env_steps": "INTEGER", "framework_env_steps": "INTEGER", "train_seconds": "REAL",
    "return_mean": "REAL", "return_std": "REAL", "episode_length_mean": "REAL", "returns_json": "JSON",
    "grid_steps": "INTEGER", "updates": "INTEGER",
}
#: Criteria of this category are recorded (measured on the scoring machine), others recomputed.
RECORDED_CATEGORY = "development"


class BundleError(RLCompareError):
    """Inputs or a bundle that cannot be read or scored here."""

    exit_status = 1


# -- recorded criterion results ------------------------------------------------------------------------


@dataclass
class RecordedResult:
    """A criterion's result as data: per-seed values, missing cells, labels and notes, or the
    failure it raised (``error``: exception type name and message)."""

    values: list[list[Any]] = field(default_factory=list)
    missing: list[list[str]] = field(default_factory=list)
    labels: list[list[str]] = field(default_factory=list)
    notes: list[list[str]] = field(default_factory=list)
    error: list[str] | None = None

    @classmethod
    def from_result(cls, result: Any) -> RecordedResult:
        if not isinstance(result, CriterionResult):
            return cls(error=["TypeError", f"compute returned {type(result).__name__}, not CriterionResult"])
        values = [[str(a), str(w), int(s), float(v)] for a, w, s, v in result.values.itertuples(index=False)]
        missing = [[str(a), str(w), str(r)] for a, w, r in result.missing.itertuples(index=False)]
        return cls(sorted(values, key=lambda row: (row[0], row[1], row[2])), sorted(missing),
                   sorted([[a, w, str(t)] for (a, w), t in result.labels.items()]),
                   sorted([[a, w, str(t)] for (a, w), t in result.notes.items()]))

    @classmethod
    def from_exception(cls, exc: BaseException) -> RecordedResult:
        return cls(error=[type(exc).__name__, str(exc)])

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> RecordedResult:
        return cls([[a, w, int(s), float(v)] for a, w, s, v in data.get("values", [])],
                   [list(row) for row in data.get("missing", [])], [list(row) for row in data.get("labels", [])],
                   [list(row) for row in data.get("notes", [])], data.get("error"))

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {"values": self.values, "missing": self.missing, "labels": self.labels,
                                "notes": self.notes}
        if self.error is not None:
            data["error"] = self.error
        return data

    def replay(self) -> CriterionResult:
        """The result again, or the same failure raised again."""
        if self.error is not None:
            name, message = self.error
            raise type(name, (Exception,), {})(message)
        return CriterionResult.build([tuple(row) for row in self.values], [tuple(row) for row in self.missing],
                                     {(a, w): t for a, w, t in self.labels}, {(a, w): t for a, w, t in self.notes})


def recording(criterion: Criterion, sink: dict[str, RecordedResult]) -> Criterion:
    """``criterion``, whose results (or failure) are kept in ``sink`` as they are computed."""

    def compute(data: ScoringData) -> CriterionResult:
        try:
            result = criterion.compute(data)
        except Exception as exc:
            sink[criterion.id] = RecordedResult.from_exception(exc)
            raise
        sink[criterion.id] = RecordedResult.from_result(result)
        return result

    return dataclasses.replace(criterion, compute=compute)


#: The declaration fields a recorded criterion is rebuilt from.
DECLARATION_FIELDS = ("title", "category", "unit", "direction", "method", "normalization", "per_workload",
                      "half_life")


def replayed(declaration: Mapping[str, Any], recorded: RecordedResult) -> Criterion:
    """A recorded criterion: its declaration as recorded, its result replayed. A declaration that is
    not a valid criterion's is a :class:`BundleError` naming it."""
    fields = {name: declaration[name] for name in DECLARATION_FIELDS if declaration.get(name) is not None}
    try:
        return Criterion(id=declaration["id"], compute=lambda _data: recorded.replay(), **fields)
    except (KeyError, TypeError, ValueError) as exc:
        raise BundleError(f"recorded criterion {declaration.get('id')!r}: {exc}") from None


# -- the inputs ----------------------------------------------------------------------------------------


@dataclass
class ScoringInputs:
    """Everything a matrix is computed from (see the module docstring), as canonical JSON data."""

    runs: list[dict[str, Any]]
    curves: list[dict[str, Any]]
    workloads: dict[str, Any]
    hosts: dict[str, Any]
    criteria: list[dict[str, Any]]
    measurements: dict[str, RecordedResult]
    profile: dict[str, Any]
    options: dict[str, Any]
    rlcompare_version: str

    def to_dict(self) -> dict[str, Any]:
        """The inputs document, in canonical form (what the digest is taken over)."""
        return canonical({
            "inputs_version": INPUTS_VERSION, "rlcompare_version": self.rlcompare_version,
            "runs": self.runs, "curves": self.curves, "workloads": self.workloads, "hosts": self.hosts,
            "criteria": self.criteria, "measurements": {k: v.to_dict() for k, v in self.measurements.items()},
            "profile": self.profile, "options": self.options,
        })

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ScoringInputs:
        version = data.get("inputs_version")
        if version != INPUTS_VERSION:
            raise BundleError(f"inputs_version: expected {INPUTS_VERSION}, got {version!r}")
        try:
            return cls(
                runs=list(data["runs"]), curves=list(data["curves"]), workloads=dict(data["workloads"]),
                hosts=dict(data["hosts"]), criteria=list(data["criteria"]),
                measurements={k: RecordedResult.from_dict(v) for k, v in data["measurements"].items()},
                profile=dict(data["profile"]), options=dict(data["options"]),
                rlcompare_version=str(data["rlcompare_version"]),
            )
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise BundleError(f"inputs: malformed ({type(exc).__name__}: {exc})") from None

    def digest(self) -> str:
        """``sha256:<hex>`` over the canonical inputs document."""
        return digest(self.to_dict(), is_canonical=True)

    # -- back to frames -------------------------------------------------------------------------

    def runs_frame(self) -> pd.DataFrame:
        """The runs as :meth:`rlcompare.store.sqlite_store.Store.runs_frame` returns them."""
        import pandas as pd

        types = records.column_types()
        rows = []
        for row in self.runs:
            full = dict(row)
            if "workload_json" not in full:
                full["workload_json"] = self.workloads.get(str(row.get("workload_digest")))
            if "host_json" not in full and row.get("host_fingerprint") is not None:
                full["host_json"] = self.hosts.get(str(row["host_fingerprint"]))
            rows.append({name: _typed(full.get(name), sql_type if not name.endswith("_json") else "JSON")
                         for name, (sql_type, _) in types.items()})
        frame = pd.DataFrame.from_records(rows, columns=list(types))
        return frame.sort_values(["workload_id", "adapter", "seed"], kind="stable").reset_index(drop=True)

    def curves_frame(self, runs: pd.DataFrame | None = None) -> pd.DataFrame:
        """The curves as :meth:`rlcompare.store.sqlite_store.Store.curves_frame` returns them."""
        import pandas as pd

        runs = self.runs_frame() if runs is None else runs
        rows = [{name: _typed(row.get(name), sql_type) for name, sql_type in CURVE_TYPES.items()} for row in self.curves]
        curves = pd.DataFrame.from_records(rows, columns=list(CURVE_TYPES))
        joined = curves.merge(runs[["run_id", "workload_id", "adapter", "framework", "seed"]], on="run_id")
        return joined.sort_values(["workload_id", "adapter", "seed", "env_steps"], kind="stable").reset_index(drop=True)

    def profile_object(self) -> WeightProfile:
        data = dict(self.profile)
        for name in ("categories", "weights"):  # canonical form writes 1.0 as 1
            data[name] = {key: float(value) for key, value in (data.get(name) or {}).items()}
        return WeightProfile(**data)

    def options_object(self) -> ScoringOptions:
        from rlcompare.scoring.engine import ScoringOptions

        defaults = ScoringOptions()
        return ScoringOptions(**{name: type(getattr(defaults, name))(value) for name, value in self.options.items()})


def _typed(value: Any, sql_type: str) -> Any:
    """A stored value as the store gives it back: numbers by column type, JSON columns as text."""
    if value is None:
        return None
    if sql_type == "JSON":
        return json.dumps(value, sort_keys=True)
    if sql_type == "REAL":
        return float(value)
    if sql_type == "INTEGER":
        return int(value)
    return value


def _plain(value: Any) -> Any:
    """A frame cell as plain data (NaN -> None, numpy scalars -> Python)."""
    if value is None:
        return None
    if isinstance(value, float) and math.isnan(value):
        return None
    item = getattr(value, "item", None)
    if callable(item):
        value = item()
        if isinstance(value, float) and math.isnan(value):
            return None
    return value


def _load_json(value: Any) -> Any:
    return json.loads(value) if isinstance(value, str) else value


def inputs_from_frames(
    runs: pd.DataFrame, curves: pd.DataFrame, criteria: Mapping[str, Criterion], catalogue: ScoringCatalogue,
    measurements: Mapping[str, RecordedResult], profile: WeightProfile, options: ScoringOptions,
) -> ScoringInputs:
    """The inputs of a matrix computed from these frames (see :func:`score_store_recorded`)."""
    json_columns = set(records.json_columns())
    run_rows: list[dict[str, Any]] = []
    workloads: dict[str, Any] = {}
    hosts: dict[str, Any] = {}
    names = list(runs.columns)
    for values in sorted(runs.itertuples(index=False, name=None), key=lambda v: str(v[names.index("run_id")])):
        row = {}
        for name, value in zip(names, values, strict=True):
            value = _plain(value)
            row[name] = canonical(_load_json(value)) if name in json_columns else value
        # one copy of each workload spec and host, unless a run disagrees with the first copy
        spec_key = str(row["workload_digest"])
        if row.get("workload_json") is not None and workloads.setdefault(spec_key, row["workload_json"]) == row["workload_json"]:
            del row["workload_json"]
        fingerprint = row.get("host_fingerprint")
        if fingerprint is not None and row.get("host_json") is not None and \
                hosts.setdefault(str(fingerprint), row["host_json"]) == row["host_json"]:
            del row["host_json"]
        run_rows.append(row)
    curve_names = [name for name in CURVE_TYPES if name in curves.columns]
    curve_rows = []
    for values in curves[curve_names].itertuples(index=False, name=None):
        row = {name: _plain(value) for name, value in zip(curve_names, values, strict=True)}
        row["returns_json"] = _load_json(row.get("returns_json"))
        curve_rows.append(row)
    curve_rows.sort(key=lambda row: (str(row["run_id"]), row["env_steps"]))
    declared = []
    for cid, criterion in criteria.items():
        origin = catalogue.criterion_origin(cid)
        declared.append({
            "id": cid, **{name: getattr(criterion, name) for name in DECLARATION_FIELDS},
            "description": criterion.describe(), "recorded": cid in measurements,
            "plugin": origin.plugin, "distribution": origin.distribution, "version": origin.version,
        })
    option_values = {name: getattr(options, name) for name in options.__dataclass_fields__}
    return ScoringInputs(run_rows, curve_rows, workloads, hosts, canonical(declared), dict(measurements),
                         canonical(profile.to_dict()), canonical(option_values), rlcompare.__version__)


# -- scoring -------------------------------------------------------------------------------------------


@dataclass
class ScoredStore:
    """A store's matrix, the inputs it was computed from, and the frames it was read from."""

    matrix: ScoreMatrix
    inputs: ScoringInputs
    runs: pd.DataFrame
    curves: pd.DataFrame


def score_store_recorded(
    store: Store, catalogue: ScoringCatalogue, profile: WeightProfile, options: ScoringOptions | None = None,
    cache: MeasurementCache | None = None,
) -> ScoredStore:
    """``score_store`` of ``store`` (the numbers ``rlcompare score`` prints), and its inputs: the
    development criteria are recorded as they compute."""
    from rlcompare.scoring.engine import ScoringOptions, score_store

    options = options or ScoringOptions()
    sink: dict[str, RecordedResult] = {}
    wrapped = {cid: recording(c, sink) if c.category == RECORDED_CATEGORY else c
               for cid, c in catalogue.criteria.items()}
    matrix = score_store(store, catalogue.with_criteria(wrapped), profile, options, cache=cache)
    matrix.criteria = {cid: catalogue.criteria[cid] for cid in matrix.criteria}
    runs, curves = store.runs_frame(), store.curves_frame()
    inputs = inputs_from_frames(runs, curves, matrix.criteria, catalogue, sink, profile, options)
    return ScoredStore(matrix, inputs, runs, curves)


def score_inputs(
    inputs: ScoringInputs, catalogue: ScoringCatalogue, profile: WeightProfile | None = None,
    options: ScoringOptions | None = None,
) -> ScoreMatrix:
    """The matrix of ``inputs``: performance criteria computed again by the installed plugins,
    development criteria replayed from their recorded measurements. ``profile`` and ``options``
    default to the recorded ones."""
    from rlcompare.scoring.engine import score, split_stale_runs

    criteria: dict[str, Criterion] = {}
    for declared in inputs.criteria:
        cid = declared["id"]
        if cid in inputs.measurements:
            criteria[cid] = replayed(declared, inputs.measurements[cid])
        elif cid in catalogue.criteria:
            criteria[cid] = catalogue.criteria[cid]
        else:
            where = declared.get("plugin") or "?"
            if declared.get("distribution"):
                where += f" ({declared['distribution']} {declared.get('version') or '?'})"
            raise BundleError(f"criterion {cid!r} (plugin {where}) is not installed here; it cannot be computed again")
    # the store's runs as the matrix was scored from them: runs of an older spec of a workload kept
    # apart, a refusal record of a pair that has run since left out (score_store does the same)
    runs, stale = split_stale_runs(inputs.runs_frame())
    curves = inputs.curves_frame(runs)
    data = ScoringData(runs, curves=curves, catalogue=catalogue.with_criteria(criteria), cache=MeasurementCache(None),
                       stale_runs=stale)
    matrix = score(data, criteria, profile or inputs.profile_object(), options or inputs.options_object())
    matrix.criteria = {cid: catalogue.criteria.get(cid, criteria[cid]) for cid in matrix.criteria}
    return matrix
