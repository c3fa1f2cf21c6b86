"""The built-in workloads and suites, registered through the same hook as any plugin's."""

from __future__ import annotations

from typing import Any

from rlcompare.hookspecs import hookimpl
from rlcompare.workload import Workload, workload_from_dict

CARTPOLE_PPO_QUICK: dict[str, Any] = {
    "id": "cartpole-ppo-quick",
    "description": "CartPole-v1 PPO, 4 in-process envs; learns visibly in about a minute per run on one core.",
    "env": "CartPole-v1",
    "algorithm": "PPO",
    "env_steps": 50_000,
    "seeds": 2,
    "parallelism": {"envs_per_worker": 4, "workers": 1, "mode": "sync", "threads_per_worker": 1},
    "network": {"hidden_sizes": [64, 64], "activation": "tanh"},
    "hyperparameters": {
        "learning_rate": 1e-3,
        "gamma": 0.98,
        "gae_lambda": 0.8,
        "clip_range": 0.2,
        "rollout_steps": 64,
        "minibatch_size": 64,
        "epochs": 10,
        "entropy_coef": 0.0,
        "value_coef": 0.5,
        "max_grad_norm": 0.5,
    },
    "evaluation": {"interval_steps": 5_000, "episodes": 10, "deterministic": True},
    "success_threshold": 475.0,
}


def builtin_workloads() -> list[Workload]:
    return [workload_from_dict(CARTPOLE_PPO_QUICK, "built-in workload cartpole-ppo-quick")]


@hookimpl
def rlcompare_register_workloads(register: Any) -> None:
    for workload in builtin_workloads():
        register.add_workload(workload)
    register.add_suite("quick", ["cartpole-ppo-quick"], "CartPole-v1 PPO with every adapter; about a minute per run")
