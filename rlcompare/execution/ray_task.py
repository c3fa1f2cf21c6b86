"""What a Ray task of the ``ray`` backend runs on its node: the same fresh-interpreter worker the local
backend starts, supervised the same way, with its evaluation points streamed back as they appear.

Runs inside a Ray worker process, so it imports no framework code: the standard library, psutil
(for the process tree) and rlcompare's own light modules. Every item it yields is plain data: first
``{"kind": "node", ...}`` naming the Ray node it runs on (:func:`run_on_node`), then
``{"kind": "point", "point": {...}}`` for each evaluation point, ``{"kind": "stats", ...}`` now and
then, and one final ``{"kind": "end", ...}``. If the task is cancelled or its process dies (its node
lost included), the worker notices its closed driver pipe and stops its whole tree.
"""

from __future__ import annotations

import dataclasses
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from rlcompare.execution.backend import ATTEMPT_ENV, RUN_ID_ENV, WORKER_MODULE
from rlcompare.execution.process_tree import TreeMonitor, kill_tree
from rlcompare.harness.driver_watch import DRIVER_FD_ENV
from rlcompare.harness.protocol import CurvePoint, RunResult, RunSpec
from rlcompare.harness.run_directory import RunDirectory, process_alive
from rlcompare.pyenvs.processes import process_environment

#: Seconds between two looks at the worker (its progress file, its tree).
SAMPLE_SECONDS = 0.2
#: Seconds between two stats items (peak memory and CPU so far) while nothing else is sent.
STATS_SECONDS = 2.0

#: What a task executes: a run's spec, its limits and its CPUs in, plain items out.
Execute = Callable[[dict[str, Any], dict[str, Any], int], Iterator[dict[str, Any]]]


def run_on_node(execute: Execute, rerun: int, spec_data: dict[str, Any], limits: dict[str, Any],
                cpus_given: int) -> Iterator[dict[str, Any]]:
    """The Ray task: say which node it runs on (so the driver can tell, when the task fails, whether
    its node was lost and which), then run ``execute`` there.

    A re-run after a node loss (``rerun`` > 0) is an attempt of its own: its processes carry their
    own attempt marker (the run directory's path, suffixed), so the lost attempt's worker, which
    stops every process carrying its marker when its task dies, never reaches the re-run, even on a
    machine both share (several raylets on one host)."""
    import ray  # present: this runs in a Ray worker

    yield {"kind": "node", "node_id": ray.get_runtime_context().get_node_id(),
           "address": ray.util.get_node_ip_address(), "host": os.uname().nodename, "rerun": rerun}
    if rerun > 0:
        spec_data = {**spec_data, "run_dir": rerun_marker(str(spec_data["run_dir"]), rerun)}
    yield from execute(spec_data, limits, cpus_given)


def rerun_marker(run_dir: str, rerun: int) -> str:
    """The attempt marker of the ``rerun``-th re-run of the run whose directory is ``run_dir``."""
    return f"{run_dir}#rerun-{rerun}"


def _environment(spec: RunSpec, watched: int) -> dict[str, str]:
    threads = int(spec.workload.get("parallelism", {}).get("threads_per_worker", 1))
    env = process_environment(os.environ, threads, None if spec.environment is None else spec.environment.python)
    env[RUN_ID_ENV] = spec.run_id
    env[ATTEMPT_ENV] = spec.run_dir
    env[DRIVER_FD_ENV] = str(watched)
    for name in ("RAY_JOB_ID", "RAY_RAYLET_PID"):  # a framework's own Ray starts fresh
        env.pop(name, None)
    return env


#: Started in its own process by the task: starts the worker in a new session, prints its pid and
#: exits, so the worker is nobody's child. Ray kills a dead worker's children outright (SIGKILL, no
#: chance to clean up); an orphaned worker instead sees its pipe close and stops its whole tree.
_LAUNCHER = """
import os, subprocess, sys
fd = int(sys.argv[1])
with open(sys.argv[3], "wb") as log:
    worker = subprocess.Popen([sys.argv[4], "-m", sys.argv[5], sys.argv[2]], stdin=subprocess.DEVNULL,
                              stdout=log, stderr=subprocess.STDOUT, pass_fds=(fd,), start_new_session=True)
print(worker.pid, flush=True)
os._exit(0)
"""


