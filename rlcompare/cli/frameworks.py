"""The ``frameworks`` and ``show framework`` commands of the ``rlcompare`` command line.

``rlcompare frameworks [--json] [--where KEY=VALUE ...]`` lists and filters the registry, one table
per domain with the axes that domain is compared on; ``rlcompare show framework ID [--json]`` prints
one entry with the evidence (source and verbatim excerpt) of every fact.
Neither imports an RL library: the registry is data.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Sequence
from typing import Any

from rlcompare.cli.terminal import terminal_console
from rlcompare.errors import UnknownNameError
from rlcompare.plugins.manager import BUILTIN_PLUGINS, build_plugin_manager
from rlcompare.registry.entries import FrameworkEntry
from rlcompare.registry.facts import AUTHOR_STATED
from rlcompare.registry.queries import filter_entries, parse_condition

#: The built-in plugin that registers the packaged entries.
BUILTIN_FRAMEWORKS_PLUGIN = "rlcompare.builtins.frameworks"
#: Columns of the ``frameworks`` tables, per domain (the JSON output has every field).
TABLE_COLUMNS: dict[str, tuple[str, ...]] = {
    "control": ("backend", "architecture", "simulation_parallelism", "synchronization", "licence", "surveys"),
    "llm": ("orchestration", "placement", "rollout_buffer", "weight_sync", "staleness", "partial_rollouts",
            "training_backend", "inference_backend", "licence", "surveys"),
}


def add_commands(subparsers: Any) -> None:
    """Add ``frameworks`` and ``show`` to the argparse sub-parsers of :mod:`rlcompare.cli.main`."""
    frameworks = subparsers.add_parser(
        "frameworks", help="list the framework registry, optionally filtered",
        description="List the framework registry. --where KEY=VALUE keeps entries whose fact matches "
                    "(lists match if they contain VALUE; VALUE may be 'unknown'; A,B means either).",
    )
    frameworks.add_argument("--json", action="store_true",
                            help="machine-readable output (every fact, with its evidence)")
    frameworks.add_argument("--where", action="append", default=[], metavar="KEY=VALUE", type=_where_expression,
                            help="filter, repeatable (ANDed), e.g. --where synchronization=asynchronous, "
                                 "--where weight_sync=nccl-broadcast, --where survey=hf-2026, --where domain=llm")
    # `rlcompare show framework ID` is parsed by rlcompare.cli.show, which calls cmd_show below


def _where_expression(text: str) -> str:
    if "=" not in text or not text.partition("=")[0].strip():
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE, got {text!r}")
    return text


# -- loading ---------------------------------------------------------------------------------------


def load_registry() -> tuple[dict[str, FrameworkEntry], list[str]]:
    """Entries registered by every plugin, by id, and one warning line per plugin problem.

    The built-in entries' plugin is added when the core list does not name it yet, so the commands
    work the same whether or not it is wired into ``BUILTIN_PLUGINS``.
    """
    builtins = tuple(BUILTIN_PLUGINS)
    if BUILTIN_FRAMEWORKS_PLUGIN not in builtins:
        builtins = (*builtins, BUILTIN_FRAMEWORKS_PLUGIN)
    loaded = build_plugin_manager(builtins=builtins)
    return dict(loaded.frameworks), [str(error) for error in loaded.errors]


def _warn(problems: Sequence[str]) -> None:
    for problem in problems:
        print(f"warning: {problem}", file=sys.stderr)


def _print_json(data: Any) -> None:
    print(json.dumps(data, indent=2, sort_keys=True, default=str))


def _cell(value: Any) -> str:
    if value is None:
        return "n/a"
    if isinstance(value, (list, tuple)):
        return ", ".join(value) if value else "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    return str(value)


def _fact_cell(entry: Any, name: str) -> str:
    """A fact's value for a table, marked where it rests on its authors' word alone."""
    fact = entry.fact(name)
    cell = _cell(None if fact is None else fact.value)
    return f"{cell} (authors)" if fact is not None and fact.author_stated else cell


# -- commands --------------------------------------------------------------------------------------


def cmd_frameworks(args: argparse.Namespace) -> int:
    """List (and filter) the registry; exit 0 even when nothing matches."""
    conditions = [parse_condition(text) for text in args.where]  # bad input fails before loading
    entries, problems = load_registry()
    _warn(problems)
    selected = filter_entries(sorted(entries.values(), key=lambda e: e.id), conditions)
    if args.json:
        _print_json([entry.to_json_dict() for entry in selected])
        return 0
    from rich.table import Table

    console = terminal_console(width=200)
    if not selected:
        title = f"frameworks (0 of {len(entries)})"
        if conditions:
            title += " where " + " and ".join(c.text for c in conditions)
        console.print(title)
        return 0
    for domain, columns in TABLE_COLUMNS.items():
        rows = [entry for entry in selected if entry.domain == domain]
        if not rows:
            continue
        title = f"{domain} frameworks ({len(rows)} of {sum(e.domain == domain for e in entries.values())})"
        if conditions:
            title += " where " + " and ".join(c.text for c in conditions)
        table = Table(title=title)
        for column in ("id", "name", *columns):
            table.add_column(column)
        for entry in rows:
            table.add_row(entry.id, entry.name, *(_fact_cell(entry, column) for column in columns))
        console.print(table)
    return 0


def cmd_show(args: argparse.Namespace) -> int:
    """Print one entry: every fact with its value, as-of date, note, and each evidence item."""
    entries, problems = load_registry()
    _warn(problems)
    if args.name not in entries:
        raise UnknownNameError("framework", args.name, entries, "rlcompare frameworks")
    entry = entries[args.name]
    if args.json:
        _print_json(entry.to_json_dict())
        return 0
    print(f"{entry.name} ({entry.id}), domain {entry.domain}: {', '.join(entry.axes)}")
    if entry.notes:
        print(f"  {entry.notes}")
    for name, fact in entry.facts().items():
        flags = ", complete list" if fact.complete else ""
        flags += f", {AUTHOR_STATED}" if fact.author_stated else ""
        print(f"\n{name}: {_cell(fact.value)}   [as of {fact.as_of.isoformat()}{flags}]")
        if fact.note:
            print(f"  note: {fact.note}")
        if fact.searched:
            print(f"  searched: {fact.searched}")
        for absence in fact.absent:
            print(f"  absent (re-checked by the evidence checker): {absence.describe()}")
        for evidence in fact.evidence:
            print(f"  source: {evidence.describe()}")
            print(f"    > {evidence.excerpt}")
    return 0


COMMANDS: dict[str, Callable[[argparse.Namespace], int]] = {"frameworks": cmd_frameworks}
