"""Each framework trained directly with the adapter's own configuration: no harness context, no
counting wrapper, no evaluation. The baselines of ``benchmarks/overhead.py`` (what rlcompare's
harness adds is the difference); they live here, not in the adapters, so an adapter's glue is the
adapter alone. Each returns the seconds spent training (building excluded) and pins torch's threads
as the harness does."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from rlcompare.adapter import Adapter, EnvFactory, TrainingSetup, WorkloadLike


def plain_env_factories(workload: WorkloadLike) -> list[EnvFactory]:
    """Uncounted environment factories, one per env of the workload."""
    return [EnvFactory(workload.env, dict(workload.env_kwargs)) for _ in range(workload.parallelism.total_envs)]


def train_setup_directly(adapter_class: type[Adapter],
                         build: Callable[[WorkloadLike, Any, list[EnvFactory], int], TrainingSetup],
                         workload: WorkloadLike, seed: int = 0) -> float:
    """A framework whose adapter builds a :class:`rlcompare.adapter.TrainingSetup` (skrl, Tianshou,
    TorchRL): the same setup, run without the harness (Tianshou's pre-fill included)."""
    import torch

    config, _ = adapter_class().native_config(workload)  # type: ignore[attr-defined]
    setup = build(workload, config, plain_env_factories(workload), seed)
    torch.set_num_threads(workload.parallelism.threads_per_worker)
    started = time.perf_counter()
    try:
        setup.run(lambda _framework_steps: None)  # no harness: nothing to do after an update
        return time.perf_counter() - started
    finally:
        setup.close()


def train_sample_factory_directly(workload: WorkloadLike, seed: int, train_dir: Path) -> float:
    """Sample Factory's runner with the adapter's configuration on plain envs: seconds in its
    training loop."""
    from rlcompare_sample_factory import SampleFactoryRun

    run = SampleFactoryRun(workload, seed, train_dir, plain_env_factories(workload))
    try:
        run.build()
        started = time.perf_counter()
        # Sample Factory's own check sees the learner's count one iteration late (it runs before
        # the count is reported); stop where the adapter does, at the budget.
        run.train(lambda framework_steps: framework_steps >= workload.env_steps)
        return time.perf_counter() - started
    finally:
        run.close()
