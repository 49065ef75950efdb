"""The framework figures' tally (``reporting.analysis.frameworks.framework_figures``): the cases counted per group
of cases that share tags, plugin and category, by whole columns (``grouped``) or one case at a time
(``grouped_by_loop``: values that cannot be hashed, and the reference of the tests), and an item's failing case
ids."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any, Optional

from reporting.format.severity import normalize_severity


def _tag_list(value: Any) -> tuple[str, ...]:
    if value is None or isinstance(value, (bytes, Mapping)):
        return ()
    if isinstance(value, str):
        return (value,)
    try:
        return tuple(t for t in value if isinstance(t, str))
    except TypeError:
        return ()


def _name(value: Any) -> Optional[str]:
    return value if isinstance(value, str) and value else None


def _verdict(value: Any) -> Optional[bool]:
    """True / False from a bool, a numpy bool or 0/1; None for None, NaN, pandas NA or anything else."""
    if isinstance(value, bool):
        return value
    if hasattr(value, "item") and not isinstance(value, (str, bytes)):
        try:
            value = value.item()
        except (TypeError, ValueError):
            return None
        if isinstance(value, bool):
            return value
    if isinstance(value, int) and value in (0, 1):
        return bool(value)
    if isinstance(value, float) and not math.isnan(value) and value in (0.0, 1.0):
        return bool(value)
    return None


class Tally:
    """The counts of one group of cases (those sharing tags, plugin and category), or of one item."""

    __slots__ = ("passed", "failed", "errors", "worst", "failing")

    def __init__(self) -> None:
        self.passed = self.failed = self.errors = 0
        self.worst = -1
        self.failing: Any = []  # positions of the failing cases (a list, or an array from ``tallies``)

    def add(self, other: Tally) -> None:
        self.passed += other.passed
        self.failed += other.failed
        self.errors += other.errors
        self.worst = max(self.worst, other.worst)


Keys = tuple[tuple[str, ...], Optional[str], Optional[str]]


def grouped_by_loop(count, passed, severity, category, plugin, tags, rank) -> dict[Keys, Tally]:
    """The cases tallied per group of cases that share tags, plugin and category, one case at a time."""
    # One pass over the cases, tallied per group of cases that share tags, plugin and category (a handful in a
    # run); each group's tally is then added to the items the group maps to.
    groups: dict[Keys, Tally] = {}
    for i in range(count):
        key = (
            _tag_list(tags[i]) if tags is not None else (),
            _name(plugin[i]) if plugin is not None else None,
            _name(category[i]) if category is not None else None,
        )
        group = groups.get(key)
        if group is None:
            group = groups[key] = Tally()
        verdict = _verdict(passed[i])
        if verdict is None:
            group.errors += 1
        elif verdict:
            group.passed += 1
        else:
            group.failed += 1
            group.failing.append(i)
            if severity is not None:
                group.worst = max(group.worst, rank.get(normalize_severity(severity[i]) or "", -1))
    return groups


def _codes(values: Sequence[Any], name: Any) -> tuple[Any, list[Any]]:
    """Each value's code among its distinct values (-1: None or NaN) and what ``name`` makes of each distinct value;
    a value that cannot be hashed raises TypeError."""
    import numpy as np
    import pandas as pd

    if isinstance(values, pd.Categorical):  # (a frame's severities: their codes, -1 where none)
        return values.codes, [name(u) for u in values.categories]
    if isinstance(values, np.ndarray) and values.ndim == 1 and values.dtype.kind in "biu":  # (a frame's verdicts)
        codes, uniques = pd.factorize(values)
        return codes.astype(np.int64, copy=False), [name(u) for u in uniques]
    if isinstance(values, np.ndarray) and values.dtype == object and values.ndim == 1:
        column = values
    else:
        column = np.fromiter(values, dtype=object, count=len(values))  # a tuple stays one value, never a row
    codes, uniques = pd.factorize(column, use_na_sentinel=True)
    return codes.astype(np.int64, copy=False), [name(u) for u in uniques]


def _tag_codes(tags: Sequence[Any]) -> Any:
    """Each case's code among the distinct tag lists (lists cannot be hashed; their string tuples can). A case
    frame shares one list object among the rows that hold the same tags, so each distinct object is made a tuple
    once (a million garak cases: a few hundred tuples, not a million), then equal tuples share a code."""
    import numpy as np
    import pandas as pd

    from reporting.analysis.grouping import by_identity

    column = tags if isinstance(tags, np.ndarray) and tags.dtype == object else np.fromiter(tags, object, len(tags))
    by_object, firsts = by_identity(column)
    distinct = np.empty(len(firsts), dtype=object)
    distinct[:] = [_tag_list(tag) for tag in column[firsts].tolist()]
    codes, _ = pd.factorize(distinct, use_na_sentinel=True)
    return codes.astype(np.int64)[by_object]


class CaseGroups:
    """Every case of a set put in its group once (the cases that share tags, plugin and category, named as
    ``grouped_by_loop`` names them), with its verdict (1 passed, 0 failed, -1 none) and its severity's rank: the
    tally of any of the cases is then counts over their positions (``tallies``), so a dashboard filter of a
    million cases costs a ``bincount``, not a grouping again."""

    __slots__ = ("keys", "group", "verdict", "rank")

    def __init__(self, keys: list[Keys], group: Any, verdict: Any, rank: Any) -> None:
        self.keys, self.group, self.verdict, self.rank = keys, group, verdict, rank

    def __len__(self) -> int:
        return len(self.group)


KEY_SPAN = 1 << 62  # the numbers a combined key of the columns' codes may take (int64)


def case_groups(count, passed, severity, category, plugin, tags, rank) -> CaseGroups:
    """The cases' groups by whole columns: each column's distinct values named once (a million cases of a dozen
    categories: a dozen calls, not a million), the groups found by ``unique``. A value that cannot be hashed raises
    TypeError (``grouped_by_loop`` then decides)."""
    import numpy as np

    if count == 0:
        return CaseGroups([], np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64), None)
    verdict_codes, verdicts = _codes(passed, _verdict)
    code_of: dict[Optional[bool], int] = {None: -1, False: 0, True: 1}
    verdict_of: Any = np.array([code_of[v] for v in verdicts] + [-1], dtype=np.int8)
    verdict = verdict_of[verdict_codes]  # code -1 (None, NaN) takes the last entry: no verdict
    del verdict_codes
    parts = []
    for column in (tags, plugin, category):
        if column is None:
            parts.append(np.zeros(count, dtype=np.int64))
            continue
        codes = _tag_codes(column) if column is tags else _codes(column, lambda u: u)[0]
        codes += 1  # (the codes are this loop's own)
        parts.append(codes)
        del codes
    from reporting.analysis.grouping import numbered
    from reporting.format.table_records import combined_codes  # (numpy and pydantic: loaded when first needed)

    key = combined_codes(((codes, int(codes.max()) + 1) for codes in parts), count, KEY_SPAN)
    del parts
    group, first = numbered(key)  # in order of first appearance, as ``grouped_by_loop`` finds them
    del key
    keys: list[Keys] = []
    named_code: dict[Keys, int] = {}
    renamed = np.empty(len(first), dtype=np.int32)
    for g, at in enumerate(first.tolist()):
        named = (
            _tag_list(tags[at]) if tags is not None else (),
            _name(plugin[at]) if plugin is not None else None,
            _name(category[at]) if category is not None else None,
        )
        if named not in named_code:  # values that name the same group ("" and None are no category alike): one
            named_code[named] = len(keys)
            keys.append(named)
        renamed[g] = named_code[named]
    ranks = None
    if severity is not None:
        severity_codes, names = _codes(severity, lambda u: rank.get(normalize_severity(u) or "", -1))
        ranks = np.array(names + [rank.get(normalize_severity(None) or "", -1)], dtype=np.int8)[severity_codes]
    return CaseGroups(keys, renamed[group], verdict, ranks)  # (4, 1 and 1 bytes a case)


def tallies(groups: CaseGroups, positions: Any = None) -> dict[Keys, Tally]:
    """The tally of each group of the cases at ``positions`` (ascending; None: every case), in the groups' order; a
    tally's failing cases are their positions, ascending. Groups with none of the cases are left out."""
    import numpy as np

    if positions is None:
        group, verdict, at = groups.group, groups.verdict, None
    else:
        at = np.asarray(positions, dtype=np.int64)
        group, verdict = groups.group[at], groups.verdict[at]
    if not len(group):
        return {}
    n_groups = len(groups.keys)
    failed = np.flatnonzero(verdict == 0)
    every = len(failed) == len(group)  # every case failed (a filter of failed cases): their columns as they are
    keys = group if every else group[failed]
    by_group = {"failed": np.bincount(keys, minlength=n_groups)}
    for name, value in (("passed", 1), ("errors", -1)):
        chosen = group[verdict == value] if not every else group[:0]
        by_group[name] = np.bincount(chosen, minlength=n_groups)
    # by group, each in the cases' order (a radix sort where the groups' numbers fit 16 bits: 7x faster)
    order = np.argsort(keys.astype(np.uint16) if n_groups <= 1 << 16 else keys, kind="stable")
    failing_order = order if every else failed[order]
    if at is not None:
        failing_order = at[failing_order]
    bounds = np.cumsum(by_group["failed"])
    worst = np.full(n_groups, -1, dtype=np.int64)
    if groups.rank is not None and len(failed):
        _worst_of_groups(worst, groups.rank[failing_order], bounds)
    found: dict[Keys, Tally] = {}
    for g, named in enumerate(groups.keys):
        tally = Tally()
        tally.passed, tally.failed, tally.errors = (int(by_group[k][g]) for k in ("passed", "failed", "errors"))
        if not (tally.passed or tally.failed or tally.errors):
            continue
        tally.worst = int(worst[g])
        tally.failing = failing_order[bounds[g] - tally.failed : bounds[g]]  # an array: no list of a million ints
        found[named] = tally
    return found


