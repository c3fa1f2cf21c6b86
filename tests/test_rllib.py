"""The RLlib adapter trained for real through the runner (tiny budgets; Ray started per run)."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import psutil
import pytest

from rlcompare.errors import IncompatibleError
from rlcompare.execution.process_tree import RUN_ID_ENV
from rlcompare.execution.runner import LocalRunner
from rlcompare.plan.matrix import build_plan
from rlcompare.plugins.manager import build_plugin_manager
from rlcompare.spec.workload import workload_from_dict
from rlcompare.store.sqlite_store import Store

pytestmark = pytest.mark.framework

EVALUATION = {"interval_steps": 256, "episodes": 2}
TINY = {
    # two remote env runners x 2 envs: steps stepped in Ray actors are counted by the harness
    "ppo": {"env": "CartPole-v1", "algorithm": "PPO", "env_steps": 512,
            "parallelism": {"workers": 2, "envs_per_worker": 2},
            "hyperparameters": {"rollout_steps": 32, "minibatch_size": 64, "epochs": 2}},
    "dqn": {"env": "CartPole-v1", "algorithm": "DQN", "env_steps": 600,
            "hyperparameters": {"learning_starts": 100, "buffer_size": 1000, "train_every": 8}},
    "sac": {"env": "Pendulum-v1", "algorithm": "SAC", "env_steps": 400,
            "hyperparameters": {"learning_starts": 100, "minibatch_size": 32, "buffer_size": 1000, "train_every": 8}},
    "appo": {"env": "CartPole-v1", "algorithm": "PPO", "env_steps": 512,
             "parallelism": {"workers": 2, "envs_per_worker": 1, "mode": "async"},
             "hyperparameters": {"rollout_steps": 64, "minibatch_size": 64, "epochs": 1}},
}


def _workload(name: str, **overrides: object) -> object:
    spec = {"id": f"tiny-{name}", "seeds": 1, "evaluation": EVALUATION, **TINY[name], **overrides}
    return workload_from_dict(spec, "test")


@pytest.fixture(scope="module")
def rllib_store(tmp_path_factory: pytest.TempPathFactory) -> Store:
    plan = build_plan(build_plugin_manager(autoload=False).plan_catalogue(), [_workload(name) for name in TINY], ["rllib"])
    store = Store(tmp_path_factory.mktemp("rllib") / "runs.db")
    summary = LocalRunner(store, jobs=1, timeout_seconds=400).run(plan)
    assert [o.status for o in summary.outcomes] == ["ok"] * len(TINY), [o.record.get("traceback") for o in summary.outcomes]
    return store


@pytest.mark.parametrize("name", list(TINY))
def test_rllib_run_is_stored_with_curve_versions_and_fidelity(rllib_store: Store, name: str) -> None:
    runs = rllib_store.runs_frame().set_index("run_id")
    run = runs.loc[f"tiny-{name}__rllib__s0"]
    assert run["env_steps"] >= TINY[name]["env_steps"]
    # the harness's count agrees with RLlib's own within one rollout
    assert run["step_count_gap"] <= run["step_count_tolerance"]
    assert run["framework_env_steps"] >= TINY[name]["env_steps"]
    assert run["torch_threads"] == 1
    versions = json.loads(run["versions_json"])
    assert versions["ray"] == "2.60.0" and versions["torch"].startswith("2.13.0")
    fidelity = {item["setting"]: item for item in json.loads(run["fidelity_json"])}
    assert fidelity["hyperparameters.learning_rate"]["status"] == "exact"
    assert fidelity["network.hidden_sizes"]["native_name"] == "model_config.fcnet_hiddens"
    native = json.loads(run["native_config_json"])
    assert native["algorithm"] == ("APPO" if name == "appo" else TINY[name]["algorithm"])
    curves = rllib_store.curves_frame()
    curve = curves[curves["run_id"] == run.name]
    assert len(curve) >= 2 and curve["env_steps"].is_monotonic_increasing
    assert run["final_return_mean"] == pytest.approx(curve["return_mean"].iloc[-1])


def test_rllib_parallelism_and_mode_reach_rllib(rllib_store: Store) -> None:
    runs = rllib_store.runs_frame().set_index("run_id")
    ppo = json.loads(runs.loc["tiny-ppo__rllib__s0", "native_config_json"])
    assert ppo["num_env_runners"] == 2 and ppo["num_envs_per_env_runner"] == 2
    assert ppo["train_batch_size_per_learner"] == 32 * 4
    fidelity = {item["setting"]: item for item in json.loads(runs.loc["tiny-appo__rllib__s0", "fidelity_json"])}
    assert fidelity["parallelism.mode"]["status"] == "approximate"
    assert fidelity["parallelism.mode"]["native_value"] == "APPO"


def test_rllib_has_no_a2c_and_refuses_it_up_front() -> None:
    workload = workload_from_dict({"id": "a2c", "env": "CartPole-v1", "algorithm": "A2C", "env_steps": 1000,
                                   "hyperparameters": {}}, "test")
    with pytest.raises(IncompatibleError, match="adapter 'rllib' cannot run workload 'a2c': algorithm A2C"):
        build_plan(build_plugin_manager(autoload=False).plan_catalogue(), [workload], ["rllib"])


def _processes_of(run_id: str) -> list[psutil.Process]:
    found = []
    for process in psutil.process_iter():
        try:
            if process.environ().get(RUN_ID_ENV) == run_id and process.status() != psutil.STATUS_ZOMBIE:
                found.append(process)
        except psutil.Error:
            continue
    return found


def test_timeout_leaves_no_ray_process_behind(tmp_path: Path) -> None:
    workload = _workload("ppo", id="endless", env_steps=10_000_000, evaluation={"interval_steps": 100_000})
    plan = build_plan(build_plugin_manager(autoload=False).plan_catalogue(), [workload], ["rllib"])
    run_id = plan.runs[0].run_id
    seen: set[str] = set()
    stop = threading.Event()

    def watch() -> None:  # what the run had started before it was killed: Ray's daemons and actors
        while not stop.is_set():
            for process in _processes_of(run_id):
                try:
                    seen.add(process.name())
                except psutil.Error:
                    pass
            time.sleep(0.5)

    watcher = threading.Thread(target=watch, daemon=True)
    with Store(tmp_path / "runs.db") as store:
        # long enough for Ray to start on a loaded 2-core machine, so the kill meets a running cluster
        runner = LocalRunner(store, timeout_seconds=90, on_start=lambda _: watcher.start())
        summary = runner.run(plan)
    stop.set()
    watcher.join()
    assert [o.status for o in summary.outcomes] == ["timeout"]
    assert {"raylet", "gcs_server"} & seen, f"Ray had not started before the timeout: {sorted(seen)}"
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and _processes_of(run_id):
        time.sleep(0.2)
    leftovers = [" ".join(p.cmdline()[:3]) for p in _processes_of(run_id)]
    assert leftovers == [], f"processes of the run survived it: {leftovers}"
