"""garak's hit log (``*.hitlog.jsonl``) read alone, as the fallback when the report is missing: a run of its hits.
docs/importers.md says what it can and cannot tell."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Optional

from reporting.format.problems import Problem
from reporting.format.strict_json import strict_line
from reporting.importers.garak import DEFAULT_SEVERITY
from reporting.importers.garak_attacks import prefixes
from reporting.importers.garak_lines import _conversations, _prompt_text, _text, first_object
from reporting.textsafe import file_name

HITLOG_KEYS = ("attempt_id", "detector", "probe", "score")
HITLOG_NOTE = (
    "garak hit log read alone: it lists only the failing generations (no report.jsonl was given), so every case "
    "here failed and every rate is over the hits alone, not over the run. The report.jsonl garak wrote beside it "
    "has the whole run."
)


def looks_like_hitlog(data: bytes) -> bool:
    """garak's hit log: JSON Lines, one object per (attempt, detector, generation) that hit. Told by its first
    line read whole, however long (a multi-turn hit holds the whole conversation: 11 KB and more), never by a
    fixed head: the keys come after the prompt and the output."""
    text = data.lstrip()
    if not text.startswith(b"{"):
        return False
    end = text.find(b"\n")
    end = len(text) if end < 0 else end
    if not all(text.find(b'"%s"' % k.encode(), 0, end) >= 0 for k in HITLOG_KEYS):  # in place: no copy of the line
        return False
    first = first_object(text[:end])
    return first is not None and "entry_type" not in first and all(k in first for k in HITLOG_KEYS)


def read_hitlog(lines: Iterable[bytes], label: str) -> tuple[Optional[dict[str, Any]], list[str], list[Problem]]:
    """A hit log alone as a run of its hits: one case per attempt x generation, each detector that hit a verdict.
    Category: the probe's module (a hit log has no intent or tags); severity: the default tier."""
    problems: list[Problem] = []
    cases: dict[tuple[str, str, int], dict[str, Any]] = {}
    seqless: dict[tuple[str, str, int], str] = {}  # hits of attempts without seq (multi-turn probes): their uuid
    run_id = model = None
    for number, raw in enumerate(lines, start=1):
        if not raw.strip():
            continue
        hit, errors = strict_line(label, raw, number)
        if errors:
            problems.extend(errors)
            continue
        if not isinstance(hit, dict) or not isinstance(hit.get("attempt_idx"), int):
            problems.append(Problem(label, f"line {number}", "not a hit log line (no attempt_idx)"))
            continue
        run_id, model = run_id or hit.get("run_id"), model or hit.get("generator")
        probe, seq, idx = str(hit.get("probe") or "unknown"), hit.get("attempt_seq"), hit["attempt_idx"]
        score = hit.get("score")
        score = float(score) if isinstance(score, (int, float)) and not isinstance(score, bool) else 1.0
        detector = str(hit.get("detector") or "detector").removeprefix("detector.")
        key = (str(hit.get("attempt_id")), probe, idx)
        case = cases.get(key)
        if case is None:
            found = hit.get("triggers")
            triggers = found if isinstance(found, list) else []
            if seq is None:
                seqless[key] = key[0]
            case = cases[key] = {
                "probe_id": f"{probe}#{seq}.{idx}",
                "probe_group": f"{probe}#{seq}",
                "plugin": probe,
                "strategy": probe.split(".")[0] or "garak",
                "source_id": f"{key[0]}.{idx}",
                "category": probe.split(".")[0] or "garak",
                "severity": DEFAULT_SEVERITY,
                "task": hit.get("goal"),
                "probe_input": _prompt_text(hit.get("prompt")),
                "response": _text(hit.get("output")),
                "passed": False,
                "risk_score": 0.0,
                "verdicts": {},
                "detected_failure_modes": [f"trigger:{t}" for t in triggers if isinstance(t, str)],
            }
            _conversation(case, hit)
        case["verdicts"][detector] = {"passed": False, "score": score, "explanation": f"{detector}={score}: hit"}
        case["risk_score"] = min(1.0, max(case["risk_score"], score))
        case["detected_failure_modes"].insert(0, detector)
    if not cases:
        problems.append(Problem(label, "$", "the garak hit log holds no hit"))
        return None, [HITLOG_NOTE], problems
    short = prefixes(seqless.values())
    for key, uuid in seqless.items():  # named as the report names them: the uuid's short prefix
        probe, idx = key[1], key[2]
        cases[key].update(probe_id=f"{probe}#{short[uuid]}.{idx}", probe_group=f"{probe}#{short[uuid]}")
    for case in cases.values():
        case["explanation"] = "; ".join(v["explanation"] for v in case["verdicts"].values())
    run = {
        "run_id": str(run_id or file_name(label)),
        "model": str(model or "unknown"),
        "suite": "garak",
        "notes": HITLOG_NOTE,
        "source": {
            "tool": "garak",
            "tool_version": None,
            "format_version": "hitlog.jsonl",
            "file": file_name(label),
        },
    }
    return {"schema_version": 3, "run": run, "cases": list(cases.values())}, [HITLOG_NOTE], problems


def _conversation(case: dict[str, Any], hit: dict[str, Any]) -> None:
    """A multi-turn hit's conversation: the prompt's turns and the output, as the report's case has it."""
    found = _conversations({"prompt": hit.get("prompt"), "outputs": [hit.get("output")]})
    if found and found[0]:
        case["messages"], judged, in_file = found[0]
        if judged is not None:
            case["judged_turn"] = judged
        if in_file is not None:
            case["turns_in_file"] = in_file
