"""Seeds trained in one program against the same seeds trained one process each, with rejax.

    python benchmarks/seeds_in_program.py [--seeds 4] [--steps 20000] [--adapter rejax]

Runs the quick suite's CartPole PPO (``cartpole-ppo-quick``, budget ``--steps``) for ``--seeds`` seeds
twice through ``rlcompare run`` (the local backend, one run at a time): once with
``parallelism.seeds_per_program = 1`` (a process per seed: each imports JAX, checks the environment and
compiles its program), once with all seeds in one program (one process, one compile, the train state
vmapped over the seeds). Prints, side by side: the matrix's wall time, the start-up, training and
evaluation seconds of each run, each run's throughput (its own env steps over its training time, the
program's when shared) and the seeds' summed throughput, and the ratios. No assertions: the figures are
for the issue notes. Needs the adapter's environment (built on first use, as by ``rlcompare run``).
"""

from __future__ import annotations

import argparse
import json
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from rlcompare.spec.builtin_workloads import CARTPOLE_PPO_QUICK  # noqa: E402


def run_matrix(folder: Path, adapter: str, seeds: int, steps: int, per_program: int) -> dict[str, Any]:
    """``rlcompare run`` of the quick workload with ``per_program`` seeds per program; its figures."""
    import tomli_w

    spec = {key: value for key, value in CARTPOLE_PPO_QUICK.items() if key != "description"}
    spec.update({"id": f"seeds-{per_program}", "env_steps": steps, "seeds": seeds,
                 "parallelism": {**spec["parallelism"], "seeds_per_program": per_program},
                 "evaluation": {"interval_steps": max(steps // 4, 1), "episodes": 5}})
    workload = folder / f"seeds-{per_program}.toml"
    workload.write_text(tomli_w.dumps(spec), encoding="utf-8")
    store = folder / f"seeds-{per_program}.db"
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "rlcompare", "run", "--workload", str(workload), "--adapters",
                           adapter, "--jobs", "1", "--no-parity", "--store", str(store)],
                          capture_output=True, text=True, check=False)
    wall = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"rlcompare run failed ({done.returncode}): {done.stderr[-2000:]}")
    connection = sqlite3.connect(store)
    rows = connection.execute("SELECT seed, status, env_steps, startup_seconds, training_seconds, evaluation_seconds, "
                              "throughput, seeds_in_program, native_config_json FROM runs ORDER BY seed").fetchall()
    connection.close()
    runs = [{"seed": seed, "status": status, "env_steps": env_steps, "startup": startup, "training": training,
             "evaluation": evaluation, "throughput": throughput, "seeds_in_program": together,
             "compile": json.loads(native or "{}").get("compile_seconds")}
            for seed, status, env_steps, startup, training, evaluation, throughput, together, native in rows]
    return {"wall": wall, "runs": runs}


def describe(name: str, figures: dict[str, Any]) -> list[str]:
    runs = figures["runs"]
    lines = [f"{name}: matrix wall {figures['wall']:.1f} s"]
    for run in runs:
        lines.append(f"  seed {run['seed']}: {run['status']}, {run['env_steps']} steps, start-up {run['startup']:.1f} s "
                     f"(compile {run['compile'] or 0:.1f} s), training {run['training']:.2f} s, evaluation "
                     f"{run['evaluation']:.2f} s, {run['throughput']:,.0f} steps/s, seeds in program "
                     f"{run['seeds_in_program'] or 1}")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=4)
    parser.add_argument("--steps", type=int, default=20_000)
    parser.add_argument("--adapter", default="rejax")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="rlcompare-seeds-") as scratch:
        alone = run_matrix(Path(scratch), args.adapter, args.seeds, args.steps, 1)
        together = run_matrix(Path(scratch), args.adapter, args.seeds, args.steps, args.seeds)
    print("\n".join(describe("one process per seed", alone)))
    print("\n".join(describe(f"{args.seeds} seeds in one program", together)))

    def total(figures: dict[str, Any], key: str) -> float:
        return sum(run[key] or 0.0 for run in figures["runs"])

    def median(values: list[float]) -> float:
        return sorted(values)[len(values) // 2]

    alone_rate = median([run["throughput"] for run in alone["runs"]])
    shared_rate = median([run["throughput"] for run in together["runs"]])
    summed = sum(run["throughput"] for run in together["runs"])
    print(f"matrix wall: {alone['wall']:.1f} s one process per seed, {together['wall']:.1f} s in one program "
          f"(x{alone['wall'] / together['wall']:.2f})")
    print(f"start-up summed over the seeds: {total(alone, 'startup'):.1f} s against {total(together, 'startup'):.1f} s")
    print(f"throughput per run (its own steps over the training time it had): median {alone_rate:,.0f} steps/s "
          f"alone, {shared_rate:,.0f} in the program (x{shared_rate / alone_rate:.2f}); the program's seeds "
          f"together: {summed:,.0f} steps/s (x{summed / alone_rate:.2f} of one run alone)")

if __name__ == "__main__":
    main()
