"""The conversation view of a case in the dashboard (issue 32, point 4): the turns as a chat, each turn's text as
text (``st.code``, never Markdown), tool calls as code, tool results folded, the judged turn marked, long turns
folded with their full length stated. Headings and expander labels are the app's own words only."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Optional

import streamlit as st

from reporting.render.conversation import heading, summary, turns


def show_conversation(messages: Optional[Sequence[Any]], judged_turn: Optional[int]) -> None:
    """Draw the turns of a conversation, in order."""
    if not messages:
        return
    st.text("Conversation: " + summary(messages))
    for turn, message in zip(turns(messages, judged_turn), messages):
        role = "user" if turn["role"] in ("user", "system") else "assistant"
        with st.chat_message(role, avatar=None):
            st.text(heading(turn))
            if turn["role"] == "tool":
                with st.expander(f"Tool result, {turn['length']:,} characters", expanded=False):
                    st.code(message.content or "(empty)", language=None, wrap_lines=True)
            else:
                if turn["text"] or not turn["tool_calls"]:
                    st.code(turn["text"] or "(empty)", language=None, wrap_lines=True)
                if turn["folded"]:
                    with st.expander(f"The whole turn, {turn['length']:,} characters", expanded=False):
                        st.code(message.content, language=None, wrap_lines=True)
            for call in turn["tool_calls"]:
                st.text("Tool call")
                st.code(call, language="json", wrap_lines=True)
