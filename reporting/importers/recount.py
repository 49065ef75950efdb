"""The figures another tool stored in its own file, recounted from the run's cases: garak's ``eval`` lines,
promptfoo's ``stats``, Inspect's ``results.scores``, JailbreakBench's header. Each importer keeps them under the
run's ``tool_figures``; ``reporting.analysis.drift`` shows every difference as a drift finding, so any figure can
be traced back to the tool's own record.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator, Mapping
from typing import Any, Optional

Recounted = tuple[str, Any, Any]  # (path, the tool's figure, the figure recounted from the cases)


def _get(value: Any, key: str) -> Any:
    return value.get(key) if isinstance(value, Mapping) else getattr(value, key, None)


def _verdicts(case: Any) -> Mapping[str, Any]:
    found = _get(case, "verdicts") or {}
    return found if isinstance(found, Mapping) else {}


def _number(value: Any) -> bool:
    """A finite number (not a boolean): a tool's figure RunLens can compare with its own."""
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


Tally = dict[tuple[str, str, Optional[bool]], int]  # (probe, detector, verdict) -> generations


def garak_eval(evals: Iterable[Any], cases: Iterable[Any]) -> list[Recounted]:
    """Per eval line (probe x detector): generations passed, failed (``fails``, or ``total`` - passed before
    0.14) and not scored (``nones``), against the cases' verdicts of that detector."""
    tally: Tally = {}
    if hasattr(cases, "table"):  # a run's case table: counted by Arrow, no row made
        return garak_eval_tally(evals, garak_table_tally(cases.table))
    for case in cases:
        probe = str(_get(case, "probe_group") or _get(case, "probe_id")).rsplit("#", 1)[0]
        for detector, verdict in _verdicts(case).items():
            key = (probe, str(detector), _get(verdict, "passed"))
            tally[key] = tally.get(key, 0) + 1
    return garak_eval_tally(evals, tally)


def garak_table_tally(table: Any) -> Tally:
    """``garak_eval``'s tally of a case table (the columnar reader's: ``probe_id``, ``probe_group`` and the list of
    verdict structs), grouped by Arrow: the probe is the group (or the id where it has none) up to its last '#'."""
    import pyarrow as pa
    import pyarrow.compute as pc

    tally: Tally = {}
    if "verdicts" not in table.column_names:
        return tally
    for batch in table.select(["probe_id", "probe_group", "verdicts"]).to_batches():
        group, verdicts = batch.column("probe_group"), batch.column("verdicts")
        by_id = pc.or_(pc.is_null(group), pc.fill_null(pc.equal(group, ""), False))
        probe = pc.replace_substring_regex(pc.if_else(by_id, batch.column("probe_id"), group), r"#[^#]*$", "")
        flat = pc.list_flatten(verdicts)
        rows = pa.table(
            {
                "probe": probe.take(pc.list_parent_indices(verdicts)),
                "judge": flat.field("judge"),
                "passed": flat.field("passed"),
            }
        )
        counted = rows.group_by(["probe", "judge", "passed"], use_threads=False).aggregate([([], "count_all")])
        names = ("probe", "judge", "passed", "count_all")
        for probe_name, judge, passed, n in zip(*(counted.column(name).to_pylist() for name in names)):
            key = (str(probe_name), str(judge), passed)
            tally[key] = tally.get(key, 0) + n
    return tally


def garak_eval_tally(evals: Iterable[Any], tally: Tally) -> list[Recounted]:
    """``garak_eval`` from verdicts already counted (the reader counts them before it makes any case)."""
    found = []
    for line in evals:
        if not isinstance(line, Mapping):
            continue
        probe, detector = str(line.get("probe")), str(line.get("detector", "")).removeprefix("detector.")
        passed, total = line.get("passed", 0), line.get("total") or 0
        fails = total - passed if _number(total) and _number(passed) else None
        theirs = {"passed": passed, "fails": line.get("fails", fails), "nones": line.get("nones", 0)}
        for name, verdict in (("passed", True), ("fails", False), ("nones", None)):
            path = f"tool_figures.garak_eval[{probe} x {detector}].{name}"
            found.append((path, theirs[name], tally.get((probe, detector, verdict), 0)))
    return found


