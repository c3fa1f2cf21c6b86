"""Executing a run matrix (``rlcompare run`` and ``rlcompare study run``): the options, the store,
the backend, the driver, the progress display and the development measurements beside it."""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path
from typing import Any

from rlcompare.cli.options import DEFAULT_STORE, DEFAULT_TIMEOUT_SECONDS, memory_size, positive_float, positive_int
from rlcompare.cli.premeasure import BackgroundMeasuring
from rlcompare.cli.progress import ConsoleProgress, note
from rlcompare.errors import UsageError
from rlcompare.execution.backend import BackendOptions, Limits
from rlcompare.execution.driver import Driver
from rlcompare.parity.runner import default_cache
from rlcompare.plan.matrix import Plan
from rlcompare.plan.parity import with_parity
from rlcompare.plan.placement import place_runs
from rlcompare.plugins.manager import Plugins
from rlcompare.pyenvs.releases import subject_adapters
from rlcompare.spec.evaluation_grid import interval_warnings
from rlcompare.store.sqlite_store import Store


def warn_off_grid(plan: Plan) -> None:
    """Once every input is checked: workloads whose evaluations cannot land on update boundaries
    (allowed, said once per workload; :mod:`rlcompare.spec.evaluation_grid`)."""
    # a refused native pair never resolved its settings: nothing to say about its grid
    refused = [pair.workload for pair in plan.refused if pair.workload.settings != "native"]
    for line in interval_warnings([*(run.workload for run in plan.runs), *refused]):
        print(f"warning: {line}", file=sys.stderr)


def _print_json(data: Any) -> None:
    print(json.dumps(data, indent=2, sort_keys=True, default=str))


def add_run_options(command: argparse.ArgumentParser, store_default: str = DEFAULT_STORE) -> None:
    """The options of `run` (and of `study run`): where results go and how the matrix executes."""
    command.add_argument("--store", default=store_default, metavar="PATH", help="SQLite results store")
    command.add_argument("--backend", default="local", metavar="NAME",
                         help="where runs execute: local (default), ray, or an installed backend "
                              "(see `rlcompare list backends`)")
    command.add_argument("--address", metavar="ADDR",
                         help="with --backend ray: the cluster to join (default: start a local one on "
                              "loopback for this matrix)")
    command.add_argument("--jobs", type=positive_int, default=1, metavar="N",
                         help="runs at a time (1: exclusive, for the cleanest timings)")
    command.add_argument("--timeout", type=positive_float, default=DEFAULT_TIMEOUT_SECONDS,
                         metavar="SECONDS", help="per run; a run past it is killed and stored as timeout")
    command.add_argument("--resume", action="store_true",
                         help="skip runs already stored as ok with the same workload digest")
    command.add_argument("--max-memory", type=memory_size, metavar="SIZE",
                         help="per run, e.g. 4G: a run whose process tree grows past it is stopped "
                              "and stored as failed")
    command.add_argument("--no-parity", action="store_true",
                         help="do not probe each adapter's update before the runs (their records then say "
                              "'not probed'; see `rlcompare parity`)")
    command.add_argument("--warm-start", action="store_true",
                         help="local backend: fork each run from a process that imported its framework once per "
                              "environment, instead of a fresh interpreter importing it (saves the import per run; "
                              "start-up still counts it, peak memory excludes shared pages a run never touches; "
                              "docs/criteria.md)")
    command.add_argument("--isolate", action="store_true",
                         help="run every adapter in its own environment (default: only those that do "
                              "not fit the main one; see `rlcompare env`)")


