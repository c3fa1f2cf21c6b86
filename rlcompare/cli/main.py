"""The ``rlcompare`` command line: list, doctor, plan, run (and the commands of score_cli,
registry_cli and reporting.cli).

Exit status: 0 all well; 1 some runs failed (the rest stored); 2 bad usage or invalid input, with
one line naming the offender and nothing written.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from typing import Any

import rlcompare
from rlcompare.cli import env, frameworks, parity, report, score, show, study
from rlcompare.cli.execute import add_run_options, execute, warn_off_grid
from rlcompare.cli.options import (
    Parser,
    name_list,
    positive_int,
)
from rlcompare.cli.plan_view import grain_text, pair_views
from rlcompare.cli.terminal import terminal_console, visible_output, warn_plugin_errors
from rlcompare.errors import RLCompareError
from rlcompare.execution.backend import cpus_needed
from rlcompare.harness.host import distribution_versions, host_info, usable_cpus
from rlcompare.plan.matrix import Plan, build_plan, resolve_workloads
from rlcompare.plan.releases import parse_versions, with_releases
from rlcompare.plugins.manager import Plugins, build_plugin_manager
from rlcompare.pyenvs.manager import isolation_reason


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(prog="rlcompare", description="Compare RL frameworks on identical workloads.")
    parser.add_argument("--version", action="store_true", help="print the version and exit")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=Parser)

    listing = commands.add_parser("list", help="list adapters, criteria, workloads, suites or report formats")
    listing.add_argument("kind", choices=(
        "adapters", "algorithms", "criteria", "workloads", "suites", "formats", "backends"))
    listing.add_argument("--json", action="store_true", help="machine-readable output")

    doctor = commands.add_parser("doctor", help="which adapters import, library versions, host")
    doctor.add_argument("--json", action="store_true", help="machine-readable output")

    for name, text in (("plan", "print the run matrix"), ("run", "execute the run matrix")):
        command = commands.add_parser(name, help=text)
        command.add_argument("--suite", help="a built-in or plugin suite (see `rlcompare list suites`)")
        command.add_argument("--workload", nargs="+", default=[], metavar="FILE|ID",
                             help="workload TOML files, or ids of registered workloads (`rlcompare list workloads`)")
        command.add_argument("--adapters", type=name_list, metavar="A,B", help="adapters to run (default: all)")
        command.add_argument("--seeds", type=positive_int, metavar="N", help="seeds per workload (0..N-1)")
        command.add_argument("--versions", action="append", default=[], metavar="ADAPTER=V1,V2",
                             help="run ADAPTER's workloads against each listed release of its framework, each "
                                  "in an environment of its own, stored as ADAPTER@VERSION (repeatable)")
        command.add_argument("--json", action="store_true", help="machine-readable output")
        if name == "run":
            add_run_options(command)

    for group in (frameworks, env, parity, score, report, show, study):
        group.add_commands(commands)
    return parser


def _print_json(data: Any) -> None:
    print(json.dumps(data, indent=2, sort_keys=True, default=str))


def _table(title: str, columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> None:
    from rich.table import Table

    table = Table(title=title, show_lines=False)
    for column in columns:
        table.add_column(column)
    for row in rows:
        table.add_row(*("" if cell is None else str(cell) for cell in row))
    terminal_console(width=160).print(table)


# -- commands ----------------------------------------------------------------------------------------


def cmd_list(args: argparse.Namespace) -> int:
    plugins = build_plugin_manager()
    warn_plugin_errors(plugins)
    if args.kind == "adapters":
        rows = []
        for adapter_id, adapter_class in sorted(plugins.adapters.items()):
            adapter = adapter_class()
            capabilities = adapter.capabilities()
            origin = plugins.origin("adapter", adapter_id)
            rows.append({
                "id": adapter_id,
                "framework": adapter.framework,
                "summary": adapter.summary,
                "plugin": origin.plugin,
                "distribution": origin.distribution,
                "version": origin.version,
                "capabilities": capabilities.to_dict(),
            })
        if args.json:
            _print_json(rows)
        else:
            _table("adapters", ("id", "framework", "algorithms", "plugin", "summary"),
                   [(r["id"], r["framework"], ",".join(r["capabilities"]["algorithms"]),
                     f"{r['plugin']} ({r['distribution'] or '?'} {r['version'] or ''})".strip(), r["summary"])
                    for r in rows])
    elif args.kind == "workloads":
        data = [workload.to_dict() for _, workload in sorted(plugins.workloads.items())]
        if args.json:
            _print_json(data)
        else:
            _table("workloads", ("id", "env", "algorithm", "env steps", "seeds", "description"),
                   [(w["id"], w["env"], w["algorithm"], w["env_steps"], w["seeds"], w["description"]) for w in data])
    elif args.kind == "algorithms":
        rows = []
        for name, family in sorted(plugins.algorithms.items()):
            origin = plugins.origin("algorithm", name)
            rows.append({**family.to_dict(), "plugin": origin.plugin, "distribution": origin.distribution,
                         "version": origin.version})
        if args.json:
            _print_json(rows)
        else:
            _table("algorithms", ("name", "kind", "action spaces", "budget per", "plugin", "description"),
                   [(r["name"], r["kind"], ",".join(r["action_spaces"]), r["granularity"],
                     f"{r['plugin']} ({r['distribution'] or '?'} {r['version'] or ''})", r["description"])
                    for r in rows])
    elif args.kind == "formats":
        return report.list_formats(plugins, args.json)
    elif args.kind == "backends":
        rows = []
        for name, backend_class in sorted(plugins.backends.items()):
            origin = plugins.origin("backend", name)
            rows.append({"id": name, "description": backend_class.description, "plugin": origin.plugin,
                         "distribution": origin.distribution, "version": origin.version})
        if args.json:
            _print_json(rows)
        else:
            _table("backends", ("id", "description", "plugin"),
                   [(r["id"], r["description"], f"{r['plugin']} ({r['distribution'] or '?'} {r['version'] or ''})")
                    for r in rows])
    elif args.kind == "suites":
        data = [{"name": s.name, "workloads": list(s.workload_ids), "description": s.description}
                for _, s in sorted(plugins.suites.items())]
        if args.json:
            _print_json(data)
        else:
            _table("suites", ("name", "workloads", "description"),
                   [(s["name"], ", ".join(s["workloads"]), s["description"]) for s in data])
    else:
        data = [
            {"id": c.id, "title": c.title, "category": c.category, "unit": c.unit, "direction": c.direction,
             "method": c.method, "normalization": c.normalization}
            for _, c in sorted(plugins.criteria.items())
        ]
        if args.json:
            _print_json(data)
        else:
            _table("criteria", ("id", "title", "category", "unit", "direction"),
                   [(c["id"], c["title"], c["category"], c["unit"], c["direction"]) for c in data])
    return 0


def cmd_doctor(args: argparse.Namespace) -> int:
    import importlib
    import time

    plugins = build_plugin_manager()
    adapters = []
    for adapter_id, adapter_class in sorted(plugins.adapters.items()):
        adapter = adapter_class()
        isolated = isolation_reason(adapter_class)
        entry: dict[str, Any] = {"id": adapter_id, "framework": adapter.framework, "importable": True,
                                 "error": None, "import_seconds": None, "own_environment": isolated}
        if isolated is not None:
            # it never runs here: its framework lives in its own environment (`rlcompare env build ID`)
            entry.update(importable=None, versions={})
            adapters.append(entry)
            continue
        if adapter.import_name:
            started = time.perf_counter()
            try:
                importlib.import_module(adapter.import_name)
                entry["import_seconds"] = round(time.perf_counter() - started, 3)
            except Exception as exc:  # noqa: BLE001 - doctor reports every failure
                entry.update(importable=False, error=f"{type(exc).__name__}: {exc}")
        entry["versions"] = distribution_versions(adapter.distributions)
        adapters.append(entry)
    report = {
        "host": host_info(),
        "adapters": adapters,
        "plugin_errors": [str(error) for error in plugins.errors],
    }
    if args.json:
        _print_json(report)
        return 0
    host = report["host"]
    print(f"host {host['fingerprint']}: {host['cpu_model']}, {host['usable_cpus']} usable CPUs, "
          f"Python {host['python']}, {host['system']}")
    _table("adapters", ("id", "framework", "imports", "versions", "error"),
           [(a["id"], a["framework"],
             "own env" if a["importable"] is None else "yes" if a["importable"] else "NO",
             ", ".join(f"{k} {v}" for k, v in a["versions"].items())
             or f"runs in its own environment ({a['own_environment']}): rlcompare env build {a['id']}",
             a["error"]) for a in adapters])
    for error in report["plugin_errors"]:
        print(f"plugin error: {error}")
    return 0


def _plan_from_args(args: argparse.Namespace) -> Plan:
    return _plugins_and_plan(args)[1]


def _plugins_and_plan(args: argparse.Namespace) -> tuple[Plugins, Plan]:
    plugins = build_plugin_manager()
    warn_plugin_errors(plugins)
    catalogue = plugins.plan_catalogue()
    workloads = resolve_workloads(catalogue, args.suite, args.workload)
    plan = build_plan(catalogue, workloads, args.adapters, args.seeds)
    planned = list(dict.fromkeys(run.adapter_id for run in plan.runs))
    return plugins, with_releases(plan, parse_versions(args.versions, plugins.adapters, planned))


def cmd_plan(args: argparse.Namespace) -> int:
    plan = _plan_from_args(args)
    cpus = usable_cpus()
    if args.json:
        _print_json({
            "runs": [{"run_id": r.run_id, "workload": r.workload.id, "adapter": r.adapter_id,
                      "framework": r.framework, "seed": r.seed, "workload_digest": r.workload.digest,
                      "cpus_needed": cpus_needed(r), "oversubscribed_here": cpus_needed(r) > cpus}
                     for r in plan.runs],
            "refused": [{"workload": r.workload.id, "adapter": r.adapter_id, "reason": r.reason}
                        for r in plan.refused],
            "pairs": pair_views(plan),  # each pair's grain and fidelity report, before any run
            "usable_cpus": cpus,
        })
        return 0
    crowded = 0
    for run in plan.runs:
        needed = cpus_needed(run)
        flag = ""
        if needed > cpus:
            crowded += 1
            flag = f"\toversubscribed: needs {needed} CPUs, this machine has {cpus}"
        print(f"{run.run_id}\tworkload={run.workload.id}\tadapter={run.adapter_id}\tseed={run.seed}"
              f"\tenv={run.workload.env}\talgorithm={run.workload.algorithm}\tsteps={run.workload.env_steps}"
              f"\tgrain={grain_text(run)}\tcpus={needed}{flag}")
    for refused in plan.refused:
        print(f"refused\t{refused.reason}")
    warn_off_grid(plan)
    note = f"; {crowded} need more CPUs than this machine has (their throughput measures contention)" if crowded else ""
    print(f"# {len(plan.runs)} runs, {len(plan.refused)} refused pairs{note}", file=sys.stderr)
    return 0


def cmd_run(args: argparse.Namespace) -> int:
    plugins, plan = _plugins_and_plan(args)  # every input is validated first, then the store, then runs start
    return execute(args, plugins, plan)


COMMANDS = {"list": cmd_list, "doctor": cmd_doctor, "plan": cmd_plan, "run": cmd_run,
            **frameworks.COMMANDS, **env.COMMANDS, **parity.COMMANDS, **score.COMMANDS, **report.COMMANDS,
            **show.COMMANDS, **study.COMMANDS}


#: Commands that only read and analyse a store (see main()).
_ANALYSIS_COMMANDS = ("score", "report", "cite", "bundle", "verify", "show")


def _raise_broken_pipe(_console: Any) -> None:
    raise BrokenPipeError


@visible_output()  # what a command prints shows control characters as text (rlcompare.cli.terminal)
def main(argv: Sequence[str] | None = None) -> int:
    import rich.console

    # rich exits with status 1 on a closed pipe; let main() treat it like any other write
    rich.console.Console.on_broken_pipe = _raise_broken_pipe  # type: ignore[method-assign]
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.version:
        print(rlcompare.__version__)
        return 0
    if args.command in _ANALYSIS_COMMANDS and "pyarrow" not in sys.modules and not os.environ.get("RLCOMPARE_PYARROW"):
        # pandas imports pyarrow whenever it is installed (Ray brings it); no analysis command uses
        # it, and importing it and tearing it down again took 0.4 s of every `score` here.
        # RLCOMPARE_PYARROW=1 keeps it (for an outside criterion or format that needs it).
        sys.modules["pyarrow"] = None  # type: ignore[assignment]
    if args.command is None:
        parser.print_help()
        print("rlcompare: error: give a command (listed above)", file=sys.stderr)
        return 2
    try:
        status = COMMANDS[args.command](args)
        sys.stdout.flush()  # inside the try: a closed pipe is noticed here, not at exit
        return status
    except RLCompareError as error:
        print(f"rlcompare: error: {_one_line(str(error))}", file=sys.stderr)
        return error.exit_status
    except KeyboardInterrupt:
        print("rlcompare: interrupted; finished runs are stored (use --resume)", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # the reader of our output went away (`rlcompare frameworks --json | head -1`): not an error
        _silence_stdout()
        return 0


def _one_line(text: str, limit: int = 600) -> str:
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 1] + "…"


def _silence_stdout() -> None:
    import os

    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass
