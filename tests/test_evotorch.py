"""The EvoTorch adapter trained for real, with tiny budgets: in the run's own process through the
runner, and over Ray actors (workers = 2) on a private loopback Ray whose steps the harness counts."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from rlcompare.execution.runner import LocalRunner
from rlcompare.harness.context import TrainingContext
from rlcompare.plan.matrix import build_plan
from rlcompare.plugins.manager import build_plugin_manager
from rlcompare.spec.workload import Workload, workload_from_dict
from rlcompare.store.sqlite_store import Store

pytestmark = pytest.mark.framework

TINY: dict[str, Any] = {
    "id": "tiny-es", "env": "CartPole-v1", "algorithm": "ES", "env_steps": 800, "seeds": 1,
    "network": {"hidden_sizes": [8]},
    "hyperparameters": {"population_size": 4, "sigma": 0.1, "learning_rate": 0.05},
    "evaluation": {"interval_steps": 500, "episodes": 2},
}


def _workload(**changes: Any) -> Workload:
    return workload_from_dict({**TINY, **changes}, "test")


def test_capabilities_and_fidelity_need_no_framework_import() -> None:
    code = ("import sys\nfrom rlcompare_evotorch import EvoTorchAdapter\n"
            "from rlcompare.spec.workload import workload_from_dict\n"
            f"w = workload_from_dict({TINY!r}, 't')\n"
            "a = EvoTorchAdapter()\na.capabilities(); entries = a.fidelity(w)\n"
            "print(sorted(m for m in ('evotorch', 'torch', 'ray') if m in sys.modules), len(entries))\n")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    # 6 ES settings, the network (2) and the parallelism (3): the canonical settings, nothing else
    assert result.stdout.split() == ["[]", "11"]


def test_fidelity_names_each_setting_natively() -> None:
    from rlcompare_evotorch import EvoTorchAdapter

    workload = _workload(hyperparameters={"population_size": 7, "centered_ranks": False}, parallelism={"workers": 3})
    entries = {e.setting: e for e in EvoTorchAdapter().fidelity(workload)}
    assert set(entries) >= {f"hyperparameters.{name}" for name in type(workload.hyperparameters).model_fields}
    assert (entries["hyperparameters.population_size"].status, entries["hyperparameters.population_size"].native_value) == (
        "approximate", 8)  # mirrored sampling evaluates pairs
    assert entries["hyperparameters.sigma"].native_name == "stdev_init"
    assert entries["hyperparameters.antithetic"].native_name == "symmetric"
    assert entries["hyperparameters.centered_ranks"].native_value is None  # raw returns
    assert entries["hyperparameters.learning_rate"].status == "approximate"
    assert entries["parallelism.workers"].native_value == 3
    assert entries["network.hidden_sizes"].native_value == "Linear(obs_length, 8) >> Tanh() >> Linear(8, act_length)"


def test_vectorized_envs_and_async_mode_are_refused_up_front() -> None:
    from rlcompare_evotorch import EvoTorchAdapter

    capabilities = EvoTorchAdapter().capabilities()
    assert capabilities.refusal(_workload(parallelism={"envs_per_worker": 2}), "discrete") == (
        "vectorized environments are not offered")
    assert capabilities.refusal(_workload(parallelism={"mode": "async"}), "discrete") == "async sampling is not offered"
    ppo = workload_from_dict({"id": "p", "env": "CartPole-v1", "algorithm": "PPO", "env_steps": 10,
                              "hyperparameters": {}}, "t")
    assert capabilities.refusal(ppo, "discrete") == "algorithm PPO is not offered (offers ES)"


@pytest.fixture(scope="module")
def evotorch_store(tmp_path_factory: pytest.TempPathFactory) -> Store:
    plan = build_plan(build_plugin_manager(autoload=False).plan_catalogue(), [_workload()], ["evotorch"])
    store = Store(tmp_path_factory.mktemp("evotorch") / "runs.db")
    summary = LocalRunner(store, jobs=1, timeout_seconds=300).run(plan)
    assert [o.status for o in summary.outcomes] == ["ok"], [o.record.traceback for o in summary.outcomes]
    return store


def test_evotorch_run_is_valid_with_counts_agreeing(evotorch_store: Store) -> None:
    run = evotorch_store.runs_frame().set_index("run_id").loc["tiny-es__evotorch__s0"]
    workload = _workload()
    assert run["status"] == "ok"
    # a run ends at the first generation past the budget: at most one generation over
    assert workload.env_steps <= run["env_steps"] <= workload.env_steps + 4 * 500
    assert run["framework_env_steps"] == run["env_steps"]  # GymNE counts every step the harness counts
    assert run["budget_granularity"] == "generation" and run["budget_overshoot_steps"] == 4 * 500
    assert json.loads(run["validity_json"])["valid"]
    fidelity = {item["setting"]: item for item in json.loads(run["fidelity_json"])}
    assert fidelity["hyperparameters.sigma"]["native_name"] == "stdev_init"  # PGPE's, kept fixed
    assert "algorithm" not in fidelity  # not a canonical setting: it never counts
    native = json.loads(run["native_config_json"])
    assert native["PGPE"] == {"popsize": 4, "stdev_init": 0.1, "center_learning_rate": 0.05, "symmetric": True,
                              "ranking_method": "centered", "stdev_learning_rate": 0.0, "optimizer": "adam",
                              "distributed": False}
    assert native["GymNE"]["num_actors"] is None and native["generations"] >= 1
    curve = evotorch_store.curves_frame()
    assert len(curve[curve["run_id"] == "tiny-es__evotorch__s0"]) >= 3
    versions = json.loads(run["versions_json"])
    assert versions["evotorch"] == "0.6.1"


class _WatchingContext(TrainingContext):
    """The real context, also noting at each checkpoint where Ray's processes listen."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.ray_addresses: set[str] = set()

    def checkpoint(self, policy: Any, framework_env_steps: int | None = None) -> bool:
        import ray

        self.ray_addresses |= {node["NodeManagerAddress"] for node in ray.nodes()}
        self.ray_addresses.add(ray.get_runtime_context().gcs_address.rsplit(":", 1)[0])
        actions = policy(np.zeros((3, 4), dtype=np.float32))
        assert actions.shape == (3,) and policy(np.zeros((1, 4), dtype=np.float32)).shape == (1,)
        return super().checkpoint(policy, framework_env_steps)


def test_two_workers_run_on_a_private_loopback_ray_and_every_step_is_counted(tmp_path: Path) -> None:
    import ray
    from rlcompare_evotorch import EvoTorchAdapter

    assert not ray.is_initialized()
    workload = _workload(parallelism={"workers": 2})
    context = _WatchingContext(workload, 0, tmp_path)
    try:
        result = EvoTorchAdapter().train(workload, context)
    finally:
        context.close()
    assert context.ray_addresses == {"127.0.0.1"}
    assert not ray.is_initialized()  # shut down after training
    steps = context.counter.totals()[0]
    assert result.framework_env_steps == steps >= workload.env_steps
    counts = np.memmap(context.counter.path, dtype=np.int64, mode="r", shape=(context.counter.slots, 2))
    per_slot = np.array(counts[:, 0])
    # slot 0: the main process's environment, never stepped; each actor steps its own slot
    assert per_slot[0] == 0 and per_slot[1] > 0 and per_slot[2] > 0 and per_slot[3:].sum() == 0
    assert result.native_config["GymNE"]["num_actors"] == 2
