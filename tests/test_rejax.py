"""The rejax adapter: its declarations without JAX installed, the gymnax/Gymnasium equivalence check, and
one real tiny PPO run in rejax's own environment (jax 0.5.3, gymnax 0.0.9), through the runner.

rejax 0.1.3 pins a JAX stack the main environment does not hold, so the equivalence check and the run
use a separate Python: the environment :mod:`rlcompare.pyenvs` builds for the adapter with uv (in the
user cache; reused when ready), as every `rlcompare run` with this adapter does.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest
from rlcompare_rejax import RejaxAdapter

from rlcompare.adapter import Fidelity
from rlcompare.errors import IncompatibleError
from rlcompare.execution.backend import BackendOptions, Limits
from rlcompare.execution.driver import Driver
from rlcompare.execution.local import LocalBackend
from rlcompare.plan.matrix import build_plan
from rlcompare.plan.placement import place_runs
from rlcompare.plugins.manager import BUILTIN_PLUGINS, build_plugin_manager
from rlcompare.pyenvs.manager import EnvironmentManager, EnvironmentSpec
from rlcompare.spec.workload import Workload, workload_from_dict
from rlcompare.store.sqlite_store import Store

ROOT = Path(__file__).resolve().parents[1]
BUDGET, INTERVAL, ENVS, ROLLOUT = 1_536, 384, 2, 64  # 12 iterations of 128 steps; grid points off the boundaries


def _workload(**changes: object) -> Workload:
    spec: dict[str, object] = {
        "id": "rejax-tiny", "env": "CartPole-v1", "algorithm": "PPO", "env_steps": BUDGET, "seeds": 1,
        "parallelism": {"envs_per_worker": ENVS},
        "hyperparameters": {"rollout_steps": ROLLOUT, "minibatch_size": 64, "epochs": 2},
        "evaluation": {"interval_steps": INTERVAL, "episodes": 3},
    }
    spec.update(changes)
    return workload_from_dict(spec, "test")


def _by_setting(workload: Workload) -> dict[str, object]:
    return {entry.setting: entry for entry in RejaxAdapter().fidelity(workload)}


# -- declarations, in the main environment (no JAX there) ---------------------------------------------


@pytest.mark.parametrize(("algorithm", "env"), [("DQN", "CartPole-v1"), ("SAC", "Pendulum-v1"),
                                                 ("DDPG", "Pendulum-v1"), ("A2C", "CartPole-v1")])
def test_other_algorithms_are_refused_naming_both(algorithm: str, env: str) -> None:
    workload = workload_from_dict({"id": "x-algo", "env": env, "algorithm": algorithm, "env_steps": 1000}, "test")
    with pytest.raises(IncompatibleError, match=rf"'rejax'.*'x-algo'.*{algorithm} is not offered"):
        RejaxAdapter().check_compatible(workload, "discrete" if env.startswith("Cart") else "continuous")


@pytest.mark.parametrize("env", ["MountainCar-v0", "MountainCarContinuous-v0", "rlcompare/CalibratedCartPole-v0"])
def test_environments_without_a_gymnax_twin_are_refused_naming_the_env(env: str) -> None:
    with pytest.raises(IncompatibleError, match=rf"environment {env} has no gymnax implementation"):
        RejaxAdapter().check_compatible(_workload(env=env), "discrete")


def test_env_arguments_are_refused() -> None:
    workload = _workload(env_kwargs={"max_episode_steps": 100})
    with pytest.raises(IncompatibleError, match="gymnax twin is configured for the registered"):
        RejaxAdapter().check_compatible(workload, "discrete")


def test_every_canonical_ppo_setting_is_mapped_with_honest_statuses() -> None:
    entries = _by_setting(_workload())
    native = {name: entries[f"hyperparameters.{name}"].native_name for name in
              ("learning_rate", "gamma", "gae_lambda", "clip_range", "rollout_steps", "minibatch_size", "epochs",
               "entropy_coef", "value_coef", "max_grad_norm")}
    assert native == {"learning_rate": "learning_rate", "gamma": "gamma", "gae_lambda": "gae_lambda",
                      "clip_range": "clip_eps", "rollout_steps": "num_steps", "minibatch_size": "num_minibatches",
                      "epochs": "num_epochs", "entropy_coef": "ent_coef", "value_coef": "vf_coef",
                      "max_grad_norm": "max_grad_norm"}
    assert entries["hyperparameters.max_grad_norm"].status is Fidelity.APPROXIMATE
    assert "element" in entries["hyperparameters.max_grad_norm"].note
    assert entries["hyperparameters.value_coef"].status is Fidelity.APPROXIMATE
    assert entries["hyperparameters.minibatch_size"].status is Fidelity.EXACT
    assert entries["hyperparameters.normalize_advantage"].status is Fidelity.EXACT
    assert entries["defaults.truncation_bootstrap"].native_value is False
    assert entries["defaults.value_clipping"].native_value == "max(clipped, unclipped)"
    kwargs, _ = RejaxAdapter().native_config(_workload())
    assert (kwargs["num_envs"], kwargs["num_steps"], kwargs["num_minibatches"], kwargs["num_epochs"]) == (2, 64, 2, 2)
    assert kwargs["normalize_observations"] is False and kwargs["normalize_rewards"] is False


def test_advantage_normalization_cannot_be_turned_off() -> None:
    entries = _by_setting(_workload(hyperparameters={"normalize_advantage": False}))
    assert entries["hyperparameters.normalize_advantage"].status is Fidelity.UNSUPPORTED


def test_minibatch_that_does_not_split_the_rollout_is_rounded_and_marked() -> None:
    workload = _workload(hyperparameters={"rollout_steps": 48, "minibatch_size": 40, "epochs": 2})
    entry = _by_setting(workload)["hyperparameters.minibatch_size"]
    kwargs, _ = RejaxAdapter().native_config(workload)
    assert entry.status is Fidelity.APPROXIMATE and (2 * 48) % kwargs["num_minibatches"] == 0
    assert kwargs["num_minibatches"] == 2  # 96 samples: 48 is the divisor closest to 40


def test_declarations_import_no_jax_nor_rejax() -> None:
    code = (
        "import sys\nfrom rlcompare_rejax import RejaxAdapter\n"
        "from rlcompare.spec.workload import workload_from_dict\n"
        "w = workload_from_dict({'id': 'x', 'env': 'CartPole-v1', 'algorithm': 'PPO', 'env_steps': 1000}, 't')\n"
        "a = RejaxAdapter(); a.fidelity(w); a.capabilities(); a.budget_tolerance(w); a.check_compatible(w, 'discrete')\n"
        "print(sorted(m for m in ('jax', 'rejax', 'gymnax', 'flax', 'torch') if m in sys.modules))\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                            env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"


# -- in rejax's own environment --------------------------------------------------------------------------


@pytest.fixture(scope="module")
def rejax_python() -> str:
    """The interpreter of the adapter's own environment (built with uv, or found ready)."""
    return str(EnvironmentManager().ensure(EnvironmentSpec.for_adapter(RejaxAdapter)).python)


