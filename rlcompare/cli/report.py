"""The ``report``, ``cite``, ``bundle`` and ``verify`` commands, and ``list formats``.

``rlcompare report --store S --out DIR --format html,md,latex`` writes several formats from one
scoring of the store; ``cite`` prints the citation of the store's matrix (BibTeX, CITATION.cff or
text); ``bundle`` writes what the matrix was computed from to one file; ``verify FILE`` recomputes a
bundle's digest and matrix and says whether they match (exit status 1, naming what differs, when
not). :func:`add_commands` adds them to the CLI's subparsers; :data:`COMMANDS` maps names to handlers.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rlcompare.cli.options import DEFAULT_STORE, bootstrap_seed, repetitions, resolve_profile
from rlcompare.cli.progress import note
from rlcompare.cli.terminal import terminal_console, warn_plugin_errors
from rlcompare.errors import UsageError
from rlcompare.harness.measurement_cache import MeasurementCache
from rlcompare.plugins.manager import Plugins, build_plugin_manager
from rlcompare.reporting.bundle import bundle_document, verify_bundle, write_bundle
from rlcompare.reporting.citation import CITATION_FORMATS
from rlcompare.reporting.escape import terminal
from rlcompare.reporting.formats import resolve_formats, write_report
from rlcompare.scoring.profiles import BUILTIN_PROFILES, DEFAULT_PROFILE
from rlcompare.store.sqlite_store import Store

if TYPE_CHECKING:  # pandas, numpy and matplotlib load when a report is built, not with the command line
    from rlcompare.reporting.model import Report

DEFAULT_FORMATS = ("html", "md")


def _format_list(text: str) -> list[str]:
    names = [name.strip() for name in text.split(",")]
    if not all(names):
        raise argparse.ArgumentTypeError(f"expected comma-separated format names, got {text!r}")
    return names


def _scoring_arguments(command: argparse.ArgumentParser) -> None:
    command.add_argument("--store", default=DEFAULT_STORE, metavar="PATH", help="SQLite results store")
    weights = command.add_mutually_exclusive_group()
    weights.add_argument("--profile", metavar="NAME",
                         help=f"weight profile: {', '.join(BUILTIN_PROFILES)} (default {DEFAULT_PROFILE})")
    weights.add_argument("--weights", metavar="FILE", help="TOML file of category shares and criterion weights")
    command.add_argument("--reps", type=repetitions, default=None, metavar="N",
                         help="bootstrap repetitions per interval (default 2000)")
    command.add_argument("--seed", type=bootstrap_seed, default=None, metavar="N", help="seed of the bootstrap (default 0)")
    command.add_argument("--author", action="append", default=[], metavar="NAME",
                         help="author named in the citation (repeatable; default: rlcompare)")


def add_commands(subparsers: Any) -> None:
    """Add ``report``, ``cite``, ``bundle`` and ``verify`` to the CLI's subparsers."""
    report = subparsers.add_parser("report", help="write reports of a store's scoring matrix")
    _scoring_arguments(report)
    report.add_argument("--out", default="reports", metavar="DIR", help="output directory (default reports)")
    report.add_argument("--format", type=_format_list, default=list(DEFAULT_FORMATS), metavar="FMT,...",
                        help="comma-separated formats (see `rlcompare list formats`; default html,md)")
    report.add_argument("--summary", action="store_true",
                        help="also print a one-screen summary: the ranking and each adapter's headline figures")

    cite = subparsers.add_parser("cite", help="print the citation of a store's scoring matrix")
    _scoring_arguments(cite)
    cite.add_argument("--format", choices=CITATION_FORMATS, default="bibtex", help="citation format (default bibtex)")

    bundle = subparsers.add_parser("bundle", help="write everything a store's matrix was computed from to one file")
    _scoring_arguments(bundle)
    bundle.add_argument("--out", required=True, metavar="FILE", help="bundle file (JSON; gzip when it ends in .gz)")

    verify = subparsers.add_parser("verify", help="recompute a bundle's digest and matrix; exit 1 if they differ")
    verify.add_argument("bundle", metavar="FILE", help="a file written by `rlcompare bundle`")


def load_plugins() -> Plugins:
    """The plugin manager these commands use (a seam for tests)."""
    return build_plugin_manager()


