"""What registration hooks receive: one typed table per kind of plugin object, each object checked
with its real type when it is added.

Every ``add_*`` validates what a plugin hands it (an algorithm family, an adapter class, a workload,
a criterion, a registry entry, a report format, a backend class, a study) and refuses a bad one with a
:class:`PluginError` naming the plugin, so nothing downstream needs to guess at a registered
object's shape. Every registered object remembers its :class:`Origin`. Two plugins registering the
same id of the same kind is a clash: *both* registrations are dropped (neither can take the other's
id over, whichever loads first) and one error names both plugins and their distributions.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

from pydantic import BaseModel

from rlcompare.errors import InvalidStudyError, InvalidWorkloadError, PluginError
from rlcompare.execution.backend import Backend, check_backend_class
from rlcompare.harness.contract import Adapter, check_adapter_class
from rlcompare.harness.protocol import UNKNOWN_ORIGIN, Origin
from rlcompare.registry.entries import FrameworkEntry, InvalidFrameworkEntryError, framework_entry_from_dict
from rlcompare.reporting.formats import ReportFormat, check_report_format
from rlcompare.scoring.criteria import Criterion
from rlcompare.spec.builtin_families import builtin_families
from rlcompare.spec.families import AlgorithmFamily, Families, check_family_for_plugin
from rlcompare.spec.workload import Suite, Workload, workload_from_dict
from rlcompare.studies.loading import study_from_dict
from rlcompare.studies.model import Study

Registered = TypeVar("Registered")


@dataclass
class Register:
    """The tables registration hooks fill, through the ``add_*`` methods (tox's pattern)."""

    algorithms: dict[str, AlgorithmFamily] = field(default_factory=dict)
    adapters: dict[str, type[Adapter]] = field(default_factory=dict)
    workloads: dict[str, Workload] = field(default_factory=dict)
    suites: dict[str, Suite] = field(default_factory=dict)
    criteria: dict[str, Criterion] = field(default_factory=dict)
    frameworks: dict[str, FrameworkEntry] = field(default_factory=dict)
    report_formats: dict[str, ReportFormat] = field(default_factory=dict)
    backends: dict[str, type[Backend]] = field(default_factory=dict)
    studies: dict[str, Study] = field(default_factory=dict)
    origins: dict[tuple[str, str], Origin] = field(default_factory=dict)
    clashes: dict[tuple[str, str], list[Origin]] = field(default_factory=dict)
    errors: list[PluginError] = field(default_factory=list)
    current: Origin = UNKNOWN_ORIGIN

    @property
    def families(self) -> Families:
        """Every family a workload may name: those registered so far, and the built-ins where their
        plugin registered none (a built-in name cannot be taken over: a plugin registering one clashes
        with the built-in plugin, both registrations drop, and the plain built-in stands)."""
        return {**builtin_families(), **self.algorithms}

    def _add(self, kind: str, table: dict[str, Registered], key: str, value: Registered) -> None:
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
        """An :class:`rlcompare.spec.families.AlgorithmFamily`; workloads may then name it."""
        check_family_for_plugin(family, self.current.plugin)
        self._add("algorithm", self.algorithms, family.name, family)

    def add_adapter(self, adapter_class: type[Adapter]) -> None:
        """A subclass of :class:`rlcompare.adapter.Adapter`."""
        check_adapter_class(adapter_class)
        self._add("adapter", self.adapters, adapter_class.id, adapter_class)

    def add_workload(self, workload: Workload | Mapping[str, Any]) -> None:
        """A workload, as a validated :class:`rlcompare.spec.workload.Workload` or as a plain table;
        either way it is validated against the families registered so far (plus the built-ins), so a
        plugin's workload may name the plugin's own family."""
        data = workload.to_dict() if isinstance(workload, Workload) else workload
        if not isinstance(data, Mapping):
            raise PluginError(self.current.plugin, "add_workload expects a Workload or a table of its settings")
        try:
            validated = workload_from_dict(dict(data), f"workload from plugin {self.current}", self.families)
        except InvalidWorkloadError as error:
            raise PluginError(self.current.plugin, str(error)) from None
        if isinstance(workload, Workload) and validated.digest != workload.digest:
            raise PluginError(self.current.plugin, f"workload {workload.id!r} changes when validated against the "
                                                   "registered families")
        self._add("workload", self.workloads, validated.id, validated)

    def add_suite(self, name: str, workload_ids: Iterable[str], description: str = "") -> None:
        """A named list of workload ids (each must be registered by the time a suite is run)."""
        ids = tuple(workload_ids)
        if not all(isinstance(item, str) for item in ids) or not isinstance(description, str):
            raise PluginError(self.current.plugin, f"suite {name!r}: workload ids and description must be text")
        self._add("suite", self.suites, name, Suite(name, ids, description))

    def add_criterion(self, criterion: Criterion) -> None:
        """A :class:`rlcompare.scoring.criteria.Criterion` (checked when it is built)."""
        if not isinstance(criterion, Criterion):
            raise PluginError(self.current.plugin, "add_criterion expects an rlcompare.scoring.criteria.Criterion")
        self._add("criterion", self.criteria, criterion.id, criterion)

    def add_framework(self, entry: FrameworkEntry | Mapping[str, Any]) -> None:
        """A registry entry (:class:`rlcompare.registry.entries.FrameworkEntry`, or a plain table of one),
        validated here: a bad entry is this plugin's error, never the registry's."""
        if isinstance(entry, FrameworkEntry):
            validated = entry
        else:
            raw = entry.model_dump() if isinstance(entry, BaseModel) else entry
            label = raw.get("id", "?") if isinstance(raw, Mapping) else "?"
            try:
                validated = framework_entry_from_dict(raw, f"framework {label!r}")
            except InvalidFrameworkEntryError as error:
                raise PluginError(self.current.plugin, str(error)) from None
        self._add("framework", self.frameworks, validated.id, validated)

    def add_report_format(self, report_format: ReportFormat) -> None:
        """A :class:`rlcompare.reporting.formats.ReportFormat`."""
        check_report_format(report_format)
        self._add("report format", self.report_formats, report_format.id, report_format)

    def add_backend(self, backend_class: type[Backend]) -> None:
        """A subclass of :class:`rlcompare.execution.backend.Backend`."""
        check_backend_class(backend_class)
        self._add("backend", self.backends, backend_class.name, backend_class)

    def add_study(self, study: Study | Mapping[str, Any]) -> None:
        """A :class:`rlcompare.studies.model.Study`, or a plain table of one, validated here."""
        if isinstance(study, Study):
            validated = study
        else:
            try:
                validated = study_from_dict(study, f"study from plugin {self.current}")
            except InvalidStudyError as error:
                raise PluginError(self.current.plugin, str(error)) from None
        self._add("study", self.studies, validated.id, validated)
