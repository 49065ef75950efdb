"""A JSON object read strictly but for fields its reader never reads: an Inspect sample's ``events`` (its
transcript: most of a sample's bytes, and nothing a case is made of) are checked as JSON text, not decoded.

The fields that are read are decoded by ``strict_json.strict_loads`` exactly as the whole object would be (a key
given twice, an integer beyond 2^53, a lone surrogate, NaN: a problem naming the field). The fields that are not
read are held to what msgspec's decoder checks of a value it skips (the JSON grammar: brackets, strings and their
escapes, lone surrogates, numbers' syntax, no NaN, no control character, nesting within its recursion limit) and
UTF-8; a key given twice inside them, an integer of many digits, a number beyond float range or nesting deeper
than ``max_depth`` (but within msgspec's limit) there is not a problem, since no value of theirs reaches a
case. Anything else (not an object, a key of the object given twice, text
msgspec refuses, a colon written as an escape anywhere) is read whole by ``strict_loads``, which names what is
wrong, the unread fields included (so a sample with an escaped colon is held to the whole reading)."""

from __future__ import annotations

import re
import threading
from typing import Any, Union

from reporting.format.problems import Problem
from reporting.format.strict_json import MAX_DECODE_DEPTH, strict_loads

_PER_THREAD = threading.local()
_ESCAPED_COLON = re.compile(rb"\\u003[aA]")  # a colon written as an escape (a search in C, faster than two finds)


def _codecs() -> Any:
    made = getattr(_PER_THREAD, "codecs", None)
    if made is None:
        import msgspec

        made = _PER_THREAD.codecs = (
            msgspec.json.Decoder(dict[str, msgspec.Raw]),
            msgspec.json.Encoder(),
            (msgspec.DecodeError, msgspec.ValidationError),
        )
    return made


def strict_object_loads(
    file: str, data: Union[bytes, str], path: str, unread: frozenset[str], max_depth: int = MAX_DECODE_DEPTH
) -> tuple[Any, list[Problem]]:
    """``strict_loads(file, data, path, max_depth)`` without the fields named in ``unread``: ``(value, [])`` (the
    object, in its order, less those fields), or ``(None, problems)``. Never raises on any input."""
    raw = data if isinstance(data, bytes) else data.encode("utf-8", "surrogatepass")
    kept = _kept(raw, unread)
    if kept is not None:
        return strict_loads(file, kept, path, max_depth)
    value, problems = strict_loads(file, data, path, max_depth)  # read whole: its unread fields dropped all the same
    if isinstance(value, dict) and not unread.isdisjoint(value):
        value = {key: item for key, item in value.items() if key not in unread}
    return value, problems


def _kept(raw: bytes, unread: frozenset[str]) -> Union[bytes, None]:
    """The object's text without its ``unread`` fields, or None when it is to be read whole: none of them in it,
    a problem the whole reading names (UTF-8, grammar, nesting beyond msgspec's limit, not an object), or a key
    given twice at its top (msgspec keeps the last; told by the colons, as ``quick_json.read_quickly`` tells it)."""
    if _ESCAPED_COLON.search(raw) is not None:  # the colons cannot be counted
        return None
    if not raw.isascii():
        try:
            raw.decode("utf-8")
        except UnicodeDecodeError:
            return None
    decoder, encoder, refused = _codecs()
    try:
        fields = decoder.decode(raw)
    except (*refused, RecursionError, ValueError, TypeError, OverflowError):
        return None
    if unread.isdisjoint(fields):
        return None
    colons = sum(1 + key.count(":") + bytes(fields[key]).count(b":") for key in unread if key in fields)
    kept = encoder.encode({key: value for key, value in fields.items() if key not in unread})  # (Raw: as written)
    if colons + kept.count(b":") != raw.count(b":"):  # a key of the object was given twice
        return None
    return kept
