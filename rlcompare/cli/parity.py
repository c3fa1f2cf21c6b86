"""``rlcompare parity [--adapters A,B] [--algorithms PPO,DQN] [--json] [--refresh]``: each adapter's
own update on each probe of each gradient family it offers, against the reference update."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from typing import Any

from rlcompare.cli.options import name_list
from rlcompare.cli.progress import note
from rlcompare.cli.terminal import terminal_console
from rlcompare.errors import UnknownNameError
from rlcompare.parity.runner import default_cache, parity_requests, run_requests
from rlcompare.parity.verdict import ParityVerdict
from rlcompare.plugins.manager import build_plugin_manager


def add_commands(subparsers: Any) -> None:
    """Add ``parity`` to the CLI's subparsers."""
    command = subparsers.add_parser(
        "parity", help="check each adapter's own update against the reference update of its algorithm",
        description="Loads a probe (initial weights, a fixed batch with terminations and truncations) into each "
                    "framework's own objects, runs its own target computation and one optimizer step, and "
                    "compares them with the reference update: verified, or differs with the variant that "
                    "explains it. Verdicts are cached per framework version (docs/parity.md).")
    command.add_argument("--adapters", type=name_list, metavar="A,B", help="adapters to probe (default: all)")
    command.add_argument("--algorithms", type=name_list, metavar="PPO,DQN",
                         help="gradient families to probe (default: every one an adapter offers)")
    command.add_argument("--refresh", action="store_true", help="probe again instead of using cached verdicts")
    command.add_argument("--json", action="store_true", help="machine-readable output")


def cmd_parity(args: argparse.Namespace) -> int:
    plugins = build_plugin_manager()
    for error in plugins.errors:
        print(f"warning: {error}", file=sys.stderr)
    for adapter_id in args.adapters or ():
        if adapter_id not in plugins.adapters:
            raise UnknownNameError("adapter", adapter_id, plugins.adapters, "rlcompare list adapters")
    for name in args.algorithms or ():
        if name not in plugins.algorithms:
            raise UnknownNameError("algorithm", name, plugins.algorithms, "rlcompare list algorithms")
    requests, verdicts = parity_requests(plugins.adapters, plugins.algorithms, args.adapters, args.algorithms)
    verdicts += run_requests(requests, default_cache(refresh=args.refresh, log=note), log=note)
    verdicts.sort(key=lambda verdict: (verdict.adapter, verdict.family, verdict.case))
    if args.json:
        print(json.dumps([verdict.to_dict() for verdict in verdicts], indent=2, sort_keys=True, default=str))
    else:
        render(verdicts)
    return 0


def render(verdicts: list[ParityVerdict]) -> None:
    from rich.table import Table

    table = Table(title="parity: each framework's own update against the reference")
    for column in ("adapter", "family", "probe", "verdict", "detail"):
        table.add_column(column, overflow="fold")
    for verdict in verdicts:
        detail = " + ".join(verdict.variant) if verdict.variant else verdict.reason or "; ".join(
            check.describe() for check in verdict.checks)
        if verdict.notes:  # what the adapter says it configured (a GRPO library's own name for its loss, ...)
            detail += "\n" + "; ".join(verdict.notes)
        table.add_row(verdict.adapter, verdict.family, verdict.case, verdict.status, detail)
    terminal_console(width=160).print(table)


COMMANDS: dict[str, Callable[[argparse.Namespace], int]] = {"parity": cmd_parity}
