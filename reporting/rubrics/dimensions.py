"""Multi-dimensional judge scores (docs/rubrics.md, "Dimension scores"): weighted dimensions, the accuracy
ceiling, the safety gate (the scorer's own safety-gate patterns), optional z-normalisation, reviewer spread."""

from __future__ import annotations

import json
import statistics
from pathlib import Path
from typing import Any, Optional, Union

from reporting.rubrics.scorecard import RubricError

DIMENSIONS = ("accuracy", "relevance", "completeness", "conciseness", "clarity")
DEFAULT_WEIGHTS = {"accuracy": 0.35, "relevance": 0.10, "completeness": 0.20, "conciseness": 0.15, "clarity": 0.20}
CEILINGS = ((5.0, 4.0), (7.0, 7.0))  # accuracy below 5 caps at 4.0; below 7 (so 5 or 6) caps at 7.0

ANCHORS = {
    "accuracy": [
        "9-10: completely accurate, no errors or hallucinations",
        "7-8: mostly accurate, minor imprecisions",
        "5-6: mixed accuracy, some errors",
        "3-4: significant errors",
        "1-2: mostly incorrect or hallucinated",
    ],
    "relevance": [
        "9-10: directly addresses the question asked",
        "7-8: mostly relevant, minor tangents",
        "5-6: partially relevant",
        "3-4: largely off-topic",
        "1-2: completely irrelevant",
    ],
    "completeness": [
        "9-10: comprehensive, covers all aspects",
        "7-8: covers main points, minor omissions",
        "5-6: covers some aspects, gaps",
        "3-4: incomplete",
        "1-2: barely addresses the question",
    ],
    "conciseness": [
        "9-10: every word adds value",
        "7-8: mostly efficient, minor padding",
        "5-6: some unnecessary content",
        "3-4: significant padding",
        "1-2: extremely verbose",
    ],
    "clarity": [
        "9-10: crystal clear, perfectly organised",
        "7-8: clear, minor organisation issues",
        "5-6: understandable but messy",
        "3-4: confusing",
        "1-2: incomprehensible",
    ],
}


def parse_weights(text: Optional[str]) -> dict[str, float]:
    """`accuracy=0.4,relevance=0.1,...` or a JSON/YAML file path; must cover the five dimensions and sum to 1."""
    if not text:
        return dict(DEFAULT_WEIGHTS)
    path = Path(text)
    if path.exists():
        from reporting.format.safe_yaml import YamlProblem, read_yaml

        try:
            data = read_yaml(path)
        except YamlProblem as exc:
            raise RubricError([str(exc)]) from None
    else:
        data = {}
        for part in text.split(","):
            key, _, value = part.partition("=")
            try:
                data[key.strip()] = float(value)
            except ValueError:
                raise RubricError([f"--weights: {part.strip()!r} is not dimension=number"]) from None
    if not isinstance(data, dict) or set(data) != set(DIMENSIONS):
        raise RubricError([f"--weights: give a weight for each of {', '.join(DIMENSIONS)}"])
    if any(not isinstance(v, (int, float)) or v < 0 for v in data.values()):
        raise RubricError(["--weights: weights must be numbers >= 0"])
    if abs(sum(data.values()) - 1.0) > 0.001:
        raise RubricError([f"--weights: the weights sum to {sum(data.values()):.4f}, not 1"])
    return {k: float(data[k]) for k in DIMENSIONS}


def ceiling_for(accuracy: float) -> Optional[float]:
    for below, cap in CEILINGS:
        if accuracy < below:
            return cap
    return None


def weighted_overall(scores: dict[str, float], weights: dict[str, float]) -> tuple[float, Optional[float]]:
    """(overall after the accuracy ceiling, the ceiling applied or None)."""
    raw = sum(scores[d] * weights[d] for d in DIMENSIONS)
    cap = ceiling_for(scores["accuracy"])
    return (min(raw, cap), cap) if cap is not None and raw > cap else (raw, None)


MAX_RAW_CHARS = 1_000_000  # a reviewer's raw text beyond this is not searched for its JSON block
MAX_DECODE_ATTEMPTS = 2_000  # '{' positions tried as the start of a JSON object, from the end backwards


