"""The study file: a published table as data, and the cells rlcompare runs to measure it again.

A study names its publication (:class:`Publication`: what it states about its hardware, versions and
statistic, each with evidence as the registry keeps it), the cells it measures (:class:`Cell`: one
environment, algorithm and budget each, run in the canonical arm, the native arm or both) and the
published rows (:class:`PublishedRow`: one framework's figure for one cell and metric, with its
statistic and a verbatim excerpt of the source). Validation names the offending field.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from rlcompare.registry.facts import Evidence

SCHEMA_VERSION = 1
#: ``canonical``: the workload's identical settings for every adapter; ``native``: each adapter's own
#: recommended configuration for that environment and algorithm, its source recorded.
Arm = Literal["canonical", "native"]
ARMS: tuple[Arm, ...] = ("canonical", "native")
#: What a published row measures, named as the criterion that measures it here. Seconds depend on the
#: hardware: between publications they are compared as ratios between frameworks, never as seconds.
Metric = Literal["final_return", "time_to_threshold_steps", "time_to_threshold_seconds"]
HARDWARE_BOUND: frozenset[str] = frozenset({"time_to_threshold_seconds"})
METRIC_UNITS: dict[str, str] = {"final_return": "return", "time_to_threshold_steps": "env steps",
                                 "time_to_threshold_seconds": "s"}
_ID = re.compile(r"^[a-z0-9][a-z0-9-]{0,62}$")


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


def _identifier(value: str, what: str) -> str:
    if not _ID.match(value):
        raise ValueError(f"{what} {value!r} must be lower case letters, digits and '-' (at most 63)")
    return value


def _finite_number(value: float | None) -> float | None:
    if value is not None and not math.isfinite(value):
        raise ValueError("must be a finite number")
    return value


class Publication(_Strict):
    """What the publication states about its own measurement, each statement with its evidence."""

    title: str = Field(min_length=1, max_length=300)
    #: The hardware the source states, verbatim in spirit, or "unknown".
    hardware: str = Field(min_length=1, max_length=500)
    #: The library versions the source states, or "unknown".
    versions: str = Field(min_length=1, max_length=500)
    #: The statistic its figures are: e.g. "mean +- std over 5 seeds" or "one run, mean over 10 episodes".
    statistic: str = Field(min_length=1, max_length=500)
    notes: str = Field("", max_length=4_000)
    evidence: list[Evidence] = Field(min_length=1)


class Cell(_Strict):
    """One environment, algorithm and budget the study runs (in each of its arms)."""

    id: str
    env: str = Field(min_length=1, max_length=200)
    algorithm: str = Field(min_length=1, max_length=64)
    env_steps: int = Field(gt=0)
    #: The published table's threshold (time-to-threshold metrics need one).
    success_threshold: float | None = None
    #: Canonical settings beyond the family's defaults (the canonical arm's workload).
    hyperparameters: dict[str, Any] = Field(default_factory=dict)
    network: dict[str, Any] = Field(default_factory=dict)
    parallelism: dict[str, Any] = Field(default_factory=dict)
    evaluation: dict[str, Any] = Field(default_factory=dict)
    #: End each run at its first evaluation at the threshold (a seconds-to-solve table needs nothing after).
    stop_when_solved: bool = False
    #: How the cell departs from the publication's setting (an environment version, a threshold rule).
    note: str = Field("", max_length=2_000)

    @field_validator("id")
    @classmethod
    def _id(cls, value: str) -> str:
        return _identifier(value, "cell id")

    _finite = field_validator("success_threshold")(_finite_number)

    @model_validator(mode="after")
    def _stop_needs_a_threshold(self) -> Cell:
        if self.stop_when_solved and self.success_threshold is None:
            raise ValueError(f"cell {self.id!r} field 'stop_when_solved': needs success_threshold")
        return self


class PublishedRow(_Strict):
    """One framework's published figure for one cell and metric, with its statistic and source."""

    cell: str
    #: The framework as the source names it, its registry id where it has one (``rlcompare frameworks``).
    framework: str = Field(min_length=1, max_length=64)
    #: The adapter that measures it here; None where no adapter runs the framework (not comparable).
    adapter: str | None = Field(None, min_length=1, max_length=64)
    #: How the source names it, e.g. "Stable-Baselines PPO2".
    label: str = Field(min_length=1, max_length=200)
    metric: Metric
    mean: float
    #: Standard deviation the source gives with the mean (None: none given).
    std: float | None = Field(None, ge=0)
    #: What the standard deviation is over: the seeds (runs) behind the mean, or the evaluation
    #: episodes of each run (as a benchmark of one trained agent reports it).
    std_over: Literal["seeds", "episodes"] = "seeds"
    #: How many seeds (training runs) the mean is over; None: not stated. One: a single run.
    n: int | None = Field(None, ge=1)
    #: How many evaluation episodes the mean is over, where the source says (with ``std_over = "episodes"``).
    episodes: int | None = Field(None, ge=1)
    #: 0 where the source prints the population deviation of its seeds (divided by n), 1 for the
    #: sample deviation (divided by n - 1, the usual).
    std_ddof: Literal[0, 1] = 1
    evidence: list[Evidence] = Field(min_length=1)

    @model_validator(mode="after")
    def _statistic(self) -> PublishedRow:
        if self.std is not None and self.std_over == "episodes" and self.episodes is None:
            raise ValueError("std_over = 'episodes' needs 'episodes': how many the deviation is over")
        if self.std is not None and self.std_over == "seeds" and self.n == 1:
            raise ValueError("a standard deviation over the seeds of one run: with n = 1 give std_over = 'episodes'")
        return self

    _finite = field_validator("mean", "std")(_finite_number)


