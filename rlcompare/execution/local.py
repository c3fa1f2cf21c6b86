"""The ``local`` backend: every run a subprocess of the driver on this machine, ``--jobs`` at a time.

Each run is its own process group; the backend samples its whole tree (peak summed RSS, CPU time),
stops it past its timeout or memory limit, and hands the worker the read end of a pipe whose write
end only the driver holds, so a worker stops its tree when the driver dies (SIGKILL included).
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import IO, Any

from rlcompare.execution.backend import WORKER_MODULE, Backend, Ending, worker_environment, worker_python
from rlcompare.execution.process_tree import TreeMonitor, kill_tree
from rlcompare.harness.driver_watch import DRIVER_FD_ENV
from rlcompare.harness.host import usable_cpus
from rlcompare.harness.run_directory import RunDirectory
from rlcompare.plan.matrix import PlannedRun
from rlcompare.pyenvs.warm import PER_RUN_VARIABLES, WarmProcess, start, warm_start_requested


@dataclass
class LocalRun:
    planned: PlannedRun
    process: subprocess.Popen[bytes] | WarmProcess
    directory: RunDirectory
    started: float
    monitor: TreeMonitor
    log: IO[bytes]
    driver_pipe: int
    stop_status: str | None = None
    stop_reason: str | None = None


class LocalBackend(Backend):
    name = "local"
    description = "subprocesses on this machine, --jobs at a time (1: exclusive, for the cleanest timings)"

    #: Seconds between two samples of the process trees.
    sample_interval = 0.1
    #: The module each run's interpreter runs (``python -m MODULE SPEC.json``).
    worker_module = WORKER_MODULE
    #: Variables each run sets for itself, which warm starts' parents do not share (:mod:`rlcompare.pyenvs.warm`).
    per_run_variables = PER_RUN_VARIABLES

    def __init__(self, *args: Any, python: str = sys.executable, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.python = python
        self.warm_start = warm_start_requested() if self.options.warm_start is None else self.options.warm_start

    def capacity(self) -> int:
        return self.options.jobs

    def cpus_given(self) -> int:
        """The CPUs each run has when ``jobs`` share the machine."""
        return max(1, usable_cpus() // max(1, self.options.jobs))

    def submit(self, planned: PlannedRun, directory: RunDirectory) -> LocalRun:
        log = directory.log.open("wb")
        watched, held = os.pipe()  # the worker reads until the driver's end closes
        env = worker_environment(planned, directory=directory)
        env[DRIVER_FD_ENV] = str(watched)
        python = worker_python(planned, self.python)
        try:
            process: subprocess.Popen[bytes] | WarmProcess | None = None
            if self.warm_start:
                process = start(python, self.worker_module, [str(directory.spec)], env, planned.framework_modules,
                                log, watched, varying=self.per_run_variables)
            if process is None:
                process = subprocess.Popen(
                    [python, "-m", self.worker_module, str(directory.spec)],
                    stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, env=env,
                    pass_fds=(watched,),
                    start_new_session=True,  # its own process group, so the whole tree can be stopped
                )
        except BaseException:
            os.close(held)
            log.close()
            raise
        finally:
            os.close(watched)
        return LocalRun(planned, process, directory, time.monotonic(), TreeMonitor(process.pid, str(directory.path)),
                        log, held)

    def wait(self, handles: Sequence[Any], timeout: float) -> Sequence[Any]:
        time.sleep(min(timeout, self.sample_interval))
        return handles  # every tree is sampled each time (timeouts, memory)

    def poll(self, handle: LocalRun) -> Ending | None:
        handle.monitor.sample()
        if handle.process.poll() is None:
            limits = self.limits
            elapsed = time.monotonic() - handle.started
            if limits.timeout_seconds is not None and elapsed > limits.timeout_seconds:
                points = len(handle.directory.read_progress())
                return self.cancel(handle, "timeout",
                                   f"killed by the {limits.timeout_seconds:g} s timeout after {points} evaluation points")
            if limits.max_memory_bytes is not None and handle.monitor.peak_rss_bytes > limits.max_memory_bytes:
                return self.cancel(handle, "failed",
                                   f"exceeded --max-memory {limits.max_memory_bytes / 2**20:.0f} MiB: its process "
                                   f"tree reached {handle.monitor.peak_rss_bytes / 2**20:.0f} MiB")
            return None
        return self._ending(handle)

    def cancel(self, handle: LocalRun, status: str, reason: str) -> Ending:
        handle.stop_status, handle.stop_reason = status, reason
        kill_tree(handle.monitor)
        handle.process.wait()
        return self._ending(handle)

    def _ending(self, handle: LocalRun) -> Ending:
        wall = time.monotonic() - handle.started
        if isinstance(handle.process, WarmProcess):
            handle.monitor.account_reaped(handle.process.pid, handle.process.cpu_seconds, handle.process.peak_rss_bytes)
        if not handle.log.closed:
            handle.log.close()
        try:
            os.close(handle.driver_pipe)
        except OSError:
            pass
        kill_tree(handle.monitor)  # whatever the run left behind in its process group or tree goes with it
        result = handle.directory.read_result()
        status, reason = handle.stop_status, handle.stop_reason
        if status is None and not result:
            status, reason = "failed", f"worker exited with status {handle.process.returncode} and no result"
        return Ending(result=result, stop_status=status, stop_reason=reason, wall_seconds=wall,
                      cpu_seconds=handle.monitor.cpu_seconds, peak_rss_bytes=handle.monitor.peak_rss_bytes,
                      cpus_given=self.cpus_given(), output_tail=handle.directory.output_tail())
