"""A case's fields beyond the format's (its ``extra`` column), as the columnar reader reads them.

The whole case through the strict reader (``strict_json``: a key given twice, a number out of range, depth) is what
the per-record reader does, and what ``case_extra`` does where it must. A report RunLens wrote carries two fields
beyond the format on every case (``derived_failure_modes``, and ``tags`` in an older version), so at a million cases
that was 14 s of strict parsing for two short values. Where the file is of the current version and each extra key
is written once, plainly, at the case's top level (its name in quotes and a colon occurs once in the case's bytes: a
string value cannot hold an unescaped quote, so no text matches; a nested key of the same name or an escaped name
makes it twice or never, and the whole case is read as before), only the extra values are read, strictly, each
one: what the whole case's strict reading would find of them; the format's own fields are checked column by column
as for every case.
"""

from __future__ import annotations

import json
import re
from typing import Any, Optional

from msgspec import Raw

from reporting.format.columnar_checks import NotMine


def case_extra(label: str, version: int, raw: Any, keys: Optional[dict[str, Raw]], known: frozenset, memo: dict) -> str:
    """The JSON ``case_table`` writes of a case's fields beyond the format's (after the migration chain renamed
    an older file's later names), once the case passed the strict decoder and its extras the reader's screen.
    ``keys``: the case's keys, each value raw (``columnar_heads.KeyDicts``), for the short way above; ``memo``: the
    extras read already (a chunk's cases share a few), kept by the caller for the chunk."""
    from reporting.format.migrate import SCHEMA_VERSION

    if keys is not None and version == SCHEMA_VERSION:
        quick = _extra_values(label, bytes(raw), keys, known, memo)
        if quick is not None:
            return quick
    return _whole_case(label, version, raw, known)


def _extra_values(label: str, data: bytes, keys: dict[str, Raw], known: frozenset, memo: dict) -> Optional[str]:
    found = tuple((key, bytes(raw)) for key, raw in keys.items() if key not in known)
    for key, _ in found:
        once = memo.get(key)
        if once is None:
            once = memo[key] = re.compile(b'"' + re.escape(key.encode("utf-8")) + rb'"[ \t\n\r]*:')
        if len(once.findall(data)) != 1:
            return None
    if found not in memo:
        memo[found] = _checked(label, found)
    return memo[found]


def _checked(label: str, found: tuple[tuple[str, bytes], ...]) -> Optional[str]:
    """The extras' JSON, each value read strictly and screened; None where any is not (the whole case is read)."""
    from reporting.format.strict_json import _nonfinite_and_depth, parse_json_text

    extra: dict[str, Any] = {}
    for key, raw in found:
        value, problems = parse_json_text(label, raw.decode("utf-8"))
        if not problems:
            _nonfinite_and_depth(label, key, value, problems)
        if problems:
            return None
        extra[key] = value
    return json.dumps(extra)


def _whole_case(label: str, version: int, raw: Any, known: frozenset) -> str:
    from reporting.format.migrate import upgrade
    from reporting.format.strict_json import _nonfinite_and_depth, parse_json_text

    value, problems = parse_json_text(label, bytes(raw).decode("utf-8"))
    if problems or not isinstance(value, dict):
        raise NotMine
    _, (case,) = upgrade({}, [value], version)
    extra = {key: item for key, item in case.items() if key not in known}
    for key, item in extra.items():
        _nonfinite_and_depth(label, key, item, problems)
    if problems:
        raise NotMine
    return json.dumps(extra)
