"""The keys of a chunk's cases, as the columnar reader's ``nested`` reads them: each case's every key decoded (its
value as raw bytes), or, for a chunk of judged cases, a few keys alone.

A chunk whose cases carry verdicts (every imported garak, promptfoo or Inspect run) fails Arrow's strict parse (a key
its schema does not name refused) at its first judge, so the reader decoded every key of every case to find the
verdicts and any field beyond the format's: a third of the reading of such a run. Here each case is decoded for the
keys the reader needs alone (``Heads``: verdicts, messages, limit and the names of ``CHECKED``, raw; any other key
skipped), the judges the chunk's verdicts name are read from their distinct texts, and Arrow's strict parse runs
again with those judges in its schema (``judges_schema``). Where it passes, no case has a key the format does not
name (no extras: a key given twice is refused there too), and the heads are all ``nested`` needs. A chunk holding a
conversation or a limit, more than ``MAX_JUDGES`` judges, cases over several lines or anything the strict parse
refuses is read as before (``KeyDicts``), where every problem is found as always.
"""

from __future__ import annotations

import functools
import itertools
import operator
import threading
from typing import Any, Optional, Union

import msgspec
from msgspec import UNSET, Raw, UnsetType

from reporting.format.columnar_checks import CHECKED, NotMine

MAX_JUDGES = 64  # judges of a chunk put in Arrow's schema (each a struct column of the chunk's length)
_DECODE = (msgspec.DecodeError, msgspec.ValidationError, UnicodeDecodeError)


class KeyDicts:
    """Every key of each case, its value raw (``case_keys``)."""

    def __init__(self, keys: list[dict[str, Raw]]) -> None:
        self.keys = keys

    def __len__(self) -> int:
        return len(self.keys)

    def part(self, start: int, end: int) -> KeyDicts:
        return KeyDicts(self.keys[start:end])

    def written(self, rows: list[int], name: str) -> int:
        """How many of ``rows`` hold the key ``name``."""
        return sum(map(operator.contains, map(self.keys.__getitem__, rows), itertools.repeat(name)))

    def any_has(self, name: str) -> bool:
        return any(name in case for case in self.keys)

    def beyond(self, known: frozenset) -> list[int]:
        """The cases with a key ``known`` does not name."""
        return [i for i, case in enumerate(self.keys) if not known.issuperset(case)]

    def case(self, i: int) -> dict[str, Raw]:
        """The keys of the ``i``-th case, each value raw."""
        return self.keys[i]

    def values(self, name: str) -> tuple[list[int], list]:
        """The cases holding ``name``, and its raw values there."""
        rows = [i for i, case in enumerate(self.keys) if name in case]
        return rows, [self.keys[i][name] for i in rows]

    def distinct(self) -> None:
        """The distinct texts of verdicts, when found already (by ``judged_heads``): here, never."""
        return None


class Heads:
    """A chunk's cases decoded for the keys ``nested`` reads alone (``judged_heads``), once Arrow's strict parse
    found no other key than the format's: no case holds a key beyond them."""

    def __init__(self, heads: list, verdicts: Optional[tuple[Any, list[bytes]]] = None) -> None:
        self.heads = heads
        self.verdicts = verdicts  # each judged case's distinct text of verdicts, and those texts (``distinct``)

    def __len__(self) -> int:
        return len(self.heads)

    def part(self, start: int, end: int) -> Heads:
        return self if (start, end) == (0, len(self.heads)) else Heads(self.heads[start:end])

    def distinct(self) -> Optional[tuple[Any, list[bytes]]]:
        return self.verdicts

    def written(self, rows: list[int], name: str) -> int:
        value = operator.attrgetter(name)
        return sum(value(self.heads[i]) is not UNSET for i in rows)

    def any_has(self, name: str) -> bool:
        return any(getattr(case, name, UNSET) is not UNSET for case in self.heads)

    def beyond(self, known: frozenset) -> list[int]:
        return []

    def case(self, i: int) -> None:
        """No case's keys here: none is beyond the format's (``beyond``)."""
        return None

    def values(self, name: str) -> tuple[list[int], list]:
        found = list(map(operator.attrgetter(name), self.heads))
        rows = [i for i, value in enumerate(found) if value is not UNSET]
        return rows, [found[i] for i in rows]


@functools.cache
def _heads_type(version: int) -> Any:
    nested = ("verdicts",) + (("messages", "limit") if version >= 3 else ())
    return msgspec.defstruct(f"Heads{version}", [(name, Union[Raw, UnsetType], UNSET) for name in (*nested, *CHECKED)])


_PER_THREAD = threading.local()  # a decoder a parsing thread (as ``quick_json`` keeps its own)


def _heads_decoder(version: int) -> msgspec.json.Decoder:
    made = _PER_THREAD.__dict__.setdefault("decoders", {})
    if version not in made:
        made[version] = msgspec.json.Decoder(_heads_type(version))
    return made[version]


def judged_heads(lines: bytes, count: int, version: int) -> Optional[tuple[Heads, list[str]]]:
    """The heads of a chunk of judged cases (one a line in ``lines``: the caller counted) and the judges their
    verdicts name, in the order first written; None where the chunk is read as before (see above)."""
    if version < 2:
        return None
    try:
        heads = _heads_decoder(version).decode_lines(lines)
    except _DECODE:
        return None
    if len(heads) != count or (version >= 3 and any(h.messages is not UNSET or h.limit is not UNSET for h in heads)):
        return None
    import numpy as np

    found: dict[bytes, int] = {}
    judged = [bytes(h.verdicts) for h in heads if h.verdicts is not UNSET]
    which = np.fromiter((found.setdefault(text, len(found)) for text in judged), np.int64, len(judged))
    texts = list(found)
    del found, judged
    if not texts:
        return None
    try:
        maps = msgspec.json.decode(b"[" + b",".join(texts) + b"]", type=list[dict[str, Raw]])
    except _DECODE:
        return None  # verdicts that are no object: the reader as before names them
    judges = list(dict.fromkeys(judge for verdicts in maps for judge in verdicts))
    return (Heads(heads, (which, texts)), judges) if len(judges) <= MAX_JUDGES else None


def judges_schema(schema: Any, judges: list[str]) -> Any:
    """``schema`` with ``verdicts`` an object of these judges, each a verdict (no other key)."""
    import pyarrow as pa

    verdict = pa.struct([("passed", pa.bool_()), ("score", pa.float64()), ("explanation", pa.string())])
    kind = pa.struct([(judge, verdict) for judge in judges])
    return pa.schema([pa.field("verdicts", kind) if field.name == "verdicts" else field for field in schema])


def no_verdicts(table: Any) -> Any:
    """The table parsed with ``judges_schema``, its verdicts (read from the raw bytes) as the plain schema's."""
    import pyarrow as pa

    at = table.schema.get_field_index("verdicts")
    if at < 0:
        raise NotMine
    return table.set_column(at, "verdicts", pa.nulls(table.num_rows, pa.struct([]))).combine_chunks()
