"""``rlcompare score``: the scoring matrix of a results store, as rich tables or JSON.

:func:`add_commands` adds the subcommand to the CLI's subparsers; :data:`COMMANDS` maps its name to
the handler, which returns the exit status (0, or 2 with one line for bad input).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from rlcompare.cli.options import DEFAULT_STORE, bootstrap_seed, repetitions, resolve_profile
from rlcompare.cli.progress import note
from rlcompare.cli.terminal import terminal_console
from rlcompare.harness.measurement_cache import MeasurementCache
from rlcompare.plugins.manager import Plugins, build_plugin_manager
from rlcompare.reporting.numbers import format_number
from rlcompare.reporting.tables import imputed_reasons
from rlcompare.scoring.criteria import ALL_WORKLOADS, CriterionValue
from rlcompare.scoring.profiles import BUILTIN_PROFILES, DEFAULT_PROFILE
from rlcompare.store.library_versions import mixed_version_warnings
from rlcompare.store.sqlite_store import Store

if TYPE_CHECKING:  # numpy and pandas load when a matrix is scored, not with the command line
    import pandas as pd

    from rlcompare.scoring.engine import ScoreMatrix

#: Longest reason shown inside a table cell; the full text is listed under the tables.
CELL_REASON_CHARS = 36


def add_commands(subparsers: Any) -> None:
    """Add ``score`` to the CLI's subparsers."""
    command = subparsers.add_parser("score", help="score a results store (or a bundle): the scoring matrix")
    source = command.add_mutually_exclusive_group()
    source.add_argument("--store", default=DEFAULT_STORE, metavar="PATH", help="SQLite results store")
    source.add_argument("--bundle", metavar="FILE",
                        help="score a bundle written by `rlcompare bundle` instead of a store (its profile and "
                             "options unless given)")
    weights = command.add_mutually_exclusive_group()
    weights.add_argument("--profile", metavar="NAME",
                         help=f"weight profile: {', '.join(BUILTIN_PROFILES)} (default {DEFAULT_PROFILE})")
    weights.add_argument("--weights", metavar="FILE", help="TOML file of category shares and criterion weights")
    # the default is resolved in the handler: importing the scoring package here would load numpy
    # for every command line
    command.add_argument("--reps", type=repetitions, default=None, metavar="N",
                         help="bootstrap repetitions per interval (default 2000)")
    command.add_argument("--seed", type=bootstrap_seed, default=None, metavar="N", help="seed of the bootstrap (default 0)")
    command.add_argument("--remeasure", action="store_true",
                         help="measure development criteria again instead of using the measurement cache")
    command.add_argument("--json", action="store_true", help="machine-readable output")


def load_plugins() -> Plugins:
    """The plugin manager the command scores with (a seam for tests)."""
    return build_plugin_manager()


def cmd_score(args: argparse.Namespace) -> int:
    """Print the scoring matrix of ``args.store``; returns the exit status."""
    from rlcompare.scoring.engine import DEFAULT_REPS, ScoringOptions, score_store, split_stale_runs

    plugins = load_plugins()
    for error in plugins.errors:
        print(f"warning: {error}", file=sys.stderr)
    if getattr(args, "bundle", None):
        matrix, runs = _score_bundle(args, plugins)
    else:
        profile = resolve_profile(args, plugins.criteria)  # bad input fails before the store is read
        seed = getattr(args, "seed", None)
        options = ScoringOptions(reps=getattr(args, "reps", None) or DEFAULT_REPS, seed=0 if seed is None else seed)
        cache = MeasurementCache.default(refresh=getattr(args, "remeasure", False), log=note)
        with Store(args.store) as store:
            store.check_readable()
            matrix = score_store(store, plugins.scoring_catalogue(), profile, options, cache=cache)
            runs = split_stale_runs(store.runs_frame())[0]
    caveats = mixed_version_warnings(runs, "gymnasium")
    if getattr(args, "json", False):
        print(json.dumps(matrix.to_dict(), indent=2, sort_keys=True, default=str))
        for caveat in caveats:
            print(f"warning: {caveat}", file=sys.stderr)
    else:
        render(matrix, caveats)
    return 0