EQUIVALENCE_SCRIPT = """
import json
from rlcompare_rejax.equivalence import check_equivalence
cases = {
    "CartPole-v1": check_equivalence("CartPole-v1", episodes=2, seed=3),
    "CartPole-v0": check_equivalence("CartPole-v0", episodes=1, seed=4),
    "Pendulum-v1": check_equivalence("Pendulum-v1", episodes=1, seed=5, max_steps=60),
    "Acrobot-v1": check_equivalence("Acrobot-v1", episodes=1, seed=6, max_steps=60),
    "CartPole-v1 gravity 9.81": check_equivalence("CartPole-v1", episodes=2, seed=3,
                                                  param_overrides={"gravity": 9.81}),
    "CartPole-v1 pole 0.55": check_equivalence("CartPole-v1", episodes=2, seed=3,
                                               param_overrides={"length": 0.55}),
    "Pendulum-v1 g 9.81": check_equivalence("Pendulum-v1", episodes=1, seed=5, max_steps=60,
                                            param_overrides={"g": 9.81}),
    "CartPole-v0 limit 210": check_equivalence("CartPole-v0", episodes=1, seed=4,
                                               param_overrides={"max_steps_in_episode": 210}),
}
print(json.dumps({name: verdict.to_dict() for name, verdict in cases.items()}))
"""


