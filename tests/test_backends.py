"""The execution-backend seam: backends come in through the hook (an outside one through its entry
point), the Ray backend runs a real matrix on a real Ray cluster started on 127.0.0.1, a framework
that uses Ray itself starts its own isolated instance there, and everything listens on loopback."""

from __future__ import annotations

import json
import os
import signal
import socket
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from rlcompare.execution.process_tree import RUN_ID_ENV
from tests.conftest import GOOD_PLUGINS, ROOT, TINY_WORKLOAD, _with_path

BACKEND_PLUGIN = ROOT / "tests" / "plugins" / "backend"
#: Every process this module starts carries one of these marks: the drivers (and a Ray they start)
#: MARK, the module's cluster (and every task it runs) CLUSTER_MARK. Processes of other tests,
#: running at the same time in another pytest-xdist worker, are never taken for ours.
MARK = f"rlcompare-test-backends-{os.getpid()}"
CLUSTER_MARK = f"rlcompare-test-ray-{os.getpid()}"


def _env(*paths: Path, **extra: str) -> dict[str, str]:
    env = {**os.environ, "PYTHONPATH": _with_path(*paths), "RLCOMPARE_TEST_MARK": MARK, **extra}
    env.pop("RLCOMPARE_DISABLE_PLUGIN_AUTOLOAD", None)
    return env


def _runs(store: Path) -> dict[str, dict]:
    connection = sqlite3.connect(store)
    connection.row_factory = sqlite3.Row
    try:
        return {row["run_id"]: dict(row) for row in connection.execute("SELECT * FROM runs")}
    finally:
        connection.close()


