"""From probes and responses (JSON Lines) to a scored run report; the JailbreakBench importer.

Every problem in the inputs is reported with file and line number: a malformed line, a probe
without a response, a response for an unknown probe, a duplicate.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any, Optional, Union

from reporting._time import utc_stamp
from reporting.analysis.metrics import aggregate_metrics, cases_frame
from reporting.analysis.observability import observability
from reporting.format.problems import Problem, ReportError, unreadable
from reporting.format.schema import SCHEMA_VERSION, SEVERITIES, RunReport, normalize_severity
from reporting.format.severity import weighted_risk
from reporting.format.strict_json import read_jsonl_file
from reporting.importers.benchmarks import JBB_SEVERITY  # category -> tier: the benchmark reader's table
from reporting.scoring.scorer import PASS_THRESHOLD, PatternSet, builtin_patterns, evaluate_response
from reporting.sources.reading import read_run
from reporting.textsafe import file_name, path_text

PROBE_REQUIRED = ("id", "category", "severity", "task", "input")


def read_jsonl(path: Union[str, Path], kind: str) -> tuple[list[tuple[int, dict[str, Any]]], list[Problem]]:
    """(line number, object) for each good line, and a problem for each bad one (or for an empty file)."""
    rows, problems = read_jsonl_file(path, kind)
    if not rows and not problems:
        problems.append(Problem(str(path), "$", f"the file holds no {kind}s"))
    return rows, problems


def check_probe(label: str, number: int, probe: dict[str, Any]) -> list[Problem]:
    problems = []
    for key in PROBE_REQUIRED:
        if key not in probe:
            problems.append(Problem(label, f"line {number}.{key}", "required field is missing"))
        elif not isinstance(probe[key], str) or not probe[key].strip():
            problems.append(Problem(label, f"line {number}.{key}", "must be a non-empty string", probe[key]))
    severity = probe.get("severity")
    if isinstance(severity, str) and normalize_severity(severity) is None:
        problems.append(Problem(label, f"line {number}.severity", "must be one of " + ", ".join(SEVERITIES), severity))
    modes = probe.get("failure_modes", [])
    if not isinstance(modes, list) or not all(isinstance(m, str) for m in modes):
        problems.append(Problem(label, f"line {number}.failure_modes", "must be a list of strings", modes))
    return problems


def pair_inputs(probes_path, responses_path) -> tuple[list[tuple[dict, dict]], list[Problem]]:
    """Match the responses of one JSON Lines file to the probes of another; every left-out line is a problem."""
    probe_rows, problems = read_jsonl(probes_path, "probe")
    response_rows, response_problems = read_jsonl(responses_path, "response")
    pairs, pairing = pair_records(probe_rows, response_rows, str(probes_path), str(responses_path))
    return pairs, problems + response_problems + pairing


def pair_records(
    probe_rows: list[tuple[int, dict[str, Any]]],
    response_rows: list[tuple[int, dict[str, Any]]],
    probes_label: str,
    responses_label: str,
) -> tuple[list[tuple[dict, dict]], list[Problem]]:
    """(line number, record) pairs matched by probe id: a bad probe, a duplicate, a response for no probe and a
    probe without a response are each a problem, named by line."""
    problems: list[Problem] = []
    probes: dict[str, tuple[int, dict]] = {}
    for number, probe in probe_rows:
        found = check_probe(probes_label, number, probe)
        if found:
            problems += found
            continue
        pid = probe["id"]
        if pid in probes:
            problems.append(
                Problem(probes_label, f"line {number}.id", f"duplicate probe id, first on line {probes[pid][0]}", pid)
            )
            continue
        probes[pid] = (number, probe)
    responses: dict[str, tuple[int, dict]] = {}
    for number, response in response_rows:
        label = responses_label
        pid, text = response.get("probe_id"), response.get("response")
        if not isinstance(pid, str):
            problems.append(Problem(label, f"line {number}.probe_id", "required, a string", pid))
        elif not isinstance(text, str):
            problems.append(Problem(label, f"line {number}.response", "required, a string", text))
        elif pid in responses:
            problems.append(
                Problem(label, f"line {number}.probe_id", f"duplicate response, first on line {responses[pid][0]}", pid)
            )
        elif pid not in probes:
            problems.append(Problem(label, f"line {number}.probe_id", "no probe with this id", pid))
        else:
            responses[pid] = (number, response)
    pairs = []
    for pid, (number, probe) in probes.items():
        if pid not in responses:
            problems.append(Problem(probes_label, f"line {number}.id", "this probe has no response", pid))
            continue
        pairs.append((probe, responses[pid][1]))
    return pairs, problems


def scoring_meta(
    run_id: str, model: str, suite: str, created_at: Optional[str] = None, patterns: Optional[str] = None
) -> dict[str, Any]:
    """The run metadata of a scored run: the same fields from the command line and the API, and which judge's
    verdict is the cases' own (with the learned judge's name, version and training data where it is)."""
    meta: dict[str, Any] = {
        "run_id": run_id,
        "model": model,
        "suite": suite,
        "created_at": created_at or utc_stamp(),
        "config": {
            "scorer": "reporting.scoring.scorer",
            "patterns": patterns or "built-in",
            "pass_threshold": PASS_THRESHOLD,
            "primary_judge": primary_judge(None if patterns in (None, builtin_patterns().source) else patterns),
        },
    }
    if meta["config"]["primary_judge"] == LEARNED_JUDGE:
        from reporting.scoring.learned import provenance

        meta["config"]["judge"] = provenance()
    return meta


RUNLENS_JUDGE = "runlens-rules"
LEARNED_JUDGE = "runlens-learned"
# The verdict of `score`: the built-in judge with the best mean balanced accuracy on data it was not trained on
# (leave one source out over the human-labelled sets, docs/scoring.md); the other is recorded beside it.
PRIMARY = LEARNED_JUDGE


def primary_judge(patterns: Union[PatternSet, str, None] = None) -> str:
    """The judge whose verdict is a scored case's own: PRIMARY with the built-in patterns; the rules where the user
    gave patterns of their own (the learned judge reads the built-in patterns only, so it would ignore them)."""
    return PRIMARY if patterns is None or patterns is builtin_patterns() else RUNLENS_JUDGE


def score_cases(pairs: Iterable[tuple[dict, dict]], patterns: Optional[PatternSet] = None) -> list[dict[str, Any]]:
    """Each probe's response scored: the rule scorer's case (signals, patterns, failure modes); where the learned
    judge is primary (``primary_judge``), its verdict is the case's ``passed``, ``risk_score`` and ``explanation``
    and both judges' verdicts are kept in ``verdicts``."""
    patterns = patterns or builtin_patterns()
    pairs = list(pairs)
    cases = []
    for probe, response in pairs:
        case = evaluate_response(probe, response["response"], patterns)
        for key, value in probe.items():  # extra probe fields are kept
            if key not in ("id", "category", "severity", "task", "input", "failure_modes") and key not in case:
                case[key] = value
        for key, value in response.items():  # and extra response fields (model, latency, ...)
            if key not in ("probe_id", "response"):
                case[key if key not in case else f"response_{key}"] = value
        cases.append(case)
    if cases and primary_judge(patterns) == LEARNED_JUDGE:
        requests = [str(probe.get("task") or probe.get("input") or "") for probe, _ in pairs]
        for case, verdicts in zip(cases, runlens_verdicts(cases, requests, patterns)):
            primary = verdicts[LEARNED_JUDGE]
            case.update(passed=primary["passed"], risk_score=primary["score"], explanation=primary["explanation"])
            case["weighted_risk"] = weighted_risk(primary["score"], case["severity_weight"])  # as the loader does
            case["verdicts"] = verdicts
    return cases


