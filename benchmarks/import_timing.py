"""Cold-import timings made alone and made two at once (one per CPU), side by side: whether the
measuring processes ``rlcompare run`` starts after its runs, one per CPU, time imports as one
process alone would.

    python benchmarks/import_timing.py [--modules stable_baselines3,tianshou] [--rounds 3]

Each round times both frameworks alone (one after the other) and then together (two fresh
interpreters at once), with the method the cold-import criterion uses (``time_cold_import``: three
timed imports each; the files are in memory after a first import, so no warm-up is discarded).
It prints the medians and the ratio together / alone per framework; the rounds alternate so a
drift of the machine falls on both ways alike.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "criteria"))

from rlcompare_criteria.cold_import import time_cold_import  # noqa: E402


def timed(module: str) -> list[float]:
    result = time_cold_import([module], warm_up=False)
    if "error" in result:
        raise SystemExit(f"{module}: {result['error']}")
    return [float(seconds) for seconds in result["seconds"]]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--modules", default="stable_baselines3,tianshou", help="two comma-separated modules")
    parser.add_argument("--rounds", type=int, default=3, help="rounds of alone-then-together (default 3)")
    args = parser.parse_args()
    modules = [name.strip() for name in args.modules.split(",") if name.strip()]
    if len(modules) != 2:
        parser.error("--modules: give exactly two modules")
    for module in modules:
        time_cold_import([module], repeats=1)  # the files into memory first
    alone: dict[str, list[float]] = {module: [] for module in modules}
    together: dict[str, list[float]] = {module: [] for module in modules}
    with ThreadPoolExecutor(max_workers=2) as pool:
        for _ in range(args.rounds):
            for module in modules:
                alone[module] += timed(module)
            for module, seconds in zip(modules, pool.map(timed, modules), strict=True):
                together[module] += seconds
    print(f"{'module':<22} {'alone (s)':>10} {'two at once (s)':>16} {'ratio':>7}")
    for module in modules:
        one, two = statistics.median(alone[module]), statistics.median(together[module])
        print(f"{module:<22} {one:>10.2f} {two:>16.2f} {two / one:>7.2f}")
    print(f"medians of {3 * args.rounds} timed imports each")
    return 0


if __name__ == "__main__":
    sys.exit(main())
