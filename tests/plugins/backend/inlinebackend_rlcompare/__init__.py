"""An outside execution backend (tests only): each run's worker runs to its end inside submit(), one
at a time, the way a batch scheduler's synchronous submit would. It uses only rlcompare's public
backend API, as a ``slurm`` or ``kubernetes`` package would."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Sequence
from typing import Any

from rlcompare import hookimpl
from rlcompare.execution.backend import WORKER_MODULE, Backend, Ending, worker_environment


class InlineBackend(Backend):
    name = "inline"
    description = "runs each worker to its end, one at a time (tests only)"

    def capacity(self) -> int:
        return 1

    def submit(self, planned: Any, directory: Any) -> Ending:
        started = time.monotonic()
        with directory.log.open("wb") as log:
            done = subprocess.run([sys.executable, "-m", WORKER_MODULE, str(directory.spec)],
                                  stdout=log, stderr=subprocess.STDOUT, env=worker_environment(planned),
                                  timeout=self.limits.timeout_seconds)
        result = directory.read_result()
        status, reason = (None, None) if result else ("failed", f"worker exited with {done.returncode}")
        return Ending(result=result, stop_status=status, stop_reason=reason,
                      wall_seconds=time.monotonic() - started, cpus_given=1, output_tail=directory.output_tail())

    def wait(self, handles: Sequence[Any], timeout: float) -> Sequence[Any]:
        return handles

    def poll(self, handle: Ending) -> Ending:
        return handle

    def cancel(self, handle: Ending, status: str, reason: str) -> Ending:
        return handle


@hookimpl
def rlcompare_register_backends(register: Any) -> None:
    register.add_backend(InlineBackend)