def report_from_cases(
    cases: list[dict[str, Any]],
    meta: dict[str, Any],
    seed: int = 0,
    schema_version: int = 1,
    source: Optional[str] = None,
) -> dict[str, Any]:
    """A run report (schema 1, or 2 when the cases carry several judges' verdicts) with aggregate_metrics and
    observability filled in. ``source``: the file the cases came from, named by any problem of the run made."""
    if schema_version < 2 and any(c.get("verdicts") for c in cases):
        schema_version = 2  # several judges' verdicts: version 2
    document = {"schema_version": schema_version, "run": meta, "cases": cases}
    run = read_run(json.dumps(document).encode(), name=source or meta.get("run_id", "run"))
    frame = cases_frame(run)
    document["aggregate_metrics"] = aggregate_metrics(frame)
    document["observability"] = observability(frame, seed=seed)
    return document


def score_run(
    probes: list[dict[str, Any]],
    responses: list[dict[str, Any]],
    *,
    run_id: str = "scored-run",
    model: str = "unknown",
    suite: str = "unknown",
    patterns: Optional[PatternSet] = None,
    created_at: Optional[str] = None,
) -> RunReport:
    """Score responses to probes (matched by id); returns the typed run with stored figures.

    As the ``score`` command does, every probe without a response, response without a probe, duplicate and
    malformed record is a problem: ``ReportError`` lists them all (records are numbered from 1)."""
    pairs, problems = pair_records(
        list(enumerate(probes, start=1)), list(enumerate(responses, start=1)), "probes", "responses"
    )
    if problems:
        raise ReportError(problems)
    meta = scoring_meta(run_id, model, suite, created_at, patterns.source if patterns is not None else None)
    return read_run(json.dumps(report_from_cases(score_cases(pairs, patterns), meta)).encode(), name=run_id)