def _build(args: argparse.Namespace, plugins: Plugins, formats: tuple[str, ...] = ()) -> Report:
    """Score the store of ``args`` into a report (bad input fails before the store is read)."""
    from rlcompare.reporting.model import build_report
    from rlcompare.scoring.engine import DEFAULT_REPS, ScoringOptions

    profile = resolve_profile(args, plugins.criteria)
    with Store(args.store) as store:
        store.check_readable()
    options = ScoringOptions(reps=args.reps or DEFAULT_REPS, seed=args.seed or 0)
    cache = MeasurementCache.default(log=note)
    return build_report(args.store, plugins.reporting_catalogue(), profile, options, cache,
                        out_dir=getattr(args, "out", None), formats=formats, weights_file=args.weights,
                        authors=args.author)


def check_output_folder(path: str, option: str) -> None:
    """A folder that is (or can be made) writable, checked before any scoring: one line if not."""
    target = Path(path)
    if not path:
        raise UsageError(f"{option}: give a folder")
    if target.exists() and not target.is_dir():
        raise UsageError(f"{option}: {target} exists and is not a folder")
    existing = target
    while not existing.exists():
        existing = existing.parent
    if not existing.is_dir() or not os.access(existing, os.W_OK | os.X_OK):
        raise UsageError(f"{option}: {existing} is not a writable folder")


def check_output_file(path: str, option: str) -> None:
    """A file path whose folder exists and is writable, and that is not a folder itself."""
    target = Path(path)
    if not path or target.is_dir():
        raise UsageError(f"{option}: {path!r} is not a file path")
    if not target.parent.is_dir() or not os.access(target.parent, os.W_OK | os.X_OK):
        raise UsageError(f"{option}: folder {target.parent} does not exist or is not writable")
    if target.exists() and not os.access(target, os.W_OK):
        raise UsageError(f"{option}: {target} is not writable")


def cmd_report(args: argparse.Namespace) -> int:
    plugins = load_plugins()
    warn_plugin_errors(plugins)
    return write_store_report(args, plugins)


def write_store_report(args: argparse.Namespace, plugins: Plugins) -> int:
    """``rlcompare report`` with ``plugins`` built already (also `study report`'s store report)."""
    formats = resolve_formats(args.format, plugins.report_formats)  # an unknown format: nothing is read or written
    check_output_folder(args.out, "--out")
    report = _build(args, plugins, tuple(f.id for f in formats))
    paths = [str(path) for path in write_report(report, args.out, formats)]
    for path in paths:
        print(terminal(path))
    if args.summary:
        from rlcompare.cli.summary import summary_lines

        print()
        print("\n".join(summary_lines(report, paths)))
    return 0


def cmd_cite(args: argparse.Namespace) -> int:
    plugins = load_plugins()
    warn_plugin_errors(plugins)
    report = _build(args, plugins)
    sys.stdout.write(report.citation.render(args.format))
    return 0


def cmd_bundle(args: argparse.Namespace) -> int:
    plugins = load_plugins()
    warn_plugin_errors(plugins)
    check_output_file(args.out, "--out")
    report = _build(args, plugins)
    document = bundle_document(report.inputs, report.matrix, report.citation, report.store)
    path = write_bundle(args.out, document)
    print(f"{terminal(path)}\t{document['digest']}")
    return 0


def cmd_verify(args: argparse.Namespace) -> int:
    plugins = load_plugins()
    warn_plugin_errors(plugins)
    result = verify_bundle(args.bundle, plugins.scoring_catalogue())
    stream = sys.stdout if result.ok else sys.stderr
    for line in result.lines():
        print(terminal(line), file=stream)
    return 0 if result.ok else 1


def list_formats(plugins: Plugins, as_json: bool) -> int:
    """``rlcompare list formats``: every report format with the plugin that registered it."""
    rows = []
    for format_id, report_format in sorted(plugins.report_formats.items()):
        origin = plugins.origin("report format", format_id)
        rows.append({"id": format_id, "description": report_format.description,
                     "writes": report_format.filename or "(several files)", "plugin": origin.plugin,
                     "distribution": origin.distribution, "version": origin.version})
    if as_json:
        print(json.dumps(rows, indent=2, sort_keys=True))
        return 0
    from rich.table import Table

    table = Table(title="report formats")
    for column in ("id", "writes", "plugin", "description"):
        table.add_column(column, overflow="fold")
    for row in rows:
        plugin = f"{row['plugin']} ({row['distribution'] or '?'} {row['version'] or ''})".strip()
        table.add_row(row["id"], row["writes"], plugin, row["description"])
    terminal_console(width=160).print(table)
    return 0


COMMANDS: dict[str, Callable[[argparse.Namespace], int]] = {
    "report": cmd_report, "cite": cmd_cite, "bundle": cmd_bundle, "verify": cmd_verify,
}
