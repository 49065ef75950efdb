"""A case's conversation as the turns a reader sees (issue 32, point 4): one record per turn, shared by the
dashboard and the HTML report so both show the same thing.

Every text here is report text: hostile, shown as text (``st.code`` in the dashboard, escaped and set with
``textContent`` in the HTML), never Markdown, never markup. Long turns are folded: the first ``FOLD`` characters
shown, the full length stated; tool calls become ``function(arguments as JSON)``.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, Optional

import numpy as np

FOLD = 2_000  # characters of a turn shown before the rest is folded away
ROLES = {"system": "System", "user": "User", "assistant": "Assistant", "tool": "Tool result"}


def _arguments(arguments: Any) -> str:
    if arguments is None:
        return ""
    if isinstance(arguments, str):
        return arguments
    return json.dumps(arguments, ensure_ascii=False, sort_keys=True, indent=None)


def tool_call_text(call: Any) -> str:
    """``function(arguments)`` with the arguments as JSON (or as the model wrote them)."""
    return f"{call.function}({_arguments(call.arguments)})"


def turns(messages: Optional[Sequence[Any]], judged_turn: Optional[int], fold: int = FOLD) -> list[dict[str, Any]]:
    """One record per turn: number (from 1), role, label, text (cut at ``fold``), length, folded, tool_calls (as
    text), tool_call_id, judged (the turn the verdict is about)."""
    records = []
    for i, message in enumerate(messages or ()):
        text = message.content or ""
        calls = [tool_call_text(call) for call in message.tool_calls]
        records.append(
            {
                "number": i + 1,
                "role": message.role,
                "label": ROLES.get(message.role, message.role),
                "text": text[:fold],
                "length": len(text),
                "folded": len(text) > fold,
                "tool_calls": calls,
                "tool_call_id": message.tool_call_id,
                "judged": judged_turn == i,
            }
        )
    return records


def heading(turn: dict[str, Any]) -> str:
    """The app's own words for a turn's heading (no report text in it): "Turn 3 · Assistant · judged"."""
    parts = [f"Turn {turn['number']}", turn["label"]]
    if turn["tool_calls"]:
        parts.append(f"{len(turn['tool_calls'])} tool call{'s' if len(turn['tool_calls']) != 1 else ''}")
    if turn["judged"]:
        parts.append("judged turn")
    if turn["folded"]:
        parts.append(f"first {len(turn['text']):,} of {turn['length']:,} characters")
    return " · ".join(parts)


def summary(messages: Optional[Sequence[Any]]) -> str:
    """One line: how many turns, by whom, and how many tool calls."""
    messages = messages or ()
    users = sum(1 for m in messages if m.role == "user")
    calls = sum(len(m.tool_calls) for m in messages)
    text = f"{len(messages)} turns, {users} from the user"
    return text + (f", {calls} tool call{'s' if calls != 1 else ''}" if calls else "")


PRINT_CONVERSATION_CAP = 50  # failing cases whose conversation the printed handout prints
PRINT_TURN_CHARS = 1_000  # characters of a turn printed


def print_conversations(frame: Any, order: Any, cap: int = PRINT_CONVERSATION_CAP) -> dict[str, Any]:
    """The failing cases that carry a conversation, worst first (``order``: the figures' worst-first positions),
    at most ``cap`` of them, each turn cut at ``PRINT_TURN_CHARS``: what the printed handout prints, and how many
    it left out."""
    if "messages" not in frame or not len(frame):
        return {"cases": [], "total": 0, "cap": cap}
    # positions, not rows: a copy of the frame in this order held every column of every case (a million at export)
    order = np.asarray(order, dtype=np.int64)
    conversations = frame["messages"].to_numpy(dtype=object)
    failing = order[~frame["passed"].to_numpy(dtype=bool)[order]]
    with_turns = failing[np.fromiter((bool(conversations[i]) for i in failing), dtype=bool, count=len(failing))]
    shown = with_turns[:cap]
    cases = [
        {
            "probe_id": probe_id,
            "summary": summary(messages),
            "turns": [{**t, "heading": heading(t)} for t in turns(messages, judged, PRINT_TURN_CHARS)],
        }
        for probe_id, messages, judged in zip(
            frame["probe_id"].to_numpy(dtype=object)[shown],
            conversations[shown],
            frame["judged_turn"].to_numpy(dtype=object)[shown],
        )
    ]
    return {"cases": cases, "total": len(with_turns), "cap": cap}
