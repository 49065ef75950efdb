"""A run read by columns is the typed run (issue 28): ``read_run`` gives a ``RunReport`` whose cases are the rows of
its case table, made into ``Case`` objects only when asked for, and whose frame, figures and written report are
those of the same run read case by case, on every sample, imported and hostile run the columnar reader takes."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
from test_columnar import per_record
from test_columnar_v3 import PEER_FILES, VARIATIONS, imported, variation_file  # noqa: F401 - the module's fixture

import reporting
from reporting.analysis.metrics import aggregate_metrics, cases_frame, error_frame
from reporting.format import table_run
from reporting.format.synthetic import synthetic_run
from reporting.format.table_run import TableCases, table_of
from reporting.format.writing import dumps
from reporting.report.build import build_report
from reporting.report.serialise import report_document

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = [p for p in sorted((ROOT / "sample_runs").glob("*.json")) if p.name.count(".") == 1]


def assert_same_run(path: Path, by_columns: bool = True) -> bool:
    """Read as ``reporting.load_run`` reads it (the columnar reader first) and case by case: the same run, frame,
    figures and written report. ``by_columns``: the first must have been read by columns. True if it was."""
    fast, slow = reporting.load_run(str(path)), per_record(path)
    assert slow.ok and fast.ok, (slow.problems, fast.problems)
    assert table_of(slow.run) is None
    if table_of(fast.run) is None:
        assert not by_columns, "the columnar reader handed back a run it reads"
        return False
    assert fast.cases_in_file == slow.cases_in_file == len(fast.run.cases)
    assert fast.run.model_dump(exclude={"cases"}) == slow.run.model_dump(exclude={"cases"})
    assert fast.run.model_extra == slow.run.model_extra
    assert list(fast.run.cases) == list(slow.run.cases)
    assert [c.model_extra for c in fast.run.cases] == [c.model_extra for c in slow.run.cases]
    dumped = list(fast.run.cases.dumped(range(len(fast.run.cases))))  # made a column at a time (table_records)
    assert dumped == [c.model_dump(mode="json") for c in slow.run.cases]
    assert [list(d) for d in dumped] == [list(c.model_dump(mode="json")) for c in slow.run.cases]  # key order too
    pd.testing.assert_frame_equal(cases_frame(fast.run), cases_frame(slow.run))
    pd.testing.assert_frame_equal(error_frame(fast.run), error_frame(slow.run))
    assert aggregate_metrics(fast.run) == aggregate_metrics(slow.run)
    documents = [dumps(report_document(build_report(r.run))) for r in (fast, slow)]
    assert documents[0] == documents[1]
    return True


@pytest.mark.parametrize("path", SAMPLES, ids=lambda p: p.name)
def test_a_sample_run_read_by_columns_is_the_run_read_case_by_case(path):
    limited = '"limit"' in path.read_text()  # the agent run's limits: read case by case (see below)
    assert assert_same_run(path, by_columns=not limited) != limited


def test_a_report_runlens_wrote_is_read_by_columns(tmp_path):
    """A report (recompute's, export's) and a scored run name RunLens as their generator at their head: the columnar
    reader took no document with that key, so every run RunLens itself wrote was read case by case (a million cases:
    x2.5 the time)."""
    source = tmp_path / "run.json"
    source.write_text(json.dumps(synthetic_run(300, seed=5)))
    path = tmp_path / "recomputed.json"
    path.write_text(dumps(report_document(build_report(reporting.load_run(str(source)).run))) + "\n")
    assert json.loads(path.read_text())["generator"]["name"] == "runlens"
    assert assert_same_run(path)
    assert reporting.load_run(str(path)).run.model_extra["generator"]["name"] == "runlens"


# judges' whole-number scores (promptfoo's assertions score 0 and 1)
WHOLE = {
    "promptfoo/promptfoo.json",
    "promptfoo/promptfoo_redteam.json",
    "promptfoo/sample-export.json",
    "promptfoo/multiturn/chat/promptfoo_chat_eval.json",
    "promptfoo/multiturn/redteam/promptfoo_redteam_multiturn.json",
}


def read_by_columns(path: Path, name: str) -> bool:
    """Whether the columnar reader keeps this imported run whole: no case gives a limit, and the tool's judges
    do not score in whole numbers (``WHOLE``)."""
    cases = json.loads(path.read_text())["cases"]
    return name not in WHOLE and all(case.get("limit") is None for case in cases)


@pytest.mark.parametrize("name", PEER_FILES)
def test_an_imported_run_read_by_columns_is_the_run_read_case_by_case(imported, name):  # noqa: F811
    """A run whose table would not keep it whole (a limit, a judge's whole-number score: the table holds scores as
    floats) is read case by case; every other, its conversations too, is read by columns, alike."""
    for path in imported[name]:
        whole = read_by_columns(path, name)
        assert assert_same_run(path, by_columns=whole) == whole, name


def errors_and_weights(version: int) -> dict:
    """A synthetic run of 300 cases with cases not evaluated, given weights, a stored weighted risk that drifts,
    and cases with no weight."""
    document = synthetic_run(300, seed=4)
    document["schema_version"] = version
    for i, case in enumerate(document["cases"]):
        if i % 7 == 0:
            case.update(passed=None, risk_score=None, error=f"timeout {i}")
            case.pop("weighted_risk", None)
        elif i % 5 == 0:
            case["severity_weight"] = 2.5
            case["weighted_risk"] = 0.123  # not what it recomputes to: drift the report names
        elif i % 5 == 1:
            case.pop("severity_weight")  # the default weight of its severity
            case.pop("weighted_risk")
    return document


def test_a_run_with_errors_given_weights_and_stored_figures_is_read_alike(tmp_path):
    document = errors_and_weights(2)
    path = tmp_path / "run.json"
    path.write_text(json.dumps(document))
    assert_same_run(path)
    run = reporting.read_run(str(path))
    assert run.cases[5].severity_weight == 2.5 and run.cases[5].weighted_risk == 0.123  # as the file said
    assert run.cases[1].severity_weight is None  # absent in the file: the effective weight is the frame's
    drift = build_report(run, with_observability=False).drift
    assert any(d.path.startswith("cases[5]") for d in drift)


@pytest.mark.parametrize("name", [n for n in VARIATIONS if VARIATIONS[n][2] is None][:12])
def test_hostile_imported_runs_read_by_columns_are_read_alike(imported, tmp_path, name):  # noqa: F811
    path = variation_file(imported, tmp_path, name)
    fast, slow = reporting.load_run(str(path)), per_record(path)
    assert [str(p) for p in fast.problems] == [str(p) for p in slow.problems]
    if slow.ok:
        assert_same_run(path, by_columns=False)


def test_a_whole_number_score_or_a_conversation_is_read_case_by_case(tmp_path):
    document = synthetic_run(20, seed=1)
    document["schema_version"] = 2
    document["cases"][3]["verdicts"] = {"judge": {"passed": True, "score": 1.5}}
    path = tmp_path / "run.json"
    path.write_text(json.dumps(document))
    assert table_of(reporting.read_run(str(path))) is not None  # a fractional score: by columns
    document["cases"][4]["verdicts"] = {"judge": {"passed": True, "score": 2}}
    path.write_text(json.dumps(document))
    run = reporting.read_run(str(path))
    assert table_of(run) is None and run.cases[4].verdicts["judge"].score == 2
    assert type(run.cases[4].verdicts["judge"].score) is int


def test_a_case_not_evaluated_that_gives_a_risk_is_read_case_by_case(tmp_path):
    """A case keeps the risk it gives; the table's figures leave a risk out where the case was not evaluated: the
    run goes to the per-record reader, whose error frame shows the risk."""
    document = synthetic_run(20, seed=3)
    document["schema_version"] = 2
    document["cases"][2].update(passed=None, error="timeout", risk_score=0.25)
    path = tmp_path / "run.json"
    path.write_text(json.dumps(document))
    assert assert_same_run(path, by_columns=False) is False
    assert error_frame(reporting.read_run(str(path)))["risk_score"].tolist() == [0.25]


CONVERSATIONS = {
    "an empty conversation": (3, {"messages": []}, False),  # Arrow's parse alone: its table holds none
    "an empty conversation beside verdicts": (  # each case's keys decoded: the table holds the empty list
        3,
        {"messages": [], "verdicts": {"judge": {"passed": True, "score": 0.5, "explanation": None}}},
        True,
    ),
    "a conversation written null": (3, {"messages": None}, True),  # no conversation: kept whole
    "a conversation": (3, {"messages": [{"role": "assistant", "content": "ok"}], "judged_turn": 0}, True),
    "a conversation with nulls": (
        3,
        {
            "messages": [
                {"role": "user", "content": "hi", "tool_call_id": None, "id": None, "meta": {"a": None}},
                {
                    "role": "assistant",
                    "content": "",
                    "tool_calls": [{"id": None, "function": "f", "arguments": None, "x": None}],
                    "source": None,
                },
                {"role": "tool", "content": "ok", "tool_call_id": "c1", "tool_calls": []},
                {"role": "assistant", "content": "done"},
            ],
            "judged_turn": 3,
        },
        True,
    ),
    "a limit": (3, {"limit": {"type": "time", "limit": None}}, False),
    "a limit written null": (3, {"limit": None}, True),
    "a version 2 extra named messages": (2, {"messages": [{"role": "x", "id": None}]}, True),
    "texts that name the fields": (3, {"response": '"messages": [], "limit": null, "score": 2}'}, True),
}


@pytest.mark.parametrize("name", CONVERSATIONS)
def test_a_conversation_is_kept_whole_by_columns_and_a_limit_read_case_by_case(tmp_path, name):
    """A conversation is kept whole by the table, its nulls too (the same run, frame, figures and written report as
    case by case); the reader itself hands back a case whose limit the table would keep without its nulls (no scan
    of the file's bytes first), in any form the JSON gives it; a null one is none, and texts that only name the
    fields are texts."""
    version, fields, by_columns = CONVERSATIONS[name]
    document = synthetic_run(20, seed=2)
    document["schema_version"] = version
    document["cases"][7].update(fields)
    path = tmp_path / "run.json"
    path.write_text(json.dumps(document))
    assert assert_same_run(path, by_columns=by_columns) == by_columns


def test_cases_are_made_a_chunk_at_a_time_and_indexed_like_a_list(tmp_path, monkeypatch):
    monkeypatch.setattr(table_run, "CHUNK", 7)
    path = tmp_path / "run.json"
    path.write_text(json.dumps(synthetic_run(30, seed=2)))
    cases = reporting.read_run(str(path)).cases
    reference = per_record(path).run.cases
    assert isinstance(cases, TableCases) and len(cases) == 30
    assert cases[-1] == reference[-1] and cases[0] == reference[0] and cases[13] == reference[13]
    assert cases[5:16:3] == reference[5:16:3]
    assert list(reversed(cases)) == list(reversed(reference))
    assert [c.probe_id for c in cases] == [c.probe_id for c in reference]
    assert cases.index(reference[20]) == 20
    wanted = [0, 6, 7, 8, 20, 29]  # across the chunks' edges
    assert list(cases.dumped(wanted)) == [reference[i].model_dump(mode="json") for i in wanted]
    for wanted in (range(3, 17), [*range(9), 11, 12, 29]):  # rows that follow one another (a slice) and mixed
        assert list(cases.dumped(wanted)) == [reference[i].model_dump(mode="json") for i in wanted]
    with pytest.raises(IndexError):
        cases[30]
    with pytest.raises(IndexError):
        cases[-31]


def test_cases_asked_for_from_several_threads_are_each_the_case_asked(tmp_path, monkeypatch):
    """The dashboard's sessions share one run: a case asked for on one thread while another thread moves the chunk
    is still the case at that position."""
    import random
    import threading

    monkeypatch.setattr(table_run, "CHUNK", 3)
    path = tmp_path / "run.json"
    path.write_text(json.dumps(synthetic_run(60, seed=5)))
    cases = reporting.read_run(str(path)).cases
    ids = [c.probe_id for c in per_record(path).run.cases]
    wrong: list[tuple[int, str]] = []

    def ask(seed: int) -> None:
        rng = random.Random(seed)
        for _ in range(3000):
            i = rng.randrange(60)
            if cases[i].probe_id != ids[i]:
                wrong.append((i, cases[i].probe_id))

    threads = [threading.Thread(target=ask, args=(seed,)) for seed in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert wrong == []


def test_rows_made_a_column_at_a_time_are_the_rows_made_one_by_one():
    """``table_records.dumped_rows`` against the per-row way (``case_records`` then ``dump_row``) on a table with
    nulls in optional columns, verdicts (none, empty, several), an extra carrying version-3 fields and fields of its
    own, and an extra that names one of the table's columns (made the per-row way: the merge decides)."""
    import pyarrow as pa

    from reporting.format.parquet import case_records
    from reporting.format.table_records import dump_row, dumped_rows, unused_left_out

    verdict = pa.struct(
        [("judge", pa.string()), ("passed", pa.bool_()), ("score", pa.float64()), ("explanation", pa.string())]
    )
    v = {"judge": "j", "passed": None, "score": 0.5, "explanation": None}
    table = pa.table(
        {
            "run_key": pa.array([None] * 5, pa.string()),
            "probe_id": ["p0", "p1", "p2", "p3", "p4"],
            "category": ["c"] * 5,
            "severity": ["low", "high", "low", "low", "critical"],
            "passed": pa.array([True, False, None, True, False]),
            "risk_score": pa.array([0.0, 1.0, None, 0.25, 0.5]),
            "task": pa.array([None, "t", None, "t", None], pa.string()),
            "safe_signal_hits": pa.array([None, 1, 2, None, 0], pa.int64()),
            "failure_modes": pa.array([None, ["a", "b"], [], None, ["c"]], pa.list_(pa.string())),
            "verdicts": pa.array([None, [], [v, {**v, "judge": "k", "passed": True}], [v], None], pa.list_(verdict)),
            "extra": pa.array(
                [
                    None,
                    '{"strategy": "s", "tags": ["x"], "mine": {"deep": [1, 2]}}',
                    '{"task": "from extra", "zz": 1}',
                    '{"task": "loses to the column"}',
                    '{"strategy": "s", "tags": ["x"], "mine": {"deep": [1, 2]}}',
                ],
                pa.string(),
            ),
        }
    )
    unused = {"none": ("task", "strategy", "error", "plugin"), "empty": ("verdicts",)}
    for start, size in ((0, 5), (1, 3), (4, 1), (0, 1)):
        rows = table.slice(start, size)
        expected = [dump_row(r) for r in case_records(rows, "t", [], first=start, ours=True)]
        made = dumped_rows(rows, "t", first=start)
        assert made == expected and [list(m) for m in made] == [list(e) for e in expected]
        made = dumped_rows(rows, "t", first=start, **unused)  # left out where unused, as unused_left_out does
        expected = [unused_left_out(e, **unused) for e in expected]
        assert made == expected and [list(m) for m in made] == [list(e) for e in expected]
    made = dumped_rows(table, "t")
    assert made[2]["task"] == "from extra" and made[3]["task"] == "t" and made[2]["zz"] == 1
    assert made[1]["strategy"] == "s" and list(made[1])[-1] == "mine" and made[0]["tags"] is None
    assert made[2]["verdicts"] == {
        "j": {"passed": None, "score": 0.5, "explanation": None},
        "k": {"passed": True, "score": 0.5, "explanation": None},
    }
    assert made[0]["safe_signal_hits"] == 0 and made[0]["failure_modes"] == [] and made[1]["verdicts"] == {}


def test_a_run_read_by_columns_has_the_fingerprint_of_its_cases(tmp_path):
    """``run_fingerprint`` of a run read by columns hashes its columns a chunk at a time, in probe id order (ids
    given out of order, some beyond ASCII): the hash of its cases read one by one, whatever the chunk."""
    from reporting.analysis.compare import run_fingerprint
    from reporting.format.columnar_checks import fingerprint_of_columns

    document = errors_and_weights(2)
    for i, case in enumerate(document["cases"]):
        case["probe_id"] = f"{'éz€a'[i % 4]}-{(i * 37) % 300:03d}"
    path = tmp_path / "run.json"
    path.write_text(json.dumps(document))
    fast, slow = reporting.read_run(str(path)), per_record(path).run
    assert table_of(fast) is not None and table_of(slow) is None
    expected = run_fingerprint(slow)
    assert run_fingerprint(fast) == expected
    identity = fast.cases.columnar.identity
    assert fingerprint_of_columns(fast.run.model, fast.run.created_at, identity, chunk=7) == expected
    assert fingerprint_of_columns("other", fast.run.created_at, identity) != expected


@pytest.mark.parametrize("version", [2, 3])
def test_verdicts_written_null_are_the_per_record_readers_problem(tmp_path, version):
    """Arrow's parse takes ``"verdicts": null`` for no verdicts: the reader reads the keys of a chunk that names
    verdicts, and the null goes to the per-record reader, which names it."""
    document = synthetic_run(30, seed=1)
    document["schema_version"] = version
    document["cases"][1]["verdicts"] = None
    path = tmp_path / "run.json"
    path.write_text(json.dumps(document))
    fast, slow = reporting.load_run(str(path)), per_record(path)
    assert [str(p) for p in fast.problems] == [str(p) for p in slow.problems]
    assert [p.path for p in fast.problems] == ["cases[1].verdicts"]
    document["cases"][1]["verdicts"] = {}  # no verdicts, written as such: read by columns
    path.write_text(json.dumps(document))
    assert assert_same_run(path)


def test_a_document_named_as_json_lines_is_read_as_lines(tmp_path):
    """The per-record reader tells JSON Lines by the name: a document so named is lines (one case a line, and a
    whole document on one line is no case); the columnar reader leaves such a file to it."""
    path = tmp_path / "run.jsonl"
    path.write_text(json.dumps(synthetic_run(5, seed=1)))
    fast, slow = reporting.load_run(str(path)), per_record(path)
    assert not slow.ok and [str(p) for p in fast.problems] == [str(p) for p in slow.problems]


TURN_VALUES = {
    "an integer beyond 2^53 in a turn's own field": (
        {"role": "user", "content": "hi", "n": 2**53 + 1},
        "messages[0].n",
    ),
    "one in a tool call's arguments": (
        {"role": "assistant", "content": "", "tool_calls": [{"function": "f", "arguments": {"at": [2**60]}}]},
        "messages[0].tool_calls[0].arguments",
    ),
    "one in a tool call's own field": (
        {"role": "assistant", "content": "", "tool_calls": [{"function": "f", "ts": -(2**55)}]},
        "messages[0].tool_calls[0].ts",
    ),
    "NaN in a turn's own field": ({"role": "user", "content": "hi", "x": float("nan")}, "messages[0].x"),
    "a turn's field nested 70 deep": ({"role": "user", "content": "hi", "d": "DEEP"}, "messages[0].d"),
    "one nested 260 deep (beyond what a case can be dumped at)": (
        {"role": "user", "content": "hi", "d": "DEEPER"},
        "messages[0].d",
    ),
}


@pytest.mark.parametrize("escape", [False, True], ids=["plain", "an escaped emoji elsewhere"])
@pytest.mark.parametrize("name", TURN_VALUES)
def test_a_turns_free_form_values_are_checked_as_a_cases_extras_by_either_reader(tmp_path, name, escape):
    """A conversation's free-form values (a turn's own fields, a tool call's arguments and fields) are held to the
    rules of a case's extras (finite numbers, integers within 2^53, nesting within 64 levels): the same problem
    whichever reader reads the run, and whatever else the file holds (an escaped emoji once made the strict decoder
    look for large integers everywhere, and only then)."""
    turn, where = TURN_VALUES[name]
    document = synthetic_run(20, seed=2)
    document["schema_version"] = 3
    document["cases"][4].update(messages=[turn], judged_turn=None)
    if escape:
        document["cases"][9]["response"] = "ok \U0001f600"  # json.dumps writes it as a surrogate pair's escapes
    text = json.dumps(document).replace('"DEEPER"', "[" * 260 + "]" * 260).replace('"DEEP"', "[" * 70 + "]" * 70)
    path = tmp_path / "run.json"
    path.write_text(text)
    fast, slow = reporting.load_run(str(path)), per_record(path)
    assert [str(p) for p in fast.problems] == [str(p) for p in slow.problems]
    assert len(slow.problems) == 1 and f"cases[4].{where}" in str(slow.problems[0])
    assert len(fast.run.cases) == len(slow.run.cases) == 19  # the case is left out, as a case's bad extra is


@pytest.mark.parametrize("depth", [62, 63, 64, 65, 66, 67])
def test_a_turns_nesting_at_the_limit_is_told_alike_by_either_reader(tmp_path, depth):
    """At the edge of the 64 levels a free-form value may nest, both readers agree, whether the value is inside a
    turn's own field or a tool call's arguments (the columnar reader walks a conversation's values only where its
    turns open more arrays and objects than the limit: fewer cannot nest deeper)."""
    document = synthetic_run(20, seed=3)
    document["schema_version"] = 3
    document["cases"][4].update(messages=[{"role": "user", "content": "hi", "d": "DEEP"}], judged_turn=None)
    call = {"function": "f", "arguments": {"x": "DEEP"}}
    document["cases"][7].update(messages=[{"role": "assistant", "content": "", "tool_calls": [call]}], judged_turn=0)
    path = tmp_path / "run.json"
    path.write_text(json.dumps(document).replace('"DEEP"', "[" * depth + "]" * depth))
    fast, slow = reporting.load_run(str(path)), per_record(path)
    assert [str(p) for p in fast.problems] == [str(p) for p in slow.problems]
    assert len(fast.run.cases) == len(slow.run.cases) == 20 - len(slow.problems)
    told = ["cases[4]"] * (depth >= 66) + ["cases[7]"] * (depth >= 65)  # the arguments' object is one level more
    assert sorted(p.path.split(".")[0] for p in slow.problems) == told


@pytest.mark.parametrize(
    "limit, where",
    [
        ({"type": "token", "limit": 2**60}, "limit.limit"),
        ({"type": "time", "limit": 5, "spent": -(2**54)}, "limit.spent"),
        ({"type": "custom", "detail": "DEEP"}, "limit.detail"),
    ],
    ids=["a limit's value beyond 2^53", "one in its own field", "its own field nested 70 deep"],
)
def test_a_limits_values_are_checked_as_a_cases_extras(tmp_path, limit, where):
    """A limit's value and its own fields are held to the rules of a case's extras, whatever else the file holds."""
    document = synthetic_run(20, seed=2)
    document["schema_version"] = 3
    document["cases"][4]["limit"] = limit
    path = tmp_path / "run.json"
    path.write_text(json.dumps(document).replace('"DEEP"', "[" * 70 + "]" * 70))
    fast, slow = reporting.load_run(str(path)), per_record(path)
    assert [str(p) for p in fast.problems] == [str(p) for p in slow.problems]
    assert len(slow.problems) == 1 and f"cases[4].{where}" in str(slow.problems[0])