@pytest.fixture(scope="module")
def equivalence(rejax_python: str) -> dict[str, dict[str, object]]:
    result = subprocess.run([rejax_python, "-c", EQUIVALENCE_SCRIPT], capture_output=True, text=True, timeout=600,
                            env={**os.environ, "JAX_PLATFORMS": "cpu", "PYTHONPATH": ""})
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads(result.stdout.strip().splitlines()[-1])


@pytest.mark.framework
@pytest.mark.parametrize("env", ["CartPole-v1", "CartPole-v0", "Pendulum-v1", "Acrobot-v1"])
def test_gymnax_twin_matches_gymnasium_within_the_stated_tolerances(
        equivalence: dict[str, dict[str, object]], env: str) -> None:
    verdict = equivalence[env]
    assert verdict["passed"], verdict["failures"]
    assert verdict["steps"] > 10
    assert verdict["max_abs_error"]["episode_state"] <= 1e-9  # float64, whole episodes
    assert verdict["max_abs_error"]["one_step_state"] <= 1e-4  # float32, one step from the same state
    assert any("truncation" in text for text in verdict["known_differences"])


@pytest.mark.framework
@pytest.mark.parametrize("case", ["CartPole-v1 gravity 9.81", "CartPole-v1 pole 0.55", "Pendulum-v1 g 9.81",
                                  "CartPole-v0 limit 210"])
def test_equivalence_check_fails_on_a_deliberately_altered_environment(
        equivalence: dict[str, dict[str, object]], case: str) -> None:
    verdict = equivalence[case]
    assert not verdict["passed"]
    assert verdict["failures"] and verdict["params_changed"]


CACHED_PROGRAM_SCRIPT = """
import json
import jax
import jax.numpy as jnp
from rlcompare_rejax.run import RejaxRun
run = RejaxRun("PPO", "CartPole-v1", {"num_envs": 2, "num_steps": 32, "num_epochs": 1, "num_minibatches": 2,
                                      "total_timesteps": 10_000}, 1)
state = run._iterate(run.ts, jnp.int32(3))
print(json.dumps({"global_step": int(state.global_step), "cache": bool(jax.config.jax_enable_compilation_cache)}))
"""


@pytest.mark.framework
def test_a_users_jax_compilation_cache_is_not_used_by_runs(rejax_python: str, tmp_path: Path) -> None:
    """A user's JAX_COMPILATION_CACHE_DIR (every program written, however quick to compile) is neither
    written nor read by a process the harness starts: its training program is compiled, runs and trains,
    and the cache folder stays empty. (With rejax 0.1.3 on jax 0.5.3, a second process that read this
    program back from the cache took no step: its state came back unchanged.)"""
    from rlcompare.pyenvs.processes import process_environment

    user = {**os.environ, "JAX_COMPILATION_CACHE_DIR": str(tmp_path / "jax-cache"), "JAX_PLATFORMS": "cpu",
            "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS": "0", "JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES": "0"}
    result = subprocess.run([rejax_python, "-c", CACHED_PROGRAM_SCRIPT], capture_output=True, text=True,
                            timeout=600, env=process_environment(user, 1, rejax_python))
    assert result.returncode == 0, result.stderr[-3000:]
    assert json.loads(result.stdout.strip().splitlines()[-1]) == {"global_step": 3 * 2 * 32, "cache": False}
    assert not any((tmp_path / "jax-cache").rglob("*"))


@pytest.fixture(scope="module")
def rejax_store(tmp_path_factory: pytest.TempPathFactory) -> Store:
    plugins = build_plugin_manager((*BUILTIN_PLUGINS, "rlcompare_rejax"), autoload=False)
    workloads = [_workload(), PROGRAM]
    plan = place_runs(plugins.adapters, build_plan(plugins.plan_catalogue(), workloads, ["rejax"]))
    assert {run.environment is not None for run in plan.runs} == {True}
    store = Store(tmp_path_factory.mktemp("rejax") / "runs.db")
    summary = Driver(store, LocalBackend(Limits(900, None), BackendOptions(jobs=1))).run(plan)
    assert [o.status for o in summary.outcomes] == ["ok"] * 3, [o.record.traceback for o in summary.outcomes]
    return store


