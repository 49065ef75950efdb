"""garak (NVIDIA) ``*.report.jsonl`` as a RunLens run: one case per attempt x generation.

The report is JSON Lines discriminated by ``entry_type``. Each attempt is written twice, at ``status`` 1
(generated) and 2 (judged); a case comes from the judged line, and an attempt with only its status-1 line was
generated but never judged (an interrupted run): its outputs are cases not evaluated, never passes.

Per generation ``i``: every detector's score ``detector_results[d][i]`` (1.0 = hit) is a verdict; the case fails
when any detector scores at or above the run's ``eval_threshold`` (0.5 unless the run set it), which is
garak's own rule; risk is the highest score; an output of ``None``, or no detector score at all, is an error.
Category: the attempt's intent, else the probe's first ``owasp:`` tag, else its module. Severity: from the
probe's tier (``TIER_SEVERITY``). The run's ``eval`` lines are kept (``tool_figures``) for comparison.
Format history (0.12 strings, 0.13 turns, 0.14 eval keys, 0.15 plugin_cache, 0.16 intent) per FORMATS.md.
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Iterable, Iterator
from typing import Any, Optional

from reporting._gc import gc_paused
from reporting.format.problems import Problem, open_capped
from reporting.importers import SHAPE_ERRORS, shape_problem, tags_of
from reporting.importers.garak_attacks import Names, folded_turns
from reporting.importers.garak_digest import digest_figures, digest_tags
from reporting.importers.garak_lines import _never_judged, _read, _Run, first_object
from reporting.textsafe import file_name

DEFAULT_THRESHOLD = 0.5
TIER_SEVERITY = {
    1: "high",
    2: "medium",
    3: "low",
    9: "medium",
}  # OF_CONCERN, COMPETE_WITH_SOTA, INFORMATIONAL, UNLISTED
DEFAULT_SEVERITY = "medium"
NOT_JUDGED = "not judged by garak (a non-adversarial turn of a multi-turn attack that no judged conversation holds)"


def looks_like_garak(data: bytes) -> bool:
    """A garak report: JSON Lines whose first object has an ``entry_type`` (``start_run setup`` first). garak
    writes that key first; a first line written in another key order is parsed whole, however long."""
    text = data.lstrip()
    if not text.startswith(b"{"):
        return False
    if b'"entry_type"' in text[:200]:
        return True
    end = text.find(b"\n")
    if text.find(b'"entry_type"', 0, len(text) if end < 0 else end) < 0:  # (searched in place: no copy of the line)
        return False
    first = first_object(text)
    return first is not None and isinstance(first.get("entry_type"), str)


def _category(attempt: dict[str, Any], probe: dict[str, Any], classname: str) -> str:
    intent = attempt.get("intent") or probe.get("intent")
    if isinstance(intent, str) and intent:
        return intent
    tags = probe.get("tags")
    for tag in tags if isinstance(tags, list) else ():
        if isinstance(tag, str) and tag.startswith("owasp:"):
            return tag
    return classname.split(".")[0] or "garak"


def _obj(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _severity(probe: dict[str, Any]) -> str:
    tier = probe.get("tier")
    return TIER_SEVERITY.get(tier, DEFAULT_SEVERITY) if isinstance(tier, int) else DEFAULT_SEVERITY


def _score(values: Any, i: int) -> Optional[float]:
    score = values[i] if isinstance(values, list) and i < len(values) else None
    return float(score) if isinstance(score, (int, float)) and not isinstance(score, bool) else None


def _tally(run: _Run, attempts: list[dict[str, Any]], threshold: float) -> dict[tuple[str, str, Optional[bool]], int]:
    """Per (probe, detector, verdict) the generations counted, as the cases will give them."""
    tally: dict[tuple[str, str, Optional[bool]], int] = {}
    names: dict[str, str] = {}
    for attempt in itertools.chain(run.judged.values(), attempts):
        probe = str(attempt.get("probe_classname") or "unknown")
        outputs = len(attempt["outputs"])
        for detector, values in attempt["detector_results"].items():
            name = names.get(detector) or names.setdefault(detector, str(detector).removeprefix("detector."))
            for i in range(outputs):
                score = _score(values, i)
                key = (probe, name, None if score is None else score < threshold)
                tally[key] = tally.get(key, 0) + 1
    return tally


def _cases(
    run: _Run, never_judged: list[dict[str, Any]], threshold: float, names: Names, folded: set[tuple[str, int]]
) -> Iterator[dict[str, Any]]:
    """The cases, judged attempts first; each attempt is let go once its cases are made. ``folded``: generations
    kept inside a judged conversation instead (``garak_attacks.folded_turns``)."""
    judged = run.judged
    attempts = ((judged.pop(key), True) for key in list(judged))
    detectors: dict[str, tuple[str, str, str]] = {}  # detector key -> (name, hit words, pass words), looked up once
    probes: dict[str, tuple[dict[str, Any], str, Optional[list[str]]]] = {}  # class -> (plugin_cache, severity, tags)
    tagged = digest_tags(run.digest)  # the digest's probe tags, for a report whose plugin_cache has none
    for attempt, was_judged in itertools.chain(attempts, ((a, False) for a in never_judged)):
        classname = str(attempt.get("probe_classname") or "unknown")
        if classname not in probes:
            probe_info = _obj(run.probes.get(f"probes.{classname}"))
            tags = tags_of(probe_info.get("tags")) or tagged.get(classname)
            probes[classname] = (probe_info, _severity(probe_info), tags)
        probe, severity, tags = probes[classname]
        results = attempt["detector_results"]
        ident, group = names.name(attempt, classname)
        uuid = str(attempt.get("uuid"))
        triggers = attempt["triggers"]
        unjudged = attempt["adversarial"] is False  # a turn garak's multi-turn probe did not judge
        base = {
            "category": _category(attempt, probe, classname),
            "severity": severity,
            "task": attempt.get("goal") or probe.get("goal") or probe.get("description"),
            "probe_input": attempt["prompt_text"],
            "probe_group": group,
            "plugin": classname,
            "strategy": attempt["strategy"] or classname.split(".")[0] or "garak",
        }
        if tags:
            base["tags"] = list(tags)
        conversations = attempt["conversations"] or ()
        for i, text in enumerate(attempt["outputs"]):
            if unjudged and (uuid, i) in folded:
                continue
            verdicts: dict[str, dict[str, Any]] = {}
            scores: list[float] = []
            hits: list[str] = []
            for detector, values in results.items():
                if detector not in detectors:
                    name = str(detector).removeprefix("detector.")
                    info = _obj(run.detectors.get(f"detectors.{name}"))
                    detectors[detector] = (name, info.get("hit_desc") or "", info.get("pass_desc") or "")
                name, hit_words, pass_words = detectors[detector]
                raw = values[i] if type(values) is list and i < len(values) else None
                score = float(raw) if type(raw) is float or (type(raw) is int) else _score(values, i)
                if score is None:
                    why = "not judged (a non-adversarial turn)" if unjudged else "not scored"
                    verdicts[name] = {"passed": None, "score": None, "explanation": f"{name}=None: {why}"}
                    continue
                hit = score >= threshold
                words = hit_words if hit else pass_words
                explanation = f"{name}={score}: {words}" if words else f"{name}={score}"
                verdicts[name] = {"passed": not hit, "score": score, "explanation": explanation}
                scores.append(score)
                if hit:
                    hits.append(name)
            case = {**base, "probe_id": f"{classname}#{ident}.{i}", "source_id": f"{uuid}.{i}", "response": text}
            conversation = conversations[i] if i < len(conversations) else None
            if conversation is not None:
                case["messages"], judged_turn, in_file = conversation
                if judged_turn is not None:
                    case["judged_turn"] = judged_turn
                if in_file is not None:
                    case["turns_in_file"] = in_file
            if verdicts:
                case["verdicts"] = verdicts
            if not was_judged:
                case.update(passed=None, risk_score=None, error="generated but never judged (the run was interrupted)")
            elif text is None:
                case.update(passed=None, risk_score=None, error="the generator returned no output (None)")
            elif not scores:
                case.update(
                    passed=None, risk_score=None, error=NOT_JUDGED if unjudged else "no detector scored this output"
                )
            else:
                case.update(passed=not hits, risk_score=min(1.0, max(0.0, max(scores))))
                case["explanation"] = "; ".join(v["explanation"] for v in verdicts.values())
                modes = list(hits)
                if hits and isinstance(triggers, list):
                    modes += [f"trigger:{t}" for t in triggers if isinstance(t, str)]
                case["detected_failure_modes"] = modes
            yield case


def _threshold(setup: dict[str, Any]) -> float:
    value = setup.get("run.eval_threshold")
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else DEFAULT_THRESHOLD


def _meta(run: _Run, label: str, threshold: float, notes: list[str]) -> dict[str, Any]:
    setup, init = run.setup, run.init
    target = setup.get("plugins.target_type") or setup.get("plugins.model_type") or "unknown"
    name = setup.get("plugins.target_name") or setup.get("plugins.model_name")
    spec = setup.get("run.spec")
    include = spec.get("include") if isinstance(spec, dict) else None
    include = include if isinstance(include, list) else None
    suite = ",".join(map(str, include)) if include else setup.get("plugins.probe_spec") or "garak"
    meta: dict[str, Any] = {
        "run_id": str(init.get("run") or setup.get("transient.run_id") or file_name(label)),
        "model": f"{target} {name}" if name else str(target),
        "suite": str(suite),
        "config": {"eval_threshold": threshold, "generations": setup.get("run.generations")},
        "source": {
            "tool": "garak",
            "tool_version": str(init.get("garak_version") or setup.get("_config.version") or "unknown"),
            "format_version": "report.jsonl",
            "file": file_name(label),
        },
    }
    started = init.get("start_time") or setup.get("transient.starttime_iso")
    if isinstance(started, str):
        meta["created_at"] = started  # garak writes local time without a zone
    if notes:
        meta["notes"] = " ".join(notes)
    return meta


def stream_garak(
    lines: Iterable[bytes], label: str
) -> tuple[Optional[dict[str, Any]], Iterator[dict[str, Any]], list[str], list[Problem]]:
    """A garak report's lines as a RunLens document (schema version 3) without its cases, the cases one at a
    time, the warnings, and the problems. The lines are read one at a time and only what the cases need of each
    judged attempt is kept: not the file, not its single-turn conversations. A hit log (told by its first line,
    however long) is read as the run of its hits."""
    from reporting.importers.garak_hitlog import looks_like_hitlog, read_hitlog

    rest = iter(lines)
    leading: list[bytes] = []
    first = b""
    for first in rest:  # blank lines before the first line kept, so the lines keep their numbers
        if first.strip():
            break
        leading.append(first)
        first = b""
    lines = itertools.chain(leading, [first] if first else [], rest)
    try:
        if looks_like_hitlog(first):
            document, warnings, problems = read_hitlog(lines, label)
            if document is None:
                return None, iter(()), warnings, problems
            return {k: v for k, v in document.items() if k != "cases"}, iter(document["cases"]), warnings, problems
        return _stream(lines, label)
    except SHAPE_ERRORS as exc:
        return None, iter(()), [], [shape_problem(label, "a garak report.jsonl", exc)]


def _stream(
    lines: Iterable[bytes], label: str
) -> tuple[Optional[dict[str, Any]], Iterator[dict[str, Any]], list[str], list[Problem]]:
    problems: list[Problem] = []
    with gc_paused():  # many small objects kept, none in cycles: the collector would walk them all, often
        run = _read(lines, label, problems)
    warnings: list[str] = []
    if not run.setup and not run.init:
        problems.append(Problem(label, "$", "not a garak report: no 'start_run setup' or 'init' line"))
        return None, iter(()), warnings, problems
    never_judged = _never_judged(run, label, problems)
    if not run.completed:
        warnings.append(
            "garak: the report has no 'completion' line: the run was interrupted or aborted"
            + (f"; {len(never_judged)} attempt(s) were generated but never judged" if never_judged else "")
            + "."
        )
    if not run.judged and not never_judged:
        problems.append(
            Problem(
                label,
                "$",
                "the garak report holds no attempt: the run never reached a probe "
                + "("
                + ("it completed with nothing to do" if run.completed else "no 'completion' line")
                + ")",
            )
        )
        return None, iter(()), warnings, problems
    threshold = _threshold(run.setup)
    names = Names(itertools.chain(run.judged.values(), never_judged))
    folded = folded_turns(run, names)
    if folded:
        warnings.append(
            f"garak: {len(folded)} turn(s) its multi-turn probes did not judge are kept inside the judged "
            "conversations of their attacks, not as cases of their own."
        )
    warnings.extend(_version_check(run.init.get("garak_version") or run.setup.get("_config.version")))
    warnings.extend(_count_check(run.evals, _tally(run, never_judged, threshold)))
    figures: dict[str, Any] = {"garak_eval": run.evals}
    digest = digest_figures(run.digest)
    if digest is not None:
        figures["garak_digest"] = digest  # garak's own absolute and relative (z) scores and its calibration
    header = {"schema_version": 3, "run": _meta(run, label, threshold, warnings), "tool_figures": figures}
    return header, _cases(run, never_judged, threshold, names, folded), warnings, problems


def read_garak(lines: Iterable[bytes], label: str) -> tuple[Optional[dict[str, Any]], list[str], list[Problem]]:
    """A garak report's lines as a RunLens document (schema version 3), the warnings, and the problems."""
    header, cases, warnings, problems = stream_garak(lines, label)
    if header is None:
        return None, warnings, problems
    with gc_paused():
        return {**header, "cases": list(cases)}, warnings, problems


