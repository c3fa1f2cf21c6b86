"""The worker's plain-data workload and the minimal worker's imports."""

from __future__ import annotations

import pickle
import subprocess
import sys

import pytest

from rlcompare.harness.validity import BudgetTolerance
from rlcompare.harness.workload_view import workload_view
from rlcompare.spec.builtin_workloads import builtin_workloads
from rlcompare.spec.workload import workload_from_dict

WORKLOADS = {workload.id: workload for workload in builtin_workloads()}
DQN = workload_from_dict({"id": "dqn", "env": "CartPole-v1", "algorithm": "DQN", "env_steps": 5_000,
                          "parallelism": {"envs_per_worker": 2, "workers": 2, "mode": "async"},
                          "hyperparameters": {"train_every": 8}}, "test")
SAC = workload_from_dict({"id": "sac", "env": "Pendulum-v1", "algorithm": "SAC", "env_steps": 2_000,
                          "hyperparameters": {"entropy_coef": 0.1}}, "test")
CASES = [*WORKLOADS.values(), DQN, SAC]


@pytest.mark.parametrize("workload", CASES, ids=[w.id for w in CASES])
def test_the_view_answers_every_attribute_as_the_validated_model_does(workload) -> None:
    view = workload_view(workload.to_dict(), workload.derived())  # as the driver writes the spec
    for name in ("id", "env", "algorithm", "env_steps", "seeds", "success_threshold", "rollout_env_steps",
                 "step_count_tolerance", "seed_values"):
        assert getattr(view, name) == getattr(workload, name), name
    assert (view.family.name, view.family.kind, view.family.granularity) == (
        workload.family.name, workload.family.kind, workload.family.granularity)
    if workload.family.kind == "gradient":  # without the driver's values, the view derives the same
        bare = workload_view(workload.to_dict())
        assert (bare.rollout_env_steps, bare.step_count_tolerance) == (
            workload.rollout_env_steps, workload.step_count_tolerance)
    assert view.env_kwargs == dict(workload.env_kwargs)
    for section in ("parallelism", "network", "evaluation"):
        for name, value in getattr(workload, section).model_dump().items():
            assert getattr(getattr(view, section), name) == value, f"{section}.{name}"
    assert view.parallelism.total_envs == workload.parallelism.total_envs
    assert view.network.hidden_sizes == workload.network.hidden_sizes  # a tuple, as on the model
    assert view.evaluation.interval_steps == workload.evaluation.interval_steps  # resolved by the driver
    for name, value in workload.hyperparameters.model_dump().items():
        assert getattr(view.hyperparameters, name) == value, name
    assert view.hyperparameters.algorithm == workload.algorithm
    assert BudgetTolerance.for_workload(view) == BudgetTolerance.for_workload(workload)


def test_the_view_is_read_only_picklable_and_refuses_what_is_not_there() -> None:
    view = workload_view(DQN.to_dict())
    with pytest.raises(AttributeError, match="read-only"):
        view.env_steps = 1  # type: ignore[misc]
    with pytest.raises(AttributeError, match="read-only"):
        view.parallelism.workers = 3  # type: ignore[misc]
    with pytest.raises(AttributeError, match="rollout_steps"):
        _ = view.hyperparameters.rollout_steps  # DQN has none
    assert getattr(view.hyperparameters, "rollout_steps", None) is None
    again = pickle.loads(pickle.dumps(view))
    assert again == view and again.parallelism.total_envs == 4
    data = DQN.to_dict()
    del data["hyperparameters"]
    with pytest.raises(ValueError, match="hyperparameters"):
        workload_view(data)


def test_the_worker_and_what_adapters_import_from_the_harness_need_no_pydantic_or_pluggy() -> None:
    code = ("import sys\n"
            "import rlcompare, rlcompare.harness.worker, rlcompare.harness.context, rlcompare.harness.contract, rlcompare.harness.workload_view\n"
            "import rlcompare.harness.fidelity, rlcompare.harness.counted_envs, rlcompare.harness.evaluation, rlcompare.harness.host, rlcompare.harness.validity\n"
            "print(sorted(m for m in ('pydantic', 'pluggy', 'pandas', 'torch', 'rich') if m in sys.modules))\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def test_hook_markers_work_where_pluggy_is_missing() -> None:
    """A plugin module imported by a worker in an adapter environment decorates its hooks anyway,
    with the attribute pluggy reads (so the same module registers in the main environment)."""
    code = ("import sys\nsys.modules['pluggy'] = None\n"
            "from rlcompare import hookimpl\n"
            "@hookimpl\ndef rlcompare_register_adapters(register): pass\n"
            "@hookimpl(tryfirst=True)\ndef other(register): pass\n"
            "print(rlcompare_register_adapters.rlcompare_impl['tryfirst'], other.rlcompare_impl['tryfirst'])\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["False", "True"]


@pytest.mark.parametrize("module_name", ["rlcompare_sb3", "rlcompare_tianshou", "rlcompare_rllib", "rlcompare_torchrl",
                                         "rlcompare_skrl"])
def test_built_in_adapters_map_the_view_as_they_map_the_model(module_name: str) -> None:
    """What an adapter computes inside the worker (from the view) is what the driver computed from
    the validated model: the native settings and the fidelity report."""
    import importlib

    from rlcompare.harness.fidelity import map_settings

    settings = importlib.import_module(module_name).SETTINGS
    checked = 0
    for workload in CASES:
        if workload.algorithm not in settings:
            continue
        view = workload_view(workload.to_dict())
        from_model = map_settings(workload, settings[workload.algorithm])
        from_view = map_settings(view, settings[workload.algorithm])
        assert from_view[0] == from_model[0]
        assert [entry.to_dict() for entry in from_view[1]] == [entry.to_dict() for entry in from_model[1]]
        checked += 1
    assert checked >= 2
