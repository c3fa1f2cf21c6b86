"""The ``ray`` backend: every run a Ray task, on a cluster (``--address``) or on a Ray instance it
starts on this machine, bound to loopback, and stops afterwards.

Each task reserves the CPUs its run keeps busy (:func:`rlcompare.execution.backend.cpus_needed`,
capped at the largest node) and runs :func:`rlcompare.execution.ray_task.execute_run` there: the
same fresh-interpreter worker the local backend starts, supervised the same way (timeout, memory,
the whole process tree), with its evaluation points streamed back as they appear. The driver keeps
them in the run's directory beside the store, so a crash of the task, its node or the driver keeps
every finished point. No framework code runs in the Ray worker process itself.

A node lost mid-matrix (its machine gone, its raylet killed) costs only the runs it was running:
each is started again from its first step on the nodes left, at most :attr:`RayBackend.node_loss_retries`
times, never on a node already lost; the stored record names every lost node and how far the run had
come there. A run whose re-runs are spent is stored ``interrupted`` with the points of its last
attempt (``--resume`` runs it again). Runs already stored, and runs on other nodes, are untouched.
"""

from __future__ import annotations

import json
import os
import re
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

from rlcompare.errors import UsageError
from rlcompare.execution.backend import Backend, Ending, cpus_needed
from rlcompare.execution.ray_task import Execute, execute_run, run_on_node
from rlcompare.harness.host import usable_cpus
from rlcompare.harness.protocol import CurvePoint, RunResult
from rlcompare.harness.run_directory import RunDirectory
from rlcompare.plan.matrix import PlannedRun

#: Ray resolves 127.0.0.1 to the host's address and binds its servers there unless told not to;
#: read when ray is imported.
LOOPBACK_ENV = "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"

#: Seconds a cancelled task has to stop its run itself before its process is killed.
CANCEL_GRACE_SECONDS = 10.0
#: The label every Ray node carries with its own id (used to keep re-runs off lost nodes).
NODE_ID_LABEL = "ray.io/node-id"


@dataclass(frozen=True)
class LostNode:
    """A node that died under a run: which one, and how far the run had come there."""

    node_id: str
    address: str
    points: int

    def describe(self) -> str:
        return f"Ray node {self.node_id} ({self.address}) after {self.points} evaluation points"


@dataclass
class RayRun:
    planned: PlannedRun
    directory: RunDirectory
    stream: Any
    stats: dict[str, Any] = field(default_factory=dict)
    #: The node the current attempt runs on, as its task reported it (None until it did).
    node: dict[str, Any] | None = None
    #: The nodes earlier attempts were lost with, oldest first.
    losses: list[LostNode] = field(default_factory=list)
    #: The attempts set aside for a re-run: why each ended and the points it had reached; the
    #: driver stores each as an interrupted attempt of the run beside the final one.
    set_aside: list[tuple[str, list[CurvePoint]]] = field(default_factory=list)

    @property
    def reruns(self) -> int:
        """How often the run was started again after a node loss."""
        return len(self.losses)


