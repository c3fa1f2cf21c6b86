"""Exercise the harness's environment side under whatever gymnasium and numpy are installed.

    python tests/harness_probe.py OUT.json      (with the project root on PYTHONPATH)

Run by tests/test_gymnasium_generations.py inside small environments holding only numpy and
gymnasium, one per supported generation; it writes what the test compares across them: CartPole
trajectories for fixed seeds and actions, the counting wrapper's totals (in this process and from
vector-env subprocesses), evaluation returns of a fixed deterministic policy, and the calibrated env.
Standard library, numpy and gymnasium only, like the harness modules it imports.
"""

from __future__ import annotations

import importlib.metadata
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

import gymnasium
import numpy as np

from rlcompare.harness.counted_envs import CALIBRATED_ENV_ID, EnvFactory, StepCounter, make_env
from rlcompare.harness.evaluation import Evaluator

HARNESS_MODULES = ("rlcompare.harness.counted_envs", "rlcompare.harness.evaluation", "rlcompare.harness.run_directory", "rlcompare.harness.driver_watch")
SEEDS = (0, 1, 7)
STEPS = 300


def actions_for(seed: int) -> list[int]:
    """A fixed action sequence per seed, the same under every numpy (no generator involved)."""
    return [((index * 7 + seed * 3) // 5) % 2 for index in range(STEPS)]


def trajectory(env: gymnasium.Env, seed: int) -> dict[str, Any]:
    """Observations, rewards and episode ends for :func:`actions_for`, resetting (seed + episode) at each end."""
    episode = 0
    observation, _ = env.reset(seed=seed)
    observations, rewards, ends = [np.asarray(observation).tolist()], [], []
    for action in actions_for(seed):
        observation, reward, terminated, truncated, _ = env.step(action)
        observations.append(np.asarray(observation).tolist())
        rewards.append(float(reward))
        ends.append([bool(terminated), bool(truncated)])
        if terminated or truncated:
            episode += 1
            observation, _ = env.reset(seed=seed + 1000 * episode)
            observations.append(np.asarray(observation).tolist())
    return {"observations": observations, "rewards": rewards, "ends": ends, "episodes": episode}


def counted_trajectories(counter_dir: Path) -> dict[str, Any]:
    """The trajectories through the counting wrapper, one slot per seed, and the counter's totals."""
    counter = StepCounter(counter_dir / "steps.bin", create=True)
    runs = {}
    for slot, seed in enumerate(SEEDS):
        env = EnvFactory("CartPole-v1", {}, str(counter.path), slot)()
        runs[str(seed)] = trajectory(env, seed)
        env.close()
    steps, episodes = counter.totals()
    expected_episodes = sum(run["episodes"] for run in runs.values())
    return {"trajectories": runs, "totals": [steps, episodes], "expected_totals": [STEPS * len(SEEDS), expected_episodes]}


def vector_counts(counter_dir: Path) -> dict[str, Any]:
    """Counted envs stepped in subprocesses by gymnasium's async vector env.

    Before gymnasium 1.0 a sub-env that ends is reset inside the same ``step``; from 1.0 it is reset
    by the next ``step`` instead of stepping. The expected count follows whichever this version does,
    so the counter must equal the env steps really taken.
    """
    counter = StepCounter(counter_dir / "vector.bin", create=True)
    envs = 3
    vector = gymnasium.vector.AsyncVectorEnv([EnvFactory("CartPole-v1", {}, str(counter.path), slot)
                                              for slot in range(envs)])
    next_step_reset = int(gymnasium.__version__.split(".")[0]) >= 1
    vector.reset(seed=11)
    pending_reset = np.zeros(envs, dtype=bool)
    expected_steps = expected_episodes = 0
    for index in range(120):
        stepping = ~pending_reset if next_step_reset else np.ones(envs, dtype=bool)
        expected_steps += int(stepping.sum())
        _, _, terminated, truncated, _ = vector.step(np.full(envs, index % 2))
        done = (np.asarray(terminated) | np.asarray(truncated)) & stepping
        expected_episodes += int(done.sum())
        pending_reset = done
    vector.close()
    return {"totals": list(counter.totals()), "expected_totals": [expected_steps, expected_episodes]}


def evaluation_returns() -> dict[str, Any]:
    """A fixed deterministic policy (push towards the side the pole leans to: episodes of uneven
    length) evaluated by the harness."""
    def policy(observations: np.ndarray) -> np.ndarray:
        return (observations[:, 2] > 0).astype(np.int64)

    evaluator = Evaluator("CartPole-v1", {}, [3, 4, 5, 6])
    try:
        result = evaluator.evaluate(policy)
    finally:
        evaluator.close()
    return {"returns": result.returns, "lengths": result.lengths}


def calibrated_env() -> dict[str, Any]:
    env = make_env(CALIBRATED_ENV_ID, {"step_cost_ms": 0.05})
    try:
        calibrated = trajectory(env, SEEDS[0])
        spec = env.spec
        registered = {"max_episode_steps": spec.max_episode_steps, "reward_threshold": spec.reward_threshold}
    finally:
        env.close()
    plain = make_env("CartPole-v1")
    try:
        same = trajectory(plain, SEEDS[0]) == calibrated
    finally:
        plain.close()
    return {"registered": registered, "same_as_cartpole": same, "steps": len(calibrated["rewards"])}


def main(argv: list[str]) -> int:
    out = Path(argv[0])
    for name in HARNESS_MODULES:
        __import__(name)
    with tempfile.TemporaryDirectory() as scratch:
        counted = counted_trajectories(Path(scratch))
        vector = vector_counts(Path(scratch))
    plain = {str(seed): trajectory(make_env("CartPole-v1"), seed) for seed in SEEDS}
    report = {
        "versions": {name: importlib.metadata.version(name) for name in ("gymnasium", "numpy")},
        "foreign_modules": sorted(name for name in ("pluggy", "pydantic", "torch") if name in sys.modules),
        "trajectories": plain,
        "counted_same_as_plain": counted["trajectories"] == plain,
        "counting": {"totals": counted["totals"], "expected_totals": counted["expected_totals"]},
        "vector_counting": vector,
        "evaluation": evaluation_returns(),
        "calibrated": calibrated_env(),
    }
    out.write_text(json.dumps(report), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
