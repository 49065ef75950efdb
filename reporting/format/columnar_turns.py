"""The conversations of a run read by the columnar reader (``messages``, version 3): each case's turns decoded by the
strict JSON decoder (a key given twice, a lone surrogate: refused), checked as ``reporting.format.schema.Message``
and ``ToolCall`` check them, and written as the models dump them (``model_dump(mode="json")``: the declared
fields in order with their defaults, then the turn's own extra fields, nulls too, so the table keeps a conversation
whole), without a pydantic model per turn: the models cost three times the decoding. Anything the models would
refuse raises ``NotMine`` (the per-record reader names it). A test holds the two to the same bytes on every
conversation the importers write and on hostile variations of them.

NaN and numbers beyond float range never reach here: msgspec (the case's keys) and Arrow (the case) refuse them.
"""

from __future__ import annotations

import json
from typing import Any, Optional

from reporting.format.columnar_checks import NotMine
from reporting.format.strict_json import MAX_EXTRA_DEPTH

ROLES = frozenset({"system", "user", "assistant", "tool"})
_TURN = frozenset({"role", "content", "tool_calls", "tool_call_id"})
_CALL = frozenset({"id", "function", "arguments"})


def conversations(label: str, n: int, rows: list[int], raws: list) -> tuple[list[Optional[list[str]]], list]:
    """The roles of each case's turns (None: no conversation) and the JSON of its turns (None likewise)."""
    from reporting.format.quick_json import read_quickly
    from reporting.format.strict_json import parse_json_text

    roles: list[Optional[list[str]]] = [None] * n
    texts: list[Optional[str]] = [None] * n
    if not rows:
        return roles, texts
    joined = b"[" + b",".join(raws) + b"]"
    quick = read_quickly(joined)
    value, problems = (quick[0], []) if quick is not None else parse_json_text(label, joined.decode("utf-8"))
    if problems or type(value) is not list or len(value) != len(rows):
        raise NotMine
    for at, turns, raw in zip(rows, value, raws):
        if type(turns) is not list:
            raise NotMine
        dumped = [_turn(turn) for turn in turns]
        if (quick is None or _brackets(raw) > MAX_EXTRA_DEPTH) and not _free_form_fine(dumped):
            raise NotMine
        roles[at] = [turn["role"] for turn in dumped]
        try:
            texts[at] = json.dumps(dumped)
        except (TypeError, ValueError):  # an integer too long to convert, kept by the decoder as its length
            raise NotMine from None
    return roles, texts


def _brackets(raw: Any) -> int:
    """The arrays and objects a case's turns open: a free-form value among them nests at most this deep. msgspec's
    value (``read_quickly``) holds no NaN, no Infinity and no integer of 16 digits or more, so where the turns open
    at most ``MAX_EXTRA_DEPTH`` its free-form values need no walk (an imported log's turns open a handful)."""
    text = bytes(raw)
    return text.count(b"[") + text.count(b"{")


def _free_form_fine(turns: list[dict[str, Any]]) -> bool:
    """Whether the turns' free-form values (``reading.turn_values``: a turn's own fields, a tool call's arguments and
    own fields) pass the checks the per-record reader makes of them (finite, integers within 2^53, nesting within
    bounds); where one does not, that reader names it."""
    from reporting.format.reading import turn_values
    from reporting.format.strict_json import _nonfinite_and_depth

    problems: list = []
    for where, value in turn_values(turns):
        _nonfinite_and_depth("", where, value, problems)
        if problems:
            return False
    return True


def _turn(turn: Any) -> dict[str, Any]:
    """``Message.model_dump(mode="json")`` of a turn the model accepts: its null fields kept, as the model does."""
    if type(turn) is not dict:
        raise NotMine
    role, content = turn.get("role"), turn.get("content", "")
    calls, answers = turn.get("tool_calls", []), turn.get("tool_call_id")
    if type(role) is not str or role not in ROLES or type(content) is not str or type(calls) is not list:
        raise NotMine
    if answers is not None and type(answers) is not str:
        raise NotMine
    out: dict[str, Any] = {
        "role": role,
        "content": content,
        "tool_calls": [_call(call) for call in calls] if calls else [],
        "tool_call_id": answers,
    }
    if not _TURN.issuperset(turn):
        out.update((key, item) for key, item in turn.items() if key not in _TURN)
    return out


def _call(call: Any) -> dict[str, Any]:
    """``ToolCall.model_dump(mode="json")`` of a tool call the model accepts: its null fields kept."""
    if type(call) is not dict:
        raise NotMine
    ident, function, arguments = call.get("id"), call.get("function"), call.get("arguments")
    if type(function) is not str or (ident is not None and type(ident) is not str):
        raise NotMine
    if arguments is not None and type(arguments) is not str and type(arguments) is not dict:
        raise NotMine
    out: dict[str, Any] = {"id": ident, "function": function, "arguments": arguments}
    out.update((key, item) for key, item in call.items() if key not in _CALL)
    return out
