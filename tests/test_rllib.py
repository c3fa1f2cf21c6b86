"""The RLlib adapter trained for real through the runner (tiny budgets; Ray started per run), and
the schedule its training runs trace from inside RLlib."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import psutil
import pytest

from rlcompare.errors import IncompatibleError
from rlcompare.execution.backend import Limits
from rlcompare.execution.process_tree import RUN_ID_ENV
from rlcompare.execution.runner import LocalRunner
from rlcompare.harness.run_directory import runs_root
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
            "hyperparameters": {"learning_starts": 100, "buffer_size": 1000, "train_every": 8,
                                "target_update_interval": 100}},
    "sac": {"env": "Pendulum-v1", "algorithm": "SAC", "env_steps": 400,
            "hyperparameters": {"learning_starts": 100, "minibatch_size": 32, "buffer_size": 1000, "train_every": 8}},
    "appo": {"env": "CartPole-v1", "algorithm": "PPO", "env_steps": 512,
             "parallelism": {"workers": 2, "envs_per_worker": 1, "mode": "async"},
             "hyperparameters": {"rollout_steps": 64, "minibatch_size": 64, "epochs": 1}},
    # one local env runner with 2 envs, minibatches of a whole rollout: the schedule's PPO
    "ppo-local": {"env": "CartPole-v1", "algorithm": "PPO", "env_steps": 512,
                  "parallelism": {"workers": 1, "envs_per_worker": 2},
                  "hyperparameters": {"rollout_steps": 32, "minibatch_size": 32, "epochs": 2}},
}


def _workload(name: str, **overrides: object) -> object:
    spec = {"id": f"tiny-{name}", "seeds": 1, "evaluation": EVALUATION, **TINY[name], **overrides}
    return workload_from_dict(spec, "test")


@pytest.fixture(scope="module")
def rllib_store(tmp_path_factory: pytest.TempPathFactory) -> Store:
    plan = build_plan(build_plugin_manager(autoload=False).plan_catalogue(), [_workload(name) for name in TINY], ["rllib"])
    store = Store(tmp_path_factory.mktemp("rllib") / "runs.db")
    # two at a time where two fit (a run with two remote env runners holds 3 CPUs and runs alone)
    summary = LocalRunner(store, jobs=2, timeout_seconds=400).run(plan)
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


def test_training_runs_trace_their_schedule(rllib_store: Store) -> None:
    """PPO: one update per train batch, and more minibatch steps per update than the canonical
    epochs x batch / minibatch (the bootstrap rows); DQN: a gradient step every train_every env
    steps after learning starts, target syncs at the first update past each interval, epsilon."""
    runs = rllib_store.runs_frame().set_index("run_id")
    ppo = json.loads(runs.loc["tiny-ppo-local__rllib__s0", "schedule_json"])
    assert ppo["update"]["count"] >= 512 // 64 and ppo["update"]["min_interval_env_steps"] >= 64
    canonical = 2 * (32 * 2) // 32
    assert ppo["update"]["mean_interval_gradient_steps"] > canonical
    assert ppo["gradient_step"]["count"] > canonical * ppo["update"]["count"]
    assert "target_sync" not in ppo and "exploration" not in ppo
    dqn = json.loads(runs.loc["tiny-dqn__rllib__s0", "schedule_json"])
    steps = dqn["gradient_step"]
    assert steps["first_env_step"] >= 100 and steps["min_interval_env_steps"] == steps["max_interval_env_steps"] == 8
    assert dqn["update"]["count"] == steps["count"]
    assert dqn["target_sync"]["min_interval_env_steps"] >= 100
    assert dqn["target_sync"]["mean_interval_gradient_steps"] == pytest.approx(104 / 8)
    curve = dqn["exploration"]["samples"]
    assert curve[0] == [0, 1.0] and curve[-1][1] == pytest.approx(0.05)


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
    """The run's timeout strikes while RLlib trains: Ray's daemons are up and the first evaluation
    point is stored. The timeout is the backend's own (90 s, long enough for Ray to start on a loaded
    2-core machine); once the cluster is seen running it is shortened to what has elapsed, so the kill
    comes at once instead of after 90 s of training."""
    workload = _workload("ppo", id="endless", env_steps=10_000_000, evaluation={"interval_steps": 100_000})
    plan = build_plan(build_plugin_manager(autoload=False).plan_catalogue(), [workload], ["rllib"])
    run_id = plan.runs[0].run_id
    seen: set[str] = set()
    stop = threading.Event()
    store_path = tmp_path / "runs.db"

    def training() -> bool:  # the first evaluation point: RLlib's algorithm is built and stepping
        return any(path.stat().st_size for path in runs_root(store_path).glob(f"{run_id}.*/progress.jsonl"))

    def watch() -> None:  # what the run had started before it was killed: Ray's daemons and actors
        shortened = False
        while not stop.is_set():
            for process in _processes_of(run_id):
                try:
                    seen.add(process.name())
                except psutil.Error:
                    pass
            if not shortened and {"raylet", "gcs_server"} <= seen and training():
                runner.backend.limits = Limits(timeout_seconds=time.monotonic() - started)
                shortened = True
            time.sleep(0.5)

    watcher = threading.Thread(target=watch, daemon=True)
    started = time.monotonic()
    with Store(store_path) as store:
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
