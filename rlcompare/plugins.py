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

from rlcompare import algorithms, hookspecs
from rlcompare.errors import PluginError, UnknownNameError

if TYPE_CHECKING:
    from rlcompare.adapter import Adapter
    from rlcompare.algorithms import AlgorithmFamily
    from rlcompare.workload import Workload

#: Built-in plugin modules, registered exactly like third-party ones.
BUILTIN_PLUGINS: tuple[str, ...] = (
    "rlcompare.builtin_algorithms",
    "rlcompare.builtin_frameworks",
    "rlcompare.builtin_workloads",
    "rlcompare_sb3",
    "rlcompare_tianshou",
    "rlcompare_rllib",
    "rlcompare_torchrl",
    "rlcompare_skrl",
    "rlcompare_evotorch",
    "rlcompare_sample_factory",
    "rlcompare_criteria.performance",
    "rlcompare_criteria.development",
    "rlcompare.reporting.builtin_formats",
    "rlcompare.execution.local",
    "rlcompare.execution.ray_backend",
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


@dataclass(frozen=True)
class Origin:
    """Where a registered object comes from: the plugin, and the distribution that installed it."""

    plugin: str
    distribution: str | None = None
    version: str | None = None

    def __str__(self) -> str:
        if self.distribution is None:
            return repr(self.plugin)
        return f"{self.plugin!r} ({self.distribution} {self.version or '?'})"


@dataclass
class Register:
    """What registration hooks receive; each ``add_*`` records what one plugin contributes.

    Every registered object remembers its :class:`Origin`. Two plugins registering the same id of
    the same kind is a clash: *both* registrations are dropped (neither can take the other's id
    over, whichever loads first) and one error names both plugins and their distributions.
    """

    algorithms: dict[str, AlgorithmFamily] = field(default_factory=dict)
    adapters: dict[str, type[Adapter]] = field(default_factory=dict)
    workloads: dict[str, Workload] = field(default_factory=dict)
    suites: dict[str, Suite] = field(default_factory=dict)
    criteria: dict[str, Any] = field(default_factory=dict)
    frameworks: dict[str, Any] = field(default_factory=dict)
    report_formats: dict[str, Any] = field(default_factory=dict)
    backends: dict[str, Any] = field(default_factory=dict)
    origins: dict[tuple[str, str], Origin] = field(default_factory=dict)
    clashes: dict[tuple[str, str], list[Origin]] = field(default_factory=dict)
    errors: list[PluginError] = field(default_factory=list)
    current: Origin = field(default_factory=lambda: Origin("?"))

    @property
    def origin(self) -> dict[tuple[str, str], str]:
        """``(kind, id) -> plugin name`` (kept for readers that only want the name)."""
        return {key: origin.plugin for key, origin in self.origins.items()}

    def _add(self, kind: str, table: dict[str, Any], key: str, value: Any) -> None:
        if not isinstance(key, str) or not key:
            raise PluginError(self.current.plugin, f"{kind} id must be a non-empty string, got {key!r}")
        if (kind, key) in self.clashes:
            self.clashes[(kind, key)].append(self.current)
            self.errors.append(PluginError(self.current.plugin, f"{kind} {key!r} is disputed and stays disabled"))
            return
        if key in table:
            first = self.origins.pop((kind, key))
            del table[key]
            self.clashes[(kind, key)] = [first, self.current]
            self.errors.append(PluginError(
                self.current.plugin,
                f"{kind} id {key!r} is registered by both {first} and {self.current}; both are disabled "
                f"(uninstall one, or rename the id in one of them)",
            ))
            return
        table[key] = value
        self.origins[(kind, key)] = self.current

    def add_algorithm(self, family: AlgorithmFamily) -> None:
        """An :class:`rlcompare.algorithms.AlgorithmFamily`, checked here; workloads may then name it.
        A plugin registering a built-in family's name clashes with the built-in, which stays."""
        from rlcompare.algorithms import check_family_for_plugin

        check_family_for_plugin(family, self.current.plugin)
        self._add("algorithm", self.algorithms, family.name, family)

    def add_adapter(self, adapter_class: type[Adapter]) -> None:
        from rlcompare.adapter import check_adapter_class

        check_adapter_class(adapter_class)
        self._add("adapter", self.adapters, adapter_class.id, adapter_class)

    def add_workload(self, workload: Workload) -> None:
        self._add("workload", self.workloads, workload.id, workload)

    def add_suite(self, name: str, workload_ids: Iterable[str], description: str = "") -> None:
        self._add("suite", self.suites, name, Suite(name, tuple(workload_ids), description))

    def add_criterion(self, criterion: Identified) -> None:
        self._add("criterion", self.criteria, criterion.id, criterion)

    def add_framework(self, entry: Identified) -> None:
        self._add("framework", self.frameworks, entry.id, entry)

    def add_report_format(self, report_format: Any) -> None:
        """A :class:`rlcompare.reporting.formats.ReportFormat`, checked here."""
        from rlcompare.reporting.formats import check_report_format

        check_report_format(report_format)
        self._add("report format", self.report_formats, report_format.id, report_format)

    def add_backend(self, backend_class: Any) -> None:
        """A subclass of :class:`rlcompare.execution.backend.Backend`, checked here."""
        from rlcompare.execution.backend import check_backend_class

        check_backend_class(backend_class)
        self._add("backend", self.backends, backend_class.name, backend_class)


@dataclass
class Plugins:
    """The typed facade over the plugin manager: everything registered, and what failed."""

    manager: pluggy.PluginManager
    register: Register
    errors: list[PluginError]

    @property
    def algorithms(self) -> dict[str, AlgorithmFamily]:
        """Every family workloads may name: the registered ones and the built-ins."""
        from rlcompare.algorithms import known_families

        return known_families()

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

    @property
    def report_formats(self) -> dict[str, Any]:
        return self.register.report_formats

    @property
    def backends(self) -> dict[str, Any]:
        return self.register.backends

    def backend(self, name: str) -> Any:
        """The backend class ``name``, or an error naming the closest one."""
        if name not in self.backends:
            raise UnknownNameError("backend", name, self.backends, "rlcompare list backends")
        return self.backends[name]

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
        return self.origin(kind, key).plugin

    def origin(self, kind: str, key: str) -> Origin:
        """Which plugin and distribution registered ``key``."""
        return self.register.origins.get((kind, key), Origin("?"))


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
    then run every registration hook, one plugin at a time so that one bad plugin spoils nothing.
    The algorithm families it registers become the ones workloads in this process validate against."""
    with algorithms.loading_plugins():
        return _build_plugin_manager(builtins, autoload)


def _build_plugin_manager(builtins: Iterable[str], autoload: bool | None) -> Plugins:
    manager = pluggy.PluginManager(hookspecs.PROJECT_NAME)
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
            origins[module_name] = _builtin_origin(module_name, entry_points)
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
                origins[entry_point.name] = _entry_point_origin(entry_point)
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
        "rlcompare_register_algorithms",  # first: workloads registered below may name these
        "rlcompare_register_frameworks",
        "rlcompare_register_adapters",
        "rlcompare_register_workloads",
        "rlcompare_register_criteria",
        "rlcompare_register_report_formats",
        "rlcompare_register_backends",
    ):
        caller = getattr(manager.hook, hook_name)
        for impl in caller.get_hookimpls():
            register.current = origins.get(impl.plugin_name, Origin(impl.plugin_name))
            try:
                impl.function(register=register)
            except PluginError as error:
                errors.append(error)
            except Exception as exc:  # noqa: BLE001 - reported by `doctor` and `list`
                errors.append(PluginError(impl.plugin_name, f"{hook_name}: {type(exc).__name__}: {exc}"))
        if hook_name == "rlcompare_register_algorithms":
            algorithms.install(register.algorithms)
    register.current = Origin("?")
    errors.extend(register.errors)
    return Plugins(manager=manager, register=register, errors=errors)


def _builtin_origin(module_name: str, entry_points: Iterable[importlib.metadata.EntryPoint]) -> Origin:
    """A built-in plugin comes from rlcompare itself or from one of its own distributions
    (``rlcompare-sb3``, ``rlcompare-criteria``, ...), installed like any outside package."""
    import rlcompare

    for entry_point in entry_points:  # the distribution whose own entry point names the module
        if entry_point.module == module_name and entry_point.attr is None and entry_point.dist is not None:
            return Origin(module_name, entry_point.dist.metadata["Name"], entry_point.dist.version)
    return Origin(module_name, "rlcompare", rlcompare.__version__)


def _entry_point_origin(entry_point: importlib.metadata.EntryPoint) -> Origin:
    dist = entry_point.dist
    if dist is None:
        return Origin(entry_point.name)
    return Origin(entry_point.name, dist.metadata["Name"], dist.version)