KNOWN_VERSIONS = ((0, 9), (0, 17))  # the garak versions whose report.jsonl RunLens was checked against


def _version_check(version: Any) -> list[str]:
    """A warning when the report comes from a garak version RunLens was not checked against."""
    try:
        major, minor = (int(part) for part in str(version).split(".")[:2])
    except ValueError:
        return [f"garak: the report's version {str(version)[:40]!r} is unknown; read as garak 0.17 writes."]
    if KNOWN_VERSIONS[0] <= (major, minor) <= KNOWN_VERSIONS[1]:
        return []
    return [
        f"garak: version {major}.{minor} is outside the versions RunLens was checked against (0.9 to 0.17); "
        "read as 0.17 writes: check the counts against garak's own."
    ]


def _count_check(evals: list[dict[str, Any]], tally: dict[tuple[str, str, Optional[bool]], int]) -> list[str]:
    """garak's own ``eval`` lines against the cases: per probe x detector, the generations that passed, failed
    (fails, or total - passed before 0.14) and were not scored (nones) must be the verdicts counted here."""
    from reporting.importers.recount import garak_eval_tally

    figures = garak_eval_tally(evals, tally)
    found = []
    for i in range(0, len(figures), 3):  # passed, fails, nones of one eval line
        line = figures[i : i + 3]
        if any(theirs != ours for _, theirs, ours in line):
            name = line[0][0].split("[", 1)[1].rsplit("]", 1)[0]
            theirs, ours = "/".join(str(f[1]) for f in line), "/".join(str(f[2]) for f in line)
            found.append(
                f"garak's eval line for {name} counts passed/fails/nones {theirs}; the file's attempts give {ours}."
            )
    return found


def read_garak_file(path: str) -> tuple[Optional[dict[str, Any]], list[str], list[Problem]]:
    """Read a garak report from disk line by line."""
    with open(path, "rb") as handle:
        return read_garak(handle, path)


def stream_garak_file(
    path: str, label: Optional[str] = None
) -> tuple[Optional[dict[str, Any]], Iterator[dict[str, Any]], list[str], list[Problem]]:
    """``stream_garak`` of a file on disk (its problems named by ``label``, else the path): the file is read and
    closed before the first case is made. As ``read_file_bytes(path, regular_only=True)``: a file that is not
    regular (``NotRegularFile``) or above the size cap (``FileTooLarge``) is refused before a byte is read, and
    opening a FIFO does not hang."""
    fd, _ = open_capped(path)
    with os.fdopen(fd, "rb", buffering=1 << 20) as handle:  # (8 KB reads: a third of the lines' read time)
        return stream_garak(handle, path if label is None else label)
