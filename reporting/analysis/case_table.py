"""The engine's case table (``case_table``): the columns of a run's evaluated cases the engine's queries read
(``reporting.analysis.engine``), as an Arrow table, made once a run."""

from __future__ import annotations

from typing import Any

import numpy as np

from reporting.analysis.grouping import probe_keys
from reporting.format.columnar_checks import ENGINE_TEXTS
from reporting.format.schema import SEVERITIES

TIER = "severity_tier"  # the severity's place in SEVERITIES, a column of the case table (``_tiers``)
# A case table whose probe keys never repeat says so (``case_table``; kept by every filter of its rows): each probe is
# then one case, and its counts are read without grouping a million keys.
PROBES_ONCE = b"runlens.probes_once"


def case_table(frame: Any, run_table: Any = None):
    """The columns of a case frame (``reporting.analysis.metrics.cases_frame``: evaluated cases) the engine reads,
    as an Arrow table: numbers without a copy, texts and lists converted once. ``run_table``: the case table of the
    run read by columns whose evaluated cases ``frame`` is the frame of (``cases_frame`` of that run, as made):
    its probe ids, categories and severities are taken as that table holds them (the frame's texts were made from
    them), not converted back from the frame's Python strings."""
    import pandas as pd
    import pyarrow as pa

    held = _evaluated_texts(run_table, len(frame)) if run_table is not None else {}

    def text(name: str):
        if name in held:
            return held[name]
        return pa.array(frame[name].to_numpy(dtype=object), type=pa.string())

    severity = frame["severity"]
    codes = severity.cat.codes.to_numpy() if hasattr(severity, "cat") else None
    tier_column = None
    if "severity" in held:
        severity_column = held["severity"]
    elif codes is not None and list(severity.cat.categories) == list(SEVERITIES):
        coded = pa.DictionaryArray.from_arrays(pa.array(codes.astype(np.int32), mask=codes < 0), pa.array(SEVERITIES))
        severity_column = coded.cast(pa.string())
        tier_column = pa.array(codes.astype(np.int8), mask=codes < 0)  # the codes are the tiers: not looked up again
    else:
        severity_column = text("severity")
    modes = frame["detected_failure_modes"].to_numpy(dtype=object)
    extra = {}  # the attack strategies' columns, where the frame has them
    if "strategy" in frame:
        named = frame["strategy"].to_numpy(dtype=object)
        extra["strategy"] = pa.array(np.where(pd.notna(named), named, None), type=pa.string())  # NaN: none named
        turns = frame["user_turns"] if "user_turns" in frame else np.zeros(len(frame), dtype=np.int64)
        extra["user_turns"] = pa.array(np.asarray(turns, dtype=np.int64))
    if "probe_key" in frame:
        keys = frame["probe_key"].to_numpy(dtype=np.int64)
    else:  # a frame made by hand: the keys as cases_frame gives them
        keys = probe_keys(frame["probe_id"], frame["probe_group"] if "probe_group" in frame else None)
    return pa.table(
        {
            "probe_id": text("probe_id"),
            "category": text("category"),
            "severity": severity_column,
            TIER: _tiers(severity_column) if tier_column is None else tier_column,
            "passed": pa.array(frame["passed"].to_numpy(dtype=bool)),
            "risk_score": pa.array(frame["risk_score"].to_numpy(dtype=float)),
            "severity_weight": pa.array(frame["severity_weight"].to_numpy(dtype=float)),
            "weighted_risk": pa.array(frame["weighted_risk"].to_numpy(dtype=float)),
            "safe_signal_hits": pa.array(frame["safe_signal_hits"].to_numpy(dtype=np.int64)),
            "unsafe_signal_hits": pa.array(frame["unsafe_signal_hits"].to_numpy(dtype=np.int64)),
            "boundary_or_refusal_signal": pa.array(frame["boundary_or_refusal_signal"].to_numpy(dtype=bool)),
            "detected_failure_modes": _coded(pa.array(modes, type=pa.list_(pa.string()))),
            "probe_key": pa.array(keys, type=pa.int64()),
            **extra,
        },
        metadata={PROBES_ONCE: b"1"} if _each_once(keys) else None,
    )


def _coded(lists: Any) -> Any:
    """Lists of texts with their texts dictionary-coded (the failure modes: a few names, repeated): a filter's copy
    of them and the engine's count of them read integers (at 2.9M kept cases, copy 0.12 -> 0.08 s, count 0.13 ->
    0.06 s). The same lists, the engine gives the same names."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if lists.offset != 0:  # (a slice: its offsets do not start its values)
        return lists
    mask = lists.is_null() if lists.null_count else None
    return pa.ListArray.from_arrays(lists.offsets, pc.dictionary_encode(lists.values), mask=mask)


def _tiers(severity: Any) -> Any:
    """Each case's severity tier, its place in SEVERITIES (null for any other text): the engine's severity tests
    read it (``engine.SEVERITY_TESTS``)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if pa.types.is_dictionary(severity.type):
        severity = severity.cast(pa.string())
    return pc.index_in(severity, value_set=pa.array(SEVERITIES)).cast(pa.int8())


def _evaluated_texts(run_table: Any, rows: int) -> dict[str, Any]:
    """The probe ids, categories and severities of the evaluated cases of a run's case table (the rows with a
    verdict, in order, as ``cases_frame`` keeps them), as the table holds them; none when the rows are not
    ``rows`` many."""
    import pyarrow.compute as pc

    names = ENGINE_TEXTS  # (joined into few chunks as the table was read: ``columnar_checks.finish``)
    table = run_table.select([*names, "passed"])
    if table.column("passed").null_count:
        table = table.filter(pc.is_valid(table.column("passed")))
    return {name: table.column(name) for name in names} if table.num_rows == rows else {}


def _each_once(keys: np.ndarray) -> bool:
    """Whether no probe key repeats."""
    if len(keys) == 0:
        return True
    if int(keys.min()) < 0 or int(keys.max()) >= len(keys):  # more keys than cases, or other: count them
        return len(np.unique(keys)) == len(keys)
    return int(np.bincount(keys).max()) == 1  # keys 0 .. n - 1 (cases_frame's): counted in one pass
