"""The plugin manager, built in one function: hook specs, built-ins, entry points,
``check_pending()``, then every registration hook, one plugin at a time.

Built-in plugins are ordinary plugin modules listed in :data:`BUILTIN_PLUGINS` (pytest's
``default_plugins``); third-party plugins come in through the ``rlcompare`` entry-point group. A
plugin that fails to import or to register is recorded in :attr:`Plugins.errors` and skipped. This
is the composition root: only the command line and the testing kit build it, and they hand each
layer the narrow catalogue it needs (:meth:`Plugins.plan_catalogue`,
:meth:`Plugins.scoring_catalogue`, :meth:`Plugins.reporting_catalogue`), never the manager.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import os
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import pluggy

from rlcompare import PROJECT_NAME, hookspecs
from rlcompare.errors import PluginError, UnknownNameError
from rlcompare.execution.backend import Backend
from rlcompare.harness.contract import Adapter
from rlcompare.harness.protocol import UNKNOWN_ORIGIN, Origin
from rlcompare.plan.catalogue import PlanCatalogue
from rlcompare.plugins.origin import builtin_origin, entry_point_origin
from rlcompare.plugins.register import Register
from rlcompare.registry.entries import FrameworkEntry
from rlcompare.reporting.catalogue import ReportingCatalogue
from rlcompare.reporting.formats import ReportFormat
from rlcompare.scoring.criteria import Criterion, ScoringCatalogue
from rlcompare.spec.families import Families
from rlcompare.spec.workload import Suite, Workload
from rlcompare.studies.model import Study

#: Built-in plugin modules, registered exactly like third-party ones.
BUILTIN_PLUGINS: tuple[str, ...] = (
    "rlcompare.builtins.families",
    "rlcompare.builtins.frameworks",
    "rlcompare.builtins.workloads",
    "rlcompare_sb3",
    "rlcompare_tianshou",
    "rlcompare_rllib",
    "rlcompare_torchrl",
    "rlcompare_skrl",
    "rlcompare_evotorch",
    "rlcompare_sample_factory",
    "rlcompare_rsl_rl",
    "rlcompare_rejax",
    "rlcompare_d3rlpy",
    "rlcompare_rl_games",
    "rlcompare_mushroom_rl",
    "rlcompare_sbx",
    "rlcompare_trl",
    "rlcompare_tunix",
    "rlcompare_criteria.performance",
    "rlcompare_criteria.development",
    "rlcompare.builtins.report_formats",
    "rlcompare.builtins.backends",
    "rlcompare.builtins.studies",
)

#: Set to ``1`` to skip third-party plugins found through entry points.
DISABLE_AUTOLOAD_ENV = "RLCOMPARE_DISABLE_PLUGIN_AUTOLOAD"

ENTRY_POINT_GROUP = PROJECT_NAME

#: The registration hooks, in the order they run: families first, so that workloads registered
#: later may name them.
REGISTRATION_HOOKS = (
    "rlcompare_register_algorithms",
    "rlcompare_register_frameworks",
    "rlcompare_register_adapters",
    "rlcompare_register_workloads",
    "rlcompare_register_criteria",
    "rlcompare_register_report_formats",
    "rlcompare_register_backends",
    "rlcompare_register_studies",
)


@dataclass
class Plugins:
    """The typed facade over the plugin manager: everything registered, and what failed."""

    manager: pluggy.PluginManager
    register: Register
    errors: list[PluginError]

    @property
    def algorithms(self) -> Families:
        """Every family workloads may name: the registered ones and the built-ins."""
        return self.register.families

    @property
    def adapters(self) -> dict[str, type[Adapter]]:
        return self.register.adapters

    @property
    def workloads(self) -> dict[str, Workload]:
        return self.register.workloads

    @property
    def suites(self) -> dict[str, Suite]:
        return self.register.suites

    @property
    def criteria(self) -> dict[str, Criterion]:
        return self.register.criteria

    @property
    def frameworks(self) -> dict[str, FrameworkEntry]:
        return self.register.frameworks

    @property
    def report_formats(self) -> dict[str, ReportFormat]:
        return self.register.report_formats

    @property
    def backends(self) -> dict[str, type[Backend]]:
        return self.register.backends

    @property
    def studies(self) -> dict[str, Study]:
        return self.register.studies

    def study(self, name: str) -> Study:
        """The study ``name``, or an error naming the closest one."""
        if name not in self.studies:
            raise UnknownNameError("study", name, self.studies, "rlcompare study list")
        return self.studies[name]

    def backend(self, name: str) -> type[Backend]:
        """The backend class ``name``, or an error naming the closest one."""
        if name not in self.backends:
            raise UnknownNameError("backend", name, self.backends, "rlcompare list backends")
        return self.backends[name]

    def adapter(self, adapter_id: str) -> Adapter:
        """An instance of the adapter ``adapter_id``, or an error naming the closest one."""
        return self.plan_catalogue().adapter(adapter_id)

    def suite(self, name: str) -> list[Workload]:
        """The workloads of suite ``name``, or an error naming the closest suite or workload."""
        return self.plan_catalogue().suite(name)

    def origin(self, kind: str, key: str) -> Origin:
        """Which plugin and distribution registered ``key``."""
        return self.register.origins.get((kind, key), UNKNOWN_ORIGIN)

    def plugin_origin(self, kind: str, key: str) -> str:
        return self.origin(kind, key).plugin

    def _origins(self, kind: str, keys: Iterable[str]) -> Mapping[str, Origin]:
        return {key: self.origin(kind, key) for key in keys}

    def plan_catalogue(self) -> PlanCatalogue:
        """What planning needs: adapters and their origins, families, workloads, suites."""
        return PlanCatalogue(self.algorithms, dict(self.adapters), self._origins("adapter", self.adapters),
                             dict(self.workloads), dict(self.suites))

    def scoring_catalogue(self) -> ScoringCatalogue:
        """What scoring needs: criteria and their origins, adapter classes, registry entries."""
        return ScoringCatalogue(dict(self.criteria), dict(self.adapters), dict(self.frameworks),
                                self._origins("criterion", self.criteria))

    def reporting_catalogue(self) -> ReportingCatalogue:
        """What a report needs: the scoring catalogue, suites, workloads and families."""
        return ReportingCatalogue(self.scoring_catalogue(), dict(self.suites), dict(self.workloads), self.algorithms)


def _import_plugin(name: str, load: Callable[[], Any]) -> Any:
    try:
        return load()
    except Exception as exc:  # noqa: BLE001 - any failure of a plugin is reported, not fatal
        raise PluginError(name, f"{type(exc).__name__}: {exc}") from exc


def build_plugin_manager(
    builtins: Iterable[str] = BUILTIN_PLUGINS,
    autoload: bool | None = None,
) -> Plugins:
    """Build the plugin manager: hook specs, built-ins, entry points, ``check_pending()``,
    then run every registration hook, one plugin at a time so that one bad plugin spoils nothing."""
    manager = pluggy.PluginManager(PROJECT_NAME)
    manager.add_hookspecs(hookspecs)
    errors: list[PluginError] = []
    origins: dict[str, Origin] = {}

    # one scan of the group serves both the built-ins' origins and the third-party plugins
    entry_points = tuple(importlib.metadata.entry_points(group=ENTRY_POINT_GROUP))
    builtin_modules = dict.fromkeys(builtins)  # listing a built-in twice registers it once
    for module_name in builtin_modules:
        try:
            module = _import_plugin(module_name, lambda m=module_name: importlib.import_module(m))
            manager.register(module, name=module_name)
            origins[module_name] = builtin_origin(module_name, entry_points)
        except PluginError as error:
            errors.append(error)

    if autoload is None:
        autoload = os.environ.get(DISABLE_AUTOLOAD_ENV, "") not in ("1", "true", "yes")
    if autoload:
        for entry_point in entry_points:
            if manager.get_plugin(entry_point.name) is not None or manager.is_blocked(entry_point.name):
                continue
            if entry_point.module in builtin_modules and entry_point.attr is None:
                continue  # a built-in distribution's own entry point: registered above already
            try:
                plugin = _import_plugin(entry_point.name, entry_point.load)
                manager.register(plugin, name=entry_point.name)
                origins[entry_point.name] = entry_point_origin(entry_point)
            except PluginError as error:
                errors.append(error)
            except ValueError as exc:  # pluggy: duplicate plugin object or name
                errors.append(PluginError(entry_point.name, str(exc)))

    while True:  # a misspelled hook fails its own plugin loudly, not the others
        try:
            manager.check_pending()
            break
        except pluggy.PluginValidationError as exc:
            name = manager.get_name(exc.plugin) or "?"
            errors.append(PluginError(name, str(exc)))
            manager.unregister(exc.plugin)

    register = Register()
    for hook_name in REGISTRATION_HOOKS:
        caller = getattr(manager.hook, hook_name)
        for impl in caller.get_hookimpls():
            register.current = origins.get(impl.plugin_name, Origin(impl.plugin_name))
            try:
                impl.function(register=register)
            except PluginError as error:
                errors.append(error)
            except Exception as exc:  # noqa: BLE001 - reported by `doctor` and `list`
                errors.append(PluginError(impl.plugin_name, f"{hook_name}: {type(exc).__name__}: {exc}"))
    register.current = UNKNOWN_ORIGIN
    errors.extend(register.errors)
    return Plugins(manager=manager, register=register, errors=errors)
