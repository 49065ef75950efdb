"""JSON for a ``<script type="application/json">`` element, as the HTML environment's ``|tojson`` writes it.

``tojson`` escapes ``<``, ``>``, ``&`` and ``'``, and this project's encoder U+2028 and U+2029 too (docs/security.md).
``pieces`` writes the same text, character for character, a piece at a time: a long list (the case table's rows)
is encoded a thousand items at a time, so a large run's page data is never one string in memory (a 100,000-case
HTML file's data is about 80 MB of text, held two or three times over by one ``json.dumps`` and its escapes).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

DUMPS_KWARGS: dict[str, Any] = {
    "sort_keys": False,
    "ensure_ascii": False,
    "separators": (",", ":"),
    "allow_nan": False,
}
ITEMS_A_PIECE = 1000  # items of a long list encoded at once
OPENED_DEPTH = 3  # dicts this deep or shallower are written key by key, to reach the long lists inside them


def dumps_without_line_separators(value: Any, **kwargs: Any) -> str:
    """``json.dumps`` for ``tojson`` (which then escapes ``<``, ``>``, ``&`` and ``'``), with U+2028 and U+2029 escaped
    too: a line's end to older script parsers (docs/security.md)."""
    return json.dumps(value, **kwargs).replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")


def script_safe(text: str) -> str:
    """JSON text with what ``tojson`` escapes escaped (each a character of its own, so pieces escape alike)."""
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026").replace("'", "\\u0027")


def _encoded(value: Any) -> str:
    return script_safe(dumps_without_line_separators(value, **DUMPS_KWARGS))


def pieces(value: Any, depth: int = 0) -> Iterator[str]:
    """``value | tojson`` in pieces whose concatenation is that text exactly."""
    if isinstance(value, list) and len(value) > ITEMS_A_PIECE:
        yield "["
        for start in range(0, len(value), ITEMS_A_PIECE):
            inner = _encoded(value[start : start + ITEMS_A_PIECE])[1:-1]
            yield inner if start == 0 else "," + inner
        yield "]"
    elif type(value) is dict and depth < OPENED_DEPTH and all(type(key) is str for key in value):
        yield "{"
        for i, (key, item) in enumerate(value.items()):
            yield ("," if i else "") + _encoded(key) + ":"
            yield from pieces(item, depth + 1)
        yield "}"
    else:
        yield _encoded(value)
