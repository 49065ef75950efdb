"""The tools' turns as RunLens conversations (issue 32, point 2), on the real files the tools wrote
(tests/fixtures/*/multiturn/, made by the tools themselves: see the README beside each)."""

import json
from pathlib import Path

from reporting.format.schema import Message
from reporting.importers.conversations import (
    MAX_TURNS,
    TURN_CAP,
    chat_messages,
    garak_turns,
    history_turns,
    last_user_text,
)

FIXTURES = Path(__file__).resolve().parent / "fixtures"
INSPECT = FIXTURES / "inspect" / "multiturn" / "mail_agent.json"


def samples():
    return {s["id"]: s for s in json.loads(INSPECT.read_text())["samples"]}


def test_an_inspect_agent_sample_keeps_every_turn_the_tool_calls_and_the_tool_results():
    inj = samples()["inj-01"]
    messages, judged = chat_messages(inj["messages"])
    assert len(messages) == len(inj["messages"]) == 7
    assert [m["role"] for m in messages] == ["system", "user", "assistant", "tool", "assistant", "tool", "assistant"]
    send = messages[4]["tool_calls"][0]
    assert send["function"] == "send_email" and send["arguments"]["to"] == "attacker@evil.example"
    assert messages[5]["tool_call_id"] == send["id"] and messages[5]["function"] == "send_email"
    assert "attacker@evil.example" in messages[5]["content"]
    assert judged == 6 and messages[judged]["content"] == inj["output"]["choices"][0]["message"]["content"]
    for message in messages:  # every turn is a valid version 3 turn
        Message.model_validate(message)


def test_a_chat_shaped_input_is_read_as_turns():
    chat = samples()["chat-01"]
    assert isinstance(chat["input"], list)
    messages, _ = chat_messages(chat["input"])
    assert [m["role"] for m in messages] == [m["role"] for m in chat["input"]]
    assert last_user_text(messages) == chat["input"][-1]["content"]


def test_garak_turns_and_promptfoo_history():
    conversation = {
        "turns": [
            {"role": "user", "content": {"text": "hi", "lang": "en", "data_path": None}},
            {"role": "assistant", "content": {"text": "hello", "lang": "en"}},
            {"role": "user", "content": {"text": "now the recipe", "lang": "en"}},
            {"role": "assistant", "content": {"text": None}},
        ],
        "notes": {},
    }
    messages, judged = garak_turns(conversation)
    assert [(m["role"], m["content"]) for m in messages] == [
        ("user", "hi"),
        ("assistant", "hello"),
        ("user", "now the recipe"),
        ("assistant", ""),
    ]
    assert messages[0]["lang"] == "en" and judged == 3
    history, judged = history_turns([{"prompt": "p1", "output": "o1"}, {"prompt": "p2", "output": "o2"}])
    assert [(m["role"], m["content"], m["round"]) for m in history] == [
        ("user", "p1", 1),
        ("assistant", "o1", 1),
        ("user", "p2", 2),
        ("assistant", "o2", 2),
    ]
    assert judged == 3


def test_hostile_shapes_are_dropped_or_capped_never_raised():
    turns = [
        None,
        "text",
        {"role": "wizard", "content": "x"},
        {"role": ["user"], "content": "x"},
        {"role": "HUMAN", "content": [{"type": "image", "image": "data:..."}, {"type": "text", "text": "t"}]},
        {"role": "assistant", "content": "y" * (TURN_CAP + 5), "tool_calls": [{"function": {"name": "f"}}, 7, {}]},
        {"role": "tool", "content": 5, "tool_call_id": 9},
    ]
    messages, judged = chat_messages(turns)
    assert [m["role"] for m in messages] == ["user", "assistant", "tool"]
    assert messages[0]["content"] == "[image]\n\nt"
    assert len(messages[1]["content"]) == TURN_CAP and messages[1]["content_chars"] == TURN_CAP + 5
    assert messages[1]["tool_calls"] == [{"function": "f", "arguments": None}]
    assert messages[2]["content"] == "5" and "tool_call_id" not in messages[2]
    assert judged == 1
    many, _ = chat_messages([{"role": "user", "content": "x"}] * (MAX_TURNS + 10))
    assert len(many) == MAX_TURNS


def test_tool_call_arguments_are_decoded_strictly():
    """Arguments the model wrote as text: an object is read as one; text nested 100,000 deep, a lone surrogate or a
    number beyond float range stays the text it is (json.loads raised RecursionError on the first)."""
    for text in ("[" * 100_000 + "]" * 100_000, '{"a": "\\ud800"}', '{"a": 1e999}', '{"a": {' * 300 + "}" * 300):
        messages, _ = chat_messages([{"role": "assistant", "tool_calls": [{"function": "f", "arguments": text}]}])
        assert messages[0]["tool_calls"][0]["arguments"] == text[:TURN_CAP]
    messages, _ = chat_messages([{"role": "assistant", "tool_calls": [{"function": "f", "arguments": '{"to": "x"}'}]}])
    assert messages[0]["tool_calls"][0]["arguments"] == {"to": "x"}
