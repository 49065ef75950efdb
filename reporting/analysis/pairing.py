"""Runs of different tools paired by the text of their probes (``paired_on``): one case per text, so that a garak
run and a promptfoo run of the same prompts can be compared though their probe ids differ. A run read by columns is
paired over its table (``_paired_table``), no case object made; a run of case objects case by case; the same run
(tests/test_pairing_table.py)."""

from __future__ import annotations

import dataclasses
from typing import Any

from reporting.format.schema import SEVERITIES, RunReport
from reporting.format.severity import DEFAULT_SEVERITY_WEIGHTS
from reporting.format.table_run import TableCases, table_of

PAIR_ON = ("probe_id", "task", "input")
_RANK = {"low": 0, "medium": 1, "high": 2, "critical": 3}


def paired_on(run: RunReport, on: str) -> RunReport:
    """The run with one case per probe text, so that runs of different tools (whose probe ids differ) can be
    paired: ``on`` is ``task`` or ``input`` (whitespace normalised, case kept). Repetitions of a text (garak
    generations, Inspect epochs, promptfoo repeats) become one probe: failed when any evaluated repetition
    failed, at the highest risk and the most severe label; a text whose every repetition errored is left out,
    as an error would be. ``probe_id`` keeps the cases as they are."""
    if on == "probe_id":
        return run
    if on not in PAIR_ON:
        raise ValueError(f"pair on one of {', '.join(PAIR_ON)}, not {on!r}")
    if table_of(run) is not None:
        paired = TableCases(_paired_table(run.cases.columnar, on))  # type: ignore[attr-defined]
        return run.model_copy(update={"cases": paired, "aggregate_metrics": None})
    groups: dict[str, list[Any]] = {}
    for case in run.cases:
        text = case.task if on == "task" else case.probe_input
        key = " ".join((text or "").split())
        if key and case.passed is not None:
            groups.setdefault(key, []).append(case)
    cases = []
    for key, members in groups.items():
        worst = max(members, key=lambda c: (not c.passed, c.risk_score or 0.0))
        cases.append(
            worst.model_copy(
                update={
                    "probe_id": key,
                    "passed": all(c.passed for c in members),
                    "risk_score": max(c.risk_score or 0.0 for c in members),
                    "severity": max((c.severity for c in members), key=lambda s: _RANK.get(s, 1)),
                    "severity_weight": None,
                    "weighted_risk": None,
                    "verdicts": {},
                    "probe_group": f"{len(members)} repetition(s)",
                }
            )
        )
    return run.model_copy(update={"cases": cases, "aggregate_metrics": None})


def _paired_table(columnar: Any, on: str) -> Any:
    """``paired_on`` of a run read by columns: each text's worst evaluated case (the first failed one at the highest
    risk) taken from the table, its id, verdict, risk, severity, weights, verdicts and group replaced as the case
    by case rule replaces them; texts normalised once per distinct text."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    table, given = columnar.table, columnar.given
    encoded = pc.dictionary_encode(table.column("task" if on == "task" else "probe_input").combine_chunks())
    keys: dict[str, int] = {}
    of_distinct = np.array(
        [
            keys.setdefault(key, len(keys)) if key else -1
            for key in (" ".join(t.split()) for t in encoded.dictionary.to_pylist())
        ]
        + [-1],  # (a case with no text)
        dtype=np.int64,
    )
    code = of_distinct[pc.fill_null(encoded.indices, len(encoded.dictionary)).to_numpy(zero_copy_only=False)]
    rows = np.flatnonzero((code >= 0) & pc.is_valid(table.column("passed")).to_numpy(zero_copy_only=False))
    code = code[rows]
    passed = pc.fill_null(table.column("passed"), False).to_numpy(zero_copy_only=False)[rows]
    risk = table.column("risk_score").to_numpy(zero_copy_only=False).astype(float)[rows]
    risk = np.where(np.isnan(risk) | (risk == 0), 0.0, risk)  # (``risk_score or 0.0``)
    rank = np.array([_RANK.get(s, 1) for s in SEVERITIES])[
        pc.index_in(table.column("severity"), value_set=pa.array(SEVERITIES)).to_numpy(zero_copy_only=False)[rows]
    ]
    # each text's members in order, worst first: failed, then the highest risk, then the first in the run
    order = np.lexsort((rows, -risk, passed, code))
    ranked = code[order]
    change = np.ones(len(ranked), dtype=bool)
    change[1:] = ranked[1:] != ranked[:-1]
    starts = np.flatnonzero(change)
    group_code = ranked[starts]
    worst = rows[order][starts]
    first = np.full(len(keys), len(table), dtype=np.int64)
    np.minimum.at(first, code, rows)
    shown = np.argsort(first[group_code], kind="stable")  # texts in the order their first member comes
    group_code, worst = group_code[shown], worst[shown]
    count = np.bincount(code, minlength=len(keys))[group_code]
    fails = np.bincount(code, weights=~passed, minlength=len(keys))[group_code]
    top_risk = np.full(len(keys), -np.inf)
    np.maximum.at(top_risk, code, risk)
    top_rank = np.full(len(keys), -1)
    np.maximum.at(top_rank, code, rank)
    by_rank = {r: s for s, r in _RANK.items()}
    names = list(keys)
    risks = top_risk[group_code]
    severity = [by_rank[r] for r in top_rank[group_code]]
    weights = np.array([DEFAULT_SEVERITY_WEIGHTS[s] for s in severity], dtype=float)
    at = pa.array(worst, pa.int64())
    out, out_given = table.take(at), given.take(at)
    n = len(worst)
    columns = {
        "probe_id": pa.array([names[c] for c in group_code], pa.string()),
        "passed": pa.array(fails == 0, pa.bool_()),
        "risk_score": pa.array(risks, pa.float64()),
        "severity": pa.array(severity, pa.string()),
        "severity_weight": pa.array(weights, pa.float64()),
        "weighted_risk": pa.array(np.minimum(risks * weights, 1.0), pa.float64()),
        "verdicts": pa.array([[]] * n, table.schema.field("verdicts").type),
        "probe_group": pa.array([f"{k} repetition(s)" for k in count], pa.string()),
    }
    for name, values in columns.items():
        out = out.set_column(
            out.schema.get_field_index(name), out.schema.field(name), values.cast(out.schema.field(name).type)
        )
    for name in ("severity_weight", "weighted_risk"):
        field = out_given.schema.field(name)
        out_given = out_given.set_column(out_given.schema.get_field_index(name), field, pa.nulls(n, field.type))
    stored = {k: v for k, v in columnar.stored.items() if k != "aggregate_metrics"}
    identity = (
        None
        if columnar.identity is None
        else tuple(out.column(c) for c in ("probe_id", "passed", "risk_score", "response"))
    )
    return dataclasses.replace(columnar, table=out, given=out_given, identity=identity, stored=stored)
