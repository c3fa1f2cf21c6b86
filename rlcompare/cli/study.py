"""``rlcompare study list|plan|run|report``: a published table beside our own measurement of it.

``plan`` and ``run`` go through the same planning, driver and store as ``rlcompare run`` (a study's
cell is a workload, ``STUDY--CELL``); ``report`` judges every published claim against the store
(:mod:`rlcompare.studies.verdicts`), writes ``verdicts.md`` and ``verdicts.json``, and the usual
report of the store beside them.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import shlex
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rlcompare.cli import report
from rlcompare.cli.execute import add_run_options, execute
from rlcompare.cli.options import name_list, positive_int, resolve_profile
from rlcompare.cli.progress import note
from rlcompare.cli.terminal import warn_plugin_errors
from rlcompare.errors import IncompatibleError, InvalidWorkloadError, UnknownNameError, UsageError
from rlcompare.plan.matrix import Plan, RefusedPair, build_plan
from rlcompare.plugins.manager import Plugins, build_plugin_manager
from rlcompare.reporting.escape import terminal
from rlcompare.spec.workload import workload_from_dict
from rlcompare.studies.loading import read_study_file
from rlcompare.studies.model import Study, Unplannable

#: The --store default of `study run` and `study report`, read as study-<the study's id>.db.
STORE_PLACEHOLDER = "study-NAME.db"


def _store(args: argparse.Namespace, study: Study) -> str:
    return f"study-{study.id}.db" if args.store == STORE_PLACEHOLDER else args.store


def add_commands(subparsers: Any) -> None:
    """Add ``study`` and its actions to the CLI's subparsers."""
    study = subparsers.add_parser("study", help="reproduce a published comparison table beside our measurement")
    actions = study.add_subparsers(dest="study_action", metavar="ACTION", parser_class=type(study))
    listing = actions.add_parser("list", help="the studies installed")
    listing.add_argument("--json", action="store_true", help="machine-readable output")
    for name, text in (("plan", "the runs a study needs"), ("run", "run a study's cells")):
        command = actions.add_parser(name, help=text)
        command.add_argument("name", metavar="NAME", help="a study id (`rlcompare study list`)")
        command.add_argument("--adapters", type=name_list, metavar="A,B",
                             help="only these of the study's adapters (default: every adapter its rows name)")
        command.add_argument("--cells", type=name_list, metavar="C,D",
                             help="only these of the study's cells (default: all; `rlcompare study plan NAME` lists them)")
        command.add_argument("--arms", type=name_list, metavar="ARM",
                             help="only these of the study's arms: canonical, native (default: the study's arms)")
        command.add_argument("--seeds", type=positive_int, metavar="N", help="seeds per cell (default: the study's)")
        command.add_argument("--json", action="store_true", help="machine-readable output")
        if name == "run":
            add_run_options(command, store_default=STORE_PLACEHOLDER)
    judged = actions.add_parser("report", help="published against measured, a verdict per claim")
    judged.add_argument("name", metavar="NAME", help="a study id (`rlcompare study list`)")
    report._scoring_arguments(judged)
    judged.set_defaults(store=STORE_PLACEHOLDER)
    judged.add_argument("--out", metavar="DIR", help="output folder (default reports/studies/NAME)")
    judged.add_argument("--json", action="store_true", help="print the verdicts as JSON")


def _study(plugins: Plugins, name: str) -> Study:
    """A registered study, or a study file (a path ending in .toml)."""
    if name.endswith(".toml"):
        return read_study_file(Path(name))
    return plugins.study(name)


@dataclass
class StudyPlan(Plan):
    """A study's run matrix, and its cells that cannot be planned at all (with why)."""

    unrunnable: list[Unplannable] = field(default_factory=list)


