"""Building the plugin manager and the typed view of what plugins registered.

Built-in plugins are ordinary plugin modules listed in :data:`BUILTIN_PLUGINS` (pytest's
``default_plugins``); third-party plugins come in through the ``rlcompare`` entry-point group.
A plugin that fails to import or to register is recorded in :attr:`Plugins.errors` and skipped.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

import pluggy

from rlcompare import hookspecs
from rlcompare.errors import PluginError, UnknownNameError

if TYPE_CHECKING:
    from rlcompare.adapter import Adapter
    from rlcompare.workload import Workload

#: Built-in plugin modules, registered exactly like third-party ones.
BUILTIN_PLUGINS: tuple[str, ...] = (
    "rlcompare.builtin_frameworks",
    "rlcompare.builtin_workloads",
    "adapters.sb3",
    "adapters.tianshou",
    "adapters.rllib",
    "adapters.torchrl",
    "adapters.skrl",
    "criteria.performance",
    "criteria.development",
)

#: Set to ``1`` to skip third-party plugins found through entry points.
DISABLE_AUTOLOAD_ENV = "RLCOMPARE_DISABLE_PLUGIN_AUTOLOAD"

ENTRY_POINT_GROUP = hookspecs.PROJECT_NAME


class Identified(Protocol):
    id: str


@dataclass(frozen=True)
class Suite:
    """A named list of workload ids."""

    name: str
    workload_ids: tuple[str, ...]
    description: str = ""


@dataclass
class Register:
    """What registration hooks receive; each ``add_*`` records what one plugin contributes."""

    adapters: dict[str, type[Adapter]] = field(default_factory=dict)
    workloads: dict[str, Workload] = field(default_factory=dict)
    suites: dict[str, Suite] = field(default_factory=dict)
    criteria: dict[str, Any] = field(default_factory=dict)
    frameworks: dict[str, Any] = field(default_factory=dict)
    origin: dict[tuple[str, str], str] = field(default_factory=dict)
    current_plugin: str = "?"

    def _add(self, kind: str, table: dict[str, Any], key: str, value: Any) -> None:
        if key in table:
            owner = self.origin[(kind, key)]
            raise PluginError(self.current_plugin, f"{kind} {key!r} is already registered by {owner!r}")
        table[key] = value
        self.origin[(kind, key)] = self.current_plugin

    def add_adapter(self, adapter_class: type[Adapter]) -> None:
        self._add("adapter", self.adapters, adapter_class.id, adapter_class)

    def add_workload(self, workload: Workload) -> None:
        self._add("workload", self.workloads, workload.id, workload)

    def add_suite(self, name: str, workload_ids: Iterable[str], description: str = "") -> None:
        self._add("suite", self.suites, name, Suite(name, tuple(workload_ids), description))

    def add_criterion(self, criterion: Identified) -> None:
        self._add("criterion", self.criteria, criterion.id, criterion)

    def add_framework(self, entry: Identified) -> None:
        self._add("framework", self.frameworks, entry.id, entry)


@dataclass
class Plugins:
    """The typed facade over the plugin manager: everything registered, and what failed."""

    manager: pluggy.PluginManager
    register: Register
    errors: list[PluginError]

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
    def criteria(self) -> dict[str, Any]:
        return self.register.criteria

    @property
    def frameworks(self) -> dict[str, Any]:
        return self.register.frameworks

    def adapter(self, adapter_id: str) -> Adapter:
        """An instance of the adapter ``adapter_id``, or an error naming the closest one."""
        if adapter_id not in self.adapters:
            raise UnknownNameError("adapter", adapter_id, self.adapters, "rlcompare list adapters")
        return self.adapters[adapter_id]()

    def suite(self, name: str) -> list[Workload]:
        if name not in self.suites:
            raise UnknownNameError("suite", name, self.suites, "rlcompare list suites")
        workloads = []
        for workload_id in self.suites[name].workload_ids:
            if workload_id not in self.workloads:
                raise UnknownNameError("workload", workload_id, self.workloads, "rlcompare list workloads")
            workloads.append(self.workloads[workload_id])
        return workloads

    def plugin_origin(self, kind: str, key: str) -> str:
        return self.register.origin.get((kind, key), "?")


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
    manager = pluggy.PluginManager(hookspecs.PROJECT_NAME)
    manager.add_hookspecs(hookspecs)
    errors: list[PluginError] = []

    for module_name in dict.fromkeys(builtins):  # listing a built-in twice registers it once
        try:
            module = _import_plugin(module_name, lambda m=module_name: importlib.import_module(m))
            manager.register(module, name=module_name)
        except PluginError as error:
            errors.append(error)

    if autoload is None:
        autoload = os.environ.get(DISABLE_AUTOLOAD_ENV, "") not in ("1", "true", "yes")
    if autoload:
        for entry_point in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP):
            if manager.get_plugin(entry_point.name) is not None or manager.is_blocked(entry_point.name):
                continue
            try:
                plugin = _import_plugin(entry_point.name, entry_point.load)
                manager.register(plugin, name=entry_point.name)
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
    for hook_name in (
        "rlcompare_register_frameworks",
        "rlcompare_register_adapters",
        "rlcompare_register_workloads",
        "rlcompare_register_criteria",
    ):
        caller = getattr(manager.hook, hook_name)
        for impl in caller.get_hookimpls():
            register.current_plugin = impl.plugin_name
            try:
                impl.function(register=register)
            except PluginError as error:
                errors.append(error)
            except Exception as exc:  # noqa: BLE001 - reported by `doctor` and `list`
                errors.append(PluginError(impl.plugin_name, f"{hook_name}: {type(exc).__name__}: {exc}"))
    register.current_plugin = "?"
    return Plugins(manager=manager, register=register, errors=errors)
