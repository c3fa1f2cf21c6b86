"""Escaping every string that comes from a plugin, a workload, a store or the command line, per output.

One rule, in every output, for the characters that hide or rearrange text (:func:`visible`):

- every control character (C0 ``U+0000``-``U+001F``, ``DEL``, C1 ``U+0080``-``U+009F``), every
  bidirectional formatting character (``U+061C``, ``U+200E``, ``U+200F``, ``U+202A``-``U+202E``,
  ``U+2066``-``U+2069``) and any lone surrogate is shown as visible text: a backslash, ``u`` and
  four lowercase hex digits, as Python and JSON spell it (``U+202E`` is shown as ``\\u202e``, ESC
  as ``\\u001b``). A right-to-left override cannot reverse rlcompare's own text, and an escape
  sequence cannot reach a terminal;
- line breaks (LF, CR, CR LF, ``U+2028``, ``U+2029``) and tabs are whitespace: a one-line value (a
  table cell, a name in a sentence, a BibTeX field, a field of a terminal line) shows each as one
  space; multi-line text (HTML, CSV cells, code blocks, what a command prints) keeps LF and tab, every
  other line break becoming LF.

Then one escaping layer per output language handles that language's whole character set:

- HTML: :func:`visible` (multi-line) as the templates' ``finalize``, then Jinja2's autoescape
  (:mod:`markupsafe`);
- Markdown (:func:`markdown`) and LaTeX (:func:`latex`): the templates apply the escape to every
  expression they output (``finalize``); text already in the target language (a formatted number)
  is marked :class:`Safe`. LaTeX output is ASCII: the characters rlcompare's own text uses have
  their LaTeX spelling, other non-ASCII characters are spelled in ASCII where Unicode decomposes
  them (``é`` as ``e``), else in the visible ``\\uXXXX`` form (``\\U`` and eight digits above the
  Basic Multilingual Plane);
- BibTeX (:func:`bibtex`): LaTeX, with every brace balanced as BibTeX counts braces (backslashed
  or not): a brace of the value that has no partner is written ``\\textbraceleft{}`` or
  ``\\textbraceright{}``, so no value can close its field;
- CSV (:func:`csv_cell`): a text cell that a spreadsheet would read as a formula (starting with
  ``=``, ``+``, ``-``, ``@``, tab or CR) is prefixed with a single quote, as OWASP advises; a cell
  holding a plain number (``-1.5``, ``2e-05``) stays a number;
- CITATION.cff (:func:`yaml_string`): a double-quoted YAML scalar;
- JSON keeps the exact data: :func:`json.dumps` writes ASCII and spells every other character
  ``\\uXXXX``, the same visible form, so the file shows nothing hidden and a program reads the name
  it was given;
- the terminal (:func:`terminal`): what rlcompare prints goes through :func:`visible` (rich tables
  with markup and emoji codes off: a ``[link=...]`` in a name is text);
- plot labels (:func:`plot_text`): one line, ``$`` escaped so that a name never switches
  matplotlib to mathtext.
"""

from __future__ import annotations

import re
import unicodedata
from typing import Any


class Safe(str):
    """Text already valid in the output language: templates output it as it is."""


# -- the one rule: nothing hidden ---------------------------------------------------------------------

#: Bidirectional formatting characters: they reorder the text around them.
BIDI_CONTROLS = frozenset("\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")
_HIDDEN = re.compile("[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\ud800-\udfff\u2028\u2029]")
_BREAK = re.compile("\r\n|[\n\r\u2028\u2029]")


def _spelled(char: str) -> str:
    code = ord(char)
    return f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}"


def visible(value: Any, *, lines: bool = False) -> str:
    """``value`` as text with nothing hidden (the module's rule): controls, bidirectional formatting
    characters and lone surrogates spelled ``\\uXXXX``; line breaks and tabs one space each, or with
    ``lines``, LF and tab kept and every other line break made LF."""
    text = str(value)
    if not _HIDDEN.search(text):
        return text
    if lines:
        text = _BREAK.sub("\n", text)
        keep = "\n\t"
    else:
        text = _BREAK.sub(" ", text).replace("\t", " ")
        keep = ""
    return _HIDDEN.sub(lambda m: m.group() if m.group() in keep else _spelled(m.group()), text)


def terminal(value: Any, *, lines: bool = False) -> str:
    """``value`` as rlcompare prints it on a terminal: :func:`visible` (one line unless ``lines``),
    so no escape sequence, bell, carriage return or bidirectional override reaches the terminal."""
    return visible(value, lines=lines)


# -- LaTeX and BibTeX -----------------------------------------------------------------------------------

_LATEX = {
    "\\": r"\textbackslash{}", "{": r"\{", "}": r"\}", "$": r"\$", "&": r"\&", "#": r"\#", "%": r"\%",
    "_": r"\_", "^": r"\textasciicircum{}", "~": r"\textasciitilde{}", "<": r"\textless{}",
    ">": r"\textgreater{}", "|": r"\textbar{}",
    # an optional argument or a star after \\ or \item ("\\[2pt]", "\item[x]", "\\*"): never one of ours
    "[": "{[}", "]": "{]}", "*": "{*}",
}
#: Pairs that pdfLaTeX would set as one ligature (``--`` as an en dash, ``''`` as a closing quote):
#: the first is followed by ``{}`` so that each character is set as itself.
_LATEX_LIGATURES = frozenset({"--", "``", "''", ",,", "!`", "?`"})
#: Non-ASCII characters that rlcompare's own text uses, and some letters that do not decompose.
_LATEX_UNICODE = {
    "…": r"\ldots{}", "–": "--", "—": "---", "±": r"$\pm$", "×": r"$\times$", "≥": r"$\geq$", "≤": r"$\leq$",
    "‘": "`", "’": "'", "“": "``", "”": "''", "·": r"$\cdot$", "°": r"$^\circ$", "µ": r"$\mu$",
    "ß": r"\ss{}", "æ": r"\ae{}", "Æ": r"\AE{}", "ø": r"\o{}", "Ø": r"\O{}", "œ": r"\oe{}", "Œ": r"\OE{}",
    "ł": r"\l{}", "Ł": r"\L{}",
}
_BIBTEX_BRACES = {"{": r"\textbraceleft{}", "}": r"\textbraceright{}"}


