"""What rlcompare prints, with nothing hidden: no escape sequence, bell or bidirectional override
from a name reaches the terminal.

Names and texts that rlcompare prints come from plugins, workloads, stores and registries; a
framework named ``"x\\x1b]0;owned\\x07"`` must not retitle the terminal, and one carrying ``U+202E``
must not reverse the line it is printed on. Two layers, both through
:func:`rlcompare.reporting.escape.terminal`:

- :func:`visible_output` puts :class:`VisibleStream` in front of ``sys.stdout`` and ``sys.stderr``
  while a command runs (``main`` is decorated with it), so every ``print`` shows control characters
  as ``\\uXXXX`` text. The stream says it is no terminal, so a rich console writing to it styles
  nothing;
- :func:`terminal_console` is the rich console for tables and live progress: it writes to the
  terminal itself (styles kept), turns every string it is given into visible text before rendering,
  and reads no markup or emoji codes in them unless asked (a ``[link=...]`` in a name stays text).
"""

from __future__ import annotations

import contextlib
import functools
import sys
from collections.abc import Iterator
from typing import IO, TYPE_CHECKING, Any

from rlcompare.reporting.escape import terminal

if TYPE_CHECKING:
    from rich.console import Console

    from rlcompare.plugins.manager import Plugins


class VisibleStream:
    """A text stream that writes to ``raw`` with every control character made visible (LF and
    tab kept, a CR or CR LF written as LF)."""

    def __init__(self, raw: IO[str]) -> None:
        self.raw = raw
        self._after_cr = False

    def write(self, text: str) -> int:
        shown = text
        if self._after_cr and shown.startswith("\n"):
            shown = shown[1:]  # the LF of a CR LF split across two writes: the CR was written as LF
        self._after_cr = text.endswith("\r")
        self.raw.write(terminal(shown, lines=True))
        return len(text)

    def writelines(self, lines: Any) -> None:
        for line in lines:
            self.write(line)

    def isatty(self) -> bool:
        return False  # a console that styles writes to the terminal itself (terminal_console)

    def __getattr__(self, name: str) -> Any:  # flush, fileno, encoding, buffer, ...
        return getattr(self.raw, name)


def raw_stream(stream: IO[str]) -> IO[str]:
    """The stream under ``stream``'s :class:`VisibleStream`, if it has one."""
    while isinstance(stream, VisibleStream):
        stream = stream.raw
    return stream


@contextlib.contextmanager
def visible_output() -> Iterator[None]:
    """``sys.stdout`` and ``sys.stderr`` behind :class:`VisibleStream` for the duration (usable as
    a decorator)."""
    out, err = sys.stdout, sys.stderr
    if out is not None and not isinstance(out, VisibleStream):
        sys.stdout = VisibleStream(out)  # type: ignore[assignment]
    if err is not None and not isinstance(err, VisibleStream):
        sys.stderr = VisibleStream(err)  # type: ignore[assignment]
    try:
        yield
    finally:
        sys.stdout, sys.stderr = out, err


@functools.cache
def _console_class() -> type[Console]:
    from rich.console import Console

    class VisibleConsole(Console):
        """A rich console that renders every string it is given as visible text."""

        def render_str(self, text: str, **options: Any) -> Any:
            return super().render_str(terminal(text, lines=True), **options)

    return VisibleConsole


def terminal_console(stream: IO[str] | None = None, **options: Any) -> Console:
    """A rich console on ``stream`` (default ``sys.stdout``), or the terminal under it, that shows
    every string visibly; markup, emoji codes and highlighting are off unless ``options`` turn
    them on."""
    settings = {"markup": False, "emoji": False, "highlight": False, **options}
    return _console_class()(file=raw_stream(stream if stream is not None else sys.stdout), **settings)


def warn_plugin_errors(plugins: Plugins) -> None:
    """One ``warning:`` line on stderr per plugin that failed to load or register, every name shown
    as text."""
    for error in plugins.errors:
        print(f"warning: {terminal(error)}", file=sys.stderr)
