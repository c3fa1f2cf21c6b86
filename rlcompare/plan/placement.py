"""Which environment each run's worker runs in: the main one at zero cost when the adapter fits
there, else the adapter's own, built (or found) before the matrix starts."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping

from rlcompare.harness.contract import Adapter
from rlcompare.harness.protocol import WorkerEnvironment
from rlcompare.plan.matrix import Plan
from rlcompare.pyenvs.manager import EnvironmentManager, EnvironmentSpec, isolation_reason
from rlcompare.pyenvs.releases import subject_adapters


def place_runs(adapters: Mapping[str, type[Adapter]], plan: Plan, isolate: bool = False,
               manager: EnvironmentManager | None = None, log: Callable[[str], None] | None = None) -> Plan:
    """``plan`` with each run of an adapter that needs its own environment (``isolate``: every
    adapter) pointed at that environment's interpreter; the environments are built here."""
    say = log or (lambda _message: None)
    placed: dict[str, WorkerEnvironment | None] = {}
    subjects = list(dict.fromkeys(run.adapter_id for run in plan.runs))
    adapters = subject_adapters(adapters, subjects)  # a release's runs: an environment with it pinned
    for adapter_id in subjects:
        adapter_class = adapters[adapter_id]
        reason = "--isolate" if isolate else isolation_reason(adapter_class)
        if reason is None:
            placed[adapter_id] = None
            continue
        manager = manager or EnvironmentManager(log=say)
        environment = manager.ensure(EnvironmentSpec.for_adapter(adapter_class))
        what = f"built in {environment.seconds:.1f} s" if environment.built else "ready"
        say(f"{adapter_id}: own environment {environment.key} ({what}; {reason})")
        placed[adapter_id] = WorkerEnvironment(str(environment.python), environment.key, environment.lock_digest,
                                               adapter_id)
    runs = [run if placed.get(run.adapter_id) is None else dataclasses.replace(run, environment=placed[run.adapter_id])
            for run in plan.runs]
    return Plan(runs=runs, refused=plan.refused)
