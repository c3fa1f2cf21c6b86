"""The Sample Factory adapter: its declarations without Sample Factory installed, and real tiny runs
in Sample Factory's own environment (numpy<2, gymnasium<1.0), through the runner.

Sample Factory 2.1.1 cannot share the main environment, so the real runs use a separate Python:
the environment :mod:`rlcompare.pyenvs` builds for it with uv (in the user cache; reused when
ready), as every `rlcompare run` with this adapter does.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest
from rlcompare_sample_factory import SampleFactoryAdapter, SampleFactoryRun

from rlcompare.adapter import Fidelity
from rlcompare.errors import IncompatibleError
from rlcompare.execution.backend import RUN_ID_ENV, BackendOptions, Limits
from rlcompare.execution.driver import Driver
from rlcompare.execution.local import LocalBackend
from rlcompare.plan.matrix import build_plan
from rlcompare.plan.placement import place_runs
from rlcompare.plugins.manager import build_plugin_manager
from rlcompare.spec.workload import Workload, workload_from_dict
from rlcompare.store.sqlite_store import Store

ROOT = Path(__file__).resolve().parents[1]


def _workload(**changes: object) -> Workload:
    spec: dict[str, object] = {
        "id": "sf-tiny", "env": "CartPole-v1", "algorithm": "PPO", "env_steps": 512, "seeds": 1,
        "parallelism": {"envs_per_worker": 2},
        "hyperparameters": {"rollout_steps": 32, "minibatch_size": 32, "epochs": 2},
        "evaluation": {"interval_steps": 128, "episodes": 2},
    }
    spec.update(changes)
    return workload_from_dict(spec, "test")


def _by_setting(workload: Workload) -> dict[str, object]:
    return {entry.setting: entry for entry in SampleFactoryAdapter().fidelity(workload)}


# -- declarations, in the main environment (no Sample Factory there) -----------------------------------


def test_capabilities_offer_ppo_only_sync_and_async_with_workers() -> None:
    capabilities = SampleFactoryAdapter().capabilities()
    assert capabilities.algorithms == frozenset({"PPO"})
    assert capabilities.modes == frozenset({"sync", "async"})
    assert capabilities.rollout_workers and capabilities.vectorized_envs


@pytest.mark.parametrize(("algorithm", "env"), [("A2C", "CartPole-v1"), ("DQN", "CartPole-v1"),
                                                 ("SAC", "Pendulum-v1")])
def test_other_algorithms_are_refused_up_front_naming_both(algorithm: str, env: str) -> None:
    workload = workload_from_dict({"id": f"x-{algorithm.lower()}", "env": env, "algorithm": algorithm,
                                   "env_steps": 1000}, "test")
    with pytest.raises(IncompatibleError, match=rf"'sample-factory'.*'x-{algorithm.lower()}'.*{algorithm}"):
        SampleFactoryAdapter().check_compatible(workload, "discrete")


def test_every_canonical_ppo_setting_is_reported_with_its_native_name() -> None:
    entries = _by_setting(_workload())
    native = {name: entries[f"hyperparameters.{name}"].native_name for name in
              ("learning_rate", "gamma", "gae_lambda", "clip_range", "rollout_steps", "minibatch_size", "epochs",
               "entropy_coef", "value_coef", "max_grad_norm")}
    assert native == {"learning_rate": "learning_rate", "gamma": "gamma", "gae_lambda": "gae_lambda",
                      "clip_range": "ppo_clip_ratio", "rollout_steps": "rollout", "minibatch_size": "batch_size",
                      "epochs": "num_epochs", "entropy_coef": "exploration_loss_coeff",
                      "value_coef": "value_loss_coeff", "max_grad_norm": "max_grad_norm"}
    assert entries["hyperparameters.clip_range"].status is Fidelity.APPROXIMATE
    assert "1/(1+eps)" in entries["hyperparameters.clip_range"].note
    assert entries["hyperparameters.minibatch_size"].status is Fidelity.EXACT
    assert "algorithm" not in entries  # not a canonical setting (APPO with async_rl=False is PPO: the mode's note)
    assert entries["parallelism.mode"].status is Fidelity.EXACT and "PPO" in entries["parallelism.mode"].note
    assert entries["parallelism.workers"].native_name == "serial_mode"


def test_advantage_normalization_cannot_be_turned_off() -> None:
    entries = _by_setting(_workload(hyperparameters={"normalize_advantage": False}))
    assert entries["hyperparameters.normalize_advantage"].status is Fidelity.UNSUPPORTED


def test_async_mode_is_appo_with_policy_lag_and_multiprocess() -> None:
    workload = _workload(parallelism={"envs_per_worker": 2, "workers": 1, "mode": "async"})
    entries = _by_setting(workload)
    assert "max_policy_lag" in entries["parallelism.mode"].note
    assert entries["hyperparameters.gae_lambda"].status is Fidelity.APPROXIMATE
    assert entries["parallelism.workers"].status is Fidelity.APPROXIMATE
    kwargs, _ = SampleFactoryAdapter().native_config(workload)
    assert (kwargs["async_rl"], kwargs["serial_mode"], kwargs["with_vtrace"]) == (True, False, False)
    assert SampleFactoryAdapter().budget_tolerance(workload).overshoot_steps == 3 * 32 * 2


def test_workers_map_to_rollout_worker_processes() -> None:
    kwargs, _ = SampleFactoryAdapter().native_config(_workload(parallelism={"envs_per_worker": 3, "workers": 4}))
    assert (kwargs["num_workers"], kwargs["num_envs_per_worker"], kwargs["serial_mode"]) == (4, 3, False)
    assert kwargs["worker_num_splits"] == 1  # an odd number of envs cannot be double-buffered


@pytest.mark.parametrize(("envs", "rollout", "minibatch", "native", "count"), [
    (2, 64, 48, 64, 2),     # 48 is not whole trajectories of 64: one trajectory per minibatch is closest
    (4, 128, 64, 128, 4),   # the canonical defaults: Sample Factory cannot split a trajectory
    (4, 32, 100, 128, 1),   # 2 x 64 and 1 x 128 are 36 and 28 away from 100
    (3, 16, 32, 48, 1),     # 3 envs: 1 or 3 trajectories (16 away either way), never 2; the larger wins
])
def test_minibatch_that_is_not_whole_trajectories_is_rounded_and_marked(
        envs: int, rollout: int, minibatch: int, native: int, count: int) -> None:
    workload = _workload(parallelism={"envs_per_worker": envs},
                         hyperparameters={"rollout_steps": rollout, "minibatch_size": minibatch, "epochs": 2})
    entry = _by_setting(workload)["hyperparameters.minibatch_size"]
    kwargs, _ = SampleFactoryAdapter().native_config(workload)
    assert entry.status is Fidelity.APPROXIMATE and "whole trajectories" in entry.note
    assert (kwargs["batch_size"], kwargs["num_batches_per_epoch"]) == (native, count) and entry.native_value == native
    assert kwargs["batch_size"] % rollout == 0 and kwargs["batch_size"] * count == envs * rollout


def test_minibatch_of_whole_trajectories_is_exact() -> None:
    workload = _workload(parallelism={"envs_per_worker": 4},
                         hyperparameters={"rollout_steps": 64, "minibatch_size": 128, "epochs": 2})
    kwargs, _ = SampleFactoryAdapter().native_config(workload)
    assert _by_setting(workload)["hyperparameters.minibatch_size"].status is Fidelity.EXACT
    assert (kwargs["batch_size"], kwargs["num_batches_per_epoch"]) == (128, 2)


def test_native_command_line_points_every_file_into_the_run_directory(tmp_path: Path) -> None:
    run = SampleFactoryRun(_workload(), 3, tmp_path / "sf", [])
    argv = run.argv()
    assert argv[argv.index("--train_dir") + 1] == str(tmp_path / "sf")
    assert argv[argv.index("--with_wandb") + 1] == "False"
    assert argv[argv.index("--encoder_mlp_layers") + 1: argv.index("--encoder_mlp_layers") + 3] == ["64", "64"]
    assert argv[argv.index("--train_for_env_steps") + 1] == "511"  # Sample Factory stops once past it


def test_declarations_import_no_sample_factory_nor_torch() -> None:
    code = (
        "import sys\nfrom rlcompare_sample_factory import SampleFactoryAdapter\n"
        "from rlcompare.spec.workload import workload_from_dict\n"
        "w = workload_from_dict({'id': 'x', 'env': 'CartPole-v1', 'algorithm': 'PPO', 'env_steps': 1000}, 't')\n"
        "a = SampleFactoryAdapter(); a.fidelity(w); a.capabilities(); a.budget_tolerance(w)\n"
        "print(sorted(m for m in ('sample_factory', 'torch', 'signal_slot') if m in sys.modules))\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                            env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"


# -- real runs, in Sample Factory's own environment ---------------------------------------------------


TINY_RUNS = {
    "serial-sync": {"envs_per_worker": 2, "workers": 1, "mode": "sync"},
    "processes-async": {"envs_per_worker": 2, "workers": 2, "mode": "async"},
}


@pytest.fixture(scope="module")
def sf_store(tmp_path_factory: pytest.TempPathFactory) -> Store:
    workloads = [_workload(id=f"sf-{name}", parallelism=parallelism) for name, parallelism in TINY_RUNS.items()]
    plugins = build_plugin_manager(autoload=False)
    # the adapter declares it cannot share the main environment: placing the plan builds (or reuses)
    # its own with uv, exactly as `rlcompare run` does
    plan = place_runs(plugins.adapters, build_plan(plugins.plan_catalogue(), workloads, ["sample-factory"]))
    assert {run.environment is not None for run in plan.runs} == {True}
    store = Store(tmp_path_factory.mktemp("sample-factory") / "runs.db")
    backend = LocalBackend(Limits(900, None), BackendOptions(jobs=2))
    cwd_before = sorted(os.listdir(Path.cwd()))
    shared_before = _shared_tensor_files()
    summary = Driver(store, backend).run(plan)
    assert [o.status for o in summary.outcomes] == ["ok"] * len(TINY_RUNS), [
        o.record.traceback for o in summary.outcomes]
    assert sorted(os.listdir(Path.cwd())) == cwd_before, "Sample Factory wrote into the working directory"
    leaked = [name for name in _shared_tensor_files() - shared_before
              if not Path(f"/proc/{name.split('_')[1]}").exists()]
    assert leaked == [], "shared-tensor files of finished processes left in /dev/shm"
    return store


@pytest.mark.framework
@pytest.mark.timeout(1800)  # Sample Factory starts a process per component: minutes on a loaded machine
@pytest.mark.parametrize("name", list(TINY_RUNS))
def test_sample_factory_run_is_valid_counted_and_stored(sf_store: Store, name: str) -> None:
    workload = _workload(id=f"sf-{name}", parallelism=TINY_RUNS[name])
    run = sf_store.runs_frame().set_index("run_id").loc[f"sf-{name}__sample-factory__s0"]
    assert run["status"] == "ok", run["validity_json"]  # "invalid" when the verdict fails
    tolerance = SampleFactoryAdapter().budget_tolerance(workload)
    assert workload.env_steps <= run["env_steps"] <= workload.env_steps + tolerance.overshoot_steps
    if workload.parallelism.mode == "sync":
        # collection and training alternate: the learner trained on exactly the steps the harness counted
        assert run["framework_env_steps"] == run["env_steps"] == workload.env_steps
    else:
        assert 0 <= run["env_steps"] - run["framework_env_steps"] <= tolerance.count_gap_steps
    assert run["episodes"] > 0
    versions = json.loads(run["versions_json"])
    assert versions["sample-factory"] == "2.1.1" and versions["numpy"].startswith("1.")
    assert versions["gymnasium"] == "0.29.1"
    native = json.loads(run["native_config_json"])
    assert native["algo"] == "APPO" and native["with_vtrace"] is False
    assert native["serial_mode"] is (name == "serial-sync")
    assert native["async_rl"] is (workload.parallelism.mode == "async")
    envs = workload.parallelism.total_envs
    assert (native["rollout"], native["batch_size"], native["num_batches_per_epoch"]) == (32, 32, envs)
    assert native["with_wandb"] is False
    curves = sf_store.curves_frame()
    curve = curves[curves["run_id"] == run.name]
    assert len(curve) >= 3 and curve["env_steps"].iloc[0] == 0
    assert curve["env_steps"].is_monotonic_increasing
    assert all(math.isfinite(value) for value in curve["return_mean"])
    assert run["final_return_mean"] == pytest.approx(curve["return_mean"].iloc[-1])


@pytest.mark.framework
@pytest.mark.timeout(1800)
def test_sample_factory_leaves_no_process_behind(sf_store: Store) -> None:
    run_ids = set(sf_store.runs_frame()["run_id"])
    assert len(run_ids) == len(TINY_RUNS)
    # every process of a run (worker, rollout, inference, learner, env-info) carries its run id, even
    # one orphaned by a worker that ended before it
    alive = [pid for pid, run_id in _processes_with_run_ids().items() if run_id in run_ids]
    assert alive == []


def _processes_with_run_ids() -> dict[int, str]:
    found = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            environ = (entry / "environ").read_bytes().split(b"\0")
        except OSError:
            continue
        for item in environ:
            if item.startswith(RUN_ID_ENV.encode() + b"="):
                found[int(entry.name)] = item.split(b"=", 1)[1].decode()
    return found


def _shared_tensor_files() -> set[str]:
    shm = Path("/dev/shm")
    return {path.name for path in shm.glob("torch_*_*")} if shm.is_dir() else set()
