"""Inspect AI logs (``.json``, and ``.eval`` ZIP archives, deflate or zstd) as a RunLens run.

One case per sample x epoch. Every scorer is a judge; its value maps to a number as Inspect's own
``value_to_float`` does (C 1, I 0, P 0.5, N 0, booleans, numbers, "yes"/"no"...). The primary verdict is the
headline scorer's (``results.headline``, else the first scorer of the task) unless another is named, and a case
passes when that value is at least 0.5. A sample that raised, or that no scorer scored, is an error. An ``.eval``
file since Inspect 0.3.206 stores its members zstd-compressed (ZIP method 93), which Python's ``zipfile`` cannot
read before 3.14: the members are read from the archive's own offsets and decompressed with ``zstandard``.
A log without ``header.json`` (a killed process) is read from ``_journal/start.json`` and its samples.

Each case keeps its sample's conversation (schema version 3, ``messages``: the system prompt, a chat-shaped
input's earlier turns, the assistant's tool calls with their arguments and the tool results), the judged turn, the
``limit`` the sample hit, how many times it was retried after an error (``retries``), the task as its ``plugin``
and, when a metadata key is named, its ``strategy``. A scorer named as the risk scorer is read lower-is-better.
"""

from __future__ import annotations

import json
from typing import Any, Optional

from reporting.format.problems import Problem
from reporting.importers import tags_of
from reporting.importers.conversations import last_user_text
from reporting.importers.inspect_samples import (
    CONFIG_KEPT,
    _conversation,
    _error_text,
    _limit,
    _list,
    _obj,
    _scalar,
)
from reporting.textsafe import file_name

SEVERITIES = ("low", "medium", "high", "critical")
LETTERS = {"C": 1.0, "I": 0.0, "P": 0.5, "N": 0.0}
WORDS = {"yes": 1.0, "true": 1.0, "no": 0.0, "false": 0.0}


KNOWN_VERSIONS = (1, 2)  # Inspect's log format versions RunLens was checked against


def looks_like_inspect(data: bytes) -> bool:
    if data[:4] == b"PK\x03\x04":
        return b"_journal/start.json" in data or b"header.json" in data
    head = data.lstrip()[:4096]
    return head.startswith(b"{") and b'"eval"' in head and b'"version"' in head and b'"task"' in head


def value_to_float(value: Any) -> Optional[float]:
    """Inspect's value_to_float: None where it has no number (lists and dicts need their scorer's reducer)."""
    if isinstance(value, bool):
        return 1.0 if value else 0.0
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, str):
        text = value.strip()
        if text in LETTERS:
            return LETTERS[text]
        if text.lower() in WORDS:
            return WORDS[text.lower()]
        try:
            return float(text)
        except ValueError:
            return None
    return None


def _input_text(value: Any) -> Optional[str]:
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, list):  # chat messages: the last user message
        users = [m for m in value if isinstance(m, dict) and m.get("role") == "user"] or value
        last = users[-1] if users else None
        content = last.get("content") if isinstance(last, dict) else last
        if isinstance(content, list):
            return " ".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
        return None if content is None else str(content)
    return json.dumps(value, ensure_ascii=False)


def _primary(log: dict[str, Any], chosen: Optional[str]) -> Optional[str]:
    if chosen:
        return chosen
    headline = _obj(log.get("results")).get("headline") or {}
    if isinstance(headline, dict) and headline.get("scorer"):
        return str(headline["scorer"])
    scorers = _list(_obj(log.get("eval")).get("scorers"))
    names = [s.get("name") for s in scorers if isinstance(s, dict) and s.get("name")]
    scores = _list(_obj(log.get("results")).get("scores"))
    names += [s.get("name") for s in scores if isinstance(s, dict) and s.get("name")]
    return str(names[0]) if names else None