def promptfoo_stats(stats: Any, cases: Iterable[Any]) -> list[Recounted]:
    """promptfoo's successes, failures and errors against the cases' primary verdicts (a file's stats cover every
    provider: compared only for a file of one model)."""
    if not isinstance(stats, Mapping):
        return []
    if hasattr(cases, "table"):  # a run's case table: its column, no case made
        verdicts = cases.table.column("passed").to_pylist()
    else:
        verdicts = [_get(c, "passed") for c in cases]
    ours = {
        "successes": sum(1 for v in verdicts if v is True),
        "failures": sum(1 for v in verdicts if v is False),
        "errors": sum(1 for v in verdicts if v is None),
    }
    return [(f"tool_figures.promptfoo_stats.{k}", stats.get(k), ours[k]) for k in ours if k in stats]


def inspect_scores(results: Any, cases: Iterable[Any]) -> list[Recounted]:
    """Inspect's accuracy (or mean) per scorer against the mean of that judge's scores over the cases it scored
    (one epoch: with several, Inspect reduces per sample first)."""
    by_judge = judge_values(cases.table, "score") if hasattr(cases, "table") else None  # a case table: no row made
    if by_judge is None:
        cases = list(cases)
    found = []
    entries = _get(results, "scores")
    for entry in entries if isinstance(entries, list) else ():
        if not isinstance(entry, Mapping) or not isinstance(entry.get("metrics") or {}, Mapping):
            continue
        name, metrics = str(entry.get("name")), entry.get("metrics") or {}
        metric_name = "accuracy" if "accuracy" in metrics else "mean" if "mean" in metrics else None
        theirs = _get(metrics.get(metric_name), "value") if metric_name else None
        if by_judge is not None:
            scores = by_judge.get(name, [])
        else:
            scores = [_get(_verdicts(c).get(name), "score") for c in cases if name in _verdicts(c)]
        scores = [s for s in scores if _number(s)]
        if _number(theirs) and scores:
            found.append(
                (f"tool_figures.inspect_results.scores[{name}].{metric_name}", theirs, sum(scores) / len(scores))
            )
    return found


def judge_values(table: Any, field: str) -> dict[str, list[Any]]:
    """Each judge's ``field`` (score, passed) in a case table (the columnar reader's list of verdict structs), in
    the cases' order: what the recounts read of each case's verdicts, from whole columns, no case made."""
    import pyarrow.compute as pc

    found: dict[str, list[Any]] = {}
    if "verdicts" not in table.column_names:
        return found
    flat = pc.list_flatten(table.column("verdicts"))
    judges, values = pc.struct_field(flat, "judge").to_pylist(), pc.struct_field(flat, field).to_pylist()
    for judge, value in zip(judges, values):
        found.setdefault(str(judge), []).append(value)
    return found


def jailbreakbench(params: Any, cases: Iterable[Any]) -> list[Recounted]:
    """The artifact header's count of jailbreaks against the rows' flags (the benchmark's judge)."""
    stated = _get(params, "total_number_of_jailbreaks")
    if not isinstance(stated, int):
        return []
    if hasattr(cases, "table"):  # a run's case table: its verdicts column, no case made
        ours = sum(1 for v in judge_values(cases.table, "passed").get("jailbreakbench", []) if v is False)
    else:
        ours = sum(1 for c in cases if _get(_verdicts(c).get("jailbreakbench"), "passed") is False)
    return [("tool_figures.jailbreakbench.total_number_of_jailbreaks", stated, ours)]


def recount(tool_figures: Any, cases: Iterable[Any]) -> list[Recounted]:
    """Every stored tool figure of a run, with its recount from the cases."""
    if not isinstance(tool_figures, Mapping):
        return []
    if isinstance(cases, Iterator):  # one pass only: held for the several passes below (re-iterables are not)
        cases = list(cases)
    found: list[Recounted] = []
    if isinstance(tool_figures.get("garak_eval"), list):
        found += garak_eval(tool_figures["garak_eval"], cases)
    models = tool_figures.get("promptfoo_models")
    if isinstance(models, list) and len(models) == 1:
        found += promptfoo_stats(tool_figures.get("promptfoo_stats"), cases)
    if tool_figures.get("inspect_epochs") in (None, 1) and "inspect_results" in tool_figures:
        found += inspect_scores(tool_figures.get("inspect_results"), cases)
    if "jailbreakbench" in tool_figures:
        found += jailbreakbench(tool_figures["jailbreakbench"], cases)
    return found
