"""Reports built from a results store: per workload, each adapter's final return with its 95%
confidence interval over seeds, training throughput, times and memory, and what failed or was
refused with the reason."""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from rlcompare.errors import UsageError
from rlcompare.scoring.bootstrap import Estimate
from rlcompare.scoring.bootstrap import mean_interval as mean_with_ci
from rlcompare.store import Store

REPORT_FORMATS = ("md",)


@dataclass
class AdapterSummary:
    adapter: str
    framework: str
    runs_ok: int
    runs_total: int
    final_return: Estimate
    throughput: Estimate
    startup_seconds: Estimate
    training_seconds: Estimate
    evaluation_seconds: Estimate
    cpu_seconds: Estimate
    peak_rss_mib: Estimate
    steps_harness: int | None
    steps_framework: int | None
    solved_seeds: int | None
    fidelity_counts: dict[str, int]
    not_exact: list[dict[str, Any]]
    versions: dict[str, Any]
    ideal_throughput: float | None = None
    step_gaps: list[tuple[str, int, int]] = field(default_factory=list)
    failures: list[tuple[str, str, str]] = field(default_factory=list)


@dataclass
class WorkloadSection:
    workload_id: str
    workload: dict[str, Any]
    adapters: list[AdapterSummary]
    refused: list[tuple[str, str]]


def _estimate(frame: pd.DataFrame, column: str, scale: float = 1.0) -> Estimate:
    return mean_with_ci([value * scale for value in frame[column].dropna().tolist()])


def summarize(runs: pd.DataFrame) -> list[WorkloadSection]:
    """Group stored runs into per-workload, per-adapter summaries."""
    sections = []
    for workload_id, of_workload in runs.groupby("workload_id", sort=True):
        workload = json.loads(of_workload["workload_json"].iloc[-1])
        refused = [
            (row.adapter, row.error or "")
            for row in of_workload[of_workload["status"] == "unsupported"].itertuples()
        ]
        summaries = []
        attempted = of_workload[of_workload["status"] != "unsupported"]
        for adapter, of_adapter in attempted.groupby("adapter", sort=True):
            ok = of_adapter[of_adapter["status"] == "ok"]
            fidelity = json.loads(ok["fidelity_json"].iloc[-1]) if len(ok) and ok["fidelity_json"].iloc[-1] else []
            counts: dict[str, int] = {}
            for item in fidelity:
                counts[item["status"]] = counts.get(item["status"], 0) + 1
            threshold = workload.get("success_threshold")
            solved = None
            if threshold is not None and len(ok):
                solved = int((ok["final_return_mean"] >= threshold).sum())
            versions = json.loads(ok["versions_json"].iloc[-1]) if len(ok) and ok["versions_json"].iloc[-1] else {}
            summaries.append(
                AdapterSummary(
                    adapter=str(adapter),
                    framework=str(of_adapter["framework"].iloc[0]),
                    runs_ok=len(ok),
                    runs_total=len(of_adapter),
                    final_return=_estimate(ok, "final_return_mean"),
                    throughput=_estimate(ok, "throughput"),
                    startup_seconds=_estimate(ok, "startup_seconds"),
                    training_seconds=_estimate(ok, "training_seconds"),
                    evaluation_seconds=_estimate(ok, "evaluation_seconds"),
                    cpu_seconds=_estimate(ok, "cpu_seconds"),
                    peak_rss_mib=_estimate(ok, "peak_rss_bytes", 1 / 2**20),
                    steps_harness=int(ok["env_steps"].mean()) if len(ok) else None,
                    steps_framework=int(ok["framework_env_steps"].mean())
                    if len(ok) and ok["framework_env_steps"].notna().all() else None,
                    solved_seeds=solved,
                    fidelity_counts=counts,
                    not_exact=[item for item in fidelity if item["status"] != "exact"],
                    versions=versions,
                    ideal_throughput=float(ok["ideal_throughput"].mean())
                    if len(ok) and ok["ideal_throughput"].notna().any() else None,
                    step_gaps=[
                        (row.run_id, int(row.step_count_gap), int(row.step_count_tolerance))
                        for row in ok.itertuples()
                        if pd.notna(row.step_count_gap) and row.step_count_gap > row.step_count_tolerance
                    ],
                    failures=[
                        (row.run_id, row.status, row.error or "")
                        for row in of_adapter[of_adapter["status"] != "ok"].itertuples()
                    ],
                )
            )
        sections.append(WorkloadSection(str(workload_id), workload, summaries, refused))
    return sections


def _hosts(runs: pd.DataFrame) -> list[dict[str, Any]]:
    hosts = {}
    for text in runs["host_json"].dropna():
        host = json.loads(text)
        hosts[host.get("fingerprint")] = host
    return list(hosts.values())


#: Registry facts shown for the frameworks a report covers (the survey's taxonomy, and the licence).
FRAMEWORK_COLUMNS = ("backend", "architecture", "simulation_parallelism", "computing_parallelism",
                     "synchronization", "licence")


def framework_rows(framework_ids: Sequence[str]) -> list[dict[str, str]]:
    """The registry's taxonomy for each framework in a report; a framework the registry lacks says so."""
    from rlcompare.plugins import build_plugin_manager
    from rlcompare.registry import entries_from_registered, registry_frame

    entries, _ = entries_from_registered(build_plugin_manager().frameworks)
    frame = registry_frame([entries[key] for key in framework_ids if key in entries])
    rows = []
    for key in framework_ids:
        if key not in frame.index:
            rows.append({"id": key, "name": "(not in the registry)", **{c: "-" for c in FRAMEWORK_COLUMNS}})
            continue
        row = frame.loc[key]
        rows.append({"id": key, "name": str(row["name"]),
                     **{c: ", ".join(row[c]) if isinstance(row[c], list) else str(row[c]) for c in FRAMEWORK_COLUMNS}})
    return rows


def render_markdown(store: Store) -> str:
    """The Markdown report of everything in ``store``."""
    from jinja2 import Environment, PackageLoader, StrictUndefined

    import rlcompare

    runs = store.runs_frame()
    environment = Environment(
        loader=PackageLoader("rlcompare", "templates"), undefined=StrictUndefined,
        trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=True,
    )
    template = environment.get_template("report.md.j2")
    return template.render(
        version=rlcompare.__version__,
        generated=dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        store=str(store.path),
        sections=summarize(runs),
        hosts=_hosts(runs),
        frameworks=framework_rows(sorted(runs["framework"].unique())),
        framework_columns=FRAMEWORK_COLUMNS,
        run_count=len(runs[runs["status"] != "unsupported"]),
    )


def write_reports(store: Store, out_dir: str | Path, formats: Sequence[str]) -> list[Path]:
    """Write each requested format under ``out_dir``; return the files written."""
    unknown = [name for name in formats if name not in REPORT_FORMATS]
    if unknown:
        raise UsageError(f"unknown report format {unknown[0]!r}; available: {', '.join(REPORT_FORMATS)}")
    out = Path(out_dir)
    written = []
    renderers = {"md": ("rlcompare-report.md", render_markdown)}
    contents = {name: renderers[name][1](store) for name in formats}  # render all before writing any
    out.mkdir(parents=True, exist_ok=True)
    for name, text in contents.items():
        path = out / renderers[name][0]
        path.write_text(text, encoding="utf-8")
        written.append(path)
    return written