def _case(
    sample: dict[str, Any],
    task: str,
    primary: Optional[str],
    risk_scorer: Optional[str] = None,
    scorers: tuple[str, ...] = (),
    strategy_key: Optional[str] = None,
    log_tags: Any = None,
) -> dict[str, Any]:
    metadata = _obj(sample.get("metadata"))
    severity = str(metadata.get("severity") or "").lower()
    sid, epoch = sample.get("id"), sample.get("epoch", 1)
    output = _obj(sample.get("output"))
    conversation = _conversation(sample)
    user_turn = last_user_text(conversation["messages"]) if conversation else None
    case: dict[str, Any] = {
        "probe_id": f"{task}/{sid}#e{epoch}",
        "probe_group": f"{task}/{sid}",
        "source_id": str(sample.get("uuid") or f"{sid}#e{epoch}"),
        "category": str(metadata.get("category") or task),
        "severity": severity if severity in SEVERITIES else "medium",
        "task": task,
        "plugin": task,
        "probe_input": user_turn if user_turn is not None else _input_text(sample.get("input")),
        "response": output.get("completion") if isinstance(output.get("completion"), str) else None,
        **conversation,
    }
    tags = tags_of(log_tags, metadata.get("tags"))  # the log's eval.tags, then the sample's own
    if tags:
        case["tags"] = tags
    strategy = metadata.get(strategy_key) if strategy_key else None
    if isinstance(strategy, (str, int, float)) and not isinstance(strategy, bool) and str(strategy):
        case["strategy"] = str(strategy)[:200]
    limit = _limit(sample.get("limit"))
    if limit is not None:
        case["limit"] = limit
    retries = [r for r in _list(sample.get("error_retries")) if r]
    if retries:  # retried after an error (retry_on_error): how often, and the errors it was retried after
        case["retries"] = len(retries)
        case["retry_errors"] = [_error_text(r)[:2000] for r in retries[:20]]
    scores = _obj(sample.get("scores"))
    verdicts: dict[str, dict[str, Any]] = {}
    for name, score in scores.items():
        score = score if isinstance(score, dict) else {"value": score}
        number = value_to_float(score.get("value"))
        explanation = score.get("explanation")
        lower_is_better = str(name) == risk_scorer  # a risk: 1 is the worst
        verdicts[str(name)] = {
            "passed": None if number is None else (number < 0.5 if lower_is_better else number >= 0.5),
            "score": number,
            "explanation": explanation if isinstance(explanation, str) else None,
        }
    error = sample.get("error")
    if error:
        message = _error_text(error)
        for name in scorers:  # not scored: an error of every scorer of the log, as Inspect leaves it unscored
            verdicts.setdefault(name, {"passed": None, "score": None, "explanation": f"error: {message}"[:2000]})
    if verdicts:
        case["verdicts"] = verdicts
    if error:
        case.update(passed=None, risk_score=None, error=message)
        return case
    verdict = verdicts.get(primary or "")
    number = verdict["score"] if verdict is not None else None
    if verdict is None or not isinstance(number, float):
        case.update(passed=None, risk_score=None, error=f"not scored by the primary scorer {primary!r}")
        return case
    risk = verdicts.get(risk_scorer or "", {}).get("score")
    risk = 1.0 - number if not isinstance(risk, float) else risk  # a named scorer's value is the risk itself
    case.update(passed=verdict["passed"], risk_score=min(1.0, max(0.0, risk)))
    case["explanation"] = verdict["explanation"]
    case["detected_failure_modes"] = [n for n, v in verdicts.items() if v["passed"] is False]
    return case


def read_inspect(
    data: bytes,
    label: str,
    primary_judge: Optional[str] = None,
    risk_scorer: Optional[str] = None,
    strategy_key: Optional[str] = None,
) -> tuple[Optional[dict[str, Any]], list[str], list[Problem]]:
    """An Inspect log as a RunLens document (schema version 3), the warnings, and the problems. ``risk_scorer``:
    a numeric scorer whose value (1 = worst) is each case's risk and whose verdict is lower-is-better (passed
    below 0.5); ``strategy_key``: the sample metadata key that names each case's attack strategy. The log is read
    one sample at a time (``inspect_stream``); the cases are made into a list here."""
    from reporting.importers.inspect_stream import stream_inspect

    header, cases, warnings, problems = stream_inspect(data, label, primary_judge, risk_scorer, strategy_key)
    if header is None:
        return None, warnings, problems
    document = {"schema_version": 3, "run": header["run"], "cases": list(cases), "tool_figures": header["tool_figures"]}
    return document, warnings, problems


def shape_problems(log: Any, samples: Any, label: str) -> Optional[list[Problem]]:
    """None for a log without an ``eval`` object; else the problems of its parts that are not of Inspect's shapes
    (``samples``: the value the log's samples are, a list when they are read one at a time)."""
    if not isinstance(log, dict) or not isinstance(log.get("eval"), dict):
        return None
    ev = log["eval"]
    problems = []
    shapes = [("results", log.get("results")), ("samples", samples)]
    shapes += [(f"eval.{key}", ev.get(key)) for key in ("config", "metadata", "packages")]
    for field, value in shapes:
        if value is not None and not isinstance(value, list if field == "samples" else dict):
            what = "an array of samples" if field == "samples" else "an object"
            problems.append(Problem(label, field, f"must be {what}", value))
    return problems


