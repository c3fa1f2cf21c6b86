"""A report: the scoring matrix of a store, its inputs and citation, the store's runs and curves,
the registry entries of the compared frameworks, and the commands that reproduce it.

:func:`build_report` is the one path from a store to every output format: it scores the store
with :func:`rlcompare.reporting.inputs.score_store_recorded` (``score_store``: the numbers
``rlcompare score --json`` prints) and every table and figure is derived from that matrix or read
from the runs and curves; nothing is estimated a second time.
"""

from __future__ import annotations

import datetime as dt
import functools
import shlex
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rlcompare.harness.language_ids import LANGUAGE_TASK_IDS
from rlcompare.harness.measurement_cache import MeasurementCache
from rlcompare.registry.entries import FrameworkEntry
from rlcompare.reporting import tables
from rlcompare.reporting.catalogue import ReportingCatalogue
from rlcompare.reporting.citation import Citation, citation_of
from rlcompare.reporting.figure_model import adapter_styles, scaling_groups
from rlcompare.reporting.inputs import ScoringInputs, score_store_recorded
from rlcompare.scoring.profiles import WeightProfile
from rlcompare.spec.families import Families
from rlcompare.store.sqlite_store import Store

if TYPE_CHECKING:  # pandas, numpy and matplotlib load when a report is built, not when it is imported
    import pandas as pd

    from rlcompare.reporting.figure_model import RenderedFigure
    from rlcompare.scoring.engine import ScoreMatrix, ScoringOptions

#: Names of every tidy table, in the order CSV and JSON write them.
TABLES = ("overall", "criteria", "scores", "cells", "improvement", "performance_profiles", "curve_bands",
          "accuracy_bands",
          "excluded_runs", "imputed", "left_out", "workloads", "fidelity", "fidelity_summary", "parity",
          "effective_defaults", "schedule_differences", "runs", "curves", "versions", "hosts", "contention",
          "frameworks", "registry_evidence", "feature_matrix", "releases")


