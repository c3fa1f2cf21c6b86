"""``rlcompare show framework ID`` (one registry entry with its evidence, :mod:`rlcompare.cli.frameworks`)
and ``rlcompare show run RUN_ID [--store PATH] [--json]``: one stored run as the store holds it, its
traceback included (a failed run's traceback is otherwise only in the store's ``runs.traceback``)."""

from __future__ import annotations

import argparse
import json
import math
from collections.abc import Callable, Mapping
from typing import Any

from rlcompare.cli import frameworks
from rlcompare.cli.options import DEFAULT_STORE
from rlcompare.errors import UnknownNameError
from rlcompare.store.sqlite_store import Store

#: The fields shown first, in this order, with their labels; the rest follow in ``--json`` only.
SHOWN = (("workload_id", "workload"), ("adapter", "adapter"), ("framework", "framework"), ("seed", "seed"),
         ("status", "status"), ("error", "error"), ("note", "note"), ("env_steps", "env steps"),
         ("framework_env_steps", "framework env steps"), ("budget_env_steps", "budget"),
         ("startup_seconds", "start-up s"), ("training_seconds", "training s"),
         ("evaluation_seconds", "evaluation s"), ("throughput", "env steps/s"),
         ("final_return_mean", "final return"), ("peak_rss_bytes", "peak memory bytes"),
         ("adapter_plugin", "plugin"), ("adapter_version", "adapter version"),
         ("environment_key", "environment"), ("host_fingerprint", "host"))


def add_commands(subparsers: Any) -> None:
    """Add ``show`` to the CLI's subparsers."""
    command = subparsers.add_parser(
        "show", help="print one registry entry (framework ID) or one stored run, its traceback included (run ID)")
    command.add_argument("kind", choices=("framework", "run"), help="what to show")
    command.add_argument("name", metavar="ID",
                         help="the entry's id (`rlcompare frameworks`) or the run's id (`workload__adapter__sSEED`)")
    command.add_argument("--store", default=DEFAULT_STORE, metavar="PATH", help="with run: the SQLite results store")
    command.add_argument("--json", action="store_true", help="machine-readable output (a run: every stored field)")


def stored_run(store_path: str, run_id: str) -> dict[str, Any]:
    """The stored row of ``run_id`` (JSON fields parsed), or :class:`UnknownNameError` naming the
    closest stored id."""
    store = Store(store_path)
    store.check_readable()
    with store:
        runs = store.runs_frame()
    match = runs[runs["run_id"] == run_id]
    if match.empty:
        raise UnknownNameError(f"run in {store_path}", run_id, runs["run_id"].tolist(), "rlcompare show run --help")
    row = match.iloc[0].to_dict()
    shown = {key: _plain(key, value) for key, value in row.items()}
    with store:
        shown["other_attempts"] = [{"number": attempt["number"], "status": attempt["status"],
                                    "finished_at": attempt["finished_at"], "error": attempt["record"].get("error"),
                                    "evaluations": len(attempt["curve"])} for attempt in store.attempts(run_id)]
    return shown


def _plain(key: str, value: Any) -> Any:
    if isinstance(value, float) and math.isnan(value):
        return None
    if key.endswith("_json") and isinstance(value, str):
        try:
            return json.loads(value)
        except ValueError:
            return value
    if hasattr(value, "item"):  # numpy scalars
        return value.item()
    return value


def render(run: Mapping[str, Any]) -> str:
    """The run as text: its identity and figures, its validity verdict and grain, its traceback."""
    lines = [f"run {run['run_id']}"]
    for key, label in SHOWN:
        value = run.get(key)
        if value is not None and value != "":
            lines.append(f"  {label}: {value}")
    granularity, overshoot = run.get("budget_granularity"), run.get("budget_overshoot_steps")
    budget = run.get("budget_env_steps")
    if granularity is not None and overshoot is not None and budget is not None:
        low, high = max(0, int(budget) - int(overshoot)), int(budget) + int(overshoot)
        lines.append(f"  budget grain: {granularity}, +-{int(overshoot)} env steps (allowed {low}..{high})")
    validity = run.get("validity_json")
    if isinstance(validity, dict):
        verdict = "valid" if validity.get("valid") else "invalid: " + "; ".join(validity.get("reasons") or [])
        lines.append(f"  validity: {verdict}")
    for attempt in run.get("other_attempts") or ():
        error = f" ({attempt['error']})" if attempt.get("error") else ""
        lines.append(f"  other attempt {attempt['number']}: {attempt['status']}, "
                     f"{attempt['evaluations']} evaluation points{error}")
    traceback = run.get("traceback")
    lines.append("traceback:" if traceback else "traceback: none recorded")
    if traceback:
        lines += [f"  {line}" for line in str(traceback).rstrip().splitlines()]
    return "\n".join(lines)


def cmd_show(args: argparse.Namespace) -> int:
    if args.kind == "framework":
        return frameworks.cmd_show(args)
    run = stored_run(args.store, args.name)
    if args.json:
        print(json.dumps(run, indent=2, sort_keys=True, default=str))
    else:
        print(render(run))
    return 0


COMMANDS: dict[str, Callable[[argparse.Namespace], int]] = {"show": cmd_show}