class Study(_Strict):
    """A published comparison and the cells that measure it again."""

    schema_version: Literal[1] = SCHEMA_VERSION
    id: str
    title: str = Field(min_length=1, max_length=300)
    description: str = Field("", max_length=4_000)
    seeds: int = Field(ge=1, le=100)
    arms: list[Arm] = Field(min_length=1)
    publication: Publication
    cells: list[Cell] = Field(min_length=1)
    published: list[PublishedRow] = Field(min_length=1)

    @field_validator("id")
    @classmethod
    def _id(cls, value: str) -> str:
        return _identifier(value, "study id")

    @field_validator("arms")
    @classmethod
    def _arms(cls, value: list[Arm]) -> list[Arm]:
        if len(set(value)) != len(value):
            raise ValueError("an arm is listed twice")
        return value

    @model_validator(mode="after")
    def _consistent(self) -> Study:
        cells = [cell.id for cell in self.cells]
        twice = sorted({cell for cell in cells if cells.count(cell) > 1})
        if twice:
            raise ValueError(f"cell ids must be unique: {', '.join(twice)}")
        by_id = {cell.id: cell for cell in self.cells}
        seen: set[tuple[str, str, str]] = set()
        for index, row in enumerate(self.published):
            where = f"published.{index}"
            if row.cell not in by_id:
                raise ValueError(f"{where}.cell: no cell {row.cell!r} (cells: {', '.join(cells)})")
            if row.metric != "final_return" and by_id[row.cell].success_threshold is None:
                raise ValueError(f"{where}.metric: {row.metric} needs the cell's success_threshold")
            for key in ((row.cell, row.framework, row.metric), (row.cell, f"adapter {row.adapter}", row.metric)):
                if key[1] == "adapter None":
                    continue
                if key in seen:
                    name = key[1] if key[1].startswith("adapter ") else f"framework {key[1]!r}"
                    raise ValueError(f"{where}: a second row for {name}, cell {row.cell!r}, metric {row.metric} "
                                     "(each is measured once)")
                seen.add(key)
        return self

    def cell(self, cell_id: str) -> Cell:
        return next(cell for cell in self.cells if cell.id == cell_id)

    def workload_id(self, cell_id: str, arm: Arm) -> str:
        """The id of the workload a cell runs as in an arm: ``STUDY--CELL`` (canonical) or
        ``STUDY--CELL--native``."""
        return f"{self.id}--{cell_id}" + ("--native" if arm == "native" else "")

    def workload_dict(self, cell_id: str, arm: Arm = "canonical") -> dict[str, Any]:
        """The workload spec of a cell in an arm (``rlcompare.spec.workload.workload_from_dict``)."""
        cell = self.cell(cell_id)
        spec: dict[str, Any] = {
            "id": self.workload_id(cell_id, arm), "env": cell.env, "algorithm": cell.algorithm,
            "env_steps": cell.env_steps, "seeds": self.seeds, "hyperparameters": dict(cell.hyperparameters),
            "description": f"study {self.id}, cell {cell.id} ({arm} arm)",
        }
        if cell.success_threshold is not None:
            spec["success_threshold"] = cell.success_threshold
        if cell.stop_when_solved:
            spec["stop_when_solved"] = True
        if arm == "native":  # each adapter's own settings, resolved when the matrix is planned
            spec["settings"] = "native"
        for section in ("network", "parallelism", "evaluation"):
            if getattr(cell, section):
                spec[section] = dict(getattr(cell, section))
        return spec


@dataclass(frozen=True)
class Unplannable:
    """A cell of a study that cannot be planned in an arm, for every adapter (``adapter`` None: its
    workload is invalid here, e.g. a family no installed plugin registers) or for one (e.g. its
    environment is not installed), and why."""

    cell: str
    arm: Arm
    reason: str
    adapter: str | None = None

    def concerns(self, cell: str, arm: str, adapter: str) -> bool:
        """Whether this explains why ``adapter`` has no run of ``cell`` in ``arm``."""
        return self.cell == cell and self.arm == arm and self.adapter in (None, adapter)

    def describe(self) -> str:
        who = "" if self.adapter is None else f" with {self.adapter}"
        return f"cell {self.cell} ({self.arm} arm){who}: {self.reason}"

    def to_dict(self) -> dict[str, str | None]:
        return {"cell": self.cell, "arm": self.arm, "adapter": self.adapter, "reason": self.reason}