def test_an_outside_backend_registers_through_its_entry_point_and_runs_a_matrix(tmp_path: Path) -> None:
    workload = tmp_path / "tiny.toml"
    workload.write_text(TINY_WORKLOAD, encoding="utf-8")
    store = tmp_path / "s.db"
    env = _env(BACKEND_PLUGIN, GOOD_PLUGINS)
    listed = subprocess.run([sys.executable, "-m", "rlcompare", "list", "backends", "--json"], env=env,
                            capture_output=True, text=True, timeout=120)
    backends = {b["id"]: b for b in json.loads(listed.stdout)}
    assert {"local", "ray", "inline"} <= set(backends)
    assert backends["inline"]["distribution"] == "inlinebackend-rlcompare"
    done = subprocess.run([sys.executable, "-m", "rlcompare", "run", "--workload", str(workload), "--adapters", "fake",
                           "--backend", "inline", "--store", str(store)], env=env, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr
    runs = _runs(store)
    assert {r["status"] for r in runs.values()} == {"ok"} and len(runs) == 2
    unknown = subprocess.run([sys.executable, "-m", "rlcompare", "run", "--workload", str(workload), "--backend", "rayy",
                              "--store", str(store)], env=env, capture_output=True, text=True, timeout=120)
    assert unknown.returncode == 2 and "unknown backend 'rayy'; did you mean 'ray'?" in unknown.stderr


# -- a real Ray cluster on 127.0.0.1 ----------------------------------------------------------------


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _processes_with(marker: str, variable: str = "RLCOMPARE_TEST_MARK", mark: str = MARK) -> list[psutil.Process]:
    """Live processes whose command line holds ``marker`` and whose environment holds ``mark``."""
    found = []
    for process in psutil.process_iter():
        try:
            if marker in " ".join(process.cmdline()) and process.environ().get(variable) == mark:
                found.append(process)
        except psutil.Error:
            continue
    return found


def _run_processes(run_id: str) -> list[psutil.Process]:
    """Live processes of ``run_id`` on this module's cluster."""
    found = []
    for process in psutil.process_iter():
        try:
            environ = process.environ()
            if environ.get(RUN_ID_ENV) == run_id and environ.get("RLCOMPARE_TEST_RAY") == CLUSTER_MARK:
                found.append(process)
        except psutil.Error:
            continue
    return found


@pytest.fixture(scope="module")
def ray_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """``ray start --head`` on 127.0.0.1 with 2 CPUs; its processes are stopped by PID afterwards."""
    temp = tmp_path_factory.mktemp("ray")
    port = _free_port()
    ray = Path(sys.executable).with_name("ray")
    # every node needs what the runs import: here the test adapters' plugin, as an installed package would be;
    # the mark lets the fixture find every process of this cluster afterwards (Ray retitles them)
    mark = CLUSTER_MARK
    env = {**_env(GOOD_PLUGINS), "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0", "RAY_AUTH_MODE": "disabled",
           "RLCOMPARE_TEST_RAY": mark}
    env.pop("RLCOMPARE_TEST_MARK")  # the drivers' mark: the cluster has its own
    started = subprocess.run([str(ray), "start", "--head", "--node-ip-address=127.0.0.1", f"--port={port}",
                              "--num-cpus=2", "--include-dashboard=false", "--disable-usage-stats",
                              f"--temp-dir={temp}"], env=env, capture_output=True, text=True, timeout=180)
    assert started.returncode == 0, started.stderr
    try:
        yield f"127.0.0.1:{port}"
    finally:
        cluster = [p for p in psutil.process_iter() if _readable(p) and p.environ().get("RLCOMPARE_TEST_RAY") == mark]
        for process in cluster:
            try:
                process.kill()
            except psutil.Error:
                pass
        psutil.wait_procs(cluster, timeout=10)


def _loopback_only(processes: list[psutil.Process]) -> list[tuple[str, str]]:
    """(process name, address) of every listening socket not bound to loopback."""
    exposed = []
    for process in processes:
        try:
            for connection in process.net_connections(kind="inet"):
                if connection.status == psutil.CONN_LISTEN:
                    ip = connection.laddr.ip
                    if not (ip.startswith("127.") or ip in ("::1", "::ffff:127.0.0.1")):
                        exposed.append((process.name(), ip))
        except psutil.Error:
            continue
    return exposed


@pytest.mark.framework
def test_a_three_adapter_matrix_on_a_ray_cluster_matches_the_local_backend_in_shape(
        ray_cluster: str, tmp_path: Path) -> None:
    workload = tmp_path / "tiny.toml"
    workload.write_text(TINY_WORKLOAD.replace("env_steps = 600", "env_steps = 1024").replace(
        "rollout_steps = 64", "rollout_steps = 128"), encoding="utf-8")
    stores = {name: tmp_path / f"{name}.db" for name in ("ray", "local")}
    seen: set[int] = set()
    exposed: list[tuple[str, str]] = []
    watching = threading.Event()

    def watch_sockets() -> None:  # while the RLlib runs execute: every socket of their trees
        while not watching.is_set():
            marked = []
            for process in psutil.process_iter():
                try:
                    environ = process.environ()
                    if (environ.get(RUN_ID_ENV, "").endswith("__rllib__s0")
                            and environ.get("RLCOMPARE_TEST_RAY") == CLUSTER_MARK):  # on this module's cluster
                        marked.append(process)
                except psutil.Error:
                    continue
            exposed.extend(_loopback_only(marked))
            seen.update(p.pid for p in marked)
            time.sleep(0.5)

    watcher = threading.Thread(target=watch_sockets, daemon=True)
    watcher.start()
    try:
        # one seed each: three runs, two at a time on the cluster's 2 CPUs (a second seed repeated the
        # same paths, and cost a minute)
        ray_run = subprocess.run([sys.executable, "-m", "rlcompare", "run", "--workload", str(workload), "--adapters",
                                  "sb3,tianshou,rllib", "--seeds", "1", "--backend", "ray", "--address", ray_cluster,
                                  "--store", str(stores["ray"])], env=_env(), capture_output=True, text=True, timeout=600)
    finally:
        watching.set()
        watcher.join()
    assert ray_run.returncode == 0, ray_run.stderr
    assert seen, "the RLlib runs' processes were seen"
    assert exposed == [], f"listening beyond loopback: {exposed}"
    local_run = subprocess.run([sys.executable, "-m", "rlcompare", "run", "--workload", str(workload), "--adapters",
                                "sb3,tianshou,rllib", "--seeds", "1", "--jobs", "2", "--store", str(stores["local"])],
                               env=_env(), capture_output=True, text=True, timeout=600)
    assert local_run.returncode == 0, local_run.stderr
    on_ray, on_local = _runs(stores["ray"]), _runs(stores["local"])
    assert set(on_ray) == set(on_local) and len(on_ray) == 3
    for run_id, row in on_ray.items():
        other = on_local[run_id]
        assert row["status"] == other["status"] == "ok", run_id
        filled = {k for k, v in row.items() if v is not None}
        assert filled == {k for k, v in other.items() if v is not None}, run_id
        assert row["cpus_given"] == 1 and row["peak_rss_bytes"] > 0
    # the cluster's own servers listen on loopback too
    assert _loopback_only(_processes_with("ray", "RLCOMPARE_TEST_RAY", CLUSTER_MARK)) == []


@pytest.mark.framework
def test_a_cancelled_ray_task_stops_its_run_and_keeps_its_points(ray_cluster: str, tmp_path: Path) -> None:
    workload = tmp_path / "tiny.toml"
    workload.write_text(TINY_WORKLOAD, encoding="utf-8")
    store = tmp_path / "s.db"
    driver = subprocess.Popen([sys.executable, "-m", "rlcompare", "run", "--workload", str(workload), "--adapters",
                               "sleepy", "--seeds", "1", "--backend", "ray", "--address", ray_cluster,
                               "--store", str(store)], env=_env(GOOD_PLUGINS), stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True)
    runs_dir = store.with_name(store.name + ".runs")

    def points() -> int:
        return sum(len(p.read_text().splitlines()) for p in runs_dir.glob("*/progress.jsonl")) if runs_dir.exists() else 0

    deadline = time.monotonic() + 120
    while points() < 1 and time.monotonic() < deadline:
        time.sleep(0.2)
    assert points() >= 1
    driver.send_signal(signal.SIGTERM)
    _, err = driver.communicate(timeout=120)
    assert driver.returncode == 143, err
    [row] = _runs(store).values()
    assert row["status"] == "interrupted"
    curve = sqlite3.connect(store).execute("SELECT count(*) FROM curves").fetchone()[0]
    assert curve >= 1
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and _run_processes("tiny__sleepy__s0"):
        time.sleep(0.2)
    assert not _run_processes("tiny__sleepy__s0")


def _readable(process: psutil.Process) -> bool:
    try:
        process.environ()
        return True
    except psutil.Error:
        return False


def test_without_an_address_a_local_ray_is_started_on_loopback_and_stopped(tmp_path: Path) -> None:
    workload = tmp_path / "tiny.toml"
    workload.write_text(TINY_WORKLOAD, encoding="utf-8")
    store = tmp_path / "s.db"
    before = {p.pid for p in _processes_with("raylet")}
    done = subprocess.run([sys.executable, "-m", "rlcompare", "run", "--workload", str(workload), "--adapters", "fake",
                           "--backend", "ray", "--store", str(store)], env=_env(GOOD_PLUGINS), capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert {r["status"] for r in _runs(store).values()} == {"ok"}
    deadline = time.monotonic() + 20
    while {p.pid for p in _processes_with("raylet")} - before and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not {p.pid for p in _processes_with("raylet")} - before


@pytest.mark.framework
def test_a_ray_task_that_dies_takes_its_run_down_and_the_points_stay(ray_cluster: str, tmp_path: Path) -> None:
    """The process executing the task is killed outright (as the OOM killer would): the worker sees its
    pipe close and stops its whole tree; the driver stores the run as failed with its points."""
    workload = tmp_path / "tiny.toml"
    workload.write_text(TINY_WORKLOAD, encoding="utf-8")
    store = tmp_path / "s.db"
    driver = subprocess.Popen([sys.executable, "-m", "rlcompare", "run", "--workload", str(workload), "--adapters",
                               "sleepy", "--seeds", "1", "--backend", "ray", "--address", ray_cluster,
                               "--store", str(store)], env=_env(GOOD_PLUGINS), stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True)
    runs_dir = store.with_name(store.name + ".runs")

    def has_points() -> bool:
        return any(p.read_text().strip() for p in runs_dir.glob("*/progress.jsonl"))

    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and not has_points():
        time.sleep(0.2)
    assert has_points()
    # Ray titles a task's process with its name
    [task] = _processes_with("ray::tiny__sleepy__s0", "RLCOMPARE_TEST_RAY", CLUSTER_MARK)
    task.kill()
    _, err = driver.communicate(timeout=180)
    assert driver.returncode == 1, err
    [row] = _runs(store).values()
    assert row["status"] == "failed" and row["error"].startswith("its Ray task failed"), row["error"]
    assert sqlite3.connect(store).execute("SELECT count(*) FROM curves").fetchone()[0] >= 1
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and _run_processes("tiny__sleepy__s0"):
        time.sleep(0.2)
    assert not _run_processes("tiny__sleepy__s0")
