"""promptfoo output (``-o out.json``, results version 2 and 3, and ``-o out.jsonl``) as RunLens runs.

One case per result (test x prompt x provider x repeat). A file that holds several providers is several runs,
one per model: a verb that reads one run refuses such a file and names the models; ``import promptfoo FILE -o
DIR`` writes one run per model. ``success`` is the primary verdict (in a red-team file, true means the target
resisted); ``failureReason`` 2 is an error, not a failure (``error`` alone is not: promptfoo copies a grader's
reason there). Each assertion (``gradingResult.componentResults``) is a verdict, named by its metric (an
assert-set's metric is in its ``metadata.assertionSet``), else by its test and type, so two tests' unnamed
assertions are two judges. The file's ``stats`` are kept and checked against the cases (docs/importers.md).

Schema version 3 (issue 32): each red-team case names its ``plugin`` (``pluginId``, whole) and ``strategy``
(``strategyId``, ``basic`` when absent); its category is the plugin's RunLens family (``plugin_families.py``).
Multi-turn strategies keep their conversation as ``messages`` (crescendo, GOAT, hydra, custom: the conversation
promptfoo kept, ``response.metadata.messages``, else ``redteamHistory``) with the attack's figures under ``attack``;
the iterative strategies (``jailbreak``, ``jailbreak:meta``, ``jailbreak:tree``) try single-turn attempts, not a
chat: the judged attempt is kept as one user and one assistant turn. A chat-shaped prompt (``prompt.raw`` a JSON
array of messages) is the conversation, the answer its last, judged, turn.
"""

from __future__ import annotations

import json
from typing import Any, Optional

from reporting.format.problems import Problem
from reporting.format.strict_json import strict_line, strict_loads, utf8_text
from reporting.importers import tags_of
from reporting.importers.conversations import MAX_TURNS, last_user_text
from reporting.importers.plugin_families import PLUGIN_SEVERITY, plugin_family
from reporting.importers.promptfoo_attacks import _conversation, _obj, _text
from reporting.textsafe import file_name

SEVERITIES = ("low", "medium", "high", "critical")
REDACTED = "[REDACTED]"
TEST_LABEL_CAP = 200  # characters of a test's description in the name of an unnamed assertion's judge


KNOWN_VERSIONS = (2, 3)  # promptfoo's results.version values RunLens was checked against


HEAD_DECIDES = 1 << 22  # looks_like_promptfoo reads no further than this past the leading white space


def looks_like_promptfoo(data: bytes) -> bool:
    head = data.lstrip()[:4096]
    if head.startswith(b"{") and b'"evalId"' in head:
        return True
    first = data.lstrip()[:HEAD_DECIDES].split(b"\n", 1)[0]
    return first.startswith(b"{") and b'"testIdx"' in first and b'"promptIdx"' in first


def _parse(data: bytes, label: str) -> tuple[Optional[dict[str, Any]], list[dict[str, Any]], list[Problem]]:
    """(the file's top-level object or None for JSON Lines, its results, problems)."""
    text, problems = utf8_text(label, data)
    if text is None:
        return None, [], problems
    stripped = text.lstrip()
    if stripped.startswith("{") and '"evalId"' in stripped[:4096]:
        top, problems = strict_loads(label, text)
        if problems:
            return None, [], problems
        body = top.get("results") if isinstance(top, dict) else None
        results = body.get("results") if isinstance(body, dict) else None
        if not isinstance(results, list):
            return None, [], [Problem(label, "results.results", "a promptfoo output file needs a results array")]
        return top, [r for r in results if isinstance(r, dict)], problems
    results = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        value, errors = strict_line(label, line, number)
        if errors:
            problems.extend(errors)
            continue
        if isinstance(value, dict):
            results.append(value)
        else:
            problems.append(Problem(label, f"line {number}", "not a JSON object", value))
    return None, results, problems


def _model(result: dict[str, Any]) -> str:
    provider = result.get("provider")
    if isinstance(provider, dict):
        return str(provider.get("label") or provider.get("id") or "unknown")
    return str(provider or "unknown")


def _severity(metadata: dict[str, Any], plugin: Optional[str]) -> str:
    given = str(metadata.get("severity") or "").lower()
    if given == "informational":
        return "low"
    if given in SEVERITIES:
        return given
    return PLUGIN_SEVERITY.get(plugin or "", "low")


class _Wrong(ValueError):
    """A field of a result that is not of the shape promptfoo writes: its path in the result, what is wrong."""

    def __init__(self, field: str, message: str, got: Any):
        super().__init__(message)
        self.field, self.message, self.got = field, message, got


def _definition(assertion: dict[str, Any]) -> str:
    return json.dumps(assertion, ensure_ascii=False, sort_keys=True)


def _test_label(result: dict[str, Any]) -> str:
    test = _obj(result.get("testCase"))
    return str(test.get("description") or f"test-{result.get('testIdx')}")


