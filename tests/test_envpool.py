"""EnvPool as the simulation backend (``parallelism.simulation = "envpool"``): the field validates,
the harness counts every step of the pool, EnvPool's environments step as Gymnasium's, adapters that
do not honour it are refused when planning, and SB3 and skrl train on it into valid runs."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from rlcompare.errors import IncompatibleError, InvalidWorkloadError
from rlcompare.harness.workload_view import workload_view
from rlcompare.plugins.manager import build_plugin_manager
from rlcompare.spec.builtin_workloads import SCALING, SCALING_ENVPOOL
from rlcompare.spec.workload import check_environment, workload_from_dict
from tests.conftest import run_cli

envpool = pytest.importorskip("envpool", reason="EnvPool is an extra: pip install 'rlcompare[envpool]'")

from rlcompare.harness.context import TrainingContext  # noqa: E402
from rlcompare.harness.counted_envs import StepCounter  # noqa: E402
from rlcompare.harness.envpool_envs import CHECKED_ENVS, CountedEnvPool, dynamics_check  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore:.*precision lowered by casting.*")


def _spec(**parallelism: object) -> dict:
    return {"id": "ep", "env": "CartPole-v1", "algorithm": "PPO", "env_steps": 1_000,
            "parallelism": {"envs_per_worker": 4, **parallelism}}


# -- the field -------------------------------------------------------------------------------------


@pytest.mark.parametrize("value", ["envpol", "EnvPool", "", 1, True, None, ["envpool"]])
def test_a_bad_simulation_is_refused_naming_the_field(value: object) -> None:
    with pytest.raises(InvalidWorkloadError) as refused:
        workload_from_dict(_spec(simulation=value), "test")
    message = str(refused.value)
    assert "field 'parallelism.simulation'" in message and "\n" not in message
    assert "'gymnasium' or 'envpool'" in message


@settings(max_examples=150, deadline=None)
@given(st.one_of(st.text(max_size=40), st.integers(), st.floats(allow_nan=True), st.booleans(), st.none(),
                 st.lists(st.text(max_size=8), max_size=3), st.dictionaries(st.text(max_size=5), st.integers(),
                                                                              max_size=2)))
def test_any_other_simulation_value_is_refused_in_one_line_naming_the_field(value: object) -> None:
    """Fuzzed: whatever else the field holds, one line naming it (markup and newlines in the value included)."""
    assume(value not in ("gymnasium", "envpool"))
    with pytest.raises(InvalidWorkloadError) as refused:
        workload_from_dict(_spec(simulation=value), "test")
    message = str(refused.value)
    assert "field 'parallelism.simulation'" in message and "\n" not in message


def test_a_bad_simulation_exits_2_in_one_line(tmp_path: Path) -> None:
    path = tmp_path / "bad.toml"
    path.write_text('env = "CartPole-v1"\nalgorithm = "PPO"\nenv_steps = 1000\n[parallelism]\nsimulation = "gym"\n',
                    encoding="utf-8")
    result = run_cli(["plan", "--workload", str(path), "--adapters", "sb3"])
    assert result.returncode == 2
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "field 'parallelism.simulation'" in lines[0] and "(got 'gym')" in lines[0]


def test_the_default_leaves_the_spec_and_its_digest_as_before() -> None:
    plain, explicit = workload_from_dict(_spec(), "t"), workload_from_dict(_spec(simulation="gymnasium"), "t")
    assert "simulation" not in plain.to_dict()["parallelism"] and plain.digest == explicit.digest
    pooled = workload_from_dict(_spec(simulation="envpool"), "t")
    assert pooled.to_dict()["parallelism"]["simulation"] == "envpool" and pooled.digest != plain.digest
    # the worker's view reads the default back where the spec omits it
    assert workload_view(plain.to_dict()).parallelism.simulation == "gymnasium"
    assert workload_view(pooled.to_dict()).parallelism.simulation == "envpool"


@pytest.mark.parametrize(("env", "kwargs", "fragment"), [
    ("Pendulum-v1", {}, "EnvPool's Pendulum-v1 differs from Gymnasium's"),
    ("CartPole-v0", {}, "CartPole-v0 is not among the environments checked equal"),
    ("CartPole-v1", {"sutton_barto_reward": True}, "EnvPool takes no env_kwargs"),
])
def test_envpool_on_an_unchecked_environment_is_refused_when_planning(env: str, kwargs: dict, fragment: str) -> None:
    algorithm = "SAC" if env == "Pendulum-v1" else "PPO"
    workload = workload_from_dict({**_spec(simulation="envpool"), "env": env, "env_kwargs": kwargs,
                                   "algorithm": algorithm}, "t")
    with pytest.raises(InvalidWorkloadError) as refused:
        check_environment(workload)
    assert "field 'parallelism.simulation'" in str(refused.value) and fragment in str(refused.value)


# -- refusals --------------------------------------------------------------------------------------


def test_an_adapter_that_does_not_honour_envpool_is_refused_with_the_reason() -> None:
    from rlcompare.plan.matrix import build_plan

    catalogue = build_plugin_manager(autoload=False).plan_catalogue()
    workload = workload_from_dict(_spec(simulation="envpool"), "t")
    with pytest.raises(IncompatibleError) as refused:
        build_plan(catalogue, [workload], ["tianshou"])
    assert ("adapter 'tianshou' cannot run workload 'ep': parallelism.simulation = 'envpool' is not honoured"
            in str(refused.value))
    # with every adapter, the pair is listed as refused and the honouring adapters plan their runs
    plan = build_plan(catalogue, [workload])
    assert {run.adapter_id for run in plan.runs} >= {"sb3", "skrl"}
    refused_ids = {pair.adapter_id for pair in plan.refused if "parallelism.simulation" in pair.reason}
    assert "tianshou" in refused_ids and not refused_ids & {"sb3", "skrl"}


def test_without_envpool_installed_the_pair_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    find_spec = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *args: None if name == "envpool" else find_spec(name, *args))
    adapter = build_plugin_manager(autoload=False).plan_catalogue().adapter("sb3")
    with pytest.raises(IncompatibleError, match=r"needs the envpool package.*rlcompare\[envpool\]"):
        adapter.check_compatible(workload_from_dict(_spec(simulation="envpool"), "t"), "discrete")


def test_the_honouring_adapters_say_so_in_their_fidelity_reports() -> None:
    catalogue = build_plugin_manager(autoload=False).plan_catalogue()
    workload = workload_from_dict(_spec(simulation="envpool", workers=2, envs_per_worker=1), "t")
    for adapter_id in ("sb3", "skrl"):
        entries = {item.setting: item for item in catalogue.adapter(adapter_id).fidelity(workload)}
        assert entries["parallelism.simulation"].status.value == "exact"
        assert entries["parallelism.simulation"].native_name == "envpool.make"
        # two workers are two EnvPool threads in one process, not two processes
        assert entries["parallelism.workers"].status.value == "approximate"
        assert "EnvPool threads" in entries["parallelism.workers"].note


def test_the_scaling_suite_has_an_envpool_arm_mirroring_the_calibrated_one() -> None:
    suite = {w.id: w for w in build_plugin_manager(autoload=False).suite("scaling")}
    arm = [suite[spec["id"]] for spec in SCALING_ENVPOOL]
    assert [w.parallelism.workers for w in arm] == [spec["parallelism"]["workers"] for spec in SCALING]
    assert {w.parallelism.simulation for w in arm} == {"envpool"} and {w.env for w in arm} == {"CartPole-v1"}
    for pooled, calibrated in zip(arm, (suite[spec["id"]] for spec in SCALING), strict=True):
        assert pooled.hyperparameters == calibrated.hyperparameters and pooled.env_steps == calibrated.env_steps
        check_environment(pooled)


# -- counting --------------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["NextStep", "SameStep"])
def test_every_step_of_the_pool_is_counted(tmp_path: Path, mode: str) -> None:
    counter = StepCounter(tmp_path / "steps", 16, create=True)
    env = CountedEnvPool("CartPole-v1", 4, 0, counter.path, first_slot=3, autoreset_mode=mode)
    env.reset(seed=0)
    rng = np.random.default_rng(0)
    resets = episodes = 0
    pending = np.zeros(4, dtype=bool)
    for _ in range(300):
        _, rewards, terminated, truncated, info = env.step(rng.integers(2, size=4))
        ended = terminated | truncated
        episodes += int(ended.sum())
        if mode == "NextStep":
            resets += int(pending.sum())  # the step that resets an ended env is no transition
            assert np.all(rewards[pending] == 0.0)
            pending = ended
        elif ended.any():
            final = info["final_obs"]
            assert info["_final_obs"].tolist() == ended.tolist()
            assert all(final[i] is not None for i in np.flatnonzero(ended))
    env.close()
    steps, counted_episodes = counter.totals()
    assert steps == 300 * 4 - resets and counted_episodes == episodes > 0
    assert resets > 0 if mode == "NextStep" else resets == 0
    table = np.frombuffer(counter.path.read_bytes(), dtype=np.int64).reshape(-1, 2)
    assert table[:3].sum() == 0 and table[7:].sum() == 0 and np.all(table[3:7, 0] > 0)  # slots 3..6 only


def test_the_contexts_vector_env_is_the_pool_and_counts_into_the_run(tmp_path: Path) -> None:
    workload = workload_from_dict(_spec(simulation="envpool"), "t")
    context = TrainingContext(workload, seed=5, run_dir=tmp_path)
    assert context.simulation == "envpool"
    env = context.vector_env("SameStep")
    assert isinstance(env, CountedEnvPool) and env.num_envs == 4
    first, _ = env.reset(seed=5)
    # EnvPool seeds env i with seed + i, as Gymnasium's vector envs do: a one-env pool seeded 6 starts as env 1
    alone = envpool.make("CartPole-v1", env_type="gymnasium", num_envs=1, seed=6)
    assert np.array_equal(alone.reset()[0][0], first[1])
    for _ in range(50):
        env.step(np.zeros(4, dtype=np.int64))
    env.close()
    assert context.env_steps == 200
    gym_context = TrainingContext(workload_from_dict(_spec(), "t"), seed=0, run_dir=tmp_path / "gym")
    plain = gym_context.vector_env("SameStep")
    plain.reset(seed=0)
    plain.step(np.zeros(4, dtype=np.int64))
    plain.close()
    assert type(plain).__name__ == "SyncVectorEnv" and gym_context.env_steps == 4


def test_a_reset_with_another_seed_rebuilds_the_pool_and_odd_seeds_are_refused(tmp_path: Path) -> None:
    env = CountedEnvPool("CartPole-v1", 2, 0, None)
    again = CountedEnvPool("CartPole-v1", 2, 7, None)
    assert np.array_equal(env.reset(seed=7)[0], again.reset()[0])
    with pytest.raises(ValueError, match="seed, seed \\+ 1"):
        env.reset(seed=[1, 5])
    env.close()
    again.close()


def test_sb3s_vec_env_keeps_sb3s_autoreset_and_truncation_flags(tmp_path: Path) -> None:
    from rlcompare_sb3.envpool_vec_env import GymnasiumVectorVecEnv

    counter = StepCounter(tmp_path / "steps", 4, create=True)
    # MountainCar-v0 never reaches the flag with random pushes: every episode is cut at 200 steps
    vec = GymnasiumVectorVecEnv(CountedEnvPool("MountainCar-v0", 2, 0, counter.path, autoreset_mode="SameStep"))
    vec.seed(0)
    vec.reset()
    for _ in range(199):
        assert not vec.step(np.ones(2, dtype=np.int64))[2].any()
    observations, _, dones, infos = vec.step(np.ones(2, dtype=np.int64))
    assert dones.all()
    for i in range(2):
        assert infos[i]["TimeLimit.truncated"] is True
        last = infos[i]["terminal_observation"]
        assert last.shape == (2,) and not np.array_equal(last, observations[i])
        assert observations[i][1] == 0.0  # the next episode's first observation: zero velocity
    vec.close()
    assert counter.totals() == (400, 2)


# -- equivalence -----------------------------------------------------------------------------------


@pytest.mark.parametrize("env_id", list(CHECKED_ENVS))
def test_envpools_environment_steps_as_gymnasiums(env_id: str) -> None:
    report = dynamics_check(env_id, transitions=1_500)
    assert report.equivalent, report
    assert report.transitions >= 1_500 and report.time_limit[0] == report.time_limit[1]


def test_envpools_pendulum_differs_as_stated() -> None:
    report = dynamics_check("Pendulum-v1", transitions=4_000)
    assert not report.equivalent
    assert 1e-3 < report.max_observation_error < 0.1 and report.max_reward_error < 1e-5


# -- real runs -------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def envpool_store(tmp_path_factory: pytest.TempPathFactory) -> object:
    from rlcompare.execution.runner import LocalRunner
    from rlcompare.plan.matrix import build_plan
    from rlcompare.store.sqlite_store import Store

    workload = workload_from_dict({
        **_spec(simulation="envpool"), "id": "ep-ppo", "env_steps": 4_096, "seeds": 1,
        "hyperparameters": {"rollout_steps": 64, "minibatch_size": 64, "epochs": 4, "learning_rate": 1e-3,
                            "gamma": 0.98, "gae_lambda": 0.8, "entropy_coef": 0.0},
        "evaluation": {"interval_steps": 1_024, "episodes": 4},
    }, "test")
    plan = build_plan(build_plugin_manager(autoload=False).plan_catalogue(), [workload], ["sb3", "skrl"])
    store = Store(tmp_path_factory.mktemp("envpool") / "runs.db")
    summary = LocalRunner(store, jobs=2, timeout_seconds=300).run(plan)
    assert [o.status for o in summary.outcomes] == ["ok", "ok"], [o.record.get("traceback") for o in summary.outcomes]
    return store


@pytest.mark.framework
@pytest.mark.parametrize("adapter", ["sb3", "skrl"])
def test_a_run_on_envpool_is_valid_counted_and_learns(envpool_store: object, adapter: str) -> None:
    run = envpool_store.runs_frame().set_index("run_id").loc[f"ep-ppo__{adapter}__s0"]  # type: ignore[attr-defined]
    assert run["status"] == "ok"
    assert run["env_steps"] == run["framework_env_steps"] == 4_096  # every EnvPool step counted by the harness
    assert json.loads(run["validity_json"])["valid"] is True
    fidelity = {item["setting"]: item for item in json.loads(run["fidelity_json"])}
    assert fidelity["parallelism.simulation"]["status"] == "exact"
    assert json.loads(run["versions_json"])["envpool"] == envpool.__version__  # the simulator is recorded
    native = json.loads(run["native_config_json"])
    assert (native["vec_env"] == "GymnasiumVectorVecEnv" if adapter == "sb3" else native["env"]["simulation"] == "envpool")
    curves = envpool_store.curves_frame()  # type: ignore[attr-defined]
    curve = curves[curves["run_id"] == run.name].sort_values("env_steps")
    assert len(curve) >= 4 and curve["env_steps"].iloc[-1] == 4_096
    # evaluated on Gymnasium's CartPole-v1: training on EnvPool's learns the same task (an untrained policy
    # can score anything, so judged by what the trained ones reach)
    assert curve["return_mean"].iloc[1:].max() >= 100