def _fenced_blocks(raw: str) -> list[str]:
    """The contents of ```...``` blocks, found with str.find (linear), an optional 'json' tag removed."""
    blocks, at = [], raw.find("```")
    while at != -1:
        end = raw.find("```", at + 3)
        if end == -1:
            break
        body = raw[at + 3 : end]
        if body[:4].lower() == "json":
            body = body[4:]
        blocks.append(body.strip())
        at = raw.find("```", end + 3)
    return blocks


def _loads(text: str) -> Any:
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        return None


def parse_raw(raw: str) -> Optional[dict[str, Any]]:
    """The JSON object a reviewer ended its text with: a ```json block, else the last top-level {...} that parses.

    Bounded work on hostile text: at most MAX_RAW_CHARS are searched, fenced blocks are found in one pass, and
    at most MAX_DECODE_ATTEMPTS places are tried for a bare object."""
    raw = raw[:MAX_RAW_CHARS]
    for block in reversed(_fenced_blocks(raw)):
        if block.startswith("{") and block.endswith("}"):
            value = _loads(block)
            if isinstance(value, dict):
                return value
    decoder, last, start, attempts = json.JSONDecoder(), None, raw.find("{"), 0
    while start != -1 and attempts < MAX_DECODE_ATTEMPTS:
        attempts += 1
        try:
            value, end = decoder.raw_decode(raw, start)
        except (ValueError, RecursionError):
            start = raw.find("{", start + 1)
            continue
        if isinstance(value, dict):
            last = value  # a top-level object; skip over it so its inner objects are not taken
        start = raw.find("{", end)
    return last


def _usable(entry: Any) -> Optional[dict[str, float]]:
    if not isinstance(entry, dict):
        return None
    scores = {}
    for dim in DIMENSIONS:
        value = entry.get(dim)
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not 1 <= value <= 10:
            return None
        scores[dim] = float(value)
    return scores


