"""Hierarchical rubric scorecards (docs/rubrics.md, "Scorecards"): benchmarks scored from judge verdicts, rubrics
aggregated by weighted average, minimum or maximum, with hard and threshold gates."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional, Union

from reporting.format.problems import InputError

METHODS = ("WEIGHTED_AVERAGE", "MINIMUM", "MAXIMUM")
CRITICALITIES = ("hard_gate", "threshold_gate")
WEIGHT_TOLERANCE = 0.001
GUIDELINE_KEYS = (
    "focus_areas",
    "acceptable_deviations",
    "critical_requirements",
    "evidence_requirements",
    "special_instructions",
)


class RubricError(InputError):
    """A rubric, benchmark or verdict file that cannot be used; one line per problem."""


@dataclass
class Benchmark:
    code: str
    label: str
    weight: float
    threshold: float
    criticality: str = "threshold_gate"
    evaluator_type: Optional[str] = None


@dataclass
class Rubric:
    code: str
    label: str
    weight: float
    aggregation_method: str
    passing_threshold: float
    description: str = ""
    evaluation_guidelines: dict[str, Any] = field(default_factory=dict)
    benchmarks: list[Benchmark] = field(default_factory=list)
    sub_rubrics: list[Rubric] = field(default_factory=list)


# A file to read: a path, or (label, bytes) held in memory (an upload never becomes a path).
Source = Union[str, Path, tuple[str, bytes]]


def source_label(source: Source) -> str:
    from reporting.textsafe import printable

    return printable(source[0]) if isinstance(source, tuple) else str(source)


def _read_yaml(path: Source, problems: list[str]) -> Any:
    from reporting.format.safe_yaml import YamlProblem, read_yaml

    try:
        return read_yaml(path)
    except YamlProblem as exc:
        problems.append(str(exc))
    return None


def _number(
    value: Any, where: str, problems: list[str], default: Optional[float] = None, low: float = 0.0, high: float = 1.0
) -> float:
    if value is None and default is not None:
        return default
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        problems.append(f"{where}: must be a number (got {value!r})")
        return default if default is not None else 0.0
    if not low <= value <= high:
        problems.append(f"{where}: must be between {low:g} and {high:g} (got {value!r})")
    return float(value)


def _benchmark(entry: Any, where: str, definitions: dict[str, dict], problems: list[str]) -> Optional[Benchmark]:
    if isinstance(entry, str):
        if entry not in definitions:
            problems.append(
                f"{where}: benchmark {entry!r} is referenced by code but not defined "
                "(give it inline or in a --benchmarks file)"
            )
            return None
        entry = {"code": entry, **definitions[entry]}
    if not isinstance(entry, dict) or not isinstance(entry.get("code"), str):
        problems.append(f"{where}: a benchmark is a code or a mapping with a 'code'")
        return None
    criticality = entry.get("criticality", "threshold_gate")
    if criticality not in CRITICALITIES:
        problems.append(f"{where}.criticality: must be hard_gate or threshold_gate (got {criticality!r})")
    return Benchmark(
        code=entry["code"],
        label=str(entry.get("label", entry["code"])),
        weight=_number(entry.get("weight"), f"{where}.weight", problems),
        threshold=_number(entry.get("threshold"), f"{where}.threshold", problems),
        criticality=criticality,
        evaluator_type=entry.get("evaluator_type"),
    )


def _not_plain(value: Any, where: str) -> Optional[str]:
    """Why a free-form value is not plain data (text, a finite number, true, false, null, or a list or a mapping with
    text keys of them), or None: YAML also gives dates, bytes, sets, non-finite numbers and keys of any kind."""
    from reporting.format.strict_json import is_text

    stack = [(where, value)]
    while stack:
        at, item = stack.pop()
        if isinstance(item, str):
            if not is_text(item):
                return f"{at}: not valid Unicode text (a lone surrogate)"
        elif isinstance(item, float):
            if not math.isfinite(item):
                return f"{at}: must be a finite number (got {item!r})"
        elif isinstance(item, list):
            stack.extend((f"{at}[{i}]", sub) for i, sub in enumerate(item))
        elif isinstance(item, dict):
            for key, sub in item.items():
                if not isinstance(key, str) or not is_text(key):
                    return f"{at}: keys must be text (got {ascii(key)[:80]})"
                stack.append((f"{at}.{key}", sub))
        elif item is not None and not isinstance(item, (bool, int)):
            kind = type(item).__name__
            return f"{at}: must be text, a number, true, false, null, or a list or mapping of them (got a {kind})"
    return None


def _rubric(data: Any, where: str, definitions: dict[str, dict], problems: list[str]) -> Optional[Rubric]:
    if not isinstance(data, dict):
        problems.append(f"{where}: a rubric is a mapping")
        return None
    for key in ("code", "label"):
        if not isinstance(data.get(key), str) or not data[key]:
            problems.append(f"{where}.{key}: required, a string")
    method = data.get("aggregation_method", "WEIGHTED_AVERAGE")
    method = method.split(".")[-1] if isinstance(method, str) else method  # accept AggregationMethod.X
    if method not in METHODS:
        problems.append(f"{where}.aggregation_method: must be one of {', '.join(METHODS)} (got {method!r})")
    guidelines = data.get("evaluation_guidelines") or {}
    if not isinstance(guidelines, dict) or set(guidelines) - set(GUIDELINE_KEYS):
        problems.append(f"{where}.evaluation_guidelines: keys must be among {', '.join(GUIDELINE_KEYS)}")
        guidelines = {}
    not_plain = _not_plain(guidelines, f"{where}.evaluation_guidelines")
    if not_plain is not None:  # shown in the report as JSON: YAML's dates, bytes, sets and NaN have no JSON
        problems.append(not_plain)
        guidelines = {}
    rubric = Rubric(
        code=str(data.get("code", "?")),
        label=str(data.get("label", "")),
        weight=_number(data.get("weight"), f"{where}.weight", problems, default=1.0),
        aggregation_method=method if method in METHODS else "WEIGHTED_AVERAGE",
        passing_threshold=_number(data.get("passing_threshold"), f"{where}.passing_threshold", problems, default=0.80),
        description=str(data.get("description") or "").strip(),
        evaluation_guidelines=guidelines,
    )
    has_benchmarks, has_subs = bool(data.get("benchmarks")), bool(data.get("sub_rubrics"))
    if has_benchmarks == has_subs:
        problems.append(f"{where}: give either 'benchmarks' or 'sub_rubrics' (exactly one, not empty)")
        return rubric
    if has_benchmarks:
        for i, entry in enumerate(data["benchmarks"]):
            bench = _benchmark(entry, f"{where}.benchmarks[{i}]", definitions, problems)
            if bench:
                rubric.benchmarks.append(bench)
        weights = [b.weight for b in rubric.benchmarks]
    else:
        for i, entry in enumerate(data["sub_rubrics"]):
            sub = _rubric(entry, f"{where}.sub_rubrics[{i}]", definitions, problems)
            if sub:
                rubric.sub_rubrics.append(sub)
        weights = [r.weight for r in rubric.sub_rubrics]
    if weights and abs(sum(weights) - 1.0) > WEIGHT_TOLERANCE:
        problems.append(
            f"{where}: the weights of {rubric.code}'s {'benchmarks' if has_benchmarks else 'sub-rubrics'} "
            f"sum to {sum(weights):.4f}, not 1 (tolerance {WEIGHT_TOLERANCE})"
        )
    return rubric


def load_rubric(path: Source, benchmarks_path: Optional[Source] = None) -> Rubric:
    problems: list[str] = []
    definitions: dict[str, dict] = {}
    if benchmarks_path is not None:
        defs = _read_yaml(benchmarks_path, problems)
        entries = defs.get("benchmarks", defs) if isinstance(defs, dict) else defs
        if isinstance(entries, dict):
            entries = [{"code": k, **(v or {})} for k, v in entries.items()]
        if isinstance(entries, list):
            for i, entry in enumerate(entries):
                if isinstance(entry, dict) and isinstance(entry.get("code"), str):
                    definitions[entry["code"]] = {k: v for k, v in entry.items() if k != "code"}
                else:
                    problems.append(f"{source_label(benchmarks_path)}: benchmarks[{i}]: a mapping with a 'code'")
        elif defs is not None:
            problems.append(
                f"{source_label(benchmarks_path)}: $: expected a list (or mapping) of benchmark definitions"
            )
    data = _read_yaml(path, problems)
    rubric = None
    if data is not None or not problems:
        rubric = _rubric(data, f"{source_label(path)}: $", definitions, problems)
    if problems or rubric is None:
        raise RubricError(problems)
    return rubric


@dataclass
class Verdict:
    benchmark: str
    case_id: str
    passed: bool
    score: float
    uncertain: bool
    reason: str = ""
    confidence: Optional[float] = None
    line: int = 0
    given_score: bool = False
    where: str = ""


def load_verdicts(path: Source) -> list[Verdict]:
    """Judge verdicts, one JSON object a line. A (benchmark, case_id) pair given twice is a problem: counting
    copies would let one verdict outvote the others."""
    from reporting.format.strict_json import read_jsonl_file

    label = source_label(path)
    rows, read_problems = read_jsonl_file(path if isinstance(path, tuple) else Path(path), "verdict")
    problems, verdicts = [str(p) for p in read_problems], []
    first_line: dict[tuple[str, str], int] = {}
    for number, row in rows:
        where = f"{label}: line {number}"
        bad = [k for k in ("benchmark", "case_id") if not isinstance(row.get(k), str)]
        if not isinstance(row.get("pass"), bool):
            bad.append("pass")
        if bad:
            problems.append(
                f"{where}: {', '.join(bad)}: required ({'strings' if 'pass' not in bad else 'pass is true or false'})"
            )
            continue
        pair = (row["benchmark"], row["case_id"])
        if pair in first_line:
            problems.append(
                f"{where}: duplicate verdict for benchmark {row['benchmark']!r}, case {row['case_id']!r}"
                f" (first on line {first_line[pair]}); each case is judged once per benchmark"
            )
            continue
        first_line[pair] = number
        uncertain = bool(row.get("uncertain", False))
        # An uncertain verdict counts as a fail, as the judge prompt spec says.
        if uncertain:
            score = 0.0
        elif row.get("score") is not None:
            score = _number(row["score"], f"{where}.score", problems)
        else:
            score = 1.0 if row["pass"] else 0.0
        verdicts.append(
            Verdict(
                row["benchmark"],
                row["case_id"],
                row["pass"] and not uncertain,
                score,
                uncertain,
                str(row.get("reason", "")),
                row.get("confidence"),
                number,
                row.get("score") is not None and not uncertain,
                where,
            )
        )
    if problems:
        raise RubricError(problems)
    return verdicts


def _aggregate(method: str, scores: list[float], weights: list[float]) -> float:
    if method == "MINIMUM":
        return min(scores)
    if method == "MAXIMUM":
        return max(scores)
    return sum(s * w for s, w in zip(scores, weights))


def score_rubric(rubric: Rubric, verdicts: list[Verdict]) -> dict[str, Any]:
    """The scorecard of a rubric: scores, gates and what decided, recursively."""
    by_benchmark: dict[str, list[Verdict]] = {}
    for verdict in verdicts:
        by_benchmark.setdefault(verdict.benchmark, []).append(verdict)
    missing = sorted({b.code for b in _all_benchmarks(rubric)} - set(by_benchmark))
    if missing:
        raise RubricError([f"verdicts: no verdict for benchmark(s) {', '.join(missing)}"])
    contradictions: list[str] = []
    for bench in _all_benchmarks(rubric):
        for v in by_benchmark[bench.code]:
            reaches = v.score >= bench.threshold - 1e-12
            if v.given_score and v.passed != reaches:
                contradictions.append(
                    f"{v.where}: the verdict contradicts itself: pass is {'true' if v.passed else 'false'} but score "
                    f"{v.score:g} is "
                    f"{'below' if not reaches else 'at or above'} benchmark {bench.code}'s threshold "
                    f"{bench.threshold:g}"
                )
    if contradictions:
        contradictions.sort(key=lambda line: int(line.rsplit("line ", 1)[1].split(":")[0]))
        raise RubricError(contradictions)
    return _score(rubric, by_benchmark)


def _all_benchmarks(rubric: Rubric) -> list[Benchmark]:
    return rubric.benchmarks + [b for sub in rubric.sub_rubrics for b in _all_benchmarks(sub)]


def _score(rubric: Rubric, by_benchmark: dict[str, list[Verdict]]) -> dict[str, Any]:
    benchmarks: list[dict[str, Any]] = []
    subs: list[dict[str, Any]] = []
    failed_hard_gates: list[str] = []
    if rubric.benchmarks:
        for bench in rubric.benchmarks:
            rows = by_benchmark[bench.code]
            score = sum(v.score for v in rows) / len(rows)
            passed = score >= bench.threshold - 1e-12
            if bench.criticality == "hard_gate" and not passed:
                failed_hard_gates.append(bench.code)
            benchmarks.append(
                {
                    "code": bench.code,
                    "label": bench.label,
                    "score": score,
                    "n": len(rows),
                    "uncertain": sum(v.uncertain for v in rows),
                    "weight": bench.weight,
                    "threshold": bench.threshold,
                    "criticality": bench.criticality,
                    "passed": passed,
                }
            )
        scores, weights = [b["score"] for b in benchmarks], [b["weight"] for b in benchmarks]
    else:
        for sub in rubric.sub_rubrics:
            result = _score(sub, by_benchmark)
            failed_hard_gates += result["failed_hard_gates"]
            subs.append(result)
        scores, weights = [s["score"] for s in subs], [s["weight"] for s in subs]
    score = _aggregate(rubric.aggregation_method, scores, weights)
    meets = score >= rubric.passing_threshold - 1e-12
    passed = meets and not failed_hard_gates
    decided_by = None if passed else (failed_hard_gates[0] if failed_hard_gates else "threshold")
    return {
        "code": rubric.code,
        "label": rubric.label,
        "score": round(score, 10),
        "passed": passed,
        "passing_threshold": rubric.passing_threshold,
        "aggregation_method": rubric.aggregation_method,
        "weight": rubric.weight,
        "decided_by": decided_by,
        "failed_hard_gates": failed_hard_gates,
        "description": rubric.description,
        "evaluation_guidelines": rubric.evaluation_guidelines,
        "benchmarks": benchmarks,
        "sub_rubrics": subs,
    }


def scorecard(rubric_path, verdicts_path, benchmarks_path=None) -> dict[str, Any]:
    return score_rubric(load_rubric(rubric_path, benchmarks_path), load_verdicts(verdicts_path))


def scorecard_gate(rubric_path, verdicts_path, benchmarks_path=None) -> dict[str, Any]:
    """A CI gate: the rubric's scorecard must pass."""
    card = scorecard(rubric_path, verdicts_path, benchmarks_path)
    why = "" if card["passed"] else f" (decided by {card['decided_by']})"
    return {
        "gate": f"rubric {card['code']}",
        "holds": card["passed"],
        "value": card["score"],
        "limit": card["passing_threshold"],
        "line": f"rubric {card['code']}: {card['score']:.3f} >= {card['passing_threshold']:.3f} required{why}",
    }
