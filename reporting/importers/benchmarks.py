"""Benchmark result files as RunLens runs, with the benchmark's own judge as the primary verdict:
JailbreakBench attack artifacts and HarmBench completions (docs/importers.md).

- JailbreakBench (``{"parameters", "jailbreaks": [...]}``): one case per behaviour; passed = not ``jailbroken``
  (the benchmark's judge), ``jailbroken_llama_guard1`` a second judge where present; a behaviour with no prompt
  or response was not attempted: an error, never a pass. ``import jailbreakbench`` still scores the responses
  with RunLens's rules instead (docs/scoring.md).
- HarmBench (``{behavior_id: [{"test_case", "generation", "label"}]}``): one case per test case; label 0 passed,
  1 failed (the classifier saw the behaviour), -1 an error (the classifier's output did not parse). With the
  behaviours CSV (``import --behaviors harmbench_behaviors_text_all.csv``), each case gets its behaviour's
  text as the task and its SemanticCategory as category, tiered by ``HARMBENCH_SEVERITY``.
"""

from __future__ import annotations

import csv
import io
import json
from typing import Any, Optional

from reporting.format.problems import Problem
from reporting.format.strict_json import strict_loads
from reporting.textsafe import file_name

# The severity RunLens gives JailbreakBench's ten categories (the benchmark has none): harm to people and systems
# first. The same table `import jailbreakbench` uses.
JBB_SEVERITY = {
    "Physical harm": "critical",
    "Malware/Hacking": "critical",
    "Sexual/Adult content": "high",
    "Privacy": "high",
    "Fraud/Deception": "high",
    "Economic harm": "high",
    "Harassment/Discrimination": "high",
    "Disinformation": "medium",
    "Expert advice": "medium",
    "Government decision-making": "medium",
}


# The severity RunLens gives HarmBench's seven semantic categories (the benchmark has none).
HARMBENCH_SEVERITY = {
    "chemical_biological": "critical",
    "cybercrime_intrusion": "high",
    "illegal": "high",
    "harmful": "high",
    "harassment_bullying": "medium",
    "misinformation_disinformation": "medium",
    "copyright": "low",
}
BEHAVIOR_COLUMNS = ("Behavior", "SemanticCategory", "BehaviorID")


def read_behaviors(data: bytes, label: str) -> tuple[dict[str, dict[str, str]], list[Problem]]:
    """HarmBench's behaviours CSV (Behavior, FunctionalCategory, SemanticCategory, Tags, ContextString,
    BehaviorID): BehaviorID -> {behavior, category, context}."""
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        return {}, [Problem(label, "$", f"not UTF-8 text: cannot decode byte at offset {exc.start}")]
    rows = csv.DictReader(io.StringIO(text, newline=""))
    missing = [c for c in BEHAVIOR_COLUMNS if c not in (rows.fieldnames or [])]
    if missing:
        return {}, [Problem(label, "header", f"a HarmBench behaviours CSV needs the column(s) {', '.join(missing)}")]
    table: dict[str, dict[str, str]] = {}
    problems: list[Problem] = []
    try:
        for line, row in enumerate(rows, start=2):
            key = (row.get("BehaviorID") or "").strip()
            if not key:
                problems.append(Problem(label, f"line {line}.BehaviorID", "is empty"))
                continue
            table[key] = {
                "behavior": row.get("Behavior") or "",
                "category": (row.get("SemanticCategory") or "").strip() or "harmbench",
                "context": row.get("ContextString") or "",
            }
    except csv.Error as exc:
        problems.append(Problem(label, f"line {rows.line_num}", f"not valid CSV: {exc}"))
    return table, problems


def looks_like_jailbreakbench(value: Any) -> bool:
    return isinstance(value, dict) and isinstance(value.get("jailbreaks"), list) and "parameters" in value


def looks_like_harmbench(value: Any) -> bool:
    if not isinstance(value, dict) or not value or "cases" in value:
        return False
    lists = [v for v in value.values() if isinstance(v, list)]
    return bool(lists) and all(
        isinstance(item, dict) and "generation" in item and "label" in item for v in lists for item in v
    )


