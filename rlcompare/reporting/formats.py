"""Report formats: what a format plugin registers, and writing a report in several formats.

A format is a :class:`ReportFormat` registered through ``rlcompare_register_report_formats`` with
``register.add_report_format(ReportFormat(...))``; its ``render`` receives the
:class:`rlcompare.reporting.model.Report` and returns the text or bytes of one file (written as
``filename``), or a mapping of relative paths to contents (a format of several files: CSV writes
one file per table, LaTeX its figures next to the document). This module is light: registering
formats never imports pandas or matplotlib.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any

from rlcompare.errors import PluginError, UnknownNameError, UsageError
from rlcompare.reporting.output_folder import write_files

if TYPE_CHECKING:
    from rlcompare.reporting.model import Report

FORMAT_ID_PATTERN = re.compile(r"^[a-z][a-z0-9_-]*$")
Output = str | bytes | Mapping[str, str | bytes]


@dataclass(frozen=True)
class ReportFormat:
    """One report format."""

    id: str
    """What users type in ``--format``."""
    description: str
    """One line for ``rlcompare list formats``."""
    render: Callable[[Report], Output]
    """The report -> one file's contents, or {relative path: contents}."""
    filename: str | None = None
    """The file a single-file format writes (default ``rlcompare-report.<id>``)."""

    def outputs(self, report: Report) -> dict[str, bytes]:
        """Relative path -> bytes of everything this format writes for ``report``."""
        rendered = self.render(report)
        files = dict(rendered) if isinstance(rendered, Mapping) else {self.filename or f"rlcompare-report.{self.id}": rendered}
        out = {}
        for name, content in files.items():
            path = PurePosixPath(str(name))
            if path.is_absolute() or ".." in path.parts or not path.parts:
                raise PluginError(self.id, f"report format {self.id!r} wrote outside the output directory: {name!r}")
            # a lone surrogate (a name read from an undecodable file name) as visible \udcxx text
            out[str(path)] = content.encode("utf-8", "backslashreplace") if isinstance(content, str) else bytes(content)
        return out


def check_report_format(value: Any) -> ReportFormat:
    """Refuse, at registration, something that is not a usable :class:`ReportFormat`."""
    name = getattr(value, "id", repr(value))
    if not isinstance(value, ReportFormat):
        raise PluginError(str(name), "add_report_format expects a rlcompare.reporting.formats.ReportFormat")
    if not isinstance(value.id, str) or not FORMAT_ID_PATTERN.match(value.id):
        raise PluginError(str(name), f"report format id {value.id!r} must match {FORMAT_ID_PATTERN.pattern}")
    if not callable(value.render):
        raise PluginError(value.id, f"report format {value.id!r}: render must be callable")
    if value.filename is not None and (not isinstance(value.filename, str) or "/" in value.filename
                                       or value.filename in ("", ".", "..")):
        raise PluginError(value.id, f"report format {value.id!r}: filename must be a plain file name")
    return value


def resolve_formats(names: Iterable[str], available: Mapping[str, ReportFormat]) -> list[ReportFormat]:
    """The formats named (each once, in order), or one error naming the first unknown one."""
    chosen = []
    for name in dict.fromkeys(names):
        if name not in available:
            raise UnknownNameError("report format", name, available, "rlcompare list formats")
        chosen.append(available[name])
    if not chosen:
        raise UsageError("--format: name at least one report format (see `rlcompare list formats`)")
    return chosen


def write_report(report: Report, out_dir: str | Path, formats: Iterable[ReportFormat]) -> list[Path]:
    """Render every format first, then write them all under ``out_dir``; returns the files written.
    A format that fails to render leaves nothing written; a link planted under ``out_dir`` is
    replaced, never written through (:mod:`rlcompare.reporting.output_folder`)."""
    rendered: dict[str, bytes] = {}
    owners: dict[str, str] = {}
    for report_format in formats:
        for name, content in report_format.outputs(report).items():
            if name in rendered:
                raise PluginError(report_format.id, f"report formats {owners[name]!r} and {report_format.id!r} "
                                                    f"both write {name}")
            rendered[name], owners[name] = content, report_format.id
    return write_files(out_dir, rendered)
