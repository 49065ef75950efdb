"""Text from a run or a file name is hostile: how it is shown safely in each medium.

- ``printable``: control characters (C0, C1, DEL, line and paragraph separators, bidirectional
  overrides) and invisible characters (zero-width spaces and joiners, word joiners and invisible operators,
  the byte order mark, soft hyphen, variation selectors, tags, fillers, spaces other than U+0020) escaped as
  ``\\n``, ``\\x1b``, ``\\u202e``, ``\\u200b``, so one id stays one line, cannot move the cursor, colour a
  terminal or reorder what is shown around it, and two names that differ by an invisible character look
  different.
- ``shown``: the one way the command line prints a piece of report data (a run id, model, suite, probe id,
  category, file name): ``printable`` with every backslash doubled first, so the escaped form of a value is never
  the same as another value's (``a\\u200b`` is ``a`` and a zero-width space; ``a\\\\u200b`` is the text
  backslash-u-200b).
- ``cli_line``: a line for a terminal or a CI log: printable, and a leading ``::`` (a GitHub
  Actions workflow command) turned into ``: :``.
- ``csv_cell`` / ``csv_safe_frame``: OWASP's rule for spreadsheets: a text cell that starts with
  ``=``, ``+``, ``-``, ``@``, a tab or a carriage return gets a leading apostrophe.
- ``markdown_literal``: Streamlit renders the text of ``st.error``, ``st.success``, ``st.warning``, captions and
  labels as Markdown; every ASCII punctuation character backslash-escaped (CommonMark then shows it as itself)
  leaves no link, image, emphasis, HTML, directive or formula to form.
- ``plotly_text``: Plotly renders a subset of HTML in labels and turns ``&amp;``, ``&lt;`` and
  ``&gt;`` back into characters; escaping exactly those three shows any name as written (quotes are
  left alone: Plotly would show ``&quot;`` literally).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pandas is imported by the one function that takes a frame, not by every caller
    import pandas as pd

# Invisible, or shown as a blank that looks like another: format characters (zero-width space, joiners, marks,
# word joiner, invisible operators, bidi embeddings, overrides and isolates, deprecated format controls, the byte
# order mark, interlinear annotation, tags), the soft hyphen, combining grapheme joiner, Hangul and Khmer fillers,
# Mongolian and other variation selectors, and every space but U+0020.
_INVISIBLE = (
    "\u00a0\u00ad\u034f\u061c\u115f\u1160\u1680\u17b4\u17b5\u180b-\u180f\u2000-\u200f\u202a-\u202f"
    "\u205f-\u206f\u3000\u3164\ufe00-\ufe0f\ufeff\uffa0\ufff9-\ufffb\U000e0000-\U000e007f\U000e0100-\U000e01ef"
)
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029" + _INVISIBLE + "]")
_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}
FORMULA_LEADS = ("=", "+", "-", "@", "\t", "\r")


def _escape(match: re.Match) -> str:
    char = match.group(0)
    if char in _NAMED:
        return _NAMED[char]
    code = ord(char)
    if code < 0x100:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def printable(text: Any) -> str:
    """``text`` with every control or invisible formatting character escaped (backslashes kept as they are)."""
    return _CONTROL.sub(_escape, str(text))


def shown(value: Any) -> str:
    """A piece of report data (run id, model, suite, probe id, category, file name) as the command line prints it:
    on one line, every control and invisible character escaped, backslashes doubled so that no value prints like
    another. Every value a verb puts in a line goes through here."""
    return printable(str(value).replace("\\", "\\\\"))


def one_line(text: Any) -> str:
    """A message made elsewhere that names data (a problem, a warning, a gate's line) printed as one line: its
    newlines and every control or invisible character escaped (its backslashes, often a JSON escape already,
    kept)."""
    return printable(text)


_IN_JSON = re.compile(_CONTROL.pattern.replace("\x00-\x1f", "\x00-\x09\x0b-\x1f"))  # a newline is layout there


def _json_escape(match: re.Match) -> str:
    code = ord(match.group(0))
    if code < 0x10000:
        return f"\\u{code:04x}"
    code -= 0x10000
    return f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}"


def json_text(text: str) -> str:
    """A JSON document to print: every character ``printable`` would escape written as a JSON ``\\u`` escape
    instead, so the printed text is the same document (``jq`` reads it) and no terminal acts on or hides any of it.
    (A JSON encoder leaves no raw newline inside a string: the document's newlines are its layout.)"""
    return _IN_JSON.sub(_json_escape, text)


def cli_line(text: Any) -> str:
    """One line safe to print in a terminal or a CI log."""
    line = printable(text)
    stripped = line.lstrip()
    if stripped.startswith("::"):
        line = line[: len(line) - len(stripped)] + ": :" + stripped[2:]
    return line


def csv_cell(value: Any) -> Any:
    """A cell neutralised for spreadsheets: text that would start a formula gets a leading apostrophe."""
    if isinstance(value, str) and value.startswith(FORMULA_LEADS):
        return "'" + value
    return value


def csv_safe_frame(frame: pd.DataFrame) -> pd.DataFrame:
    """A copy of ``frame`` whose text cells (and column names) follow ``csv_cell``; numbers are left alone."""
    import pandas as pd

    out = frame.copy()
    for column in out.columns:
        series = out[column]
        if series.dtype == object or pd.api.types.is_string_dtype(series.dtype):
            out[column] = series.map(csv_cell)
    out.columns = [csv_cell(c) if isinstance(c, str) else c for c in out.columns]
    if out.index.dtype == object:
        out.index = out.index.map(csv_cell)
    return out


_MARKDOWN_PUNCTUATION = re.compile(r"([!-/:-@\[-`{-~])")


def markdown_literal(text: Any) -> str:
    """``text`` for an element that renders Markdown, shown as written: printable, then every ASCII punctuation
    character (the backslash too) escaped with a backslash."""
    return _MARKDOWN_PUNCTUATION.sub(r"\\\1", printable(text))


def plotly_text(text: Any) -> str:
    """A label Plotly shows exactly as written: only &, < and > are escaped."""
    return str(text).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


_NOT_NAME = re.compile(r"[^A-Za-z0-9._-]+")


def safe_filename(text: Any, default: str = "run", limit: int = 80) -> str:
    """A download name from report text: letters, digits, '.', '_' and '-' only, no leading dot, never a path."""
    name = _NOT_NAME.sub("_", str(text)).strip("._-")[:limit]
    return name or default


def path_text(path: Any) -> str:
    """A path as text a run can hold: bytes of it that are not UTF-8 (which Python carries as lone surrogates) each
    become U+FFFD, as any UTF-8 reader shows them."""
    import os

    name = os.fsdecode(path)
    try:
        raw = name.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:  # a surrogate no file system gave (U+D800 spelt in the text)
        raw = name.encode("utf-8", "surrogatepass")
    return raw.decode("utf-8", "replace")


def file_name(path: Any) -> str:
    """The last part of a path as text a run can hold (``path_text``)."""
    import os

    return os.path.basename(path_text(path))