def score_dimensions(
    data: dict[str, Any],
    *,
    weights: Optional[dict[str, float]] = None,
    safety_gate: bool = False,
    score_cap: float = 0.0,
    z_normalize: bool = False,
    label: str = "evaluations",
) -> dict[str, Any]:
    weights = weights or dict(DEFAULT_WEIGHTS)
    problems = []
    if (
        not isinstance(data, dict)
        or not isinstance(data.get("responses"), dict)
        or not isinstance(data.get("reviews"), list)
    ):
        raise RubricError(
            [f"{label}: $: expected an object with 'query', 'responses' {{label: text}} and 'reviews' [...]"]
        )
    responses = {str(k): str(v) for k, v in data["responses"].items()}
    per_review: list[dict[str, Any]] = []  # reviewer -> {label: (overall, dims, ceiling)}
    notes = []
    for i, review in enumerate(data["reviews"]):
        where = f"{label}: reviews[{i}]"
        if not isinstance(review, dict):
            problems.append(f"{where}: must be an object")
            continue
        reviewer = str(review.get("reviewer", f"reviewer {i + 1}"))
        evaluations = review.get("evaluations")
        holistic = review.get("scores") if isinstance(review.get("scores"), dict) else None
        if evaluations is None and isinstance(review.get("raw"), str):
            parsed = parse_raw(review["raw"])
            if parsed is None:
                notes.append(f"{reviewer}: no JSON block could be parsed from the raw text")
            else:
                evaluations = parsed.get("evaluations")
                holistic = holistic or (parsed.get("scores") if isinstance(parsed.get("scores"), dict) else None)
                notes.append(f"{reviewer}: scores parsed from the JSON block of the raw text")
        scored = {}
        for response in responses:
            dims = _usable((evaluations or {}).get(response)) if isinstance(evaluations, dict) else None
            if dims is not None:
                overall, cap = weighted_overall(dims, weights)
                scored[response] = {"overall": overall, "dimensions": dims, "ceiling": cap, "holistic": False}
            elif (
                holistic
                and isinstance(holistic.get(response), (int, float))
                and not isinstance(holistic.get(response), bool)
            ):
                scored[response] = {
                    "overall": float(holistic[response]),
                    "dimensions": None,
                    "ceiling": None,
                    "holistic": True,
                }
                notes.append(
                    f"{reviewer}: no usable dimension scores for {response}; fell back to the holistic score "
                    f"{float(holistic[response]):g}"
                )
            else:
                notes.append(f"{reviewer}: no usable score for {response}; left out")
        if scored:
            per_review.append({"reviewer": reviewer, "scores": scored})
    if problems:
        raise RubricError(problems)
    if not per_review:
        raise RubricError([f"{label}: no review has a usable score"])
    if z_normalize:
        for review in per_review:
            values = [s["overall"] for s in review["scores"].values()]
            mean = statistics.fmean(values)
            sd = statistics.pstdev(values)
            for s in review["scores"].values():
                s["z"] = 0.0 if sd == 0 else (s["overall"] - mean) / sd
    safety: dict[str, Any] = {}
    if safety_gate:
        from reporting.scoring.scorer import builtin_patterns

        gate = builtin_patterns().safety_gate
        for response, text in responses.items():
            flagged = [p.name for p in gate if p.count(text)]
            safety[response] = {"passed": not flagged, "flagged_patterns": flagged}
    results = []
    for response in responses:
        rows = [r["scores"][response] for r in per_review if response in r["scores"]]
        if not rows:
            results.append(
                {
                    "response": response,
                    "overall": None,
                    "dimensions": None,
                    "ceiling_applied": False,
                    "reviews": 0,
                    "safety": safety.get(response, {"passed": None, "flagged_patterns": []}),
                }
            )
            continue
        key = "z" if z_normalize else "overall"
        overall = statistics.fmean(r[key] for r in rows)
        dim_rows = [r["dimensions"] for r in rows if r["dimensions"]]
        dimensions = {d: statistics.fmean(r[d] for r in dim_rows) for d in DIMENSIONS} if dim_rows else None
        gate = safety.get(response, {"passed": None, "flagged_patterns": []})
        if gate.get("passed") is False:
            overall = min(overall, score_cap)
        results.append(
            {
                "response": response,
                "overall": overall,
                "dimensions": dimensions,
                "ceiling_applied": any(r["ceiling"] is not None for r in rows),
                "ceilings": sorted({r["ceiling"] for r in rows if r["ceiling"] is not None}),
                "reviews": len(rows),
                "safety": gate,
            }
        )
    ranking = [
        r["response"]
        for r in sorted((r for r in results if r["overall"] is not None), key=lambda r: (-r["overall"], r["response"]))
    ]
    spread = {}
    for dim in DIMENSIONS:
        sds = []
        for response in responses:
            values = [
                r["scores"][response]["dimensions"][dim]
                for r in per_review
                if response in r["scores"] and r["scores"][response]["dimensions"]
            ]
            if len(values) >= 2:
                sds.append(statistics.pstdev(values))
        spread[dim] = statistics.fmean(sds) if sds else None
    return {
        "query": data.get("query"),
        "weights": weights,
        "z_normalized": z_normalize,
        "safety_gate": safety_gate,
        "score_cap": score_cap if safety_gate else None,
        "responses": results,
        "ranking": ranking,
        "reviewer_spread": spread,
        "reviewers": [r["reviewer"] for r in per_review],
        "notes": notes,
    }


def load_evaluations(path: Union[str, Path, tuple[str, bytes]]) -> dict[str, Any]:
    """Dimension scores (RUN.dimensions.json): a path or (label, bytes) held in memory; strict JSON."""
    from reporting.format.problems import FileTooLarge, read_file_bytes, unreadable
    from reporting.format.strict_json import parse_json_text
    from reporting.rubrics.scorecard import source_label

    label = source_label(path)
    if isinstance(path, tuple):
        data = path[1]
    else:
        try:
            data = read_file_bytes(path)
        except (OSError, FileTooLarge) as exc:
            raise RubricError([str(unreadable(label, exc))]) from None
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise RubricError(
            [f"{label}: $: not UTF-8 text: byte 0x{data[exc.start]:02x} at offset {exc.start} cannot be decoded"]
        ) from None
    value, problems = parse_json_text(label, text)
    if problems:
        raise RubricError([str(p) for p in problems])
    return value
