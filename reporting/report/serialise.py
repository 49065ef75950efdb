"""The one serialiser of a report: the document ``recompute`` writes and the HTML embeds as #report-data.

``report_document(report)`` gives cases as a list of objects. The HTML asks for the same document in
column form (``layout="columns"``): the case list becomes ``{"columns", "rows", ...}`` so that no key
is repeated per case, and the observability points become rows aligned with the case rows. To keep a
file of 100,000 cases small, the HTML also caps each text field (``text_cap``) and rounds the three
per-case floats to 6 decimals; ``document_from_columns`` turns a column-form document back into the
row form, which is how a test shows the two outputs are one document.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator, Mapping
from typing import Any, Literal, Optional

from reporting.analysis.table_frame import shared_lists
from reporting.format.schema import SCHEMA_VERSION
from reporting.format.table_records import unused_left_out
from reporting.format.table_run import TableCases
from reporting.report.model import Report, RubricResults

TEXT_BUDGET = 6_000_000  # characters shared by the text fields of all cases in an HTML file
TEXT_CAP_MAX, TEXT_CAP_MIN = 2000, 40
TEXT_FIELDS = ("task", "probe_input", "response", "explanation")
FLOAT_FIELDS = ("risk_score", "weighted_risk", "severity_weight")
CASE_COLUMNS = (
    "probe_id",
    "category",
    "severity",
    "passed",
    "risk_score",
    "weighted_risk",
    "severity_weight",
    "safe_signal_hits",
    "unsafe_signal_hits",
    "boundary_or_refusal_signal",
    "matched_safe_patterns",
    "matched_unsafe_patterns",
    "detected_failure_modes",
    "failure_modes",
    *TEXT_FIELDS,
    "derived_failure_modes",
    "extra",  # every other field of the case, as the file gave it
)
# Version 3 columns: in the column form only when some case of the table has them (a run without conversations
# costs no byte more); a conversation's turns are capped like the text fields.
CONVERSATION_COLUMNS = ("messages", "judged_turn", "strategy", "plugin", "limit")
_KNOWN = (frozenset(CASE_COLUMNS) | frozenset(CONVERSATION_COLUMNS)) - {"extra"}
POINT_COLUMNS = ("cluster_id", "scatter_x", "scatter_y")


def text_cap(n_cases: int) -> int:
    """Characters kept per text field in an HTML file: 2,000, less in large runs (at least 40)."""
    if n_cases <= 0:
        return TEXT_CAP_MAX
    return int(max(TEXT_CAP_MIN, min(TEXT_CAP_MAX, TEXT_BUDGET // (n_cases * len(TEXT_FIELDS)))))


def _derived(detected: list[str], stored: list[str]) -> list[str]:
    """Failure modes RunLens added (self-contradiction) and the file did not state: marked so, never mixed in."""
    given = set(stored)
    return [m for m in detected if m not in given]


def case_records(report: Report) -> list[dict[str, Any]]:
    """Each kept case as the file gave it, with the effective severity weight, the recomputed weighted risk and
    the failure modes RunLens derived."""
    return list(iter_case_records(report))


def iter_case_records(report: Report, rows: Optional[list[int]] = None) -> Iterator[dict[str, Any]]:
    """``case_records`` one at a time: a writer that encodes each as it comes never holds them all. ``rows``: only
    the kept cases at these positions of the case frame (the HTML's bounded case table), in that order."""
    columns = ["severity_weight", "weighted_risk", "detected_failure_modes"]
    frame = report.frame[columns] if rows is None else report.frame[columns].iloc[rows]
    for weight, weighted, detected, dumped in zip(
        frame["severity_weight"].tolist(),
        frame["weighted_risk"].tolist(),
        frame["detected_failure_modes"],
        _dumped(report.run.cases, frame.index.to_numpy()),
    ):
        given = dumped["detected_failure_modes"]
        record = _turns_shaped(dumped)
        record["severity_weight"] = weight
        record["weighted_risk"] = weighted
        record["derived_failure_modes"] = _derived(detected, given)
        yield record


V2_OPTIONAL = ("error", "probe_group", "source_id")
V3_OPTIONAL = ("messages", "judged_turn", "strategy", "plugin", "limit")
UNUSED = {"none": V2_OPTIONAL + V3_OPTIONAL, "empty": ("verdicts",)}  # left out of a case that does not use them


def _streamed(report: Report) -> Iterable[Any]:
    """The kept cases as a writer asks for them one after another: ``iter_case_records``, or for a run read by
    columns the same cases written as JSON over whole columns (``case_lines``: the same text, no dict a case)."""
    cases = report.run.cases
    if not isinstance(cases, TableCases):
        return iter_case_records(report)
    from reporting.format.case_lines import Rows, case_lines
    from reporting.format.writing import Lines

    frame = report.frame
    positions = frame.index.to_numpy().astype("int64")
    detected = frame["detected_failure_modes"].tolist()
    none: list[str] = []
    derived: list[list[str]] = [none] * len(detected)  # (lists only read by the writer: shared where equal)
    some = [i for i, modes in enumerate(detected) if modes]
    if some:  # only where RunLens has modes: the file's own, to tell them apart, each distinct pair once
        given = shared_lists(cases.table.column("detected_failure_modes").take(positions[some]), none)
        made: dict[tuple[int, int], list[str]] = {}
        for i, stated in zip(some, given):
            key = (id(detected[i]), id(stated))  # (both held alive by their lists meanwhile)
            found = made.get(key)
            if found is None:
                found = _derived(detected[i], stated or none)
                if len(made) < 1 << 16:
                    made[key] = found
            derived[i] = found
    weights = frame["severity_weight"].to_numpy(dtype=float)
    weighted = frame["weighted_risk"].to_numpy(dtype=float)
    return Lines(case_lines(cases, Rows(positions, weights, weighted, derived), shape=_turns_shaped, **UNUSED))


def _dumped(cases: Any, positions: Any) -> Iterator[dict[str, Any]]:
    """The cases at ``positions`` as JSON (``model_dump``), without the version-2 and version-3 fields they do not
    use (no "verdicts": {} on every case, no "messages": null): a run read by columns makes them from its table."""
    if isinstance(cases, TableCases):
        return cases.dumped(positions, **UNUSED)
    return (unused_left_out(cases[i].model_dump(mode="json"), **UNUSED) for i in positions)


def _turns_shaped(record: dict[str, Any]) -> dict[str, Any]:
    """A case's turns without a tool call or a tool call id they do not have."""
    for turn in record.get("messages") or ():
        if not turn.get("tool_calls"):
            turn.pop("tool_calls", None)
        if turn.get("tool_call_id") is None:
            turn.pop("tool_call_id", None)
    return record


def error_records(report: Report) -> list[dict[str, Any]]:
    """The kept cases that were not evaluated, as the file gave them: counted in the figures as errors only."""
    if report.errors is None or not len(report.errors):
        return []
    return [_turns_shaped(dumped) for dumped in _dumped(report.run.cases, report.errors.index.to_numpy())]


def rubrics_document(rubrics: Optional[RubricResults]) -> Optional[dict[str, Any]]:
    if rubrics is None:
        return None
    return {
        "scorecard": rubrics.scorecard,
        "dimensions": rubrics.dimensions,
        "contradictions": list(rubrics.contradictions),
        "problems": list(rubrics.problems),
    }


def report_document(
    report: Report,
    *,
    layout: Literal["rows", "columns"] = "rows",
    text_cap: Optional[int] = None,
    float_digits: Optional[int] = None,
    case_limit: Optional[int] = None,
    stream_cases: bool = False,
) -> dict[str, Any]:
    """The report as one JSON-ready document (see the module's docstring for the column layout). With
    ``case_limit`` (the HTML of a large run), the column-form case table holds at most that many cases, failures
    first (worst first), then the passes of highest risk, and says so under ``cases.held``; every figure is still
    over all cases. ``stream_cases`` (rows layout): ``cases`` is an iterator that makes each record as a writer
    (``document_chunks``) asks for it, so a run of a million cases is never held twice."""
    if stream_cases and (layout != "rows" or case_limit is not None):
        raise ValueError("stream_cases: only the rows layout, without a case limit")
    obs = dict(report.observability_or_reason)
    held = None
    positions: Iterable[int] = range(len(report.frame))
    if layout == "columns" and case_limit is not None and len(report.frame) > case_limit:
        # Only the held cases are made into records (a million-case run's HTML holds a few thousand).
        positions, held = held_cases(report, case_limit)
        records: Any = list(iter_case_records(report, positions))
    else:
        records = _streamed(report) if stream_cases else case_records(report)
    document: dict[str, Any] = {
        "schema_version": SCHEMA_VERSION,
        "generator": {"name": report.generator.name, "version": report.generator.version},
        "run": report.meta.model_dump(mode="json", exclude_none=True),
        "filters": {**report.filters.as_dict(), "cases_total": report.total, "cases_shown": report.shown},
        "cases": records,
        "errors": error_records(report),
        "aggregate_metrics": report.metrics,
        "observability": obs,
        "drift": [d.as_dict() for d in report.drift],
        "rubrics": rubrics_document(report.rubrics),
    }
    if report.review is not None:
        document["review"] = report.review
    if layout == "columns":
        document["cases"] = {**case_columns(records, text_cap, float_digits), "held": held}
        if not obs.get("skipped"):
            obs["cases"] = _points_of(report, obs["cases"], positions)
            # Rows line up with the case table's rows, so the probe id is not repeated here.
            document["observability"] = {
                **{k: v for k, v in obs.items() if k != "cases"},
                "cases": {
                    "columns": list(POINT_COLUMNS),
                    "aligned_with": "cases.rows",
                    "rows": [[p[c] for c in POINT_COLUMNS] for p in obs["cases"]],
                },
            }
    return document


def _points_of(report: Report, points: list[dict[str, Any]], positions: Iterable[int]) -> list[dict[str, Any]]:
    """The observability points of the held cases, aligned with them: a point for every case (taken by position),
    or a sample's points (taken by probe id; a case outside the sample has none: its values are null)."""
    if len(points) == len(report.frame):
        return [points[i] for i in positions]
    by_id = {p["probe_id"]: p for p in points}
    ids = report.frame["probe_id"].to_numpy()
    none = dict.fromkeys(POINT_COLUMNS)
    return [by_id.get(ids[i]) or {"probe_id": ids[i], **none} for i in positions]


def held_cases(report: Report, limit: int) -> tuple[list[int], dict[str, Any]]:
    """Which cases a bounded case table holds: every failure, worst first, then the passes of highest weighted
    risk, up to ``limit``; their positions in the case table's order, and a description of the choice."""
    import numpy as np

    frame = report.frame
    order = report.worst_order
    failed = ~frame["passed"].to_numpy(dtype=bool)
    ranked = np.concatenate([order[failed[order]], order[~failed[order]]])
    kept = sorted(int(i) for i in ranked[:limit])
    n_failed = int(failed.sum())
    return kept, {
        "cases": len(kept),
        "of": int(len(frame)),
        "failures": min(n_failed, len(kept)),
        "of_failures": n_failed,
        "rule": "failures first, worst first (weighted risk, then risk, then probe id); then the passes of highest "
        "weighted risk",
    }


def _cap(text: Optional[str], cap: Optional[int]) -> Optional[str]:
    if text is None or cap is None or len(text) <= cap:
        return text
    return text[:cap] + "\u2026"


def _round(value: Any, digits: Optional[int]) -> Any:
    if digits is None or not isinstance(value, float) or not math.isfinite(value):
        return value
    return round(value, digits)


def case_columns(
    records: list[dict[str, Any]], cap: Optional[int] = None, float_digits: Optional[int] = None
) -> dict[str, Any]:
    """Case records in column form; texts longer than ``cap`` end in an ellipsis and are counted."""
    columns: list[list[Any]] = []
    truncated = 0
    names = list(CASE_COLUMNS) + [c for c in CONVERSATION_COLUMNS if any(r.get(c) is not None for r in records)]
    for name in names:
        if name == "extra":
            values: list[Any] = [{k: v for k, v in r.items() if k not in _KNOWN} for r in records]
        elif name in TEXT_FIELDS:
            raw = [r.get(name) for r in records]
            values = [_cap(v, cap) for v in raw]
            truncated += sum(1 for a, b in zip(raw, values) if a is not b)
        elif name in FLOAT_FIELDS:
            values = [_round(r.get(name), float_digits) for r in records]
        elif name == "messages":
            values = []
            for r in records:
                turns, cut = _capped_turns(r.get("messages"), cap)
                values.append(turns)
                truncated += cut
        else:
            values = [r.get(name) for r in records]
        columns.append(values)
    rows = [list(row) for row in zip(*columns)] if records else []
    return {"columns": names, "rows": rows, "text_cap": cap, "texts_truncated": int(truncated)}


def _capped_turns(turns: Optional[list[dict[str, Any]]], cap: Optional[int]) -> tuple[Optional[list[Any]], int]:
    """A conversation's turns with each text capped like a text field (its full length kept as ``content_chars``);
    the number of turns cut."""
    if not turns or cap is None:
        return turns, 0
    out, cut = [], 0
    for turn in turns:
        text = turn.get("content") or ""
        if len(text) > cap:
            turn = {**turn, "content": _cap(text, cap), "content_chars": turn.get("content_chars", len(text))}
            cut += 1
        out.append(turn)
    return out, cut


def document_from_columns(document: Mapping[str, Any]) -> dict[str, Any]:
    """A column-form document (the HTML's #report-data) back in row form, as ``recompute`` writes it."""
    out = dict(document)
    table = document["cases"]
    names = table["columns"]
    records = []
    for row in table["rows"]:
        record = {
            name: value
            for name, value in zip(names, row)
            if name != "extra" and not (value is None and name in CONVERSATION_COLUMNS)
        }
        record.update(row[names.index("extra")])
        records.append(record)
    out["cases"] = records
    obs = document["observability"]
    if not obs.get("skipped"):
        points = obs["cases"]
        out["observability"] = {
            **{k: v for k, v in obs.items() if k != "cases"},
            "cases": [
                {"probe_id": record["probe_id"], **dict(zip(points["columns"], row))}
                for record, row in zip(records, points["rows"])
                if row[0] is not None  # a case outside a sampled geometry has no point
            ],
        }
    return out
