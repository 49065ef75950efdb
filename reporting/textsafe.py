"""Text from a run or a file name is hostile: how it is shown safely in each medium.

- ``printable``: control characters (C0, C1, DEL, line and paragraph separators, bidirectional
  overrides) escaped as ``\\n``, ``\\x1b``, ``\\u202e``, so one id stays one line and cannot move
  the cursor, colour a terminal or reorder what is shown around it.
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

_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029\u200e\u200f\u202a-\u202e\u2066-\u2069\ufeff]")
_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}
FORMULA_LEADS = ("=", "+", "-", "@", "\t", "\r")


def _escape(match: re.Match) -> str:
    char = match.group(0)
    if char in _NAMED:
        return _NAMED[char]
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def printable(text: Any) -> str:
    """``text`` with every control or invisible formatting character escaped (backslashes kept as they are)."""
    return _CONTROL.sub(_escape, str(text))


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