def _shared_assertions(results: list[dict[str, Any]]) -> frozenset[str]:
    """The definitions of the assertions without a metric that every test of the file has (promptfoo's
    ``defaultTest.assert``, which it copies into each test): one judge named by its type, not one per test."""
    by_test: dict[str, set[str]] = {}
    for result in results:
        test = _obj(result.get("testCase"))
        listed = test.get("assert")
        if not isinstance(listed, list):
            grading = _obj(result.get("gradingResult"))
            components = grading.get("componentResults")
            listed = [_obj(c).get("assertion") for c in components] if isinstance(components, list) else []
        found = {_definition(a) for a in listed if isinstance(a, dict) and not a.get("metric") and a.get("type")}
        label = _test_label(result)
        by_test[label] = by_test[label] & found if label in by_test else found
    sets = list(by_test.values())
    return frozenset(set.intersection(*sets)) if sets else frozenset()


def _judge_names(components: list[Any], test_label: str, shared: frozenset[str]) -> list[Optional[str]]:
    """Each assertion's judge name (None for a component that is not an object). A metric names its judge (an
    assert-set's metric is in ``metadata.assertionSet``; promptfoo counts it in ``namedScores``); an assert-set's
    own assertions, which promptfoo repeats flat after the set, are ``{set}/{type}``; an assertion without a metric
    that every test has (``defaultTest``) is its type; any other is ``{test}/{type}``: its test (description, else
    ``test-{testIdx}``) tells it apart from the same type in another test."""
    names: list[Optional[str]] = []
    members: list[tuple[dict[str, Any], str]] = []  # the current set's own assertions still to come, in order
    for component in components:
        if not isinstance(component, dict):
            names.append(None)
            continue
        if members and component == members[0][0]:
            member_of = members.pop(0)[1]
        else:
            member_of, members = None, []
        assertion = _obj(component.get("assertion"))
        in_set = _obj(_obj(component.get("metadata")).get("assertionSet"))
        metric = assertion.get("metric") if assertion else in_set.get("metric")
        kind = assertion.get("type") if assertion else in_set.get("type")
        if isinstance(metric, str) and metric:
            name = metric
        else:
            kind = kind if isinstance(kind, str) and kind else "assertion"
            every_test = not member_of and bool(assertion) and _definition(assertion) in shared
            name = kind if every_test else f"{member_of or test_label}/{kind}"
        names.append(name)
        inner = component.get("componentResults")
        if isinstance(inner, list) and (in_set or not assertion):
            members = [(c, name) for c in inner if isinstance(c, dict)]
    return names


def _verdicts(components: Any, test_label: str, shared: frozenset[str] = frozenset()) -> dict[str, dict[str, Any]]:
    """One verdict per judge (``componentResults``, named by ``_judge_names``). Assertions of one case that share a
    name are one judge's verdict, as promptfoo counts a metric: failed if any failed, else passed if all passed,
    its score the lowest, its explanation every reason in order. Linear in the assertions (a name is never grown
    to tell repeats apart, which made every later consumer of the names quadratic or worse)."""
    if components is not None and not isinstance(components, list):
        raise _Wrong("gradingResult.componentResults", "must be an array of assertion results", components)
    grouped: dict[str, list[dict[str, Any]]] = {}
    for component, name in zip(components or (), _judge_names(components or [], test_label, shared)):
        if name is not None:
            grouped.setdefault(name, []).append(component)
    verdicts: dict[str, dict[str, Any]] = {}
    for name, group in grouped.items():
        passes = [c.get("pass") if isinstance(c.get("pass"), bool) else None for c in group]
        scores: list[float] = [
            c["score"] for c in group if isinstance(c.get("score"), (int, float)) and not isinstance(c["score"], bool)
        ]
        reasons = [c["reason"] for c in group if isinstance(c.get("reason"), str)]
        passed = False if False in passes else (True if all(p is True for p in passes) else None)
        verdicts[name] = {
            "passed": passed,
            "score": min(scores) if scores else None,
            "explanation": "; ".join(reasons) if reasons else None,
        }
    return verdicts