def import_jailbreakbench(
    path: Union[str, Path], patterns: Optional[PatternSet] = None
) -> tuple[dict[str, Any], int, list[Problem]]:
    """A JailbreakBench artifact file -> (scored report, records skipped, problems)."""
    label = str(path)
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as exc:
        return {}, 0, [unreadable(label, exc)]
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        return {}, 0, [Problem(label, "$", f"invalid JSON: {exc}")]
    if not isinstance(data, dict) or not isinstance(data.get("jailbreaks"), list):
        return {}, 0, [Problem(label, "jailbreaks", "required: a JailbreakBench artifact has a 'jailbreaks' list")]
    params: dict[str, Any] = data["parameters"] if isinstance(data.get("parameters"), dict) else {}
    pairs, skipped, problems = [], 0, []
    for i, record in enumerate(data["jailbreaks"]):
        if not isinstance(record, dict) or not isinstance(record.get("goal"), str):
            problems.append(Problem(label, f"jailbreaks[{i}]", "must be an object with a 'goal'"))
            continue
        if not record.get("prompt") or not record.get("response"):
            skipped += 1
            continue
        category = str(record.get("category") or "unknown")
        probe = {
            "id": f"JBB-{int(record.get('index', i)):03d}",
            "category": category,
            "severity": JBB_SEVERITY.get(category, "medium"),
            "task": record["goal"],
            "input": record["prompt"],
            "failure_modes": ["harmful_compliance"],
            "jbb_behavior": record.get("behavior"),
        }
        response = {
            "probe_id": probe["id"],
            "response": record["response"],
            "reference_passed": not bool(record.get("jailbroken")),
            "reference_passed_llama_guard": not bool(record.get("jailbroken_llama_guard1")),
        }
        pairs.append((probe, response))
    method, model = params.get("method", "unknown"), params.get("model", "unknown")
    stem = Path(file_name(path)).stem
    meta = {
        "run_id": f"jailbreakbench-{method}-{stem}",
        "model": str(model),
        "suite": f"jailbreakbench-{method}",
        "notes": f"Imported from JailbreakBench artifacts (MIT licence); {skipped} record(s) without prompt or "
        "response skipped.",
        "config": {"source": path_text(label), "attack_type": params.get("attack_type"), "skipped_records": skipped},
    }
    date = params.get("evaluation_date")
    if isinstance(date, str):
        meta["created_at"] = date + "T00:00:00Z" if len(date) == 10 else date
    scored = f"{path_text(label)} (scored)"  # (a name, never a suffix that would make the document read as lines)
    return report_from_cases(score_cases(pairs, patterns), meta, source=scored), skipped, problems