def _score_bundle(args: argparse.Namespace, plugins: Plugins) -> tuple[ScoreMatrix, pd.DataFrame]:
    """The matrix of a bundle (its recorded profile and options unless the command line gives
    them) and the bundle's runs."""
    import dataclasses

    from rlcompare.reporting.bundle import read_bundle
    from rlcompare.reporting.inputs import score_inputs

    bundle = read_bundle(args.bundle)
    profile = None
    if getattr(args, "profile", None) or getattr(args, "weights", None):
        profile = resolve_profile(args, plugins.criteria)
    options = bundle.inputs.options_object()
    if getattr(args, "reps", None):
        options = dataclasses.replace(options, reps=args.reps)
    if getattr(args, "seed", None) is not None:
        options = dataclasses.replace(options, seed=args.seed)
    return score_inputs(bundle.inputs, plugins.scoring_catalogue(), profile, options), bundle.inputs.runs_frame()


COMMANDS = {"score": cmd_score}


def print_ranking(matrix: ScoreMatrix) -> None:
    """The ranking as plain lines, in rank order: rank (``2=`` when tied), adapter, overall score,
    and the tier that ranks it before the score, so a score is never read beside a rank unexplained."""
    ranked = [matrix.overall[a] for a in matrix.ranked_adapters]
    width = max(len(o.adapter) for o in ranked)
    scores = [_estimate_text(o.score) for o in ranked]
    score_width = max(len(text) for text in scores)
    print("\nRanking (tier, then overall score; '=' a tie):")
    for o, text in zip(ranked, scores, strict=True):
        tied = f"; tied with {', '.join(o.tied_with)}" if o.tied_with else ""
        print(f"  {o.rank_text:<4} {o.adapter:<{width}}  {text:<{score_width}}  tier: {o.tier}{tied}")
    notes = [(o.adapter, o.rank_note) for o in ranked if o.rank_note]
    if notes:
        print("A higher score ranked lower, and why:")
        for adapter, note in notes:
            print(f"  {adapter}: {note}")
    print()


def ranks_line(learning_first: bool) -> str:
    """How ranks are ordered, in one line (the tier's keys, then the score, and what a tie is)."""
    learning = ", workloads solved, workloads learned" if learning_first else ""
    return (f"Ranks: by parity standing (where probed), then by the number of workloads with a valid result{learning}, "
            "then by overall score; '=' marks adapters whose overall scores the bootstrap (seeds and weights "
            "resampled) does not separate, which share a rank.")



# -- rendering ---------------------------------------------------------------------------------------


def format_cell(cell: CriterionValue | None) -> str:
    if cell is None:
        return "n/a"
    if cell.missing is not None:
        reason = cell.missing if len(cell.missing) <= CELL_REASON_CHARS else cell.missing[:CELL_REASON_CHARS - 1] + "…"
        return f"missing: {reason}"
    text = cell.label if cell.label is not None else format_number(cell.point)
    if cell.label is None and cell.n > 1:
        text += f" [{format_number(cell.low)}, {format_number(cell.high)}]"
    if cell.censored:
        text += f" ({cell.censored} censored)"
    return text


def _estimate_text(estimate: Any) -> str:
    if estimate is None:
        return "missing"
    text = format_number(estimate.point)
    if estimate.n > 1:
        text += f" [{format_number(estimate.low)}, {format_number(estimate.high)}]"
    return text


def _print_table(title: str, columns: Sequence[str], rows: Sequence[Sequence[str]]) -> None:
    from rich.table import Table

    table = Table(title=title, show_lines=False)
    for column in columns:
        table.add_column(column, overflow="fold")
    for row in rows:
        table.add_row(*row)
    terminal_console(width=max(120, 26 * len(columns))).print(table)


def _title(criterion: Any) -> str:
    return str(criterion.title or criterion.id)


def _heading(criterion: Any) -> str:
    """Title, unit and direction (read with getattr: a third-party criterion may be duck-typed)."""
    unit, direction = criterion.unit, criterion.direction
    return f"{_title(criterion)} ({unit}, {direction} is better)"