@dataclass
class Report:
    """Everything a format renders (see the module docstring)."""

    matrix: ScoreMatrix
    inputs: ScoringInputs
    runs: pd.DataFrame
    curves: pd.DataFrame
    entries: dict[str, FrameworkEntry]
    store: str
    #: The algorithm families the stored workloads name (where the registered plugins know them).
    families: Families = field(default_factory=dict)
    commands: list[str] = field(default_factory=list)
    generated: str = field(default_factory=lambda: dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC"))
    authors: tuple[str, ...] = ()
    _tables: dict[str, pd.DataFrame] = field(default_factory=dict, init=False, repr=False)
    #: Figures rendered so far, by file format (see :func:`rlcompare.reporting.plots.figures`).
    rendered_figures: dict[str, list[RenderedFigure]] = field(default_factory=dict, init=False, repr=False)

    # -- identity ---------------------------------------------------------------------------------

    @functools.cached_property
    def citation(self) -> Citation:
        return citation_of(self.inputs, self.matrix, self.authors)

    @property
    def digest(self) -> str:
        return self.citation.digest

    @property
    def version(self) -> str:
        return self.inputs.rlcompare_version

    @property
    def frameworks(self) -> list[str]:
        return sorted(set(self.matrix.frameworks.values()))

    # -- tables -----------------------------------------------------------------------------------

    def table(self, name: str) -> pd.DataFrame:
        return self._tables[name] if name in self._tables else self._build_table(name)

    def _build_table(self, name: str) -> pd.DataFrame:
        m = self.matrix
        builders = {
            "overall": lambda: tables.overall_table(m), "criteria": lambda: tables.criteria_table(m),
            "scores": lambda: tables.scores_table(m), "cells": lambda: tables.cells_table(m),
            "improvement": lambda: tables.improvement_table(m),
            "performance_profiles": lambda: tables.profiles_table(m),
            "curve_bands": lambda: tables.curve_bands(
                self.curves, self.runs.loc[self.runs["status"] == "ok", "run_id"].tolist(), m.options.reps,
                m.options.seed, m.options.confidence),
            "accuracy_bands": lambda: tables.accuracy_bands(
                self.curves, self.runs.loc[(self.runs["status"] == "ok") & self.runs["env_id"].isin(LANGUAGE_TASK_IDS),
                                           "run_id"].tolist(), m.options.reps, m.options.seed, m.options.confidence),
            "excluded_runs": lambda: tables.excluded_table(m), "imputed": lambda: tables.imputed_table(m),
            "left_out": lambda: tables.left_out_table(m), "workloads": lambda: tables.workloads_table(self.runs, self.families),
            "fidelity": lambda: tables.fidelity_table(self.runs),
            "fidelity_summary": lambda: tables.fidelity_summary(self.table("fidelity")),
            "parity": lambda: tables.parity_table(self.runs, self.families),
            "effective_defaults": lambda: tables.effective_defaults_table(self.runs),
            "schedule_differences": lambda: tables.schedule_differences_table(self.runs, self.families),
            "runs": lambda: tables.runs_table(self.runs), "curves": lambda: tables.curves_table(self.curves),
            "versions": lambda: tables.versions_table(self.runs), "hosts": lambda: tables.hosts_table(self.runs),
            "contention": lambda: tables.contention_table(self.runs),
            "frameworks": lambda: tables.taxonomy_table(self.frameworks, self.entries),
            "registry_evidence": lambda: tables.registry_evidence_table(self.frameworks, self.entries),
            "feature_matrix": lambda: tables.feature_table(self.frameworks, self.entries),
            "releases": lambda: tables.releases_table(m),
        }
        if name not in builders:
            raise KeyError(f"no table {name!r}; tables: {', '.join(TABLES)}")
        self._tables[name] = builders[name]()
        return self._tables[name]

    def all_tables(self) -> dict[str, pd.DataFrame]:
        return {name: self.table(name) for name in TABLES}

    # -- what figures and renderers share ---------------------------------------------------------

    @functools.cached_property
    def styles(self) -> dict[str, dict[str, Any]]:
        return adapter_styles(self.matrix.adapters)

    @functools.cached_property
    def thresholds(self) -> dict[str, float | None]:
        workloads = self.table("workloads")
        return {w: (None if t is None or t != t else float(t))
                for w, t in zip(workloads["workload"], workloads["success_threshold"], strict=True)}

    @functools.cached_property
    def ideal_throughput(self) -> dict[str, float]:
        """Mean recorded ideal throughput per workload (calibrated-cost workloads only)."""
        import pandas as pd

        ok = self.runs[self.runs["status"] == "ok"]
        ideal = pd.to_numeric(ok["ideal_throughput"], errors="coerce")
        means = ideal.groupby(ok["workload_id"]).mean().dropna()
        return {str(k): float(v) for k, v in means.items()}

    @functools.cached_property
    def scaling_groups(self) -> list[tuple[str, list[tuple[int, str]]]]:
        return scaling_groups(self.runs)


# -- building ------------------------------------------------------------------------------------------


def build_report(
    store_path: str | Path, catalogue: ReportingCatalogue, profile: WeightProfile, options: ScoringOptions | None = None,
    cache: MeasurementCache | None = None, *, out_dir: str | Path | None = None, formats: Sequence[str] = (),
    weights_file: str | None = None, authors: Sequence[str] = (),
) -> Report:
    """Score the store at ``store_path`` and gather what every format needs."""
    from rlcompare.scoring.engine import ScoringOptions

    options = options or ScoringOptions()
    with Store(store_path) as store:
        scored = score_store_recorded(store, catalogue.scoring, profile, options, cache=cache)
    report = Report(matrix=scored.matrix, inputs=scored.inputs, runs=scored.runs, curves=scored.curves,
                    entries=dict(catalogue.scoring.frameworks), store=str(store_path), families=catalogue.families,
                    authors=tuple(authors))
    report.commands = reproduce_commands(report, catalogue, str(store_path), out_dir, formats, weights_file)
    return report


def reproduce_commands(
    report: Report, catalogue: ReportingCatalogue, store: str, out_dir: str | Path | None, formats: Sequence[str],
    weights_file: str | None,
) -> list[str]:
    """The commands that produce this report again: run (a registered suite when the stored
    workloads are exactly one, else the workloads by id), score, report, bundle and verify."""
    runs = report.runs
    matrix = report.matrix
    q = shlex.quote
    # a pair refused up front is stored only when no adapters were named (naming an adapter that
    # cannot run a workload stops `run`): then every adapter was asked, and the command names none
    adapters = "" if (runs["status"] == "unsupported").any() else \
        f" --adapters {q(','.join(sorted(runs['adapter'].unique().tolist())))}"
    seeds = int(runs["seed"].max()) + 1 if len(runs) else 1
    stored = dict(zip(runs["workload_id"], runs["workload_digest"], strict=True))
    suite = next((name for name, s in sorted(catalogue.suites.items())
                  if set(s.workload_ids) == set(stored)
                  and all(w in catalogue.workloads and catalogue.workloads[w].digest == stored[w]
                          for w in s.workload_ids)),
                 None)
    commands = []
    if suite is not None:
        commands.append(f"rlcompare run --suite {q(suite)}{adapters} --seeds {seeds} --store {q(store)}")
    else:
        files = " ".join(q(f"{w}.toml") for w in sorted(stored))
        commands.append(f"rlcompare run --workload {files}{adapters} --seeds {seeds} --store {q(store)}"
                        "  # workload specs: the bundle's inputs.workloads")
    profile = f"--weights {q(weights_file)}" if weights_file else f"--profile {q(matrix.profile.name)}"
    options = ""
    if matrix.options.reps != type(matrix.options)().reps:
        options += f" --reps {matrix.options.reps}"
    if matrix.options.seed:
        options += f" --seed {matrix.options.seed}"
    commands.append(f"rlcompare score --store {q(store)} {profile}{options} --json")
    out = q(str(out_dir)) if out_dir is not None else "reports"
    chosen = ",".join(formats) if formats else "html,md"
    commands.append(f"rlcompare report --store {q(store)} --out {out} --format {q(chosen)} {profile}{options}")
    commands.append(f"rlcompare bundle --store {q(store)} --out rlcompare-bundle.json {profile}{options}")
    commands.append("rlcompare verify rlcompare-bundle.json")
    return commands