def _source(tool: str, label: str, version: Optional[str] = None) -> dict[str, Any]:
    return {"tool": tool, "tool_version": version, "format_version": None, "file": file_name(label)}


def read_jailbreakbench(value: dict[str, Any], label: str) -> tuple[dict[str, Any], list[str], list[Problem]]:
    params = value["parameters"] if isinstance(value.get("parameters"), dict) else {}
    cases, problems, missing = [], [], 0
    for i, record in enumerate(value["jailbreaks"]):
        if not isinstance(record, dict) or not isinstance(record.get("goal"), str):
            problems.append(Problem(label, f"jailbreaks[{i}]", "must be an object with a 'goal'"))
            continue
        category = str(record.get("category") or "unknown")
        index = record.get("index", i)
        case: dict[str, Any] = {
            "probe_id": f"JBB-{index}:{record.get('behavior') or ''}".rstrip(":"),
            "category": category,
            "severity": JBB_SEVERITY.get(category, "medium"),
            "task": record["goal"],
            "probe_input": record.get("prompt"),
            "response": record.get("response"),
            "source_id": f"jailbreaks[{i}]",
        }
        verdicts = {}
        if isinstance(record.get("jailbroken"), bool):
            verdicts["jailbreakbench"] = {"passed": not record["jailbroken"], "score": float(record["jailbroken"])}
        if isinstance(record.get("jailbroken_llama_guard1"), bool):
            guard = record["jailbroken_llama_guard1"]
            verdicts["llama_guard1"] = {"passed": not guard, "score": float(guard)}
        if not record.get("prompt") or not record.get("response"):
            missing += 1
            case.update(passed=None, risk_score=None, error="not attempted: the artifact has no prompt or response")
        elif "jailbreakbench" in verdicts:
            jailbroken = bool(record["jailbroken"])
            case.update(passed=not jailbroken, risk_score=float(jailbroken))
            case["detected_failure_modes"] = ["jailbroken"] if jailbroken else []
        else:
            case.update(passed=None, risk_score=None, error="the record has no 'jailbroken' verdict")
        if verdicts:
            case["verdicts"] = verdicts
        cases.append(case)
    method, model = params.get("method", "unknown"), params.get("model", "unknown")
    warnings = (
        [f"JailbreakBench: {missing} behaviour(s) were not attempted (no prompt or response)."] if missing else []
    )
    run: dict[str, Any] = {
        "run_id": f"jailbreakbench-{method}-{file_name(label).split('.')[0]}",
        "model": str(model),
        "suite": f"JailbreakBench/{method}/{params.get('attack_type', 'unknown')}",
        "source": _source("jailbreakbench", label),
    }
    date = params.get("evaluation_date")
    if isinstance(date, str):
        run["created_at"] = date + "T00:00:00Z" if len(date) == 10 else date
    stated = params.get("total_number_of_jailbreaks")
    ours = sum(1 for c in cases if c.get("passed") is False)
    if isinstance(stated, int) and stated != ours:
        guard = sum(1 for r in value["jailbreaks"] if isinstance(r, dict) and r.get("jailbroken_llama_guard1"))
        warnings.append(
            f"JailbreakBench's header counts {stated} jailbreaks; the rows' 'jailbroken' flags give {ours}"
            + (f" (the llama_guard1 flags give {guard})" if guard else "")
            + ": the figures here are the rows'."
        )
    if warnings:
        run["notes"] = " ".join(warnings)
    document = {"schema_version": 2, "run": run, "cases": cases, "tool_figures": {"jailbreakbench": params}}
    return document, warnings, problems


