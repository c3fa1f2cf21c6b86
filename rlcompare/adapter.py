"""What an adapter author imports: the adapter contract and the harness's helpers, in one place.

    from rlcompare import hookimpl
    from rlcompare.adapter import Adapter, Capabilities, Fidelity, FidelityEntry, TrainingResult

Everything here lives in :mod:`rlcompare.harness` (standard library, numpy and gymnasium only), so
an adapter module that imports this facade still runs inside its own Python environment, where
rlcompare's other dependencies are not installed. Importing it stays light (listing plugins imports
every adapter module): the three names that need numpy and gymnasium (:class:`TrainingContext`,
:class:`EnvFactory`, :data:`Policy`) are loaded on first use; an adapter module imports them for
type checking, or inside ``train()``.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from rlcompare.errors import IncompatibleError
from rlcompare.harness.contract import ADAPTER_ID_PATTERN, Adapter, Capabilities, Recommendation, TrainingResult
from rlcompare.harness.fidelity import (
    Fidelity,
    FidelityEntry,
    Judge,
    NativeSetting,
    Setting,
    apply_native_settings,
    entry,
    language_fidelity,
    map_settings,
    only_if,
    vector_env_fidelity,
)
from rlcompare.harness.jax_threads import configure_xla_threads, jax_backend_started
from rlcompare.harness.limits import COUNTER_SLOTS
from rlcompare.harness.parity import ParityOutcome, ParityProbe
from rlcompare.harness.private_ray import start_private_ray
from rlcompare.harness.schedule import gradient_steps_between_target_syncs
from rlcompare.harness.training_loop import TrainingSetup, train_with_setup
from rlcompare.harness.validity import GRANULARITIES, BudgetTolerance
from rlcompare.harness.workload_view import WorkloadLike

if TYPE_CHECKING:
    from rlcompare.harness.context import TrainingContext
    from rlcompare.harness.counted_envs import EnvFactory, episode_step_limit, make_env
    from rlcompare.harness.evaluation import Policy

__all__ = [
    "ADAPTER_ID_PATTERN", "COUNTER_SLOTS", "GRANULARITIES", "Adapter", "BudgetTolerance", "Capabilities",
    "EnvFactory", "Fidelity", "FidelityEntry", "IncompatibleError", "Judge", "NativeSetting", "ParityOutcome", "ParityProbe", "Policy", "Recommendation", "Setting",
    "TrainingContext", "TrainingResult", "TrainingSetup", "WorkloadLike", "apply_native_settings",
    "configure_xla_threads", "entry", "jax_backend_started", "episode_step_limit", "language_fidelity", "gradient_steps_between_target_syncs", "make_env", "map_settings", "only_if",
    "start_private_ray", "train_with_setup", "vector_env_fidelity",
]

#: Names whose modules import numpy and gymnasium: loaded when first read, not with this facade.
_HEAVY = {
    "TrainingContext": "rlcompare.harness.context",
    "EnvFactory": "rlcompare.harness.counted_envs",
    "make_env": "rlcompare.harness.counted_envs",
    "episode_step_limit": "rlcompare.harness.counted_envs",
    "Policy": "rlcompare.harness.evaluation",
}


def __getattr__(name: str) -> Any:
    if name in _HEAVY:
        return getattr(importlib.import_module(_HEAVY[name]), name)
    raise AttributeError(f"module 'rlcompare.adapter' has no attribute {name!r}")
