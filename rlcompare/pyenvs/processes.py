"""The environment variables of every process started for an adapter: a run's worker, a parity probe.

Both get the same thread pins, unbuffered output, no inherited Ray address and, in an adapter's own
environment, that environment's interpreter first on the path and nothing of the driver's import
path, so that a warm start's parent (:mod:`rlcompare.pyenvs.warm`) serves a driver's parity probe and
its runs alike.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from rlcompare.harness.driver_watch import ATTEMPT_ENV

#: Torch/BLAS/OpenMP thread variables pinned to the workload's threads_per_worker in every run.
THREAD_ENV_VARS = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS", "NUMEXPR_NUM_THREADS")


def process_environment(base: Mapping[str, str], threads: int, python: str | None = None) -> dict[str, str]:
    """``base`` made the environment of a process for an adapter: ``threads`` threads for torch, BLAS and
    OpenMP, unbuffered output, no Ray address (a framework using Ray starts its own) and no attempt of
    the driver's own (a driver started inside a run); with ``python``, inside that adapter environment."""
    env = dict(base)
    for name in THREAD_ENV_VARS:
        env[name] = str(threads)
    env["PYTHONUNBUFFERED"] = "1"
    env.pop(ATTEMPT_ENV, None)
    env.pop("RAY_ADDRESS", None)
    if python is not None:
        enter_environment(env, python)
    return env


def enter_environment(env: dict[str, str], python: str) -> None:
    """Make ``env`` that of a process in the adapter environment of ``python``: nothing of the
    driver's import path leaks in, and a framework that starts ``python`` gets the environment's."""
    for name in ("PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP"):
        env.pop(name, None)
    bin_dir = Path(python).parent
    env["VIRTUAL_ENV"] = str(bin_dir.parent)
    env["PATH"] = os.pathsep.join([str(bin_dir), *[part for part in env.get("PATH", "").split(os.pathsep) if part]])