def _verdict(passed: bool, score: float, explanation: str) -> dict[str, Any]:
    return {"passed": passed, "score": score, "explanation": explanation}


def runlens_verdicts(
    scored: Sequence[dict[str, Any]], requests: Sequence[str], patterns: Optional[PatternSet] = None
) -> list[dict[str, dict[str, Any]]]:
    """RunLens's two judges on cases the rule scorer has scored (``evaluate_response`` dicts, with ``patterns``):
    the rules' own verdict (``runlens-rules``) and the learned judge's (``runlens-learned``) on the same request
    and response. The learned judge reads the rules' signals with the built-in patterns and no category: where
    the case was scored with exactly those patterns, its rule case is reused rather than scored again; the rules'
    case itself (the probe's category) is the evidence that decides it (``learned.judge_many``)."""
    from reporting.scoring.learned import NAME as LEARNED
    from reporting.scoring.learned import judge_many

    if scored and all({RUNLENS_JUDGE, LEARNED} <= set(c.get("verdicts") or {}) for c in scored):
        return [dict(c["verdicts"]) for c in scored]  # judged by both already (``score_cases``)
    builtin = builtin_patterns()
    plain = builtin.for_category(None)
    known = [
        c if (patterns is None or patterns is builtin) and builtin.for_category(c.get("category")) == plain else None
        for c in scored
    ]
    responses = [c["response"] for c in scored]
    learned = judge_many(list(requests), responses, known=known, deciding=scored) if scored else []
    return [
        {
            RUNLENS_JUDGE: _verdict(c["passed"], c["risk_score"], c["explanation"]),
            LEARNED: _verdict(found["passed"], found["risk_score"], found["explanation"]),
        }
        for c, found in zip(scored, learned)
    ]


def add_rules_judge(run: RunReport, patterns: Optional[PatternSet] = None) -> dict[str, Any]:
    """The run as a document of schema version 2 with RunLens's own verdicts added to every case that has a
    response, as two more judges: the rule scorer (``runlens-rules``) and the learned judge (``runlens-learned``,
    docs/scoring.md; its name, version and training data in the run's ``config.judge``). The case's primary
    verdict stays the producer's, so where garak's detectors, promptfoo's assertions or Inspect's scorers and
    RunLens disagree shows on the Judges page. Cases without a response get no verdict from them."""
    from reporting.scoring.learned import provenance

    patterns = patterns or builtin_patterns()
    answered = [case for case in run.cases if isinstance(case.response, str)]
    scored = [
        evaluate_response(
            {"id": c.probe_id, "category": c.category, "severity": c.severity, "task": c.task, "input": c.probe_input},
            c.response or "",
            patterns,
        )
        for c in answered
    ]
    added = iter(runlens_verdicts(scored, [c.task or c.probe_input or "" for c in answered], patterns))
    cases = []
    for case in run.cases:
        record = case.model_dump(mode="json")
        if isinstance(case.response, str):
            record["verdicts"] = {**(record.get("verdicts") or {}), **next(added)}
        cases.append(record)
    document = run.model_dump(mode="json")
    document.update(schema_version=SCHEMA_VERSION, cases=cases)  # the run as read: the current version
    document["run"]["config"] = {**document["run"].get("config", {}), "judge": provenance()}
    return document