def _ascii(text: str) -> str:
    """``text`` in the characters :func:`_tex` spells: ASCII (another character as Unicode's ASCII
    decomposition, else ``\\uXXXX``) and the characters of ``_LATEX_UNICODE``."""
    if text.isascii():
        return text
    out = []
    for char in text:
        if char.isascii() or char in _LATEX_UNICODE:
            out.append(char)
        else:
            ascii_form = unicodedata.normalize("NFKD", char).encode("ascii", "ignore").decode()
            out.append(ascii_form if ascii_form and ascii_form.isprintable() else _spelled(char))
    return "".join(out)


def _tex(text: str) -> str:
    """LaTeX of text from :func:`_ascii`."""
    out = []
    for index, char in enumerate(text):
        if char in _LATEX:
            out.append(_LATEX[char])
        elif char in _LATEX_UNICODE:
            out.append(_LATEX_UNICODE[char])
        else:
            out.append(char)
            if text[index:index + 2] in _LATEX_LIGATURES:
                out.append("{}")
    return "".join(out)


def latex(value: Any) -> str:
    """``value`` as one line of LaTeX text that typesets literally (pdfLaTeX-safe ASCII; see the
    module's rule for other characters)."""
    if isinstance(value, Safe):
        return value
    return _tex(_ascii(visible(value)))


def bibtex(value: Any) -> str:
    """``value`` as the text of a BibTeX field: :func:`latex`, with the value's braces paired as
    BibTeX pairs them and an unpaired one spelled as a command, so the field's braces balance
    (paired after spelling in ASCII: a fullwidth brace is a brace by then)."""
    text = _ascii(visible(value))
    unpaired, open_at = set(), []
    for index, char in enumerate(text):
        if char == "{":
            open_at.append(index)
        elif char == "}":
            if open_at:
                open_at.pop()
            else:
                unpaired.add(index)
    unpaired.update(open_at)
    if not unpaired:
        return _tex(text)
    pieces, start = [], 0
    for index in sorted(unpaired):
        pieces.append(_tex(text[start:index]))
        pieces.append(_BIBTEX_BRACES[text[index]])
        start = index + 1
    pieces.append(_tex(text[start:]))
    return "".join(pieces)


# -- Markdown -------------------------------------------------------------------------------------------

_MD_INLINE = re.compile(r"([\\`*_\[\]|~$])")
_MD_BLOCK_MARKER = re.compile(r"^(\s*)([#+=-])")
_MD_ORDERED_MARKER = re.compile(r"^(\s*\d{1,9})([.)])(?=\s|$)")


def markdown(value: Any) -> str:
    """``value`` as inline Markdown text that renders literally and cannot start a block: line
    breaks become spaces, surrounding whitespace is dropped, emphasis, code, link, table and HTML
    characters are escaped, and a leading list, heading or quote marker is escaped too."""
    if isinstance(value, Safe):
        return value
    raw = str(value)
    text = visible(raw)
    if any(c in raw for c in "\n\r\t\u2028\u2029"):  # a value that was several lines: one paragraph
        text = " ".join(text.split())
    text = text.strip()  # leading spaces could start a code block, trailing ones a hard line break
    text = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    text = _MD_INLINE.sub(r"\\\1", text)
    text = _MD_BLOCK_MARKER.sub(r"\1\\\2", text)
    return _MD_ORDERED_MARKER.sub(r"\1\\\2", text)


# -- data formats ---------------------------------------------------------------------------------------

#: What a spreadsheet reads as the start of a formula (OWASP, CSV injection).
CSV_FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
_PLAIN_NUMBER = re.compile(r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?")


def csv_cell(value: Any) -> Any:
    """A CSV cell: text with nothing hidden (multi-line) and a leading single quote where a
    spreadsheet would read a formula; a number, or text that is a plain number, is left as it is."""
    if not isinstance(value, str):
        return value
    text = visible(value, lines=True)
    if text.startswith(CSV_FORMULA_STARTS) and not _PLAIN_NUMBER.fullmatch(text):
        return "'" + text
    return text


_YAML_ESCAPES = {"\\": "\\\\", '"': '\\"'}


def yaml_string(value: Any) -> str:
    """``value`` (one line, nothing hidden) as a double-quoted YAML scalar that every YAML reader
    reads back as the same text: quotes and backslashes escaped, characters YAML does not allow
    unescaped in a stream (``U+FFFE``, ``U+FFFF``) spelled ``\\uXXXX``."""
    out = []
    for char in visible(value):
        if char in _YAML_ESCAPES:
            out.append(_YAML_ESCAPES[char])
        elif char in "\ufeff\ufffe\uffff":
            out.append(_spelled(char))
        else:
            out.append(char)
    return '"' + "".join(out) + '"'


# -- plots ----------------------------------------------------------------------------------------------


def plot_text(value: Any) -> str:
    """A label for matplotlib: one line, nothing hidden, ``$`` escaped so that a name never switches
    to mathtext."""
    return visible(value).replace("$", r"\$")
