"""The fast half of the strict decoder (``strict_json.strict_loads``): msgspec reads a JSON text, and its value is
kept only where the strict decoder is certain to read the same value without a problem."""

from __future__ import annotations

import re
import threading
from typing import Any, Optional, Union

_PER_THREAD = threading.local()

# Every digit a 0, a point and an exponent's letter a 1, every other byte a space: a JSON integer of 16 digits or
# more (perhaps beyond 2^53) is then a run of 16 zeros or more between spaces (or an end); a float's digits touch a 1,
# so the many digits of a float's fraction are never a run after a space. (Digits in a string may look the same: read
# by the strict decoder all the same.)
_NUMBERS = bytes(ord("0") if 48 <= b <= 57 else ord("1") if b in b".eE" else ord(" ") for b in range(256))
_SIXTEEN = b"0" * 16
_AFTER_SPACE = b" " + _SIXTEEN
_ZEROS = re.compile(b"0*")


def _whole_16(raw: bytes) -> bool:
    """Whether ``raw`` may hold an integer of 16 digits or more (found by ``bytes.find``, in C: a regular expression
    took 0.3 ms a sample, a walk of each run found Python's time on every float of many digits)."""
    text = raw.translate(_NUMBERS)
    at = 0 if text.startswith(_SIXTEEN) else text.find(_AFTER_SPACE)
    while at >= 0:
        match = _ZEROS.match(text, at if at == 0 and text[0] == 0x30 else at + 1)
        end = match.end() if match is not None else at
        if end == len(text) or text[end] == 0x20:
            return True
        at = text.find(_AFTER_SPACE, end)
    return False


def read_quickly(data: Union[bytes, str]) -> Optional[tuple[Any]]:
    """``(value,)`` when msgspec's decoder (twice as fast as Python's with the strict hooks) reads ``data`` and the
    strict decoder would read the same value without a problem; None when it might not (the strict decoder then
    reads it and names why).

    msgspec refuses what the strict decoder refuses (invalid UTF-8, lone surrogates, NaN and Infinity, numbers out
    of float range, control characters), but keeps the last of a key given twice and reads integers of any size;
    nesting is measured before. An integer beyond 2^53 is 16 digits or more with no point or exponent. A key given
    twice is told by the colons: every key has one, every other colon is in a string, and msgspec's encoding of
    the value writes each colon as it is; with no colon written as an escape, the text holds as many colons as that
    encoding only when no key was dropped (a dropped key takes its colon, and its value's, with it)."""
    made = getattr(_PER_THREAD, "msgspec", None)
    if made is None:
        import msgspec

        made = _PER_THREAD.msgspec = (
            msgspec.json.Decoder(),
            msgspec.json.Encoder(),
            (msgspec.DecodeError, msgspec.ValidationError),
        )
    decoder, encoder, refused = made
    raw = data if isinstance(data, bytes) else data.encode("utf-8", "surrogatepass")
    if b"\\u003a" in raw or b"\\u003A" in raw:
        return None
    if _whole_16(raw):  # (a float's many digits are msgspec's to read)
        return None
    try:
        value = decoder.decode(raw)
        return (value,) if encoder.encode(value).count(b":") == raw.count(b":") else None
    except (*refused, UnicodeError, RecursionError, ValueError, TypeError, OverflowError):
        return None