def _worst_of_groups(worst: Any, ranks: Any, bounds: Any) -> None:
    """``np.maximum.at(worst, group, ranks)`` of ranks ordered by group, group g's ending at ``bounds[g]`` (the
    counts' running sum): each group's highest rank, raised to it, one ``maximum.reduceat`` over the groups with
    some."""
    import numpy as np

    starts = np.concatenate(([0], bounds[:-1]))
    some = np.flatnonzero(bounds > starts)
    if len(some):
        highest = np.maximum.reduceat(ranks, starts[some]).astype(np.int64)
        worst[some] = np.maximum(worst[some], highest)


def grouped(count, passed, severity, category, plugin, tags, rank) -> dict[Keys, Tally]:
    """What ``grouped_by_loop`` gives, by whole columns (``case_groups``, then ``tallies`` of every case)."""
    return tallies(case_groups(count, passed, severity, category, plugin, tags, rank))


class CaseIds(Sequence):
    """The ids of an item's failing cases, in the columns' order, as text: a sequence whose ids are made when they
    are read (a count or the first few are read of a million). Ids held by Arrow (a case frame's) are taken at the
    positions read; others share one array of names among all items, made at the first read. Equal to a list or
    tuple of the same ids."""

    __slots__ = ("_groups", "_merged", "_case_ids", "_names")

    def __init__(self, groups: Sequence[Any], case_ids: Sequence[Any], names: list[Any]) -> None:
        """``groups``: the positions of each group of the item's failing cases, each ascending, no position in two."""
        self._groups, self._case_ids, self._names = groups, case_ids, names
        self._merged: Any = None

    @property
    def _positions(self) -> Any:
        """The groups' positions merged, ascending: sorted when first read (a count reads none of them)."""
        import numpy as np

        if self._merged is None:
            groups = self._groups
            self._merged = np.asarray(groups[0]) if len(groups) == 1 else np.sort(np.concatenate(groups), kind="stable")
        return self._merged

    def _all(self) -> Any:
        import numpy as np

        if not self._names:
            ids = np.fromiter(self._case_ids, dtype=object, count=len(self._case_ids))
            if not all(type(i) is str for i in ids):
                ids = np.fromiter((str(i) for i in ids), dtype=object, count=len(ids))
            self._names.append(ids)
        return self._names[0]

    def _at(self, positions: Any) -> list[Any]:
        import pyarrow as pa

        if isinstance(self._case_ids, (pa.Array, pa.ChunkedArray)):  # Arrow text: no null, every id a string
            return self._case_ids.take(pa.array(positions, type=pa.int64())).to_pylist()
        return self._all()[positions].tolist()

    def __len__(self) -> int:
        return sum(len(group) for group in self._groups)

    def __getitem__(self, at: Any) -> Any:
        if isinstance(at, slice):
            return self._at(self._positions[at])
        return self._at([self._positions[at]])[0]  # (an index out of range raises IndexError)

    def __iter__(self) -> Any:
        return iter(self._at(self._positions))

    def __eq__(self, other: object) -> bool:
        if isinstance(other, (CaseIds, list, tuple)):
            return len(self) == len(other) and list(self) == list(other)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"CaseIds({list(self)!r})"

    def __reduce__(self) -> Any:
        return (list, (list(self),))  # pickled (a cache, a copy) as the plain list of ids


def failing_ids(
    groups: Sequence[list[int]], case_ids: Sequence[Any], names: list[Any], when_read: bool = False
) -> Sequence[str]:
    """The ids of an item's failing cases in the columns' order: its groups' positions (each group's ascending, no
    position in two groups) merged, as a list of text, or with ``when_read`` as ``CaseIds`` (made as they are read;
    ``case_ids`` must then stay as they are). ``names``: the ids as one array of text, made at the first read of any
    item's ids."""
    if not groups:
        return []
    ids = CaseIds(groups, case_ids, names)
    return ids if when_read else list(ids)
