"""Several judges on one run: each judge's verdicts (garak detectors, promptfoo assertions, Inspect scorers,
RunLens's own rules) counted like the primary verdict, and how far each pair of judges agrees.

A case's ``verdicts`` maps a judge's name to ``{passed, score, explanation}``; ``passed`` null means that judge
did not judge the case. Only evaluated cases are counted (a case not evaluated has no verdict to compare).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Optional

import numpy as np
import pandas as pd

from reporting.analysis.figures import proportion
from reporting.analysis.grouping import by_identity
from reporting.analysis.stats import wilson

NOT_JUDGED = -1  # a verdict's ``passed`` in ``judge_rows``: 1 passed, 0 failed, -1 not judged (null)


def judge_rows(frame: pd.DataFrame) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """judge -> (the rows of ``frame`` that carry its verdict, in order; each one's verdict: 1 passed, 0 failed,
    ``NOT_JUDGED``), the judges in the order the cases first name them. A case frame shares one mapping among the
    rows whose verdicts are the same (a detector's verdicts repeat over a garak run's attempts), so each distinct
    mapping is read once and its judges' verdicts spread to its rows by whole columns. A ``passed`` that is not
    a boolean is not a verdict: not judged."""
    found: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    if "verdicts" not in frame:
        return found
    values = frame["verdicts"].to_numpy(dtype=object)
    # cases without verdicts (missing or empty) are skipped in C
    present = pd.notna(values) & np.fromiter(map(bool, values), dtype=bool, count=len(values))
    rows = np.flatnonzero(present)
    codes, firsts = by_identity(values[present])  # code k: the k-th distinct mapping to appear
    judged: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    for k, verdicts in enumerate(values[present][firsts].tolist()):
        for name, verdict in verdicts.items():
            passed = verdict.passed if hasattr(verdict, "passed") else verdict.get("passed")
            has, said = judged.setdefault(
                str(name), (np.zeros(len(firsts), dtype=bool), np.full(len(firsts), NOT_JUDGED, dtype=np.int8))
            )
            has[k], said[k] = True, (1 if passed is True else 0 if passed is False else NOT_JUDGED)
    for name, (has, said) in judged.items():
        carried = has[codes]
        found[name] = (rows[carried], said[codes[carried]])
    return found


def kept_judge_rows(
    found: Mapping[str, tuple[np.ndarray, np.ndarray]], kept: np.ndarray
) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """``judge_rows`` of the rows ``kept`` (a mask) of a frame, from that frame's ``found``: each judge's kept rows,
    numbered among the kept rows, and their verdicts; a judge none of whose rows is kept is left out."""
    kept = np.asarray(kept, dtype=bool)
    if not found:
        return {}
    places = np.cumsum(kept, dtype=np.int64) - 1  # a kept row's number among the kept rows
    picked: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    for name, (rows, said) in found.items():
        keep = kept[rows]
        if keep.any():
            picked[name] = (places[rows[keep]], said[keep])
    return picked


def verdict_table(
    frame: pd.DataFrame,
    error_cases: Optional[pd.DataFrame] = None,
    judged: Optional[Mapping[str, tuple[np.ndarray, np.ndarray]]] = None,
) -> tuple[list[str], Any]:
    """The judges, by name, and the table of their verdicts the engine's judge queries read (``JUDGE_COUNTS``,
    ``JUDGE_PAIRS``): a row a verdict, its judge's number in that list, its case's row (in ``frame``; in
    ``error_cases`` counted on after it), ``passed`` (null: not judged) and whether the case was evaluated.
    ``judged``: ``judge_rows(frame)``, when known (then only the frame's length is read)."""
    import pyarrow as pa

    parts = [(judge_rows(frame) if judged is None else judged, 0, True)]
    if error_cases is not None and len(error_cases):
        parts.append((judge_rows(error_cases), len(frame), False))
    names = sorted({name for found, _, _ in parts for name in found})
    number = {name: k for k, name in enumerate(names)}
    judges, rows, said, evaluated = [], [], [], []
    for found, offset, kind in parts:
        for name, (at, given) in found.items():
            judges.append(np.full(len(at), number[name], dtype=np.int32))
            rows.append(at.astype(np.int64) + offset)
            said.append(given)
            evaluated.append(np.full(len(at), kind))
    joined = [
        np.concatenate(part) if part else np.zeros(0, dtype=kind)
        for part, kind in ((judges, np.int32), (rows, np.int64), (said, np.int8), (evaluated, bool))
    ]
    table = pa.table(
        {
            "judge": pa.array(joined[0], pa.int32()),
            "row": pa.array(joined[1], pa.int64()),
            "passed": pa.array(joined[2] == 1, pa.bool_(), mask=joined[2] == NOT_JUDGED),
            "evaluated": pa.array(joined[3], pa.bool_()),
        }
    )
    return names, table


def judges_figures(
    frame: pd.DataFrame,
    error_cases: Optional[pd.DataFrame] = None,
    judged: Optional[Mapping[str, tuple[np.ndarray, np.ndarray]]] = None,
) -> dict[str, Any]:
    """The judges' figures of ``frame``, from the engine's two queries over its verdicts (``verdict_table``):
    ``judges``: for each judge, the cases it saw (``n``: evaluated and not), passed, failed, errors (saw but did not
    judge), pass rate and its 95% Wilson interval over the cases it judged; ``judge_agreement``: each pair of
    judges with evaluated cases both judged, n, the share on which they agree with its Wilson interval, and
    Cohen's kappa, among at most ``JUDGE_PAIR_CAP`` judges (``paired_judges``); ``judges_not_paired``: how many
    judges are left out of the pairs. ``error_cases``: the cases not evaluated, whose verdicts count in each judge's
    figures (null: an error of that judge), not in the pairs. ``judged``: ``judge_rows(frame)``, when known."""
    import pyarrow as pa
    import pyarrow.compute as pc

    from reporting.analysis.engine import JUDGE_COUNTS, JUDGE_PAIRS, rows_of

    names, table = verdict_table(frame, error_cases, judged)
    if not names:
        return {"judges": {}, "judge_agreement": [], "judges_not_paired": 0}
    counts = rows_of(JUDGE_COUNTS, {"verdicts": table})
    totals = {name: {"n": 0, "passed": 0, "failed": 0} for name in names}
    judged_here = dict.fromkeys(names, 0)  # verdicts given on evaluated cases: who judged the most
    for row in counts:
        name = names[row["judge"]]
        for key in ("n", "passed", "failed"):
            totals[name][key] += int(row[key])
        if row["evaluated"]:
            judged_here[name] += int(row["passed"]) + int(row["failed"])
    figures: dict[str, dict[str, Any]] = {}
    for name in names:
        n, passed, failed = totals[name]["n"], totals[name]["passed"], totals[name]["failed"]
        rate = proportion(passed, passed + failed)
        figures[name] = {"n": n, "passed": passed, "failed": failed, "errors": n - passed - failed}
        figures[name].update(pass_rate=rate[0], pass_rate_ci=rate[1])
    here = {names[row["judge"]] for row in counts if row["evaluated"]}  # the judges of the evaluated cases
    paired, not_paired = paired_judges({name: judged_here[name] for name in names if name in here})
    chosen = pa.array([names.index(name) for name in paired], pa.int32())
    kept = table.filter(pc.is_in(table.column("judge"), value_set=chosen))  # the paired judges' verdicts alone
    pairs = [
        {
            "judges": [names[row["first"]], names[row["second"]]],
            **agreement_of(int(row["n"]), int(row["agree"]), int(row["first_passed"]), int(row["second_passed"])),
        }
        for row in rows_of(JUDGE_PAIRS, {"verdicts": kept})
    ]
    return {"judges": figures, "judge_agreement": pairs, "judges_not_paired": not_paired}


def judge_figures(frame: pd.DataFrame, error_cases: Optional[pd.DataFrame] = None) -> dict[str, dict[str, Any]]:
    """Each judge's figures (``judges_figures``)."""
    return judges_figures(frame, error_cases)["judges"]


def kappa_of(n: int, agree: int, first_passed: int, second_passed: int) -> Optional[float]:
    """Cohen's kappa of two raters' pass/fail verdicts on ``n`` cases, ``agree`` of them alike, each rater passing
    the counts given; None where chance agreement is total (both raters constant), which leaves kappa undefined."""
    if n == 0:
        return None
    observed = agree / n
    pa, pb = first_passed / n, second_passed / n
    expected = pa * pb + (1 - pa) * (1 - pb)
    if expected >= 1.0:
        return None
    return (observed - expected) / (1 - expected)


def agreement_of(n: int, agree: int, first_passed: int, second_passed: int) -> dict[str, Any]:
    """n, the share on which two raters agree with its Wilson interval, and Cohen's kappa (``kappa_of``)."""
    return {
        "n": n,
        "agreement": agree / n,
        "agreement_ci": wilson(agree, n),
        "kappa": kappa_of(n, agree, first_passed, second_passed),
    }


def cohen_kappa(a: list[bool], b: list[bool]) -> Optional[float]:
    """Cohen's kappa of two raters' verdicts on the same cases (``kappa_of`` of their counts)."""
    return kappa_of(len(a), sum(1 for x, y in zip(a, b) if x == y), sum(a), sum(b))


def pair_agreement(a: list[bool], b: list[bool]) -> dict[str, Any]:
    """Two raters' verdicts on the same cases: ``agreement_of`` their counts."""
    return agreement_of(len(a), sum(1 for x, y in zip(a, b) if x == y), sum(a), sum(b))


JUDGE_PAIR_CAP = 12  # judges whose every pair is compared (66 pairs); a run with more names pairs the busiest 12


def paired_judges(judged: dict[str, int]) -> tuple[list[str], int]:
    """The judges whose agreement is computed pair by pair, sorted by name, and how many more judges are not paired,
    of the judges of the evaluated cases with how many of them each judged. Every judge up to ``JUDGE_PAIR_CAP``;
    beyond it the ``JUDGE_PAIR_CAP`` that judged the most cases (ties by name), so that the pairs, and the work and
    output they take, stay bounded whatever number of judge names a run holds (issue 30: 2,000 names made 2
    million pairs). Each judge's own figures cover every judge."""
    if len(judged) <= JUDGE_PAIR_CAP:
        return sorted(judged), 0
    busiest = sorted(judged, key=lambda name: (-judged[name], name))[:JUDGE_PAIR_CAP]
    return sorted(busiest), len(judged) - JUDGE_PAIR_CAP


DISAGREEMENT_COLUMNS = ("verdicts", "risk_score", "probe_id", "category", "severity", "passed")  # what it reads


def disagreements(frame: pd.DataFrame, limit: int = 500) -> tuple[list[str], list[dict[str, Any]]]:
    """The judges, and the cases on which at least two of them gave different verdicts (worst first by risk):
    probe id, category, severity, the primary verdict, and each judge's verdict with its explanation."""
    names = sorted(judge_rows(frame))
    rows: list[dict[str, Any]] = []
    if len(names) < 2:
        return names, rows
    # the split cases' positions ordered, then each case's fields taken by position: a copy of the split rows (half
    # of a million garak cases, every column) and a sorted copy of that were the peak of an export
    values = frame["verdicts"].to_numpy(dtype=object)
    at = np.flatnonzero(_split(values, names))
    keys = pd.DataFrame(
        {"risk_score": frame["risk_score"].to_numpy()[at], "probe_id": frame["probe_id"].to_numpy()[at]}
    )
    ordered = at[keys.sort_values(["risk_score", "probe_id"], ascending=[False, True], kind="stable").index.to_numpy()]
    probe_id, category, severity, passed = (
        frame[name].to_numpy(dtype=object) for name in ("probe_id", "category", "severity", "passed")
    )
    for i in ordered.tolist():
        verdicts = values[i] or {}
        given = {n: verdicts[n] for n in names if n in verdicts}
        decided = {getattr(v, "passed", None) for v in given.values()} - {None}
        if len(decided) < 2:
            continue
        record: dict[str, Any] = {
            "probe_id": probe_id[i],
            "category": category[i],
            "severity": str(severity[i]),
            "primary": "passed" if passed[i] else "failed",
        }
        for name in names:
            verdict = given.get(name)
            if verdict is None or verdict.passed is None:
                record[name] = "not judged"
            else:
                record[name] = ("passed" if verdict.passed else "failed") + (
                    f": {verdict.explanation}" if verdict.explanation else ""
                )
        rows.append(record)
        if len(rows) >= limit:
            break
    return names, rows


def _split(values: np.ndarray, names: list[str]) -> np.ndarray:
    """Which cases' verdicts hold two different decided verdicts of ``names``' judges: decided once per distinct
    mapping object (the case frame shares one among the cases whose verdicts are the same)."""
    codes, first = by_identity(values)
    split = np.zeros(len(first), dtype=bool)
    for code, at in zip(codes[first].tolist(), first.tolist()):
        verdicts = values[at] or {}
        split[code] = len({getattr(verdicts[n], "passed", None) for n in names if n in verdicts} - {None}) > 1
    return split[codes]


def judge_provenance(config: Any) -> Optional[str]:
    """The sentence saying which RunLens judge model judged the run (``run.config.judge``, written by ``score``):
    its name, version and training data's fingerprint, as the file gives them (shown as text, never markup); None
    when the run names none or names it in another shape."""
    judge = config.get("judge") if isinstance(config, dict) else None
    if not isinstance(judge, dict):
        return None
    name, version, data = (judge.get(k) for k in ("name", "version", "training_data"))
    if not all(isinstance(v, str) for v in (name, version, data)):
        return None
    return f"{name} version {version}, trained on the data with fingerprint {data} (docs/scoring.md says what it is)."
