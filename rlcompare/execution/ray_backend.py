"""The ``ray`` backend: every run a Ray task, on a cluster (``--address``) or on a Ray instance it
starts on this machine, bound to loopback, and stops afterwards.

Each task reserves the CPUs its run keeps busy (:func:`rlcompare.execution.backend.cpus_needed`,
capped at the largest node) and runs :func:`rlcompare.execution.ray_task.execute_run` there: the
same fresh-interpreter worker the local backend starts, supervised the same way (timeout, memory,
the whole process tree), with its evaluation points streamed back as they appear. The driver keeps
them in the run's directory beside the store, so a crash of the task, its node or the driver keeps
every finished point. No framework code runs in the Ray worker process itself.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from rlcompare.errors import UsageError
from rlcompare.execution.backend import Backend, Ending, cpus_needed
from rlcompare.execution.local import usable_cpus
from rlcompare.execution.ray_task import execute_run
from rlcompare.harness.protocol import RunResult
from rlcompare.harness.run_directory import RunDirectory
from rlcompare.plan.matrix import PlannedRun

#: Ray resolves 127.0.0.1 to the host's address and binds its servers there unless told not to;
#: read when ray is imported.
LOOPBACK_ENV = "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"

#: Seconds a cancelled task has to stop its run itself before its process is killed.
CANCEL_GRACE_SECONDS = 10.0

Execute = Callable[[dict[str, Any], dict[str, Any], int], Iterator[dict[str, Any]]]


@dataclass
class RayRun:
    planned: PlannedRun
    directory: RunDirectory
    stream: Any
    stats: dict[str, Any] = field(default_factory=dict)


class RayBackend(Backend):
    name = "ray"
    description = ("each run a Ray task: on the cluster at --address, or on a Ray instance started on "
                   "loopback for the matrix and stopped after it")

    def __init__(self, *args: Any, execute: Execute | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.execute = execute_run if execute is None else execute
        self._started_here = False
        self._remote: Any = None
        self._cpus = 1
        self._largest_node = 1

    def check(self) -> None:
        if self.options.address is not None:
            _check_reachable(self.options.address)

    def open(self) -> None:
        address = self.options.address
        self.check()
        loopback = address is None or _is_loopback(address)
        if loopback:  # a cluster on this machine: keep every address (and the one we dial) on loopback
            os.environ[LOOPBACK_ENV] = "0"
        import ray
        from ray._private import ray_constants

        if loopback:
            ray_constants.ENABLE_RAY_CLUSTER = False  # in case ray was imported before the variable was set
        os.environ.setdefault("RAY_DEDUP_LOGS", "0")
        try:
            if address is None:
                os.environ.setdefault("RAY_AUTH_MODE", "disabled")  # a private cluster on loopback
                ray.init(address="local", num_cpus=usable_cpus(), include_dashboard=False,
                         _node_ip_address="127.0.0.1", log_to_driver=False, configure_logging=False)
                self._started_here = True
            else:
                ray.init(address=address, log_to_driver=False, configure_logging=False)
        except Exception as exc:  # noqa: BLE001 - Ray's reasons are many; the user needs one line
            text = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            raise UsageError(f"--backend ray: cannot {'start' if address is None else 'join'} a Ray cluster"
                             f"{'' if address is None else f' at {address}'} ({text})") from None
        nodes = [node for node in ray.nodes() if node.get("Alive")]
        self._cpus = max(1, int(ray.cluster_resources().get("CPU", 1)))
        self._largest_node = max([int(node.get("Resources", {}).get("CPU", 0)) for node in nodes] + [1])
        self._remote = ray.remote(num_returns="streaming", max_retries=0)(self.execute)

    def close(self) -> None:
        import sys

        ray = sys.modules.get("ray")
        if ray is not None and ray.is_initialized():
            ray.shutdown()

    def capacity(self) -> int:
        # twice the cluster's CPUs: Ray always has the next tasks queued when one ends, so a slot
        # never waits for a round trip to the driver (a run's timeout counts from its own start)
        return 2 * self._cpus

    def cpus_for(self, planned: PlannedRun) -> int:
        """The CPUs a run's task reserves: what the run keeps busy, at most a whole node."""
        return max(1, min(cpus_needed(planned), self._largest_node))

    def submit(self, planned: PlannedRun, directory: RunDirectory) -> RayRun:
        spec = directory.read_spec()
        if spec is None:
            raise RuntimeError(f"{directory.spec}: the run's spec cannot be read")
        cpus = self.cpus_for(planned)
        limits = {"timeout_seconds": self.limits.timeout_seconds, "max_memory_bytes": self.limits.max_memory_bytes}
        stream = self._remote.options(num_cpus=cpus, name=planned.run_id).remote(spec.to_dict(), limits, cpus)
        return RayRun(planned, directory, stream)

    def wait(self, handles: Sequence[Any], timeout: float) -> Sequence[Any]:
        """The runs whose tasks sent something: one blocking wait for the first, then everything
        else already there (timeouts and memory are watched on the nodes, not here)."""
        import ray

        by_stream = {id(handle.stream): handle for handle in handles}
        streams = [handle.stream for handle in handles]
        if not streams:
            return []
        ready, _ = ray.wait(streams, num_returns=1, timeout=timeout)
        if ready and len(streams) > 1:
            ready, _ = ray.wait(streams, num_returns=len(streams), timeout=0)
        return [by_stream[id(stream)] for stream in ready]

    def poll(self, handle: RayRun) -> Ending | None:
        """Take every item the task has sent so far; the end, or None while it runs."""
        import ray

        while True:
            ready, _ = ray.wait([handle.stream], timeout=0)
            if not ready:
                return None
            try:
                item = ray.get(next(handle.stream))
            except StopIteration:
                return self._lost(handle, "its Ray task ended without a result")
            except Exception as exc:  # noqa: BLE001 - task, worker or node died: the run failed
                return self._lost(handle, f"its Ray task failed ({type(exc).__name__}: "
                                          f"{str(exc).splitlines()[0][:200] if str(exc) else ''})")
            ending = self._take(handle, item)
            if ending is not None:
                return ending

    def cancel(self, handle: RayRun, status: str, reason: str) -> Ending:
        import ray

        # first politely: the task gets KeyboardInterrupt and stops its run's tree in its `finally`;
        # if it does not end soon, its process is killed (the orphaned worker then sees its pipe close)
        ray.cancel(handle.stream, force=False)
        deadline = time.monotonic() + CANCEL_GRACE_SECONDS
        forced = False
        while True:  # keep what the task sent before it was stopped
            try:
                ready, _ = ray.wait([handle.stream], timeout=0.5)
                if not ready:
                    if time.monotonic() < deadline:
                        continue
                    if not forced:
                        ray.cancel(handle.stream, force=True)
                        forced = True
                        continue
                    break
                item = ray.get(next(handle.stream))
            except Exception:  # noqa: BLE001 - StopIteration or the cancellation itself
                break
            if item.get("kind") == "end":
                break
            self._take(handle, item)
        return Ending(result=None, stop_status=status, stop_reason=reason,
                      cpu_seconds=handle.stats.get("cpu_seconds"), peak_rss_bytes=handle.stats.get("peak_rss_bytes"),
                      cpus_given=self.cpus_for(handle.planned))

    def _take(self, handle: RayRun, item: dict[str, Any]) -> Ending | None:
        kind = item.get("kind")
        if kind == "point":
            # kept as the worker keeps it, in the page cache at once (a crash of the driver keeps it,
            # as it keeps the store's commits); the worker already synced it on its node
            with handle.directory.progress.open("a", encoding="utf-8") as progress:
                progress.write(json.dumps(item["point"]) + "\n")
            return None
        if kind == "stats":
            handle.stats.update(peak_rss_bytes=item.get("peak_rss_bytes"), cpu_seconds=item.get("cpu_seconds"))
            return None
        data = item.get("result")
        result = None if data is None else RunResult.from_dict(data)
        if result is not None:
            handle.directory.write_result(result, sync=False)
        stop_status, stop_reason = item.get("stop_status"), item.get("stop_reason")
        if stop_status is None and result is None:
            stop_status = "failed"
            stop_reason = f"worker exited with status {item.get('returncode')} and no result on node {item.get('node')}"
        return Ending(result=result, stop_status=stop_status, stop_reason=stop_reason,
                      wall_seconds=item.get("wall_seconds"), cpu_seconds=item.get("cpu_seconds"),
                      peak_rss_bytes=item.get("peak_rss_bytes"), cpus_given=item.get("cpus_given"),
                      output_tail=item.get("output_tail", ""))

    def _lost(self, handle: RayRun, reason: str) -> Ending:
        return Ending(result=None, stop_status="failed", stop_reason=reason,
                      cpu_seconds=handle.stats.get("cpu_seconds"), peak_rss_bytes=handle.stats.get("peak_rss_bytes"),
                      cpus_given=self.cpus_for(handle.planned))


def _host_and_port(address: str) -> tuple[str, int]:
    text = address.removeprefix("ray://")
    host, _, port = text.rpartition(":")
    if not host or not port.isdigit():
        raise UsageError(f"--address: expected HOST:PORT of a Ray cluster's head (e.g. 10.0.0.5:6379), got {address!r}")
    return host.strip("[]"), int(port)


def _is_loopback(address: str) -> bool:
    host, _ = _host_and_port(address)
    return host in ("localhost", "::1") or host.startswith("127.")


def _check_reachable(address: str, timeout: float = 5.0) -> None:
    """One line, fast, when nothing listens at ``address`` (Ray itself retries for minutes)."""
    import socket

    host, port = _host_and_port(address)
    try:
        with socket.create_connection((host, port), timeout=timeout):
            pass
    except OSError as exc:
        raise UsageError(f"--address: no Ray cluster answers at {address} ({exc.strerror or exc}); start one "
                         "with `ray start --head` or leave --address out to run on a local one") from None
