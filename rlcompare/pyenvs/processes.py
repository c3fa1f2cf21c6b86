"""The environment variables of every process started for an adapter: a run's worker, a parity probe.

Both get the same thread pins, unbuffered output, no inherited Ray address, JAX's persistent compilation
cache off (:data:`JAX_CACHE_OFF`) and, in an adapter's own environment, that environment's interpreter
first on the path and nothing of the driver's import path (a parity probe keeps it: an outside adapter's
package may be on it only), so that a warm start's parent (:mod:`rlcompare.pyenvs.warm`) serves a driver's
parity probes and its runs alike.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from rlcompare.harness.driver_watch import ATTEMPT_ENV

#: Torch/BLAS/OpenMP thread variables pinned to the workload's threads_per_worker in every run.
THREAD_ENV_VARS = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS", "NUMEXPR_NUM_THREADS")
#: JAX's persistent compilation cache, off in every process started for an adapter, whatever the
#: user's JAX_COMPILATION_CACHE_DIR says: each run compiles its programs itself, so compile time (part of
#: start-up) is measured the same way for every run of every JAX framework, and no program loaded from
#: a cache runs in place of the one compiled. Measured here with rejax 0.1.3 on jax 0.5.3: a training
#: program read back from the cache returned its input state unchanged (no step taken; the harness
#: refused the run as uncounted), where the same program compiled afresh trained.
JAX_CACHE_OFF = {"JAX_ENABLE_COMPILATION_CACHE": "false"}


def process_environment(base: Mapping[str, str], threads: int, python: str | None = None,
                        keep_import_path: bool = False) -> dict[str, str]:
    """``base`` made the environment of a process for an adapter: ``threads`` threads for torch, BLAS and
    OpenMP, unbuffered output, no Ray address (a framework using Ray starts its own) and no attempt of
    the driver's own (a driver started inside a run), JAX's compilation cache off; with ``python``, inside
    that adapter environment (with ``keep_import_path``, the driver's import path kept there)."""
    env = dict(base)
    env.update(JAX_CACHE_OFF)
    for name in THREAD_ENV_VARS:
        env[name] = str(threads)
    env["PYTHONUNBUFFERED"] = "1"
    env.pop(ATTEMPT_ENV, None)
    env.pop("RAY_ADDRESS", None)
    if python is not None:
        enter_environment(env, python, keep_import_path)
    return env


def enter_environment(env: dict[str, str], python: str, keep_import_path: bool = False) -> None:
    """Make ``env`` that of a process in the adapter environment of ``python``: nothing of the
    driver's import path leaks in (unless ``keep_import_path``), and a framework that starts ``python``
    gets the environment's."""
    for name in ("PYTHONHOME", "PYTHONSTARTUP") if keep_import_path else ("PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP"):
        env.pop(name, None)
    bin_dir = Path(python).parent
    env["VIRTUAL_ENV"] = str(bin_dir.parent)
    env["PATH"] = os.pathsep.join([str(bin_dir), *[part for part in env.get("PATH", "").split(os.pathsep) if part]])
