"""``rlcompare env list|build|remove [ADAPTER]``: the adapter environments in the user's cache."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from typing import Any

from rlcompare.cli.progress import note
from rlcompare.errors import UnknownNameError, UsageError
from rlcompare.plugins.manager import build_plugin_manager
from rlcompare.pyenvs.manager import EnvironmentManager, EnvironmentSpec, isolation_reason


def add_commands(subparsers: Any) -> None:
    """Add ``env`` to the argparse sub-parsers of :mod:`rlcompare.cli.main`."""
    env = subparsers.add_parser(
        "env", help="list, build or remove adapter environments",
        description="Adapters whose pins conflict with the main environment run in an environment of their "
                    "own, built with uv in the user's cache and keyed by its resolved lock, Python, index "
                    "settings and worker protocol. `run` builds what it needs; these commands manage them.",
    )
    env.add_argument("action", choices=("list", "build", "remove"))
    env.add_argument("adapter", nargs="?", metavar="ADAPTER",
                     help="one adapter (default: list and remove every environment; build those of the "
                          "adapters that do not fit the main environment)")
    env.add_argument("--refresh", action="store_true", help="with build: resolve the requirements again")
    env.add_argument("--stale", action="store_true",
                     help="with remove: only environments whose linked sources are gone (built for a checkout "
                          "or virtualenv that was moved or deleted)")
    env.add_argument("--json", action="store_true", help="machine-readable output")


def _size(count: int) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if count < 1024 or unit == "GiB":
            return f"{count:.0f} {unit}" if unit == "B" else f"{count:.1f} {unit}"
        count /= 1024  # type: ignore[assignment]
    return str(count)


def cmd_env(args: argparse.Namespace) -> int:
    if args.stale and args.action != "remove":
        raise UsageError(f"--stale goes with `env remove`, not `env {args.action}`")
    if args.refresh and args.action != "build":
        raise UsageError(f"--refresh goes with `env build`, not `env {args.action}`")
    manager = EnvironmentManager(log=note)
    adapters: dict[str, Any] | None = None
    if args.adapter is not None or args.action == "build":
        adapters = dict(build_plugin_manager().adapters)
        if args.adapter is not None and args.adapter not in adapters:
            # an environment whose adapter is no longer installed can still be listed and removed
            if args.action == "build" or args.adapter not in manager.adapters_present():
                raise UnknownNameError("adapter", args.adapter, {*adapters, *manager.adapters_present()},
                                       "rlcompare list adapters")
    if args.action == "list":
        states = manager.states(args.adapter)
        if args.json:
            print(json.dumps([{"adapter": s.adapter, "key": s.key, "state": s.state, "path": str(s.path),
                               "total_bytes": s.total_bytes, "own_bytes": s.own_bytes, "info": s.info}
                              for s in states], indent=2, sort_keys=True))
            return 0
        print("adapter\tkey\tstate\tsize\town\tpython\tpath")
        for s in states:
            print(f"{s.adapter}\t{s.key}\t{s.state}\t{_size(s.total_bytes)}\t{_size(s.own_bytes)}\t"
                  f"{s.info.get('python_version', '?')}\t{s.path}")
        print(f"# {len(states)} environments in {manager.root}", file=sys.stderr)
        return 0
    if args.action == "remove":
        removed = manager.remove(args.adapter, stale_only=args.stale)
        for path in removed:
            print(f"removed\t{path}")
        print(f"# {len(removed)} environments removed", file=sys.stderr)
        return 0
    assert adapters is not None
    if args.adapter is not None:
        chosen = [args.adapter]
    else:
        chosen = [adapter_id for adapter_id, adapter_class in sorted(adapters.items())
                  if isolation_reason(adapter_class) is not None]
    results = []
    for adapter_id in chosen:
        environment = manager.ensure(EnvironmentSpec.for_adapter(adapters[adapter_id]), refresh=args.refresh)
        results.append(environment)
        if not args.json:
            what = "built" if environment.built else "up to date"
            print(f"{adapter_id}\t{environment.key}\t{what}\t{environment.seconds:.2f} s\t{environment.path}")
    if args.json:
        print(json.dumps([{"adapter": e.adapter, "key": e.key, "built": e.built, "seconds": e.seconds,
                           "path": str(e.path), "python": str(e.python), "lock_digest": e.lock_digest}
                          for e in results], indent=2, sort_keys=True))
    if not chosen:
        print("# every adapter fits the main environment; nothing to build", file=sys.stderr)
    return 0


COMMANDS: dict[str, Callable[[argparse.Namespace], int]] = {"env": cmd_env}