def header_of(log: dict[str, Any], read: Any, label: str, options: tuple[Optional[str], ...]) -> Any:
    """The run of a log whose samples were all read (``read``: ``inspect_stream._Pass``): the document without its
    cases, the cases, the warnings and the problems."""
    primary_judge, risk_scorer, strategy_key = options
    none: Any = iter(())
    ev = log["eval"]
    warnings: list[str] = []
    status = log.get("status")
    if status not in (None, "success"):
        reason = (log.get("error") or {}).get("message") if isinstance(log.get("error"), dict) else None
        warnings.append(f"Inspect: the log's status is {status!r}" + (f" ({reason})" if reason else "") + ".")
    if not read.cases.count:
        return None, none, warnings, [Problem(label, "samples", f"the Inspect log holds no sample (status {status!r})")]
    if log.get("version") not in KNOWN_VERSIONS:
        warnings.append(
            f"Inspect: log version {str(log.get('version'))[:20]} is not one RunLens knows (1, 2); read as version "
            "2: check the scores against Inspect's own."
        )
    problems = list(read.problems)
    seen = sorted({str(name) for name in read.sample_scorers})
    for option, name in (("--primary-judge", primary_judge), ("--risk-scorer", risk_scorer)):
        if name and name not in seen:
            problems.append(
                Problem(
                    label,
                    "samples",
                    f"{option} {name!r}: no sample has this scorer; scorers: {', '.join(seen) or 'none'}",
                )
            )
    keys = sorted(read.keys)
    if strategy_key and strategy_key not in keys:
        problems.append(
            Problem(
                label,
                "samples",
                f"--strategy-key {strategy_key!r}: no sample's metadata has this key; keys: "
                f"{', '.join(k[:80] for k in keys[:50]) or 'none'}",
            )
        )
    if problems:
        return None, none, warnings, problems
    retried = read.retried
    if retried:
        shown = ", ".join(f"{pid} {n}" for pid, n in retried[:10]) + (", ..." if len(retried) > 10 else "")
        warnings.append(
            f"Inspect: {len(retried)} sample(s) were retried after an error ({shown}; the count is each case's "
            "'retries')."
        )
    scorers = read.scorers(log)
    run = _run(log, label, read.primary, risk_scorer, strategy_key, sorted({*scorers, *seen}))
    if warnings:
        run["notes"] = " ".join(warnings)
    results = _obj(log.get("results"))
    epochs = _obj(ev.get("config")).get("epochs")
    if epochs in (None, 1):
        warnings.extend(_score_check(results, read.scores))
        if warnings:
            run["notes"] = " ".join(warnings)
    header = {"schema_version": 3, "run": run, "tool_figures": {"inspect_results": results, "inspect_epochs": epochs}}
    return header, read.cases.each(scorers), warnings, []


def _run(
    log: dict[str, Any],
    label: str,
    primary: Optional[str],
    risk_scorer: Optional[str],
    strategy_key: Optional[str],
    judges: list[str],
) -> dict[str, Any]:
    ev = log["eval"]
    task = str(ev.get("task") or "inspect")
    config = _obj(ev.get("config"))
    run: dict[str, Any] = {
        "run_id": str(ev.get("run_id") or ev.get("eval_id") or file_name(label)),
        "model": str(ev.get("model") or "unknown"),
        "suite": str(_obj(ev.get("metadata")).get("suite") or task),
        "config": {
            "primary_scorer": primary,
            "risk_scorer": risk_scorer,
            "strategy_key": strategy_key,
            "epochs": config.get("epochs"),
            "judge_directions": {
                name: "lower_is_better" if name == risk_scorer else "higher_is_better" for name in judges
            },
            **{key: config[key] for key in CONFIG_KEPT if _scalar(config.get(key))},
        },
        "source": {
            "tool": "inspect",
            "tool_version": str(_obj(ev.get("packages")).get("inspect_ai") or "unknown"),
            "format_version": log.get("version"),
            "file": file_name(label),
        },
    }
    if isinstance(ev.get("created"), str):
        run["created_at"] = ev["created"]
    return run


def _score_check(results: dict[str, Any], scores: dict[str, Any]) -> list[str]:
    """Inspect's own accuracy (or mean) per scorer against the mean of that judge's scores over the cases it
    scored (``scores``: each judge's finite scores in case order); with one epoch the two are the same number
    (with several, Inspect reduces per sample first). As ``recount.inspect_scores`` counts them over the cases."""
    from reporting.importers.recount import _number

    found = []
    entries = results.get("scores")
    for entry in entries if isinstance(entries, list) else ():
        if not isinstance(entry, dict) or not isinstance(entry.get("metrics") or {}, dict):
            continue
        name, metrics = str(entry.get("name")), entry.get("metrics") or {}
        metric_name = "accuracy" if "accuracy" in metrics else "mean" if "mean" in metrics else None
        theirs = _obj(metrics.get(metric_name)).get("value") if metric_name else None
        values = scores.get(name)
        if _number(theirs) and values:
            ours = sum(values) / len(values)
            if abs(ours - theirs) > 1e-6:
                found.append(f"Inspect's {name} score is {theirs:.6g}; the samples' scores give {ours:.6g}.")
    return found