def study_plan(plugins: Plugins, study: Study, adapters: list[str] | None = None,
               seeds: int | None = None, cells: list[str] | None = None,
               arms: list[str] | None = None) -> StudyPlan:
    """The runs of ``study``'s arms (or only ``arms``): each cell's workload (or only ``cells``'s) with the adapters its
    published rows name (those not installed refused with the reason; in the native arm, each adapter's own
    recommended settings, or the pair refused with why it has none)."""
    catalogue = plugins.plan_catalogue()
    named = {row.adapter for row in study.published if row.adapter is not None}
    if adapters is not None:
        unknown = [adapter for adapter in adapters if adapter not in named]
        if unknown:
            raise UsageError(f"--adapters: study {study.id!r} names no row of adapter {unknown[0]!r} "
                             f"(its adapters: {', '.join(sorted(named)) or 'none'})")
    cell_ids = [cell.id for cell in study.cells]
    if cells is not None:
        unknown = [cell for cell in cells if cell not in cell_ids]
        if unknown:
            raise UsageError(f"--cells: study {study.id!r} has no cell {unknown[0]!r} (its cells: {', '.join(cell_ids)})")
    if arms is not None:
        unknown = [arm for arm in arms if arm not in study.arms]
        if unknown:
            raise UsageError(f"--arms: study {study.id!r} has no arm {unknown[0]!r} (its arms: {', '.join(study.arms)})")
    plan = Plan()
    unrunnable: list[Unplannable] = []
    for cell in study.cells:
        if cells is not None and cell.id not in cells:
            continue
        cell_adapters = [row.adapter for row in study.published
                         if row.cell == cell.id and row.adapter is not None
                         and (adapters is None or row.adapter in adapters)]
        cell_adapters = list(dict.fromkeys(cell_adapters))
        for arm in study.arms:
            if arms is not None and arm not in arms:
                continue
            try:
                workload = workload_from_dict(study.workload_dict(cell.id, arm), f"study {study.id}, cell {cell.id}",
                                              plugins.algorithms)
            except InvalidWorkloadError as error:  # e.g. a family no installed plugin registers
                unrunnable.append(Unplannable(cell.id, arm, str(error)))
                continue
            for adapter in cell_adapters:
                framework = (plugins.adapters[adapter].framework if adapter in plugins.adapters else
                             next(row.framework for row in study.published
                                  if row.adapter == adapter and row.cell == cell.id))
                if adapter not in plugins.adapters:
                    plan.refused.append(RefusedPair(workload, adapter, framework,
                                                    f"adapter {adapter!r} is not installed"))
                else:
                    try:
                        part = build_plan(catalogue, [workload], [adapter], seeds)
                    except IncompatibleError as error:
                        plan.refused.append(RefusedPair(workload, adapter, framework, str(error)))
                        continue
                    except (UnknownNameError, InvalidWorkloadError) as error:  # e.g. an environment not installed
                        unrunnable.append(Unplannable(cell.id, arm, str(error), adapter))
                        continue
                    plan.runs.extend(part.runs)
                    plan.refused.extend(part.refused)
    return StudyPlan(plan.runs, plan.refused, unrunnable)


def _list(plugins: Plugins, args: argparse.Namespace) -> int:
    studies = [plugins.studies[name] for name in sorted(plugins.studies)]
    if args.json:
        print(json.dumps([{"id": s.id, "title": s.title, "cells": len(s.cells), "published_rows": len(s.published),
                           "arms": s.arms, "seeds": s.seeds} for s in studies], indent=2))
        return 0
    for study in studies:
        print(terminal(f"{study.id}\t{study.title}\tcells={len(study.cells)}\trows={len(study.published)}"
                       f"\tarms={','.join(study.arms)}\tseeds={study.seeds}"))
    return 0


def _plan(plugins: Plugins, args: argparse.Namespace) -> int:
    study = _study(plugins, args.name)
    plan = study_plan(plugins, study, args.adapters, args.seeds, args.cells, args.arms)
    if args.json:
        print(json.dumps({"runs": [{"run_id": r.run_id, "workload": r.workload.id, "adapter": r.adapter_id,
                                    "seed": r.seed} for r in plan.runs],
                          "refused": [{"workload": r.workload.id, "adapter": r.adapter_id, "reason": r.reason}
                                      for r in plan.refused],
                          "unrunnable": [cell.to_dict() for cell in plan.unrunnable]}, indent=2))
        return 0
    for run in plan.runs:
        print(terminal(f"{run.run_id}\tworkload={run.workload.id}\tadapter={run.adapter_id}\tseed={run.seed}"
                       f"\tenv={run.workload.env}\talgorithm={run.workload.algorithm}\tsteps={run.workload.env_steps}"))
    for refused in plan.refused:
        print(terminal(f"refused\t{refused.workload.id}\t{refused.adapter_id}\t{refused.reason}"))
    for cell in plan.unrunnable:
        print(terminal(f"unrunnable\t{cell.describe()}"))
    print(f"# {len(plan.runs)} runs, {len(plan.refused)} refused pairs, {len(plan.unrunnable)} cells that cannot "
          "be planned", file=sys.stderr)
    return 0