def execute_run(spec_data: dict[str, Any], limits: dict[str, Any], cpus_given: int) -> Iterator[dict[str, Any]]:
    """Run one planned run's worker on this node and stream what it measures (plain JSON items:
    ``point`` with a curve point, ``stats``, and one ``end`` with the worker's result)."""
    spec = RunSpec.from_dict(spec_data)
    scratch = Path(tempfile.mkdtemp(prefix="rlcompare-ray-"))
    directory = RunDirectory(scratch)
    directory.write_spec(dataclasses.replace(spec, run_dir=str(scratch)))
    watched, held = os.pipe()
    started = time.monotonic()
    # an adapter environment's interpreter is a path on the driver's machine: a node that does not
    # have it (another machine) fails the run with that path in its reason
    python = spec.environment.python if spec.environment is not None else sys.executable
    try:
        launcher = subprocess.run(
            [sys.executable, "-c", _LAUNCHER, str(watched), str(directory.spec), str(directory.log), python,
             WORKER_MODULE],
            stdin=subprocess.DEVNULL, capture_output=True, text=True, env=_environment(spec, watched),
            pass_fds=(watched,), timeout=60, check=False,
        )
    finally:
        os.close(watched)
    if launcher.returncode != 0 or not launcher.stdout.strip().isdigit():
        os.close(held)
        shutil.rmtree(scratch, ignore_errors=True)
        yield {"kind": "end", "result": None, "stop_status": "failed",
               "stop_reason": f"could not start the worker on {os.uname().nodename}: {launcher.stderr.strip()[-300:]}",
               "wall_seconds": time.monotonic() - started, "cpus_given": cpus_given, "output_tail": "",
               "node": os.uname().nodename}
        return
    pid = int(launcher.stdout.strip())
    monitor = TreeMonitor(pid, spec.run_dir)
    sent = 0
    last_stats = started
    stop_status = stop_reason = None
    try:
        while True:
            monitor.sample()
            points = directory.read_progress()
            for point in points[sent:]:
                yield {"kind": "point", "point": point.to_dict()}
            sent = len(points)
            if not process_alive(pid):
                break
            elapsed = time.monotonic() - started
            timeout, memory = limits.get("timeout_seconds"), limits.get("max_memory_bytes")
            if timeout is not None and elapsed > timeout:
                stop_status = "timeout"
                stop_reason = f"killed by the {timeout:g} s timeout after {sent} evaluation points"
            elif memory is not None and monitor.peak_rss_bytes > memory:
                stop_status = "failed"
                stop_reason = (f"exceeded --max-memory {memory / 2**20:.0f} MiB: its process tree reached "
                               f"{monitor.peak_rss_bytes / 2**20:.0f} MiB")
            if stop_status is not None:
                kill_tree(monitor)
                break
            if time.monotonic() - last_stats > STATS_SECONDS:
                last_stats = time.monotonic()
                yield {"kind": "stats", "peak_rss_bytes": monitor.peak_rss_bytes, "cpu_seconds": monitor.cpu_seconds}
            time.sleep(SAMPLE_SECONDS)
        wall = time.monotonic() - started
        kill_tree(monitor)
        points = directory.read_progress()
        for point in points[sent:]:
            yield {"kind": "point", "point": point.to_dict()}
        result = directory.read_result()
        yield {
            "kind": "end", "result": None if result is None else result.to_dict(), "stop_status": stop_status, "stop_reason": stop_reason,
            "wall_seconds": wall, "cpu_seconds": monitor.cpu_seconds, "peak_rss_bytes": monitor.peak_rss_bytes,
            "cpus_given": cpus_given, "returncode": None if result else "unknown", "output_tail": directory.output_tail(),
            "node": os.uname().nodename,
        }
    finally:  # also on cancellation: the task stops its run's tree before it goes
        kill_tree(monitor)
        os.close(held)
        shutil.rmtree(scratch, ignore_errors=True)


def execute_noop(spec_data: dict[str, Any], limits: dict[str, Any], cpus_given: int) -> Iterator[dict[str, Any]]:
    """A run that trains nothing and reports at once (for measuring the driver and the scheduler:
    benchmarks/driver_scale.py). Its result is what a real worker writes for a run that kept every
    rule, so the driver treats it exactly like one."""
    spec = RunSpec.from_dict(spec_data)
    budget = int(spec.workload["env_steps"])
    point = CurvePoint(env_steps=budget, framework_env_steps=budget, train_seconds=0.001, return_mean=0.0,
                       return_std=0.0, returns=(0.0,), episode_length_mean=1.0)
    yield {"kind": "point", "point": point.to_dict()}
    result = RunResult(run_id=spec.run_id, status="ok", env_steps=budget, framework_env_steps=budget, episodes=1,
                       startup_seconds=0.0, training_seconds=0.001, evaluation_seconds=0.0, final_return_mean=0.0,
                       final_return_std=0.0, worker_seconds=0.001)
    yield {"kind": "end", "result": result.to_dict(), "stop_status": None, "stop_reason": None,
           "wall_seconds": 0.001, "cpu_seconds": 0.0, "peak_rss_bytes": 0, "cpus_given": cpus_given,
           "returncode": 0, "output_tail": "", "node": os.uname().nodename}
