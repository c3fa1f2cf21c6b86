"""A benchmark baseline of the bendglue adapter (tests only): the framework trained directly, without
the harness, for an overhead benchmark. It lives beside the adapter's package, not in it, so it is no
part of the adapter's glue (docs/criteria.md, glue_lines)."""

from __future__ import annotations

import time
from typing import Any


def train_directly(envs: list[Any], rollout_steps: int, budget: int, seed: int = 0) -> float:
    """Seconds the framework takes to step ``envs`` for ``budget`` env steps, without the harness."""
    import bendglue_fw

    agent = bendglue_fw.RandomAgent(envs, seed)
    started = time.perf_counter()
    agent.learn(rollout_steps, lambda: agent.num_timesteps >= budget, lambda _steps: None)
    elapsed = time.perf_counter() - started
    for env in envs:
        env.close()
    return elapsed
