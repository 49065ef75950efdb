"""The producing tools' conversations as RunLens turns (schema version 3, ``messages``; issue 32, point 2).

Each reader takes a tool's own turns, as parsed from its file (hostile, any shape), and returns
``(messages, judged_turn)``: a list of ``{role, content, tool_calls, tool_call_id, ...the tool's own per-turn
fields}`` and the index of the judged assistant turn (the last assistant turn), or ``([], None)`` when nothing
is a turn. Texts are capped like every imported text (``TURN_CAP`` characters, the full length kept beside as
``content_chars``); a conversation keeps at most ``MAX_TURNS`` turns (the count kept as ``turns_in_file`` on the
case by the caller).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any, Optional

from reporting.format.strict_json import strict_loads

TURN_CAP = 100_000  # characters of one turn's text kept
MAX_TURNS = 500  # turns of one conversation kept
ROLES = {"system", "user", "assistant", "tool"}
ROLE_ALIASES = {"human": "user", "ai": "assistant", "model": "assistant", "bot": "assistant", "developer": "system"}
# Per-turn fields each tool writes that are worth keeping beside the turn (short scalars only).
KEPT = ("id", "source", "model", "function", "round", "lang", "stop_reason", "turn")


def _role(value: Any) -> Optional[str]:
    if not isinstance(value, str):
        return None
    role = value.strip().lower()
    role = ROLE_ALIASES.get(role, role)
    return role if role in ROLES else None


def _text(value: Any) -> str:
    """A turn's content as text: a string as it is; a list of content parts, their texts joined by blank lines
    (a part that is not text, such as an image, named in brackets); anything else as JSON."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, dict) and "text" in value:  # garak's Message {text, lang, data_path, ...}
        return value["text"] if isinstance(value["text"], str) else ""
    if isinstance(value, list):
        parts = []
        for part in value:
            if isinstance(part, str):
                parts.append(part)
            elif isinstance(part, dict):
                text = part.get("text")
                if not isinstance(text, str):
                    text = part.get("reasoning") if isinstance(part.get("reasoning"), str) else None
                parts.append(text if text is not None else f"[{str(part.get('type') or 'part')[:40]}]")
        return "\n\n".join(parts)
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


def _turn(role: str, content: Any, extra: dict[str, Any]) -> dict[str, Any]:
    text = _text(content)
    turn: dict[str, Any] = {"role": role, "content": text[:TURN_CAP]}
    if len(text) > TURN_CAP:
        turn["content_chars"] = len(text)
    for key in KEPT:
        value = extra.get(key)
        if isinstance(value, (str, int, float, bool)) and not (isinstance(value, str) and len(value) > 200):
            turn[key] = value
    return turn


def _arguments(value: Any) -> Any:
    if value is None or isinstance(value, dict):
        return value
    if isinstance(value, str):
        # The model's text, decoded as strictly as a file (no nesting beyond the limit, no lone surrogate, no number
        # beyond float range); anything else is kept as the text it is.
        parsed, problems = strict_loads("arguments", value[:TURN_CAP]) if value.lstrip().startswith("{") else (None, [])
        return parsed if isinstance(parsed, dict) and not problems else value[:TURN_CAP]
    return json.dumps(value, ensure_ascii=False, sort_keys=True)[:TURN_CAP]


def _tool_calls(value: Any) -> list[dict[str, Any]]:
    calls = []
    for call in value if isinstance(value, list) else ():
        if not isinstance(call, dict):
            continue
        function = call.get("function")
        arguments = call.get("arguments")
        if isinstance(function, dict):  # OpenAI's shape: {function: {name, arguments}}
            arguments = function.get("arguments", arguments)
            function = function.get("name")
        if not isinstance(function, str) or not function:
            continue
        record: dict[str, Any] = {"function": function[:200], "arguments": _arguments(arguments)}
        if isinstance(call.get("id"), str):
            record["id"] = call["id"][:200]
        calls.append(record)
    return calls


def _judged(messages: list[dict[str, Any]]) -> Optional[int]:
    for i in range(len(messages) - 1, -1, -1):
        if messages[i]["role"] == "assistant":
            return i
    return None


def chat_messages(turns: Iterable[Any]) -> tuple[list[dict[str, Any]], Optional[int]]:
    """OpenAI-style or Inspect messages: ``{role, content, tool_calls, tool_call_id, ...}``."""
    messages: list[dict[str, Any]] = []
    for turn in turns:
        if len(messages) >= MAX_TURNS:
            break
        if not isinstance(turn, dict):
            continue
        role = _role(turn.get("role"))
        if role is None:
            continue
        content = turn.get("content")
        message = _turn(role, content, {**content, **turn} if isinstance(content, dict) else turn)
        calls = _tool_calls(turn.get("tool_calls")) if role == "assistant" else []
        if calls:
            message["tool_calls"] = calls
        if role == "tool" and isinstance(turn.get("tool_call_id"), str):
            message["tool_call_id"] = turn["tool_call_id"][:200]
        messages.append(message)
    return messages, _judged(messages)


def garak_turns(conversation: Any) -> tuple[list[dict[str, Any]], Optional[int]]:
    """One garak conversation (``{"turns": [{"role", "content": {"text", "lang", ...}}], "notes"}``)."""
    turns = conversation.get("turns") if isinstance(conversation, dict) else None
    return chat_messages(turns if isinstance(turns, list) else ())


def history_turns(history: Any) -> tuple[list[dict[str, Any]], Optional[int]]:
    """promptfoo's ``redteamHistory``: ``[{prompt, output}]``, one user and one assistant turn per round."""
    messages: list[dict[str, Any]] = []
    for n, step in enumerate(history if isinstance(history, list) else ()):
        if len(messages) >= MAX_TURNS:
            break
        if not isinstance(step, dict):
            continue
        messages.append({**_turn("user", step.get("prompt"), {}), "round": n + 1})
        messages.append({**_turn("assistant", step.get("output"), {}), "round": n + 1})
    return messages, _judged(messages)


def last_user_text(messages: list[dict[str, Any]]) -> Optional[str]:
    for message in reversed(messages):
        if message["role"] == "user":
            return message["content"]
    return None