#: Two seeds in one vmapped program (``parallelism.seeds_per_program``).
PROGRAM = _workload(id="rejax-program", seeds=2, parallelism={"envs_per_worker": ENVS, "seeds_per_program": 2})


@pytest.mark.framework
@pytest.mark.timeout(1200)
def test_two_seeds_in_one_vmapped_program_are_two_runs_each_counted_and_evaluated_on_its_own(
        rejax_store: Store) -> None:
    runs = rejax_store.runs_frame().set_index("run_id")
    pair = [runs.loc[f"rejax-program__rejax__s{seed}"] for seed in (0, 1)]
    curves = rejax_store.curves_frame()
    returns = []
    for run in pair:
        assert run["status"] == "ok", run["validity_json"]
        assert run["seeds_in_program"] == 2
        # each seed's counts come from its own slice of the vmapped env state, checked against its own
        # global_step, and meet the budget exactly
        assert run["env_steps"] == run["framework_env_steps"] == BUDGET
        native = json.loads(run["native_config_json"])
        assert native["program_seeds"] == [0, 1] and native["seeds_in_program"] == 2
        assert native["counted_steps"] == native["global_step"] == BUDGET
        assert native["counted_episodes"] == run["episodes"] > 0
        curve = curves[curves["run_id"] == run.name]
        assert list(curve["env_steps"])[:5] == [0, 384, 768, 1152, 1536]
        returns.append(list(curve["return_mean"]))
        assert run["throughput"] == pytest.approx(run["env_steps"] / run["training_seconds"])
    assert returns[0] != returns[1]  # two seeds' policies (their own keys), each evaluated on its own episodes
    # one program: the same compile and the same process measurements, recorded with each run
    assert pair[0]["wall_seconds"] == pair[1]["wall_seconds"] and pair[0]["cpu_seconds"] == pair[1]["cpu_seconds"]
    assert json.loads(pair[0]["native_config_json"])["compile_seconds"] == json.loads(
        pair[1]["native_config_json"])["compile_seconds"]
    fidelity = {item["setting"]: item for item in json.loads(pair[0]["fidelity_json"])}
    assert fidelity["parallelism.seeds_per_program"]["native_name"] == "jax.vmap"
    assert runs.loc["rejax-tiny__rejax__s0"]["seeds_in_program"] != 2  # a run alone records no program


@pytest.mark.framework
@pytest.mark.timeout(1200)
def test_rejax_run_is_valid_counted_in_the_jitted_state_and_stored(rejax_store: Store) -> None:
    run = rejax_store.runs_frame().set_index("run_id").loc["rejax-tiny__rejax__s0"]
    assert run["status"] == "ok", run["validity_json"]
    # whole iterations of 2 envs x 64 steps: the budget is met exactly, and both counts agree
    assert run["env_steps"] == run["framework_env_steps"] == BUDGET
    assert run["episodes"] > 0
    native = json.loads(run["native_config_json"])
    assert native["counted_steps"] == native["global_step"] == BUDGET
    assert native["counted_episodes"] == run["episodes"]
    assert native["equivalence"]["passed"] is True and native["equivalence"]["env_id"] == "CartPole-v1"
    assert native["compile_seconds"] > 0
    assert native["xla_threads_pinned"] is True and native["xla_flags"].startswith("PJRT_NPROC=1 ")
    assert native["iterations"] == BUDGET // (ENVS * ROLLOUT) and native["segments"] == math.ceil(BUDGET / INTERVAL)
    versions = json.loads(run["versions_json"])
    assert (versions["rejax"], versions["gymnax"], versions["jax"]) == ("0.1.3", "0.0.9", "0.5.3")
    curves = rejax_store.curves_frame()
    curve = curves[curves["run_id"] == run.name]
    # step 0, then one evaluation per grid point, each at the first iteration boundary at or after it
    assert list(curve["env_steps"])[:5] == [0, 384, 768, 1152, 1536]
    assert all(math.isfinite(value) for value in curve["return_mean"])
    assert run["final_return_mean"] == pytest.approx(curve["return_mean"].iloc[-1])