def read_harmbench(
    value: dict[str, Any], label: str, behaviors: Optional[dict[str, dict[str, str]]] = None
) -> tuple[dict[str, Any], list[str], list[Problem]]:
    cases, problems, skipped, unknown = [], [], [], []
    for behavior, items in value.items():
        if not isinstance(items, list):
            skipped.append(str(behavior))  # forks add summary keys such as "Average_ASR"
            continue
        known = (behaviors or {}).get(str(behavior))
        if behaviors is not None and known is None:
            unknown.append(str(behavior))
        category = known["category"] if known else "harmbench"
        for i, item in enumerate(items):
            label_value = item.get("label")
            case: dict[str, Any] = {
                "probe_id": f"{behavior}#{i}",
                "probe_group": str(behavior),
                "category": category,
                "severity": HARMBENCH_SEVERITY.get(category, "medium"),
                "task": known["behavior"] if known and known["behavior"] else str(behavior),
                "probe_input": item.get("test_case") if isinstance(item.get("test_case"), str) else None,
                "response": item.get("generation") if isinstance(item.get("generation"), str) else None,
            }
            if label_value in (0, 1) and not isinstance(label_value, bool):
                case.update(passed=label_value == 0, risk_score=float(label_value))
                case["verdicts"] = {"harmbench_classifier": {"passed": label_value == 0, "score": float(label_value)}}
            elif label_value == -1:
                case.update(passed=None, risk_score=None, error="the HarmBench classifier's output did not parse")
            else:
                problems.append(Problem(label, f"{behavior}[{i}].label", "must be 1, 0 or -1", label_value))
                continue
            cases.append(case)
    warnings = [f"HarmBench: summary key(s) skipped: {', '.join(skipped)}."] if skipped else []
    if unknown:
        shown = ", ".join(unknown[:10]) + (f" and {len(unknown) - 10} more" if len(unknown) > 10 else "")
        warnings.append(
            f"HarmBench: {len(unknown)} behaviour(s) not in the behaviours CSV kept as 'harmbench': {shown}."
        )
    stem = file_name(label).split(".")[0]
    run: dict[str, Any] = {
        "run_id": f"harmbench-{stem}",
        "model": stem,
        "suite": "HarmBench",
        "source": _source("harmbench", label),
        "notes": " ".join(
            warnings
            + ["HarmBench files name the model only in their path."]
            + ([] if behaviors is not None else ["Categories need the behaviours CSV (import --behaviors CSV)."])
        ),
    }
    return {"schema_version": 2, "run": run, "cases": cases}, warnings, problems


class Refused:
    """A file that is a benchmark's by its shape but that the strict decoder refused: its problems."""

    def __init__(self, problems: list[Problem]):
        self.problems = problems


def parse_benchmark(data: bytes, label: str = "") -> Optional[tuple[str, Any]]:
    """("jailbreakbench" or "harmbench", the parsed JSON) when the file is one; None otherwise."""
    window = data[: 1 << 16]
    if data.lstrip()[:1] != b"{" or (b'"jailbreaks"' not in window and b'"generation"' not in window):
        return None
    value, problems = strict_loads(label, data)
    if problems:  # a benchmark file by its shape that the strict decoder refuses: its problems, never a crash
        try:
            value = json.loads(data)
        except (ValueError, RecursionError):
            return None  # not JSON at all: the run reader names what is wrong with it
        for kind, looks in (("jailbreakbench", looks_like_jailbreakbench), ("harmbench", looks_like_harmbench)):
            if looks(value):
                return kind, Refused(problems)
        return None
    if looks_like_jailbreakbench(value):
        return "jailbreakbench", value
    if looks_like_harmbench(value):
        return "harmbench", value
    return None


def read_benchmark(
    kind: str, value: Any, label: str, behaviors: Optional[dict[str, dict[str, str]]] = None
) -> tuple[Optional[dict[str, Any]], list[str], list[Problem]]:
    """A parsed JailbreakBench artifact or HarmBench completions file (``parse_benchmark``) as a run."""
    if isinstance(value, Refused):
        return None, [], [Problem(label, p.path, p.message, p.got) for p in value.problems]
    if kind == "jailbreakbench":
        return read_jailbreakbench(value, label)
    return read_harmbench(value, label, behaviors)
