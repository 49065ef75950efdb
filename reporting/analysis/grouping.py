"""Integer codes of a case frame's keys, so that the figures of a run of a million cases (and of every filtered view
of it, on each dashboard rerun) are counted over integers rather than over a million Python strings.

Every helper gives exactly the groups and the order the pandas spelling gave (``groupby`` of a column, ``astype(str)
== tier``), so the figures are the same to the last bit: each group's values stay in the run's order.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from reporting.format.schema import SEVERITIES


def numbered(keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each key's number among the distinct keys, in order of first appearance (by hashing, not sorting), and the
    position of each distinct key's first appearance."""
    which = pd.factorize(keys)[0]
    return which, first_rows(which)


def by_identity(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``numbered`` over the objects themselves (their identity): a case frame shares one list or mapping among
    the rows whose values are the same, so what is made of each distinct object is made once."""
    return numbered(np.fromiter(map(id, values), dtype=np.int64, count=len(values)))


def severity_codes(frame: pd.DataFrame) -> np.ndarray:
    """Each case's severity as its position in SEVERITIES (-1: none of them)."""
    column = frame["severity"]
    if isinstance(column.dtype, pd.CategoricalDtype) and list(column.cat.categories) == list(SEVERITIES):
        return column.cat.codes.to_numpy(dtype=np.int64)
    lookup = {tier: i for i, tier in enumerate(SEVERITIES)}
    return np.fromiter((lookup.get(str(s), -1) for s in column), dtype=np.int64, count=len(column))


def severity_mask(frame: pd.DataFrame, tiers: Any) -> np.ndarray:
    """The cases whose severity is one of ``tiers``."""
    wanted = [SEVERITIES.index(t) for t in tiers if t in SEVERITIES]
    return np.isin(severity_codes(frame), wanted)


class Groups:
    """The cases of a frame grouped by the values of one column (missing values in no group): ``names`` in order
    of first appearance, ``order`` the case positions sorted by group with each group's cases in the frame's order,
    ``bounds`` where each group's positions start and end in ``order``."""

    def __init__(self, values: Any) -> None:
        codes, uniques = pd.factorize(np.asarray(values, dtype=object), sort=False)
        self.names: list[Any] = list(uniques)
        self.order = np.argsort(codes, kind="stable")[int((codes < 0).sum()) :]  # missing values (-1) first, cut
        self.bounds = np.concatenate([[0], np.cumsum(np.bincount(codes[codes >= 0], minlength=len(uniques)))])

    def __len__(self) -> int:
        return len(self.names)

    def sorted_by_name(self) -> list[tuple[Any, slice]]:
        """(name, the group's slice of ``order``), names ascending."""
        ranked = sorted(range(len(self.names)), key=lambda k: self.names[k])
        return [(self.names[k], slice(int(self.bounds[k]), int(self.bounds[k + 1]))) for k in ranked]


def repetition_keys(probe_ids: Any, groups: Any = None) -> pd.Series:
    """Each case's repetition key as text: its ``probe_group`` where it has one, else its ``probe_id`` (garak's
    generations of one attempt, Inspect's epochs of one sample). The one spelling of the key. A case frame's probe
    ids (pandas' Arrow-backed text) stay as they are held where no case has a group."""
    if isinstance(probe_ids, pd.Series) and isinstance(probe_ids.dtype, pd.StringDtype):
        ids = probe_ids
    else:
        ids = pd.Series(np.asarray(probe_ids, dtype=object), dtype=object, copy=False)
    if groups is None:
        return ids
    grouped = pd.Series(np.asarray(groups, dtype=object), dtype=object, copy=False)
    has_group = (grouped.notna() & (grouped != "")).to_numpy(dtype=bool)
    if not has_group.any():
        return ids
    return pd.Series(np.where(has_group, grouped.to_numpy(), ids.to_numpy(dtype=object)), dtype=object, copy=False)


def probe_keys(probe_ids: Any, groups: Any) -> np.ndarray:
    """``repetition_keys`` as integers, in order of first appearance (a group and a probe id of the same text are
    one key)."""
    codes, _ = pd.factorize(repetition_keys(probe_ids, groups), sort=False)
    return codes.astype(np.int64)


def first_rows(codes: np.ndarray) -> np.ndarray:
    """Where each code first appears, for codes that count up in order of first appearance (``pd.factorize``
    without sorting): a code's first row is where it passes every earlier one."""
    before = np.maximum.accumulate(np.concatenate([[-1], codes[:-1]]))
    return np.flatnonzero(codes > before)