def _case(result: dict[str, Any], shared: frozenset[str] = frozenset()) -> dict[str, Any]:
    metadata = _obj(result.get("metadata"))
    test = _obj(result.get("testCase"))
    plugin = metadata.get("pluginId")
    if plugin is not None and not isinstance(plugin, str):
        raise _Wrong("metadata.pluginId", "must be text (the red-team plugin's id)", plugin)
    named_strategy = metadata.get("strategyId")
    if named_strategy is not None and not isinstance(named_strategy, str):
        raise _Wrong("metadata.strategyId", "must be text (the red-team strategy's id)", named_strategy)
    strategy = named_strategy or ("basic" if plugin else None)
    t, p = result.get("testIdx"), result.get("promptIdx")
    test_label = _test_label(result)
    base = f"{plugin}/{strategy}" if plugin else test_label
    prompt = _obj(result.get("prompt"))
    response = _obj(result.get("response"))
    vars_ = _obj(result.get("vars"))
    final = _obj(response.get("metadata")).get("redteamFinalPrompt")
    probe_input = final or prompt.get("raw") or vars_.get("prompt")
    answer = _text(response.get("output"))
    messages, judged_turn, attack, in_file = _conversation(result, strategy, answer)
    if messages:
        probe_input = last_user_text(messages) or probe_input
    if probe_input == REDACTED and metadata.get("originalText"):
        probe_input = f"{REDACTED} (promptfoo redacted it; the attack before encoding: {metadata['originalText']})"
    grading = _obj(result.get("gradingResult"))
    verdicts = _verdicts(grading.get("componentResults"), test_label[:TEST_LABEL_CAP], shared)
    failing = [name for name, verdict in verdicts.items() if verdict["passed"] is False]
    case: dict[str, Any] = {
        "probe_id": f"{base}#t{t}.p{p}",
        "probe_group": f"{base}#p{p}",
        "source_id": str(result.get("id")) if result.get("id") is not None else None,
        "category": str(metadata.get("category") or plugin_family(plugin) or "promptfoo"),
        "severity": _severity(metadata, plugin),
        "task": metadata.get("goal") or test.get("description") or metadata.get("originalText"),
        "probe_input": _text(probe_input),
        "response": answer,
    }
    if plugin:
        case["plugin"] = plugin
    tags = tags_of(metadata.get("tags"), _obj(test.get("metadata")).get("tags"))
    if tags:
        case["tags"] = tags
    if strategy:
        case["strategy"] = strategy
    if messages:
        case["messages"] = messages
        if judged_turn is not None:
            case["judged_turn"] = judged_turn
        if in_file > MAX_TURNS:
            case["turns_in_file"] = in_file
    if attack:
        case["attack"] = attack
    if verdicts:
        case["verdicts"] = verdicts
    if result.get("failureReason") == 2:
        case.update(passed=None, risk_score=None, error=str(result.get("error") or response.get("error") or "error"))
        return case
    score = result.get("score")
    score = float(score) if isinstance(score, (int, float)) and not isinstance(score, bool) else None
    passed = bool(result.get("success"))
    case.update(passed=passed, risk_score=min(1.0, max(0.0, 1.0 - score)) if score is not None else float(not passed))
    case["explanation"] = grading.get("reason") if isinstance(grading.get("reason"), str) else result.get("error")
    case["detected_failure_modes"] = failing
    return case


def read_promptfoo(data: bytes, label: str) -> tuple[list[dict[str, Any]], list[str], list[Problem]]:
    """One RunLens document (schema version 3) per model in the file, the warnings and the problems."""
    top, results, problems = _parse(data, label)
    if not results:
        if not problems:
            problems.append(Problem(label, "results", "the promptfoo file holds no result"))
        return [], [], problems
    top = top or {}
    body: dict[str, Any] = top["results"] if isinstance(top.get("results"), dict) else {}
    meta: dict[str, Any] = top["metadata"] if isinstance(top.get("metadata"), dict) else {}
    config: dict[str, Any] = top["config"] if isinstance(top.get("config"), dict) else {}
    stem = file_name(label).split(".")[0]
    by_model: dict[str, list[dict[str, Any]]] = {}
    shared = _shared_assertions(results)
    for index, result in enumerate(results):
        try:
            by_model.setdefault(_model(result), []).append(_case(result, shared))
        except _Wrong as wrong:
            where = f"results.results[{index}]" if top else f"results[{index}]"
            problems.append(Problem(label, f"{where}.{wrong.field}", wrong.message, wrong.got))
    if problems:
        return [], [], problems
    warnings = _stats_check(body.get("stats"), [c for cases in by_model.values() for c in cases])
    if body and body.get("version") not in KNOWN_VERSIONS:
        warnings.insert(
            0,
            f"promptfoo: results version {str(body.get('version'))[:20]} is not one RunLens knows (2, 3); read as "
            "version 3: check the counts against promptfoo's own.",
        )
    documents = []
    for model, cases in by_model.items():
        run_id = str(top.get("evalId") or stem)
        run: dict[str, Any] = {
            "run_id": run_id if len(by_model) == 1 else f"{run_id}/{model}",
            "model": model,
            "suite": str(config.get("description") or "promptfoo"),
            "source": {
                "tool": "promptfoo",
                "tool_version": str(meta.get("promptfooVersion") or "unknown"),
                "format_version": body.get("version", "jsonl") if body else "jsonl",
                "file": file_name(label),
            },
        }
        if isinstance(body.get("timestamp"), str):
            run["created_at"] = body["timestamp"]
        if warnings:
            run["notes"] = " ".join(warnings)
        documents.append(
            {
                "schema_version": 3,
                "run": run,
                "cases": cases,
                "tool_figures": {"promptfoo_stats": body.get("stats"), "promptfoo_models": list(by_model)},
            }
        )
    return documents, warnings, problems


def _stats_check(stats: Any, cases: list[dict[str, Any]]) -> list[str]:
    """promptfoo's own stats (for the whole file, every provider) against the cases."""
    from reporting.importers.recount import promptfoo_stats

    found = promptfoo_stats(stats, cases)
    if all(theirs == ours for _, theirs, ours in found):
        return []
    theirs, ours = tuple(f[1] for f in found), tuple(f[2] for f in found)
    return [f"promptfoo's stats count successes/failures/errors {theirs}; the file's results give {ours}."]
