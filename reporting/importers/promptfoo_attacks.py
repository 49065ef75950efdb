"""promptfoo's multi-turn and iterative attacks as RunLens conversations (schema version 3): the conversation
a strategy kept (crescendo, GOAT, hydra, custom) with the attack's figures, an iterative strategy's judged attempt,
a chat-shaped prompt. The part of ``reporting.importers.promptfoo`` about one result's turns."""

from __future__ import annotations

import json
from typing import Any, Optional

from reporting.format.strict_json import strict_loads
from reporting.importers.conversations import TURN_CAP, chat_messages, history_turns

# Strategies whose history is a list of single-turn attempts ({prompt, output, score, graderPassed}), not a chat.
ATTEMPT_STRATEGIES = frozenset({"jailbreak", "jailbreak:meta", "jailbreak:tree"})


def _obj(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _text(value: Any) -> Optional[str]:
    if value is None or isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


def _number(value: Any) -> Optional[float]:
    return value if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _prefixed(meta: dict[str, Any], suffix: str) -> Any:
    """A strategy's own counter (``crescendoRoundsCompleted``, ``hydraBacktrackCount``, ``customRoundsCompleted``)."""
    for key, value in meta.items():
        if key.endswith(suffix) and _number(value) is not None:
            return value
    return None


def _attempt_turns(
    attempts: list[Any], meta: dict[str, Any], answer: Optional[str], prompt: Any
) -> tuple[list[dict[str, Any]], Optional[int], dict[str, Any]]:
    """An iterative strategy's judged attempt as one user and one assistant turn, and the attack's figures. The
    judged attempt is the one whose output is the result's answer: the last the grader failed, else the first that
    reached the highest score, else the last; without one, the final prompt promptfoo names and the answer."""
    nodes = [a for a in attempts if isinstance(a, dict)]
    same = [i for i, a in enumerate(nodes) if answer is not None and _text(a.get("output")) == answer]
    best = _number(meta.get("highestScore"))
    judged = next((i for i in reversed(same) if nodes[i].get("graderPassed") is False), None)
    if judged is None:
        judged = next((i for i in same if best is not None and _number(nodes[i].get("score")) == best), None)
    if judged is None and same:
        judged = same[-1]
    attack: dict[str, Any] = {
        "shape": "attempts",
        "attempts": meta["attempts"] if _number(meta.get("attempts")) is not None else len(nodes),
        "attempts_in_file": len(nodes),
        "judged_attempt": judged + 1 if judged is not None else None,
        "highest_score": best,
        "stop_reason": meta.get("stopReason") if isinstance(meta.get("stopReason"), str) else None,
    }
    if _number(meta.get("finalIteration")) is not None:
        attack["final_iteration"] = meta["finalIteration"]
    extra: dict[str, Any] = {}
    if judged is not None:
        node = nodes[judged]
        prompt = node.get("prompt")
        # The attempt's own fields, kept on its answer: its node id and depth in the tree, the attacker's judge
        # score, the grader's verdict.
        for key, name, kinds in (
            ("id", "id", (str,)),
            ("depth", "depth", (int,)),
            ("score", "score", (int, float)),
            ("graderPassed", "grader_passed", (bool,)),
        ):
            value = node.get(key)
            if isinstance(value, kinds) and (key == "graderPassed" or not isinstance(value, bool)):
                extra[name] = value[:200] if isinstance(value, str) else value
    if answer is None or not isinstance(prompt, str):
        return [], None, attack
    messages, _ = chat_messages([{"role": "user", "content": prompt}, {"role": "assistant", "content": answer}])
    messages[1].update(extra)
    return messages, 1, attack


def _conversation(
    result: dict[str, Any], strategy: Optional[str], answer: Optional[str]
) -> tuple[list[dict[str, Any]], Optional[int], Optional[dict[str, Any]], int]:
    """(messages, judged turn, the attack's figures or None, turns in the file) of one result."""
    response = _obj(result.get("response"))
    meta = _obj(response.get("metadata"))
    tree, history, kept = meta.get("redteamTreeHistory"), meta.get("redteamHistory"), meta.get("messages")
    if isinstance(tree, list) or (strategy in ATTEMPT_STRATEGIES and isinstance(history, list)):
        attempts: list[Any] = tree if isinstance(tree, list) else history if isinstance(history, list) else []
        final = meta.get("redteamFinalPrompt") or response.get("prompt")
        messages, judged, attack = _attempt_turns(attempts, meta, answer, final)
        return messages, judged, attack, len(messages)
    if isinstance(kept, list) or isinstance(history, list):
        messages, _ = chat_messages(kept if isinstance(kept, list) else ())
        in_file = len(kept) if isinstance(kept, list) else 0
        if not messages and isinstance(history, list):
            messages, _ = history_turns(history)
            in_file = 2 * len(history)
        attack = {
            "shape": "conversation",
            "rounds": _prefixed(meta, "RoundsCompleted"),
            "backtracks": _prefixed(meta, "BacktrackCount"),
            "stop_reason": meta.get("stopReason") if isinstance(meta.get("stopReason"), str) else None,
            "successful_attacks": _number(meta.get("totalSuccessfulAttacks")),
        }
        judged = None
        if messages and answer is not None:
            last = max((i for i, m in enumerate(messages) if m["role"] == "assistant"), default=None)
            if last is not None and last == len(messages) - 1 and messages[last]["content"] == answer[:TURN_CAP]:
                judged = last
            else:
                # The answer promptfoo judged is not a turn of the conversation it kept: the answer to a turn the
                # attack backtracked (crescendo and hydra remove a refused turn; its prompt is not in the file).
                extra, _ = chat_messages([{"role": "assistant", "content": answer}])
                messages.append({**extra[0], "backtracked": True})
                judged = len(messages) - 1
        return messages, judged, {k: v for k, v in attack.items() if v is not None}, in_file
    turns = _chat_prompt(_obj(result.get("prompt")).get("raw"))
    if turns is None:
        return [], None, None, 0
    messages, _ = chat_messages(turns)
    judged = None
    if messages and answer is not None and result.get("failureReason") != 2:
        extra, _ = chat_messages([{"role": "assistant", "content": answer}])
        messages.append(extra[0])
        judged = len(messages) - 1
    return messages, judged, None, len(turns) + (judged is not None)


def _chat_prompt(raw: Any) -> Optional[list[Any]]:
    """A chat-shaped prompt: ``prompt.raw`` the JSON text of an array of ``{role, content}`` messages."""
    if not isinstance(raw, str) or not raw.lstrip().startswith("["):
        return None
    turns, problems = strict_loads("prompt.raw", raw, "prompt.raw")  # the strict decoder, as for the file itself
    if problems:
        return None
    if not isinstance(turns, list) or not turns:
        return None
    if not all(isinstance(t, dict) and isinstance(t.get("role"), str) for t in turns):
        return None
    return turns