def execute(args: argparse.Namespace, plugins: Plugins, plan: Plan, resume_with: str = "rlcompare run ... --resume") -> int:
    """Run ``plan`` as the options of :func:`add_run_options` say (inputs already validated): the
    store, then the adapter environments and parity probes, then the matrix with its progress and
    the development measurements; what happened is said on stderr, ``resume_with`` the command that
    finishes an interrupted matrix. The exit status of the command."""
    import signal

    backend_class = plugins.backend(args.backend)
    if args.address is not None and args.backend != "ray":
        raise UsageError(f"--address: only --backend ray joins a cluster, not {args.backend!r}")
    if args.warm_start and args.backend != "local":
        raise UsageError(f"--warm-start: only the local backend forks its runs, not {args.backend!r}")
    options = BackendOptions(jobs=args.jobs, address=args.address, warm_start=args.warm_start or None)
    backend = backend_class(Limits(args.timeout, args.max_memory), options)
    backend.check()
    together = sorted({run.workload.id for run in plan.runs
                       if run.workload.parallelism.seeds_per_program > 1})
    if together and not backend_class.programs_of_seeds:
        raise UsageError(f"workload {together[0]!r}: field 'parallelism.seeds_per_program': the {args.backend} "
                         "backend runs one seed per task; run several seeds in one program on the local backend")
    # adapters that do not fit the main environment get their own, built before any run starts, and
    # so does each release a run is pinned to (--versions); before the store is opened, so that an
    # environment that cannot be built (a release the index does not have) leaves nothing written
    adapters = subject_adapters(plugins.adapters, [run.adapter_id for run in plan.runs])
    plan = place_runs(adapters, plan, isolate=args.isolate, log=note)
    with Store(args.store) as store:
        store.check_writable()
        warn_off_grid(plan)
        if not args.no_parity:  # each framework's own update against the reference, cached per version
            plan = with_parity(plan, adapters, plugins.algorithms, default_cache(log=note), log=note)
        progress = ConsoleProgress(total=len(plan.runs))
        progress.warn_oversubscribed(plan, backend)
        # development criteria measured beside the last runs and after them, so the report finds them cached
        with BackgroundMeasuring(plan, log=note) as measuring:
            driver = Driver(store, backend, on_start=measuring.on_start(progress.started),
                            on_finish=measuring.on_finish(progress.finished), families=plugins.algorithms)
            summary = driver.run(plan, resume=args.resume)
            progress.close(summary, args.store)
            # a matrix stopped by a signal or by a store that could take no more results measures no
            # more: the user's next step is --resume, which measures what is left
            if summary.interrupted_by is None and not summary.unstored:
                measuring.wait()
    if args.json:
        _print_json({"store": args.store, "counts": dict(summary.counts), "skipped": summary.skipped,
                     "recovered": [{"run_id": o.run_id, "status": o.status} for o in summary.recovered],
                     "unstored": [{"run_id": r, "directory": d, "error": e} for r, d, e in summary.unstored],
                     "taken": [{"run_id": r, "by": by} for r, by in summary.taken],
                     "kept_earlier": summary.kept_earlier,
                     "runs": [{"run_id": o.run_id, "status": o.status} for o in summary.outcomes]})
    if summary.taken:
        run_id, holder = summary.taken[0]
        print(f"rlcompare: {len(summary.taken)} runs were being run by another driver on this store (e.g. {run_id} "
              f"by {holder}): left to it", file=sys.stderr)
    if summary.kept_earlier:
        print(f"rlcompare: {len(summary.kept_earlier)} runs did not finish this time while an earlier attempt had "
              f"(e.g. {summary.kept_earlier[0]}): the earlier result stays, both attempts are kept "
              f"(`rlcompare show run ID`)", file=sys.stderr)
    if summary.recovered:
        statuses = ", ".join(f"{n} {status}" for status, n in sorted(
            Counter(o.status for o in summary.recovered).items()))
        print(f"rlcompare: stored {len(summary.recovered)} runs left by an earlier driver ({statuses})",
              file=sys.stderr)
    if summary.interrupted_by is not None:
        name = signal.Signals(summary.interrupted_by).name
        print(f"rlcompare: stopped by {name}; runs in flight are stored as interrupted with their evaluation "
              f"points; `{resume_with}` runs what is missing", file=sys.stderr)
        return 128 + summary.interrupted_by
    if summary.unstored:
        run_id, directory, error = summary.unstored[0]
        print(f"rlcompare: error: {len(summary.unstored)} finished runs could not be stored ({error}); their "
              f"results are kept in {Path(directory).parent}; `{resume_with}` stores them",
              file=sys.stderr)
        return 1
    return 0 if summary.all_ok else 1
