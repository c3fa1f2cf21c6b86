"""Env steps per second: Gymnasium's vector env against EnvPool's, raw and counted by the harness.

    python benchmarks/envpool_speed.py [--env CartPole-v1] [--envs 1,8,32] [--steps 2000] [--repeats 5]

For each number of environments, steps the same environment five ways with fixed random actions:
Gymnasium's ``SyncVectorEnv`` raw (``gymnasium.make`` per env, next-step autoreset) and over the
harness's counted factories (what every adapter trains on with ``parallelism.simulation =
"gymnasium"``), EnvPool raw (``envpool.make``, sync mode, one thread) and through the harness's
:class:`rlcompare.harness.envpool_envs.CountedEnvPool` in next-step and same-step autoreset mode (what
``context.vector_env`` gives with ``simulation = "envpool"``; same-step is what the SB3 and skrl
adapters use). The variants alternate in a shuffled order every repeat so they share the machine's
noise; each figure is the median over repeats of env steps (vector steps x envs, autoreset steps
included) per wall-clock second, and per second of the process's CPU time (all threads: on a busy
machine wall time also holds the time other processes had the CPU). Checks that the counted variants counted what they stepped. Needs
envpool (``pip install 'rlcompare[envpool]'``). No assertions: the figures are for the issue notes.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import tempfile
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import gymnasium  # noqa: E402
import numpy as np  # noqa: E402

from rlcompare.harness.counted_envs import EnvFactory, StepCounter, make_env  # noqa: E402
from rlcompare.harness.envpool_envs import CountedEnvPool  # noqa: E402

NEXT_STEP, SAME_STEP = gymnasium.vector.AutoresetMode.NEXT_STEP, gymnasium.vector.AutoresetMode.SAME_STEP


def variants(env_id: str, n: int, counter: StepCounter, threads: int) -> dict[str, Any]:
    """Name -> a reset vector env (EnvPool's raw pool has the same step signature)."""
    import envpool

    first = 0
    made: dict[str, Any] = {}

    def slots() -> int:
        nonlocal first
        start, first = first, first + n
        return start

    made["gymnasium raw"] = gymnasium.vector.SyncVectorEnv([lambda: make_env(env_id) for _ in range(n)],
                                                           autoreset_mode=NEXT_STEP)
    start = slots()
    made["gymnasium counted"] = gymnasium.vector.SyncVectorEnv(
        [EnvFactory(env_id, {}, str(counter.path), slot) for slot in range(start, start + n)], autoreset_mode=NEXT_STEP)
    made["envpool raw"] = envpool.make(env_id, env_type="gymnasium", num_envs=n, batch_size=n, seed=0,
                                       num_threads=threads)
    made["envpool counted next-step"] = CountedEnvPool(env_id, n, 0, counter.path, slots(), threads, NEXT_STEP)
    made["envpool counted same-step"] = CountedEnvPool(env_id, n, 0, counter.path, slots(), threads, SAME_STEP)
    for env in made.values():
        env.reset(seed=0) if isinstance(env, gymnasium.vector.VectorEnv) else env.reset()
    return made


def steps_per_second(env: Any, actions: np.ndarray) -> tuple[float, float]:
    """(env steps per wall-clock second, per second of the process's CPU time, every thread's)."""
    step = env.step
    wall, cpu = time.perf_counter(), time.process_time()
    for action in actions:
        step(action)
    steps = actions.shape[0] * actions.shape[1]
    return steps / (time.perf_counter() - wall), steps / max(time.process_time() - cpu, 1e-9)


def random_actions(space: gymnasium.Space, steps: int, n: int) -> np.ndarray:
    rng = np.random.default_rng(0)
    if isinstance(space, gymnasium.spaces.Discrete):
        return rng.integers(int(space.n), size=(steps, n)).astype(np.int64)
    return rng.uniform(space.low, space.high, size=(steps, n, *space.shape)).astype(space.dtype)


def measure(make: Callable[[], dict[str, Any]], actions: np.ndarray,
            repeats: int) -> dict[str, list[tuple[float, float]]]:
    envs = make()
    try:
        for env in envs.values():
            steps_per_second(env, actions[: max(1, len(actions) // 10)])  # warm up
        rates: dict[str, list[tuple[float, float]]] = {name: [] for name in envs}
        order = list(envs)
        for _ in range(repeats):
            random.shuffle(order)
            for name in order:
                rates[name].append(steps_per_second(envs[name], actions))
        return rates
    finally:
        for env in envs.values():
            env.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--env", default="CartPole-v1", help="an environment EnvPool has (default CartPole-v1)")
    parser.add_argument("--envs", default="1,8,32", help="numbers of environments, comma-separated")
    parser.add_argument("--steps", type=int, default=2_000, help="vector steps per repeat and variant")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--threads", type=int, default=1, help="EnvPool threads")
    args = parser.parse_args()
    import envpool

    warnings.filterwarnings("ignore", module="gymnasium")  # EnvPool's float64 Box bounds, cast to float32
    random.seed(0)
    counts = [int(item) for item in args.envs.split(",") if item.strip()]
    space = make_env(args.env).action_space
    print(f"# {args.env}; gymnasium {gymnasium.__version__}, envpool {envpool.__version__}, numpy {np.__version__}; "
          f"{args.repeats} alternating repeats of {args.steps} vector steps; EnvPool threads {args.threads}; "
          "env steps per wall-clock second, medians")
    names: list[str] = []
    table: dict[int, dict[str, tuple[float, float]]] = {}
    with tempfile.TemporaryDirectory() as scratch:
        for n in counts:
            counter = StepCounter(Path(scratch) / f"steps-{n}.bin", slots=3 * n, create=True)
            actions = random_actions(space, args.steps, n)
            rates = measure(lambda n=n, counter=counter: variants(args.env, n, counter, args.threads), actions,
                            args.repeats)
            names = list(rates)
            table[n] = {name: (statistics.median(wall for wall, _ in values), statistics.median(cpu for _, cpu in values))
                        for name, values in rates.items()}
            stepped = (args.repeats * args.steps + max(1, args.steps // 10)) * n
            counted = counter.totals()[0]
            # next-step modes do not count the step that resets an ended env: counted <= stepped per variant
            if not (stepped * 2 < counted <= stepped * 3):
                raise SystemExit(f"{n} envs: the counted variants counted {counted} steps of {stepped * 3} stepped")
    width = max(len(name) for name in names)
    for column, title in ((0, "per wall-clock second"), (1, "per CPU second (the process's, every thread)")):
        print(f"# env steps {title}")
        print(f"{'variant':{width}s} " + " ".join(f"{f'{n} envs':>12s}" for n in counts))
        for name in names:
            print(f"{name:{width}s} " + " ".join(f"{table[n][name][column]:12,.0f}" for n in counts))
    for n in counts:
        ratio = table[n]["envpool counted same-step"][0] / table[n]["gymnasium counted"][0]
        print(f"envpool_over_gymnasium_counted[{n}] {ratio:.2f}")


if __name__ == "__main__":
    main()
