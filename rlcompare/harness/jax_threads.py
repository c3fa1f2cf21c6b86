"""XLA's CPU threads, pinned as the harness pins torch's (``torch.set_num_threads`` and the OpenMP/BLAS
variables, to ``threads_per_worker``), for every adapter whose framework runs on JAX (SBX, rejax, Tunix).
Standard library only: it runs before JAX is imported.

JAX's CPU client (PJRT) runs jitted computations on an intra-op thread pool (threads named
``tf_XLAEigen``) sized to the cores the process may use, whatever ``OMP_NUM_THREADS`` says. Measured
with jaxlib 0.10.2 on a 2-core machine (a jitted pair of 1024 x 1024 products, per-thread CPU time read
from ``/proc/self/task``):

- by default the products run on two ``tf_XLAEigen`` threads besides the caller;
- ``XLA_FLAGS=--xla_cpu_multi_thread_eigen=false`` alone leaves them busy (the flag is known to XLA,
  which rejects unknown ones, but the thunk runtime's pool ignores it); the often-quoted
  ``intra_op_parallelism_threads=1`` is no XLA flag at all (without a leading ``--`` XLA reads it as a
  file name);
- ``PJRT_NPROC=1`` sizes the pool to one thread (``xla::DefaultThreadPoolSize``, in jaxlib's
  ``libjax_common.so``, reads ``PJRT_NPROC``, then ``NPROC``, before it falls back to the core count;
  ``NPROC=1`` measured the same): no ``tf_XLAEigen`` thread is started and the work runs on one thread.

Both are set before JAX is imported (PJRT reads them when the CPU backend starts): ``PJRT_NPROC`` to
the workload's threads, and Eigen's multi-threading off when that is 1. JAX keeps a dozen idle service
threads of its own (dispatch, profiler, gRPC) that compute nothing.
"""

from __future__ import annotations

import os
import sys

#: The XLA flag this module manages (others in ``XLA_FLAGS`` are kept).
EIGEN_FLAG = "--xla_cpu_multi_thread_eigen"


def thread_environment(threads: int, xla_flags: str = "") -> dict[str, str]:
    """The environment variables that pin XLA's CPU threads to ``threads``, given the current
    ``XLA_FLAGS`` (its other flags kept; ``intra_op_parallelism_threads``, no XLA flag, dropped)."""
    flags = [flag for flag in xla_flags.split()
             if not flag.startswith((f"{EIGEN_FLAG}=", "intra_op_parallelism_threads"))]
    if threads == 1:
        flags.append(f"{EIGEN_FLAG}=false")
    return {"PJRT_NPROC": str(threads), "XLA_FLAGS": " ".join(flags)}


def configure_xla_threads(threads: int) -> str:
    """Pin this process's XLA CPU threads to ``threads`` (:func:`thread_environment` into ``os.environ``;
    the platform pinned to the CPU, ``JAX_PLATFORMS=cpu``, unless the caller chose one). Must run before
    JAX starts its CPU backend (:func:`jax_backend_started`). Returns the settings now in force, as
    ``PJRT_NPROC=N XLA_FLAGS``."""
    os.environ.update(thread_environment(threads, os.environ.get("XLA_FLAGS", "")))
    os.environ.setdefault("JAX_PLATFORMS", "cpu")
    return f"PJRT_NPROC={threads} {os.environ['XLA_FLAGS']}".strip()


def jax_backend_started() -> bool:
    """Whether JAX has already started a backend in this process (thread settings no longer apply)."""
    xla_bridge = sys.modules.get("jax._src.xla_bridge")
    return bool(xla_bridge is not None and getattr(xla_bridge, "_backends", None))
