"""A run's own Ray instance, for adapters whose framework parallelizes over Ray actors (RLlib's env
runners, EvoTorch's evaluation actors).

Ray is imported only when :func:`start_private_ray` is called: listing plugins never imports it.
"""

from __future__ import annotations

import os


def start_private_ray(num_cpus: int) -> None:
    """Start the run's private Ray cluster: its own instance (never one `ray start` recorded on this
    node, e.g. the cluster rlcompare's Ray backend runs this very run on), every process bound to
    loopback, no dashboard, ``num_cpus`` logical CPUs. The caller shuts it down (``ray.shutdown()``)."""
    # Ray binds its servers to the node address, and on Linux resolves 127.0.0.1 to the host's
    # address; switched off, the node address stays loopback (read when ray is imported).
    os.environ["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] = "0"
    import ray
    from ray._private import ray_constants

    ray_constants.ENABLE_RAY_CLUSTER = False  # in case ray was imported before the variable was set
    os.environ.setdefault("RAY_DEDUP_LOGS", "0")
    os.environ.setdefault("RAY_AUTH_MODE", "disabled")  # a private, single-run cluster on loopback
    ray.init(
        address="local",
        num_cpus=num_cpus,
        include_dashboard=False,
        _node_ip_address="127.0.0.1",
        log_to_driver=False,
        configure_logging=False,
        object_store_memory=256 * 2**20,
    )
