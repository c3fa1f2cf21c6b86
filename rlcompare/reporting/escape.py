"""Escaping every string that comes from a plugin, a workload or a store, per output language.

HTML is escaped by Jinja2's autoescape (:mod:`markupsafe`). LaTeX, Markdown and plot labels are
escaped here: templates of those formats apply the escape to every expression they output
(Jinja2's ``finalize``), and text that is already in the target language (a table row built from
escaped parts, a formatted number) is marked :class:`Safe`.
"""

from __future__ import annotations

import re
import unicodedata
from typing import Any


class Safe(str):
    """Text already valid in the output language: templates output it as it is."""


_LATEX = {
    "\\": r"\textbackslash{}", "{": r"\{", "}": r"\}", "$": r"\$", "&": r"\&", "#": r"\#", "%": r"\%",
    "_": r"\_", "^": r"\textasciicircum{}", "~": r"\textasciitilde{}", "<": r"\textless{}",
    ">": r"\textgreater{}", "|": r"\textbar{}", "\n": " ", "\r": " ", "\t": " ",
}
#: Non-ASCII characters that rlcompare's own text uses, and their LaTeX.
_LATEX_UNICODE = {
    "…": r"\ldots{}", "–": "--", "—": "---", "±": r"$\pm$", "×": r"$\times$", "≥": r"$\geq$", "≤": r"$\leq$",
    "‘": "`", "’": "'", "“": "``", "”": "''", "·": r"$\cdot$", "°": r"$^\circ$", "µ": r"$\mu$",
}


def latex(value: Any) -> str:
    """``value`` as LaTeX text that typesets literally (pdfLaTeX-safe: other non-ASCII characters
    are spelled in ASCII where Unicode decomposes them, else ``?``)."""
    if isinstance(value, Safe):
        return value
    out = []
    for char in str(value):
        if char in _LATEX:
            out.append(_LATEX[char])
        elif char.isascii():
            out.append(char if char.isprintable() else " ")
        elif char in _LATEX_UNICODE:
            out.append(_LATEX_UNICODE[char])
        else:
            ascii_form = unicodedata.normalize("NFKD", char).encode("ascii", "ignore").decode()
            out.append(latex(ascii_form) if ascii_form else "?")
    return "".join(out)


_MD_INLINE = re.compile(r"([\\`*_\[\]|~$])")
_MD_BLOCK_MARKER = re.compile(r"^(\s*)([#+=-])")
_MD_ORDERED_MARKER = re.compile(r"^(\s*\d{1,9})([.)])(?=\s|$)")


def markdown(value: Any) -> str:
    """``value`` as inline Markdown text that renders literally and cannot start a block: line
    breaks become spaces, emphasis, code, link, table and HTML characters are escaped, and a
    leading list, heading or quote marker is escaped too."""
    if isinstance(value, Safe):
        return value
    text = " ".join(str(value).split()) if any(c in str(value) for c in "\n\r\t\f\v") else str(value)
    text = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    text = _MD_INLINE.sub(r"\\\1", text)
    text = _MD_BLOCK_MARKER.sub(r"\1\\\2", text)
    return _MD_ORDERED_MARKER.sub(r"\1\\\2", text)


def plot_text(value: Any) -> str:
    """A label for matplotlib: ``$`` escaped so that a name never switches to mathtext."""
    return str(value).replace("$", r"\$")
