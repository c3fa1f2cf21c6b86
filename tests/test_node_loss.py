"""Losing a node of a multi-node Ray cluster in the middle of a matrix: runs already stored stay as
they are, the runs that were on the lost node (and only those) start again on the nodes left, or,
with their re-runs spent, are stored ``interrupted`` with their points, each record naming the lost
node; the matrix completes, and no process of any run is left on any node.

The cluster is Ray's own multi-node simulation on this machine (``ray.cluster_utils.Cluster``: a head
without CPUs and one-CPU raylets, each a node with its own id), private to this module (its own
temp dir and address file) and stopped afterwards. The runs are the ``paced`` test adapter's
(tests/plugins/paced): random actions at 10 ms a step, so a run lasts a few seconds of wall time
without keeping a CPU busy, and a node can be killed while its run is in flight.
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest

from rlcompare.execution.backend import BackendOptions, Limits
from rlcompare.execution.driver import Driver, RunOutcome
from rlcompare.execution.process_tree import RUN_ID_ENV
from rlcompare.execution.ray_backend import LOOPBACK_ENV, RayBackend
from rlcompare.harness.run_directory import runs_root
from rlcompare.plan.matrix import Plan, build_plan
from rlcompare.plugins.manager import build_plugin_manager
from rlcompare.spec.workload import workload_from_dict
from rlcompare.store.sqlite_store import Store
from tests.conftest import ROOT, _with_path

PACED_PLUGINS = ROOT / "tests" / "plugins" / "paced"
#: Every process this module's cluster starts carries this mark (Ray's and the runs'), so processes
#: of other sessions on the same machine are never mistaken for ours.
MARK = f"rlcompare-node-loss-{os.getpid()}"
#: Evaluation points of a whole run: at the start, then every 100 of its 400 steps.
POINTS = 5


def _marked(require_run: bool) -> list[psutil.Process]:
    """Live processes carrying our mark (and a run's id, with ``require_run``), this one excepted."""
    found = []
    for process in psutil.process_iter():
        try:
            environ = process.environ()
            if (process.pid != os.getpid() and environ.get("RLCOMPARE_TEST_MARK") == MARK
                    and (RUN_ID_ENV in environ or not require_run)
                    and process.status() != psutil.STATUS_ZOMBIE):
                found.append(process)
        except psutil.Error:
            continue
    return found


def _wait(predicate: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what}")


@pytest.fixture(scope="module")
def cluster() -> Iterator[Any]:
    """A head without CPUs and two one-CPU nodes, every process of it marked; torn down to the last
    process afterwards."""
    temp = tempfile.mkdtemp(prefix="rlnl-")  # short: Ray's socket paths must fit in 107 bytes
    with pytest.MonkeyPatch.context() as patch:
        # RAY_TMPDIR: the cluster's files and the address file Cluster writes stay ours, so no
        # `ray.init()` elsewhere on this machine joins this cluster
        for name, value in (("RAY_TMPDIR", temp), ("RLCOMPARE_TEST_MARK", MARK), (LOOPBACK_ENV, "0"),
                            ("RAY_AUTH_MODE", "disabled"), ("PYTHONPATH", _with_path(PACED_PLUGINS))):
            patch.setenv(name, value)
        patch.delenv("RLCOMPARE_DISABLE_PLUGIN_AUTOLOAD", raising=False)
        patch.syspath_prepend(str(PACED_PLUGINS))
        import ray
        from ray._private import ray_constants
        from ray.cluster_utils import Cluster

        patch.setattr(ray_constants, "ENABLE_RAY_CLUSTER", False)
        started = Cluster(initialize_head=True, shutdown_at_exit=True,
                          head_node_args={"num_cpus": 0, "node_ip_address": "127.0.0.1", "include_dashboard": False})
        try:
            for _ in range(2):
                started.add_node(num_cpus=1, node_ip_address="127.0.0.1")
            started.wait_for_nodes()
            yield started
        finally:
            if ray.is_initialized():
                ray.shutdown()
            started.shutdown()
            try:
                _wait(lambda: not _marked(require_run=False), 30, "every process of the cluster to end")
            finally:
                shutil.rmtree(temp, ignore_errors=True)


def _plan(seeds: int) -> Plan:
    workload = workload_from_dict({
        "id": "paced", "env": "CartPole-v1", "algorithm": "PPO", "env_steps": 400, "seeds": seeds,
        "hyperparameters": {"rollout_steps": 64, "minibatch_size": 32, "epochs": 1},
        "evaluation": {"interval_steps": 100, "episodes": 1},
    }, "test")
    return build_plan(build_plugin_manager().plan_catalogue(), [workload], ["paced"])


def _progress(store: Path, run_id: str) -> list[int]:
    """Env steps of the evaluation points the driver has kept so far for ``run_id``'s attempt."""
    steps: list[int] = []
    for path in runs_root(store).glob(f"{run_id}.*/progress.jsonl"):
        try:
            steps += [json.loads(line)["env_steps"] for line in path.read_text().splitlines() if line.strip()]
        except (OSError, ValueError):  # removed or being written meanwhile
            continue
    return steps


class NodeKiller(threading.Thread):
    """Watches where the runs are while the matrix runs (the driver runs in the main thread) and
    kills the node of the first run ``choose`` picks, outright, as a machine that dies would."""

    def __init__(self, cluster: Any, backend: RayBackend, store: Path, choose: Callable[[str, list[int]], bool]) -> None:
        super().__init__(daemon=True)
        self.cluster, self.backend, self.store, self.choose = cluster, backend, store, choose
        self.done = threading.Event()
        self.seen_before: set[tuple[str, str]] = set()
        self.seen_after: set[tuple[str, str]] = set()
        self.killed: str | None = None
        self.victims: set[str] = set()
        self.points_at_kill: dict[str, int] = {}
        self.run_processes_at_kill = 0
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            while not self.done.is_set():
                placed = self.backend.running_on()
                (self.seen_after if self.killed else self.seen_before).update(placed.items())
                if self.killed is None:
                    self._maybe_kill(placed)
                time.sleep(0.05)
        except BaseException as error:  # noqa: BLE001 - handed to the test
            self.error = error

    def _maybe_kill(self, placed: dict[str, str]) -> None:
        for run_id, node_id in placed.items():
            if self.choose(run_id, _progress(self.store, run_id)):
                [node] = [n for n in self.cluster.worker_nodes if n.node_id == node_id]
                self.victims = {r for r, n in self.backend.running_on().items() if n == node_id}
                self.points_at_kill = {r: len(_progress(self.store, r)) for r in self.victims}
                self.run_processes_at_kill = len(_marked(require_run=True))  # what the final check looks for
                self.cluster.remove_node(node, allow_graceful=False)
                self.killed = node_id
                return


def _run_matrix(cluster: Any, store_path: Path, seeds: int, retries: int,
                choose: Callable[[str, list[int], list[RunOutcome]], bool]) -> tuple[list[RunOutcome], NodeKiller, RayBackend]:
    backend = RayBackend(Limits(timeout_seconds=300), BackendOptions(address=cluster.address))
    backend.node_loss_retries = retries  # type: ignore[misc] - a per-matrix setting in these tests
    stored: list[RunOutcome] = []
    killer = NodeKiller(cluster, backend, store_path, lambda run_id, steps: choose(run_id, steps, stored))
    killer.start()
    try:
        with Store(store_path) as store:
            summary = Driver(store, backend, on_finish=stored.append).run(_plan(seeds))
    finally:
        killer.done.set()
        killer.join()
    if killer.error is not None:
        raise killer.error
    assert killer.killed is not None, "a node was killed mid-matrix"
    assert killer.run_processes_at_kill > 0, "the runs' processes carry the mark the final check looks for"
    return summary.outcomes, killer, backend


def _curves(store: Path) -> dict[str, list[int]]:
    connection = sqlite3.connect(store)
    try:
        curves: dict[str, list[int]] = {}
        for run_id, steps in connection.execute("SELECT run_id, env_steps FROM curves ORDER BY run_id, env_steps"):
            curves.setdefault(run_id, []).append(steps)
        return curves
    finally:
        connection.close()


def test_a_lost_node_costs_only_its_runs_which_run_again_on_the_nodes_left(cluster: Any, tmp_path: Path) -> None:
    store = tmp_path / "s.db"
    first_stored: list[str] = []

    def mid_matrix(run_id: str, steps: list[int], stored: list[RunOutcome]) -> bool:
        # a run stored already, and this one well under way on its node (at most a quarter done)
        first_stored[:] = [outcome.run_id for outcome in stored]
        return bool(stored) and bool(steps) and max(steps) <= 100

    nodes = {node.node_id for node in cluster.worker_nodes}
    outcomes, killer, backend = _run_matrix(cluster, store, seeds=4, retries=2, choose=mid_matrix)
    [survivor] = nodes - {killer.killed}
    # the matrix was spread over both nodes, and after the loss ran on the one left
    assert {node for _, node in killer.seen_before} == nodes
    started_after = killer.seen_after - killer.seen_before  # (a lost run shows until its driver hears)
    assert {node for _, node in started_after} == {survivor}
    assert len(killer.victims) == 1 and backend.lost_nodes() == {killer.killed: "127.0.0.1"}
    [victim] = killer.victims
    assert (victim, survivor) in started_after  # it ran again, on the survivor
    # every run completed; only the lost node's run says why it ran twice, naming both nodes
    records = {outcome.run_id: outcome.record for outcome in outcomes}
    assert len(records) == 4 and {record.status for record in records.values()} == {"ok"}
    note = records[victim].note
    assert note is not None and note.startswith(f"node lost: Ray node {killer.killed} (127.0.0.1) after "), note
    assert f"re-run 1 of at most 2 on Ray node {survivor}" in note, note
    assert {run_id for run_id, record in records.items() if record.note is not None} == {victim}
    assert all(record.error is None for record in records.values())
    # the runs stored before the loss kept their curves; the re-run's curve is its own, whole
    curves = _curves(store)
    assert first_stored and set(first_stored) <= set(records) - {victim}
    assert {run_id: len(steps) for run_id, steps in curves.items()} == dict.fromkeys(records, POINTS)
    assert all(steps == curves[victim] for steps in curves.values())  # one grid, no point of the lost attempt
    # the lost attempt is kept beside it, interrupted, with the points it had reached on the lost node
    with Store(store) as opened:
        [lost] = opened.attempts(victim)
        assert all(not opened.attempts(run_id) for run_id in records if run_id != victim)
    assert lost["status"] == "interrupted" and lost["record"]["error"].startswith(f"node lost: Ray node {killer.killed}")
    assert len(lost["curve"]) >= killer.points_at_kill[victim]
    _wait(lambda: not _marked(require_run=True), 30, "every run's processes to end on every node")


def test_with_its_reruns_spent_a_run_on_a_lost_node_is_stored_interrupted_with_its_points(
        cluster: Any, tmp_path: Path) -> None:
    while len(cluster.worker_nodes) < 2:  # the previous test lost one
        cluster.add_node(num_cpus=1, node_ip_address="127.0.0.1")
    cluster.wait_for_nodes()
    store = tmp_path / "s.db"

    def under_way(run_id: str, steps: list[int], stored: list[RunOutcome]) -> bool:
        return len(steps) >= 2 and max(steps) <= 200

    outcomes, killer, backend = _run_matrix(cluster, store, seeds=2, retries=0, choose=under_way)
    [victim] = killer.victims
    records = {outcome.run_id: outcome.record for outcome in outcomes}
    assert {run_id: record.status for run_id, record in records.items()} == {
        victim: "interrupted", **{run_id: "ok" for run_id in records if run_id != victim}}
    assert len(records) == 2
    error = records[victim].error
    assert error is not None and error.startswith(f"node lost: Ray node {killer.killed} (127.0.0.1) after "), error
    assert f"after {len(_curves(store)[victim])} evaluation points" in error, error
    assert "--resume runs it again" in error
    # the points the run reached on the lost node are stored with it
    curves = _curves(store)
    assert len(curves[victim]) >= killer.points_at_kill[victim] >= 2
    assert records[victim].evaluations == len(curves[victim])
    assert all(len(curves[run_id]) == POINTS for run_id in records if run_id != victim)
    _wait(lambda: not _marked(require_run=True), 30, "every run's processes to end on every node")
