"""Several judges on one run: each judge's verdicts (garak detectors, promptfoo assertions, Inspect scorers,
RunLens's own rules) counted like the primary verdict, and how far each pair of judges agrees.

A case's ``verdicts`` maps a judge's name to ``{passed, score, explanation}``; ``passed`` null means that judge
did not judge the case. Only evaluated cases are counted (a case not evaluated has no verdict to compare).
"""

from __future__ import annotations

from itertools import combinations
from typing import Any, Optional

import numpy as np
import pandas as pd

from reporting.analysis.figures import proportion
from reporting.analysis.grouping import by_identity
from reporting.analysis.stats import wilson


def verdicts_by_judge(frame: pd.DataFrame) -> dict[str, dict[Any, Optional[bool]]]:
    """judge -> {case index -> passed (None: not judged)}, over the cases that carry verdicts. A case frame shares
    one mapping among the rows whose verdicts are the same (a detector's verdicts repeat over a garak run's
    attempts), so each distinct mapping is read once and its judges' verdicts spread to its rows by whole columns;
    the judges in the order the cases first name them, each judge's cases in the frame's order."""
    by_judge: dict[str, dict[Any, Optional[bool]]] = {}
    if "verdicts" not in frame:
        return by_judge
    values = frame["verdicts"].to_numpy(dtype=object)
    # cases without verdicts (missing or empty) are skipped in C
    present = pd.notna(values) & np.fromiter(map(bool, values), dtype=bool, count=len(values))
    values, index = values[present], frame.index.to_numpy()[present]
    codes, firsts = by_identity(values)  # code k: the k-th distinct mapping to appear
    judged: dict[str, tuple[np.ndarray, list[Optional[bool]]]] = {}
    for k, verdicts in enumerate(values[firsts].tolist()):
        for name, verdict in verdicts.items():
            passed = verdict.passed if hasattr(verdict, "passed") else verdict.get("passed")
            has, said = judged.setdefault(str(name), (np.zeros(len(firsts), dtype=bool), [None] * len(firsts)))
            has[k], said[k] = True, passed
    for name, (has, said) in judged.items():
        rows = has[codes]
        by_judge[name] = dict(zip(index[rows].tolist(), np.array(said, dtype=object)[codes[rows]].tolist()))
    return by_judge


def with_error_verdicts(
    by_judge: dict[str, dict[Any, Optional[bool]]], error_cases: Optional[pd.DataFrame]
) -> dict[str, dict[Any, Optional[bool]]]:
    """The judges' verdicts with those of the cases not evaluated added (each one null: an error of that judge)."""
    if error_cases is None or not len(error_cases):
        return by_judge
    judged = {name: dict(verdicts) for name, verdicts in by_judge.items()}
    for name, verdicts in verdicts_by_judge(error_cases).items():
        judged.setdefault(name, {}).update(verdicts)
    return judged


def judge_figures(frame: pd.DataFrame, by_judge: Optional[dict[str, dict[Any, Optional[bool]]]] = None):
    """For each judge: cases it saw (``n``), passed, failed, errors (saw but did not judge), pass rate and its
    95% Wilson interval over the cases it judged. ``by_judge``: the verdicts already gathered from ``frame``."""
    result: dict[str, dict[str, Any]] = {}
    for name, verdicts in sorted((verdicts_by_judge(frame) if by_judge is None else by_judge).items()):
        values = list(verdicts.values())
        passed = sum(1 for v in values if v is True)
        failed = sum(1 for v in values if v is False)
        judged = passed + failed
        result[name] = {
            "n": len(values),
            "passed": passed,
            "failed": failed,
            "errors": len(values) - judged,
            "pass_rate": proportion(passed, judged)[0],
            "pass_rate_ci": proportion(passed, judged)[1],
        }
    return result


def cohen_kappa(a: list[bool], b: list[bool]) -> Optional[float]:
    """Cohen's kappa of two raters' pass/fail verdicts on the same cases; None where chance agreement is total
    (both raters constant), which leaves kappa undefined."""
    n = len(a)
    if n == 0:
        return None
    observed = sum(1 for x, y in zip(a, b) if x == y) / n
    pa, pb = sum(a) / n, sum(b) / n
    expected = pa * pb + (1 - pa) * (1 - pb)
    if expected >= 1.0:
        return None
    return (observed - expected) / (1 - expected)


def pair_agreement(a: list[bool], b: list[bool]) -> dict[str, Any]:
    """Two raters' verdicts on the same cases: n, the share on which they agree with its Wilson interval, and
    Cohen's kappa."""
    agree = sum(1 for x, y in zip(a, b) if x == y)
    return {"n": len(a), "agreement": agree / len(a), "agreement_ci": wilson(agree, len(a)), "kappa": cohen_kappa(a, b)}


JUDGE_PAIR_CAP = 12  # judges whose every pair is compared (66 pairs); a run with more names pairs the busiest 12


def paired_judges(by_judge: dict[str, dict[Any, Optional[bool]]]) -> tuple[list[str], int]:
    """The judges whose agreement is computed pair by pair, sorted by name, and how many more judges are not paired.
    Every judge up to ``JUDGE_PAIR_CAP``; beyond it the ``JUDGE_PAIR_CAP`` that judged the most cases (ties by name),
    so that the pairs, and the work and output they take, stay bounded whatever number of judge names a run holds
    (issue 30: 2,000 names made 2 million pairs). Each judge's own figures (``judge_figures``) cover every judge."""
    if len(by_judge) <= JUDGE_PAIR_CAP:
        return sorted(by_judge), 0
    judged = {name: sum(1 for v in verdicts.values() if v is not None) for name, verdicts in by_judge.items()}
    busiest = sorted(judged, key=lambda name: (-judged[name], name))[:JUDGE_PAIR_CAP]
    return sorted(busiest), len(by_judge) - JUDGE_PAIR_CAP


def judges_not_paired(frame: pd.DataFrame, by_judge: Optional[dict[str, dict[Any, Optional[bool]]]] = None) -> int:
    """How many judges ``judge_agreement`` leaves out of its pairs (0 up to ``JUDGE_PAIR_CAP`` judges)."""
    return paired_judges(verdicts_by_judge(frame) if by_judge is None else by_judge)[1]


def judge_agreement(
    frame: pd.DataFrame, by_judge: Optional[dict[str, dict[Any, Optional[bool]]]] = None
) -> list[dict[str, Any]]:
    """Each pair of judges with cases both judged: n, the share on which they agree, Cohen's kappa; at most
    ``JUDGE_PAIR_CAP`` judges are paired (``paired_judges``), so at most 66 pairs.
    ``by_judge``: the verdicts already gathered from ``frame``."""
    by_judge = verdicts_by_judge(frame) if by_judge is None else by_judge
    pairs = []
    for first, second in combinations(paired_judges(by_judge)[0], 2):
        a_all, b_all = by_judge[first], by_judge[second]
        common = [i for i in a_all if a_all[i] is not None and b_all.get(i) is not None]
        if common:
            pairs.append(
                {
                    "judges": [first, second],
                    **pair_agreement([bool(a_all[i]) for i in common], [bool(b_all[i]) for i in common]),
                }
            )
    return pairs


def disagreements(frame: pd.DataFrame, limit: int = 500) -> tuple[list[str], list[dict[str, Any]]]:
    """The judges, and the cases on which at least two of them gave different verdicts (worst first by risk):
    probe id, category, severity, the primary verdict, and each judge's verdict with its explanation."""
    names = sorted(verdicts_by_judge(frame))
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
