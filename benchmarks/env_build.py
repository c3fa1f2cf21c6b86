"""How long an adapter environment takes to build, and to find again.

    python benchmarks/env_build.py [--requirements "numpy<2" "gymnasium==0.29.1" "torch==2.13.0"] [--rounds 2]

Builds an environment for the test adapter ``tinyenv`` (tests/plugins/isolated) with the given
requirements in place of its own (the default stands in for Sample Factory's: numpy<2, gymnasium
0.29 and the CPU torch) in the user's environments folder, asks for it again, then removes it;
``--rounds`` times. uv's cache and rlcompare's kept bytecode stay, so the first round is as warm
as this machine is and the later rounds are builds "from a warm cache". Per round it prints
``resolve`` (uv pip compile; kept for the same inputs, so only the first round asks the indexes),
``build`` (venv, install from uv's cache, bytecode, links), ``again`` (the no-op) and the build's
steps. Goals: build < 10 s from a warm cache, again < 1 s.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests" / "plugins" / "isolated"))

from rlcompare.pyenvs.manager import EnvironmentManager, EnvironmentSpec, worker_sources  # noqa: E402

STAND_IN = ("numpy<2", "gymnasium==0.29.1", "torch==2.13.0")
ADAPTER = "standin-benchmark"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requirements", nargs="+", default=list(STAND_IN))
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    steps: list[tuple[str, float]] = []
    manager = EnvironmentManager(log=lambda message: steps.append((message, time.perf_counter())))
    spec = EnvironmentSpec(ADAPTER, tuple(args.requirements), None, worker_sources("tinyenv_rlcompare"))
    print(f"requirements: {' '.join(args.requirements)}; environments in {manager.root}")
    manager.remove(ADAPTER)
    for round_number in range(1, args.rounds + 1):
        steps.clear()
        started = time.perf_counter()
        python, version = manager.interpreter(spec)
        manager.resolve(spec, python, version)
        resolved = time.perf_counter()
        environment = manager.ensure(spec)
        built = time.perf_counter()
        again = manager.ensure(spec)
        done = time.perf_counter()
        print(f"round {round_number}: resolve {resolved - started:6.2f} s  build {built - resolved:6.2f} s  "
              f"again {done - built:6.3f} s ({'built' if again.built else 'no-op'})  "
              f"bytecode {environment.info.get('bytecode')}")
        for message, at in steps:
            print(f"#   +{at - resolved:6.2f} s  {message}")
        manager.remove(ADAPTER)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