class RayBackend(Backend):
    name = "ray"
    description = ("each run a Ray task: on the cluster at --address, or on a Ray instance started on "
                   "loopback for the matrix and stopped after it")

    #: How often a run whose node was lost is started again on the nodes left (0: stored
    #: ``interrupted`` at the first loss).
    node_loss_retries: ClassVar[int] = 2
    #: A task runs its worker in a folder of its node and streams one run's points and result back.
    programs_of_seeds: ClassVar[bool] = False

    def __init__(self, *args: Any, execute: Execute | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.execute = execute_run if execute is None else execute
        self._started_here = False
        self._remote: Any = None
        self._cpus = 1
        self._largest_node = 1
        self._lost_nodes: dict[str, str] = {}  # node id -> address, in the order they were lost
        self._running_on: dict[str, str] = {}  # run id -> node id, while it runs

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
        # max_retries=0: Ray would re-run a task whose node died on its own, but without a word to
        # the driver and on top of the points already kept; the backend re-runs it instead
        self._remote = ray.remote(num_returns="streaming", max_retries=0)(run_on_node)

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

    def running_on(self) -> dict[str, str]:
        """``run id -> Ray node id`` of the runs in flight whose task said where it runs."""
        return dict(self._running_on)

    def lost_nodes(self) -> dict[str, str]:
        """``node id -> address`` of every node lost under a run of this matrix."""
        return dict(self._lost_nodes)

    def submit(self, planned: PlannedRun, directory: RunDirectory) -> RayRun:
        handle = RayRun(planned, directory, None)
        self._start(handle)
        return handle

    def _start(self, handle: RayRun) -> None:
        """Start the run's task (again, after a node loss: never on a node already lost)."""
        spec = handle.directory.read_spec()
        if spec is None:
            raise RuntimeError(f"{handle.directory.spec}: the run's spec cannot be read")
        cpus = self.cpus_for(handle.planned)
        limits = {"timeout_seconds": self.limits.timeout_seconds, "max_memory_bytes": self.limits.max_memory_bytes}
        options: dict[str, Any] = {"num_cpus": cpus, "name": handle.planned.run_id}
        if self._lost_nodes:  # Ray may still count a dead node's free CPUs until it notices the death
            options["label_selector"] = {NODE_ID_LABEL: f"!in({','.join(self._lost_nodes)})"}
        handle.node = None
        handle.stream = self._remote.options(**options).remote(self.execute, handle.reruns, spec.to_dict(), limits,
                                                              cpus)

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
        return self._with_set_aside(handle, self._poll(handle))

    def _poll(self, handle: RayRun) -> Ending | None:
        import ray

        while True:
            ready, _ = ray.wait([handle.stream], timeout=0)
            if not ready:
                return None
            try:
                item = ray.get(next(handle.stream))
            except StopIteration:
                self._running_on.pop(handle.planned.run_id, None)
                return self._lost(handle, "its Ray task ended without a result")
            except Exception as exc:  # noqa: BLE001 - task, worker or node died
                self._running_on.pop(handle.planned.run_id, None)
                lost = self._lost_node(handle, exc)
                if lost is None:  # the task or its worker died on a node still there: the run failed
                    return self._lost(handle, f"its Ray task failed ({type(exc).__name__}: "
                                              f"{str(exc).splitlines()[0][:200] if str(exc) else ''})")
                return self._after_node_loss(handle, lost)
            ending = self._take(handle, item)
            if ending is not None:
                return ending

    def cancel(self, handle: RayRun, status: str, reason: str) -> Ending:
        ending = self._with_set_aside(handle, self._cancel(handle, status, reason))
        assert ending is not None
        return ending

    @staticmethod
    def _with_set_aside(handle: RayRun, ending: Ending | None) -> Ending | None:
        if ending is not None:
            ending.earlier_attempts = list(handle.set_aside)
        return ending

    def _cancel(self, handle: RayRun, status: str, reason: str) -> Ending:
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
        self._running_on.pop(handle.planned.run_id, None)
        return Ending(result=None, stop_status=status, stop_reason=self._with_losses(reason, handle),
                      cpu_seconds=handle.stats.get("cpu_seconds"), peak_rss_bytes=handle.stats.get("peak_rss_bytes"),
                      cpus_given=self.cpus_for(handle.planned))

    def _lost_node(self, handle: RayRun, error: Exception) -> LostNode | None:
        """The node lost under the run's task, if its failure was that; None for any other failure.
        Ray says so itself (NodeDiedError, naming the node) as soon as it finds the node's raylet
        gone; a failure of another kind counts too when the node it ran on is dead by now."""
        import ray

        node = handle.node or {}
        node_id, address = node.get("node_id"), node.get("address") or "?"
        if isinstance(error, ray.exceptions.NodeDiedError):
            named = re.search(r"node ID: ([0-9a-f]+)", str(error))
            ip = re.search(r"Node IP: ([^,\s]+)", str(error))
            node_id = node_id or (named.group(1) if named else "unknown")
            address = address if address != "?" else (ip.group(1) if ip else "?")
        elif node_id is None or isinstance(error, ray.exceptions.RayTaskError):
            return None  # an error raised by the task's own code, or a task that never said where it ran
        elif any(entry.get("NodeID") == node_id and entry.get("Alive") for entry in ray.nodes()):
            return None
        points = len(handle.directory.read_progress())
        return LostNode(str(node_id), str(address), points)

    def _after_node_loss(self, handle: RayRun, lost: LostNode) -> Ending | None:
        """Start the run again from its first step on the nodes left, or, with its re-runs spent,
        end it ``interrupted`` with the points of its last attempt."""
        self._lost_nodes.setdefault(lost.node_id, lost.address)
        handle.losses.append(lost)
        if len(handle.losses) > self.node_loss_retries:
            return Ending(result=None, stop_status="interrupted",
                          stop_reason=(f"{_losses_text(handle)}; not re-run (at most {self.node_loss_retries} re-runs "
                                       "after a node loss): --resume runs it again"),
                          cpu_seconds=handle.stats.get("cpu_seconds"), peak_rss_bytes=handle.stats.get("peak_rss_bytes"),
                          cpus_given=self.cpus_for(handle.planned))
        # the lost attempt's points are kept as an attempt of their own (the driver stores it); the
        # re-run starts from step 0 with a curve of its own
        handle.set_aside.append((f"node lost: {lost.describe()}; run again", handle.directory.read_progress()))
        handle.directory.progress.write_text("", encoding="utf-8")
        handle.stats.clear()
        self._start(handle)
        return None

    def _take(self, handle: RayRun, item: dict[str, Any]) -> Ending | None:
        kind = item.get("kind")
        if kind == "node":
            handle.node = item
            self._running_on[handle.planned.run_id] = str(item.get("node_id"))
            return None
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
        self._running_on.pop(handle.planned.run_id, None)
        stop_status, stop_reason = item.get("stop_status"), item.get("stop_reason")
        if stop_status is None and result is None:
            stop_status = "failed"
            stop_reason = f"worker exited with status {item.get('returncode')} and no result on node {item.get('node')}"
        # a run that ended on its own after re-runs keeps the way it went as a note, not an error
        return Ending(result=result, stop_status=stop_status,
                      stop_reason=None if stop_reason is None else self._with_losses(stop_reason, handle),
                      wall_seconds=item.get("wall_seconds"), cpu_seconds=item.get("cpu_seconds"),
                      peak_rss_bytes=item.get("peak_rss_bytes"), cpus_given=item.get("cpus_given"),
                      output_tail=item.get("output_tail", ""),
                      note=self._with_losses(None, handle) if stop_reason is None else None)

    def _with_losses(self, reason: str | None, handle: RayRun) -> str | None:
        """``reason`` followed by the nodes the run lost on its way; with ``reason`` None, the note of a
        re-run that ended on its own (None without losses)."""
        if not handle.losses:
            return reason
        node = (handle.node or {}).get("node_id", "?")
        rerun = f"{_losses_text(handle)}; re-run {handle.reruns} of at most {self.node_loss_retries} on Ray node {node}"
        return rerun if reason is None else f"{reason} ({rerun})"

    def _lost(self, handle: RayRun, reason: str) -> Ending:
        return Ending(result=None, stop_status="failed", stop_reason=self._with_losses(reason, handle),
                      cpu_seconds=handle.stats.get("cpu_seconds"), peak_rss_bytes=handle.stats.get("peak_rss_bytes"),
                      cpus_given=self.cpus_for(handle.planned))


def _losses_text(handle: RayRun) -> str:
    return "node lost: " + "; then ".join(lost.describe() for lost in handle.losses)


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
