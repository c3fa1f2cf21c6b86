"""The run matrix: workloads x adapters x seeds, made explicit before anything runs."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rlcompare.errors import IncompatibleError, InvalidWorkloadError, UnknownNameError, UsageError
from rlcompare.harness.contract import Adapter
from rlcompare.harness.fidelity import Fidelity, FidelityEntry
from rlcompare.harness.framework_import import framework_modules
from rlcompare.harness.protocol import UNKNOWN_ORIGIN, Origin, WorkerEnvironment
from rlcompare.harness.validity import BudgetTolerance, grain_refusal
from rlcompare.plan.catalogue import PlanCatalogue
from rlcompare.spec.workload import Workload, check_environment, load_workload_file, workload_from_dict


def run_id_for(workload_id: str, adapter_id: str, seed: int) -> str:
    """Greppable run id: ``workload__adapter__sSEED``."""
    return f"{workload_id}__{adapter_id}__s{seed}"


@dataclass(frozen=True)
class PlannedRun:
    workload: Workload
    adapter_id: str
    framework: str
    seed: int
    tolerance: BudgetTolerance | None = None
    origin: Origin = UNKNOWN_ORIGIN
    #: Resolved by the driver, so the worker needs no plugin manager: the adapter class as
    #: ``module:qualname``, its fidelity report (plain data) and the distributions to record.
    adapter_class: str = ""
    fidelity: tuple[dict[str, Any], ...] = ()
    distributions: tuple[str, ...] = ()
    #: The adapter's own Python environment; None: the main one (see :mod:`rlcompare.pyenvs`).
    environment: WorkerEnvironment | None = None
    #: The parity verdicts of the adapter on the workload's family (:mod:`rlcompare.plan.parity`);
    #: None: not probed.
    parity: tuple[dict[str, Any], ...] | None = None
    #: What a run imports of the framework (:func:`rlcompare.harness.framework_import.framework_modules`):
    #: its worker times that import first thing and records it with the run.
    framework_modules: tuple[str, ...] = ()
    #: The framework release the run is pinned to (``--versions``; :mod:`rlcompare.plan.releases`):
    #: then ``adapter_id`` is the subject ``adapter@release``. None: the installed version.
    release: str | None = None

    @property
    def budget_tolerance(self) -> BudgetTolerance:
        return self.tolerance or BudgetTolerance.for_workload(self.workload)

    @property
    def run_id(self) -> str:
        return run_id_for(self.workload.id, self.adapter_id, self.seed)


def adapter_reference(adapter_class: type) -> str:
    """``module:qualname`` of an adapter class: all a worker needs to find it."""
    return f"{adapter_class.__module__}:{adapter_class.__qualname__}"


@dataclass(frozen=True)
class RefusedPair:
    """An adapter x workload pair left out of the matrix, with the reason (shown, and stored)."""

    workload: Workload
    adapter_id: str
    framework: str
    reason: str
    origin: Origin = UNKNOWN_ORIGIN


@dataclass
class Plan:
    runs: list[PlannedRun] = field(default_factory=list)
    refused: list[RefusedPair] = field(default_factory=list)


def resolve_workloads(catalogue: PlanCatalogue, suite: str | None, workload_files: Sequence[str]) -> list[Workload]:
    """The workloads a command names: a suite's, or those given one by one (never both), each a
    workload file or the id of a registered workload (:func:`named_workload`); files may name any
    family the catalogue knows."""
    if suite and workload_files:
        raise UsageError("give either --suite or --workload, not both")
    if suite:
        workloads = catalogue.suite(suite)
    elif workload_files:
        workloads = [named_workload(catalogue, name) for name in workload_files]
    else:
        raise UsageError("nothing to do: give --suite NAME or --workload FILE|ID")
    seen: set[str] = set()
    for workload in workloads:
        if workload.id in seen:
            raise UsageError(f"workload id {workload.id!r} appears twice; ids must be unique in one matrix")
        seen.add(workload.id)
    return workloads


def named_workload(catalogue: PlanCatalogue, name: str) -> Workload:
    """What one ``--workload`` names: the file at ``name`` when there is one (a file wins over a
    registered workload of the same name), else the registered workload with that id (a built-in
    one, or a plugin's: ``rlcompare list workloads``). A name that is neither is an error naming the
    closest registered id, or the file that cannot be read when ``name`` looks like a path."""
    path = Path(name)
    if path.exists() or name not in catalogue.workloads and _looks_like_a_path(name):
        return load_workload_file(path, catalogue.families)
    if name in catalogue.workloads:
        return catalogue.workloads[name]
    raise UnknownNameError("workload (neither a file nor a registered workload id)", name, catalogue.workloads,
                           "rlcompare list workloads")


def _looks_like_a_path(name: str) -> bool:
    return name.endswith((".toml", ".TOML")) or "/" in name or "\\" in name or name.startswith(".")


def build_plan(
    catalogue: PlanCatalogue,
    workloads: Sequence[Workload],
    adapter_ids: Sequence[str] | None = None,
    seeds: int | None = None,
) -> Plan:
    """Every (workload, adapter, seed) run. Adapters named explicitly must be able to run every
    workload (else :class:`IncompatibleError` naming both); with all adapters, a pair an adapter
    cannot run is recorded as refused instead."""
    # gymnasium loads here, when a plan is built, not whenever planning is imported (every command)
    from rlcompare.harness.counted_envs import action_space_kind

    explicit = adapter_ids is not None
    adapters = [catalogue.adapter(adapter_id) for adapter_id in (adapter_ids or sorted(catalogue.adapters))]
    plan = Plan()
    for workload in workloads:
        check_environment(workload)
        if seeds is not None:
            workload = workload.with_seeds(seeds)
        action_space = action_space_kind(workload.env, workload.env_kwargs)
        declared = workload
        for adapter in adapters:
            origin = catalogue.origin(adapter.id)
            try:
                workload = native_workload(adapter, declared) if declared.settings == "native" else declared
                adapter.check_compatible(workload, action_space)
                entries = check_faithful(adapter, workload)
                tolerance = check_grain(adapter, workload)
            except IncompatibleError as refusal:
                if explicit:
                    raise
                plan.refused.append(RefusedPair(declared, adapter.id, adapter.framework, str(refusal), origin))
                continue
            fidelity = tuple(entry.to_dict() for entry in entries)
            try:
                modules = framework_modules(type(adapter))
            except Exception:  # noqa: BLE001 - a plugin's odd class costs only its in-run import figure
                modules = ()
            for seed in workload.seed_values:
                plan.runs.append(PlannedRun(workload, adapter.id, adapter.framework, seed, tolerance, origin,
                                            adapter_reference(type(adapter)), fidelity, tuple(adapter.distributions),
                                            framework_modules=modules))
    return plan


def native_workload(adapter: Adapter, workload: Workload) -> Workload:
    """``workload`` in the native arm for ``adapter``: its task (env, budget, seeds, evaluation,
    threshold) with the adapter's own recommended settings (:meth:`Adapter.recommended_settings`), the
    native-only ones and their source in ``native``; refused (:class:`IncompatibleError`) when the
    adapter recommends nothing for the env and algorithm, or what it recommends does not validate."""
    where = f"adapter {adapter.id!r} cannot run workload {workload.id!r} in the native arm"
    try:
        recommended = adapter.recommended_settings(workload.env, workload.algorithm)
    except IncompatibleError as refusal:
        raise IncompatibleError(f"{where}: {refusal}") from None
    except Exception as exc:  # noqa: BLE001 - a plugin's failure refuses its own pair only
        raise IncompatibleError(f"{where}: its recommended_settings() failed ({type(exc).__name__}: {exc})") from None
    if recommended is None:
        raise IncompatibleError(f"{where}: it declares no recommended settings for {workload.algorithm} on "
                                f"{workload.env}")
    data = workload.to_dict()
    data["hyperparameters"] = dict(recommended.hyperparameters)
    if recommended.network is not None:
        data["network"] = {**data["network"], **recommended.network}
    if recommended.parallelism is not None:
        data["parallelism"] = {**data["parallelism"], **recommended.parallelism}
    data["native"] = {"source": recommended.source, "settings": dict(recommended.native)}
    try:
        return workload_from_dict(data, f"{adapter.id}'s recommended settings", {workload.algorithm: workload.family})
    except InvalidWorkloadError as error:
        raise IncompatibleError(f"{where}: its recommended settings do not validate ({error})") from None


def check_grain(adapter: Adapter, workload: Workload) -> BudgetTolerance:
    """The budget tolerance the adapter declares for ``workload``, when it is no coarser than the one
    the workload's family allows; else refuse the pair, naming both and both grains. The family sets
    the grain (:meth:`BudgetTolerance.for_workload`): no adapter is held to a wider window than another."""
    where = f"adapter {adapter.id!r} cannot run workload {workload.id!r}"
    try:
        declared = adapter.budget_tolerance(workload)
    except Exception as exc:  # noqa: BLE001 - a plugin's failure refuses its own pair only
        raise IncompatibleError(f"{where}: its budget_tolerance() failed ({type(exc).__name__}: {exc})") from None
    if not isinstance(declared, BudgetTolerance):
        raise IncompatibleError(f"{where}: its budget_tolerance() returned {type(declared).__name__}, "
                                "not a BudgetTolerance")
    refusal = grain_refusal(declared, BudgetTolerance.for_workload(workload), workload.algorithm)
    if refusal is not None:
        raise IncompatibleError(f"{where}: {refusal}")
    return declared


#: A pair is refused when more than this share of the algorithm's canonical settings cannot reach
#: the framework: what would run is not the workload that was asked for.
MAX_UNSUPPORTED_SHARE = 0.5


def check_faithful(adapter: Adapter, workload: Workload) -> list[FidelityEntry]:
    """Refuse a pair whose fidelity report leaves most canonical settings unsupported (or does not
    mention them: a setting the report omits is counted as unsupported); return the report."""
    where = f"adapter {adapter.id!r} cannot run workload {workload.id!r} faithfully"
    try:
        entries = adapter.fidelity(workload)
    except Exception as exc:  # noqa: BLE001 - a plugin's failure refuses its own pair only
        raise IncompatibleError(f"{where}: its fidelity report failed ({type(exc).__name__}: {exc})") from None
    canonical = [name for name in type(workload.hyperparameters).model_fields if name != "algorithm"]
    status = {entry.setting.removeprefix("hyperparameters."): entry.status for entry in entries}
    unsupported = [name for name in canonical if status.get(name, Fidelity.UNSUPPORTED) == Fidelity.UNSUPPORTED]
    if canonical and len(unsupported) / len(canonical) > MAX_UNSUPPORTED_SHARE:
        raise IncompatibleError(
            f"{where}: {len(unsupported)} of {len(canonical)} canonical {workload.algorithm} settings are "
            f"unsupported or missing from its fidelity report ({', '.join(unsupported[:4])}"
            f"{', ...' if len(unsupported) > 4 else ''})"
        )
    return entries