def _run(plugins: Plugins, args: argparse.Namespace) -> int:
    study = _study(plugins, args.name)
    args.store = _store(args, study)
    plan = study_plan(plugins, study, args.adapters, args.seeds, args.cells, args.arms)
    for refused in plan.refused:
        note(f"refused: {refused.workload.id} x {refused.adapter_id}: {refused.reason}")
    for cell in plan.unrunnable:
        note(f"cannot be planned: {cell.describe()}")
    return execute(args, plugins, Plan(plan.runs, plan.refused),
                   resume_with=f"rlcompare study run {shlex.quote(args.name)} --store {shlex.quote(args.store)} --resume")


def _report(plugins: Plugins, args: argparse.Namespace) -> int:
    from rlcompare.store.sqlite_store import Store
    from rlcompare.studies.document import run_conditions, verdicts_json, verdicts_markdown
    from rlcompare.studies.measured import measured_from_store
    from rlcompare.studies.verdicts import STATUSES, judge

    study = _study(plugins, args.name)
    args.store = _store(args, study)
    out = Path(args.out or Path("reports") / "studies" / study.id)
    # every input first: nothing is written when one is bad
    report.check_output_folder(str(out), "--out")
    resolve_profile(args, plugins.criteria)
    args.format = list(report.DEFAULT_FORMATS)
    report.resolve_formats(args.format, plugins.report_formats)
    plan = study_plan(plugins, study)
    unplanned = {(refused.workload.id, refused.adapter_id): refused.reason for refused in plan.refused}
    with Store(args.store) as store:
        store.check_readable()
        measured = measured_from_store(study, store, plugins.scoring_catalogue(), unplanned, plan.unrunnable)
        conditions = run_conditions(study, store.runs_frame())
    verdicts = judge(study, measured, seed=args.seed or 0, reps=args.reps)
    out.mkdir(parents=True, exist_ok=True)
    document = verdicts_json(study, verdicts, args.store, conditions)
    (out / "verdicts.json").write_text(json.dumps(document, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    (out / "verdicts.md").write_text(verdicts_markdown(study, verdicts, args.store, conditions), encoding="utf-8")
    if args.json:
        print(json.dumps(document, indent=2, sort_keys=True))
    else:
        for verdict in verdicts:
            print(terminal(f"{verdict.arm}\t{verdict.cell}\t{verdict.claim}\tpublished {verdict.published}\t"
                           f"measured {verdict.measured or '-'}\t{verdict.status}: {verdict.reason}"))
        counts = {status: sum(v.status == status for v in verdicts) for status in STATUSES}
        print(", ".join(f"{n} {status}" for status, n in counts.items()), file=sys.stderr)
        print(terminal(out / "verdicts.md"))
    # the store's own report beside the verdicts (the same machinery as `rlcompare report`)
    args.out, args.summary = str(out), False
    # stdout carries the JSON alone under --json: the report's paths go to stderr then
    with contextlib.redirect_stdout(sys.stderr) if args.json else contextlib.nullcontext():
        report.write_store_report(args, plugins)
    return 0


def cmd_study(args: argparse.Namespace) -> int:
    if args.study_action is None:
        raise UsageError("study: give an action: list, plan, run or report")
    plugins = build_plugin_manager()
    warn_plugin_errors(plugins)
    return {"list": _list, "plan": _plan, "run": _run, "report": _report}[args.study_action](plugins, args)


COMMANDS = {"study": cmd_study}