def render(matrix: ScoreMatrix, caveats: Sequence[str] = ()) -> None:
    """The matrix as rich tables: scores, performance by workload, development facilitation, the
    reasons for missing cells, and ``caveats`` on the comparison (e.g. mixed gymnasium versions)."""
    adapters = matrix.ranked_adapters  # columns in rank order: a score is read beside its rank
    headers = [f"{a}\n({matrix.frameworks.get(a, '?')})" for a in adapters]

    rows = []
    for cid, criterion in matrix.criteria.items():
        weight = matrix.weights.get(cid, 0.0)
        if not any((cid, a) in matrix.aggregates for a in adapters):
            continue
        cells = []
        for adapter in adapters:
            estimates = matrix.aggregates.get((cid, adapter))
            cells.append("missing" if estimates is None else _estimate_text(estimates["mean"]))
        rows.append([f"{_title(criterion)} ({cid})", f"{weight:.3f}", *cells])
    overall = [matrix.overall[a] for a in adapters]
    rows.append(["OVERALL SCORE", "1.000", *[_estimate_text(o.score) for o in overall]])
    rows.append(["tier (ranks before the score)", "", *[o.tier for o in overall]])
    rows.append(["rank (= tied)", "", *[o.rank_text for o in overall]])
    rows.append(["tied with", "", *[", ".join(o.tied_with) or "-" for o in overall]])
    rows.append(["rank stability", "", *["-" if o.rank_stability is None else f"{o.rank_stability:.0%}"
                                         for o in overall]])
    rows.append(["weight with data", "", *[f"{o.weight_coverage:.0%}" for o in overall]])
    _print_table(f"Scores, profile {matrix.profile.name} (normalized, mean over workloads, 95% CI)",
                 ["criterion", "weight", *headers], rows)
    print_ranking(matrix)

    per_workload = [cid for cid, c in matrix.criteria.items() if c.per_workload]
    rows = []
    for workload_id in matrix.workloads:
        for cid in per_workload:
            cells = [matrix.cell(cid, a, workload_id) for a in adapters]
            if all(cell is None for cell in cells):
                continue
            rows.append([workload_id, _heading(matrix.criteria[cid]), *[format_cell(cell) for cell in cells]])
    if rows:
        _print_table("Performance by workload (mean over seeds, 95% CI)", ["workload", "criterion", *headers], rows)

    rows = []
    for cid, criterion in matrix.criteria.items():
        if criterion.per_workload:
            continue
        rows.append([_heading(criterion), *[format_cell(matrix.cell(cid, a, ALL_WORKLOADS)) for a in adapters]])
    if rows:
        _print_table("Development facilitation", ["criterion", *headers], rows)

    reasons: dict[tuple[str, str, str], list[str]] = {}
    for cell in matrix.cells.values():
        if cell.missing is not None:
            reasons.setdefault((cell.adapter, cell.workload_id, cell.missing), []).append(cell.criterion)
    if reasons:
        print("\nMissing cells (never scored as zero):")
        for (adapter, workload_id, reason), criteria in sorted(reasons.items()):
            where = "all workloads" if workload_id == ALL_WORKLOADS else workload_id
            print(f"  {adapter} / {where}: {reason} [{', '.join(sorted(criteria))}]")
    if matrix.excluded_runs:
        print("\nRuns that do not count (invalid, failed, timed out or interrupted):")
        for run in matrix.excluded_runs:
            print(f"  {run['run_id']}: {run['status']}: {run['reason'] or 'no reason recorded'}")
    if matrix.imputed:
        print("\nScored the worst where others have a value (unknown never helps):")
        for item in imputed_reasons(matrix):
            print(f"  {item['adapter']} / {item['workload']}: {item['reason']} [{item['criteria']}]")
    if matrix.left_out:
        print("\nLeft out of every overall score (no adapter has a value; the weight passes to its category):")
        for item in matrix.left_out:
            where = "" if item["workload"] == ALL_WORKLOADS else f" on {item['workload']}"
            print(f"  {item['criterion']}{where}: {item['reason']}")
    if caveats:
        print("\nWarning: runs on different gymnasium versions:")
        for caveat in caveats:
            print(f"  {caveat}")
    print(f"\n{ranks_line(matrix.profile.learning_first)}")
    for error in matrix.errors:
        print(f"error: {error}", file=sys.stderr)
