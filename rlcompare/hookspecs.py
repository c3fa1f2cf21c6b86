"""Every hook of rlcompare, in one module (pluggy project and entry-point group ``rlcompare``).

Registration hooks receive a :class:`rlcompare.plugins.Register` and call its ``add_*`` methods
(tox's pattern), so a plugin never returns loosely typed values. A plugin module implements any
subset of them with ``@rlcompare.hookimpl``. Implementations must not import an RL framework at
module import time: listing plugins imports every plugin module.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rlcompare import PROJECT_NAME, hookimpl, hookspec

if TYPE_CHECKING:
    from rlcompare.plugins.register import Register

__all__ = ["PROJECT_NAME", "hookimpl", "hookspec"]

# -------------------------------------------------------------------------------------------------
# registration: called once, when the plugin manager is built
# -------------------------------------------------------------------------------------------------


@hookspec
def rlcompare_register_algorithms(register: Register) -> None:
    """Register algorithm families with ``register.add_algorithm(AlgorithmFamily(...))``
    (:class:`rlcompare.spec.families.AlgorithmFamily`: name, one-line description, canonical
    hyperparameter model, action spaces, gradient or evolutionary, budget granularity and grain).

    Called before every other registration hook, so a plugin's workloads may name its families.
    Workloads then validate ``algorithm`` against the registered names and ``hyperparameters``
    against the family's model; a built-in name (PPO, A2C, DQN, SAC, TD3, DDPG, ES) cannot be taken over.
    """


@hookspec
def rlcompare_register_adapters(register: Register) -> None:
    """Register adapter classes with ``register.add_adapter(AdapterClass)``.

    An adapter class has a class attribute ``id`` (what users type in ``--adapters``) and a
    ``framework`` naming its registry entry; see :class:`rlcompare.harness.contract.Adapter`.
    """


@hookspec
def rlcompare_register_workloads(register: Register) -> None:
    """Register workloads with ``register.add_workload(workload)`` and suites with
    ``register.add_suite(name, workload_ids, description)``."""


@hookspec
def rlcompare_register_criteria(register: Register) -> None:
    """Register scoring criteria with ``register.add_criterion(criterion)``. A criterion that keeps
    an expensive measurement in the measurement cache may declare ``premeasure``, which ``rlcompare
    run`` calls in the matrix's tail and after it, so that the first scoring finds it cached
    (docs/criteria.md)."""


@hookspec
def rlcompare_register_frameworks(register: Register) -> None:
    """Register framework registry entries with ``register.add_framework(entry)``."""


@hookspec
def rlcompare_register_report_formats(register: Register) -> None:
    """Register report formats with ``register.add_report_format(ReportFormat(...))``
    (:class:`rlcompare.reporting.formats.ReportFormat`); ``rlcompare report --format ID`` writes them."""


@hookspec
def rlcompare_register_backends(register: Register) -> None:
    """Register execution backends with ``register.add_backend(BackendClass)``
    (a subclass of :class:`rlcompare.execution.backend.Backend` with a ``name``);
    ``rlcompare run --backend NAME`` runs the matrix on it."""


@hookspec
def rlcompare_register_studies(register: Register) -> None:
    """Register studies (a published table as data beside the cells that measure it again) with
    ``register.add_study(study)`` (:class:`rlcompare.studies.model.Study`, or a plain table of one);
    ``rlcompare study list`` shows them (docs/studies.md)."""
