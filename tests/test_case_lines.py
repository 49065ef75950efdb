"""The cases of a run read by columns, written as JSON over whole columns (``reporting.format.case_lines``), are the
text the per-case writer makes (``iter_case_records`` then ``dumps_line``), byte for byte: on every sample, imported
and hostile run the columnar reader takes, across chunk edges, and where a case needs the per-case way."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pyarrow as pa
import pytest
from test_columnar_v3 import PEER_FILES, VARIATIONS, imported, variation_file  # noqa: F401 - the module's fixture
from test_table_run import read_by_columns

import reporting
from reporting.format import case_lines
from reporting.format.synthetic import synthetic_run
from reporting.format.table_run import table_of
from reporting.format.writing import Lines, document_chunks
from reporting.report.build import build_report
from reporting.report.serialise import iter_case_records, report_document

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = [p for p in sorted((ROOT / "sample_runs").glob("*.json")) if p.name.count(".") == 1]


def written(path: Path, monkeypatch=None, rows: int = 0) -> bool:
    """The document ``recompute`` streams, its cases made by columns and case by case: the same text. False when
    the run is not read by columns (nothing to compare)."""
    run = reporting.read_run(str(path))
    if table_of(run) is None:
        return False
    if rows:
        monkeypatch.setattr(case_lines, "ROWS", rows)
    report = build_report(run, with_observability=False)
    document = report_document(report, stream_cases=True)
    assert isinstance(document["cases"], Lines)
    by_columns = "".join(document_chunks(document, compact_head=True))
    document["cases"] = iter_case_records(report)
    by_case = "".join(document_chunks(document, compact_head=True))
    assert by_columns == by_case
    assert len(json.loads(by_columns)["cases"]) == len(report.frame)
    return True


@pytest.mark.parametrize("path", SAMPLES, ids=lambda p: p.name)
def test_a_sample_run_is_written_alike(path, monkeypatch):
    conversation = '"messages"' in path.read_text()  # the agent run: read case by case
    assert written(path, monkeypatch, rows=7) != conversation


@pytest.mark.parametrize("name", PEER_FILES)
def test_an_imported_run_is_written_alike(imported, name, monkeypatch):  # noqa: F811
    for path in imported[name]:
        whole = read_by_columns(path, name)  # a limit, a whole-number score: read case by case
        assert written(path) == whole
        assert written(path, monkeypatch, rows=3) == whole


@pytest.mark.parametrize("name", [n for n in VARIATIONS if VARIATIONS[n][2] is None])
def test_hostile_runs_are_written_alike(imported, tmp_path, name, monkeypatch):  # noqa: F811
    path = variation_file(imported, tmp_path, name)
    if reporting.load_run(str(path)).ok:
        written(path, monkeypatch, rows=2)


HOSTILE = [
    'say "passed": true',
    "back\\slash\\",
    "tab\tnew\nline\r\x01\x1f\x7f\x85",
    "é 中文 😀 \u2028\u202e\ufeff",
    "",
]


def test_a_run_of_every_shape_is_written_alike(tmp_path, monkeypatch):
    """Errors between the cases (rows left out of the frame), texts JSON escapes, floats of every kind, verdicts
    none, empty and several, extras of every kind and a conversation's carried fields."""
    document = synthetic_run(60, seed=7)
    document["schema_version"] = 3
    for i, case in enumerate(document["cases"]):
        text = HOSTILE[i % len(HOSTILE)]
        case["response"], case["task"] = text + case["response"], None if i % 4 == 0 else text
        case["risk_score"] = [0.0, -0.0, 1e-7, 0.1 + 0.2, 1.0, 5e-324][i % 6]
        if i % 9 == 0:
            case.update(passed=None, risk_score=None, error=text or "timeout")
        if i % 3 == 0:
            case["verdicts"] = {text or "j": {"passed": None, "score": -0.0, "explanation": text}, "k": {}}
        elif i % 3 == 1:
            case["verdicts"] = {}
        if i % 5 == 0:
            case.update(strategy=text, plugin="p", tags=[text, "t"], mine={"n": [1, None, 2.5], "s": text})
        if i % 7 == 0:
            case["probe_group"] = "g" + text
        case["detected_failure_modes"] = ["refusal_bypass", text] if i % 8 == 0 else []
    path = tmp_path / "run.json"
    path.write_text(json.dumps(document))
    assert written(path, monkeypatch, rows=4)


@pytest.mark.parametrize("least", [2, 10**9])
def test_texts_made_once_per_distinct_text_are_the_texts_made_one_by_one(tmp_path, monkeypatch, least):
    """``per_distinct``: escaping each distinct text once and taking it back to the rows gives the same array (nulls,
    texts JSON escapes, texts beyond ASCII); with the threshold at 2 the whole-run writer goes that way too."""
    from reporting.format import columnar_v3, table_records

    monkeypatch.setattr(table_records, "DISTINCT_LEAST", least)
    values = pa.array([None if i % 11 == 0 else HOSTILE[i % len(HOSTILE)] for i in range(2500)], pa.string())
    assert case_lines.texts(values).equals(case_lines._texts(values))
    assert columnar_v3.json_strings(values).equals(columnar_v3._json_strings(values))
    assert case_lines.texts(values).to_pylist()[1:4] == [case_lines.dumps_line(v) for v in values.to_pylist()[1:4]]
    unique = pa.array([f"t{i}" for i in range(2500)], pa.string())  # no repeats: made directly
    assert case_lines.texts(unique).equals(case_lines._texts(unique))
    if least == 2:
        test_a_run_of_every_shape_is_written_alike(tmp_path, monkeypatch)  # read and written with it


def _table(extras, verdicts):
    n = len(extras)
    kind = pa.list_(
        pa.struct(
            [("judge", pa.string()), ("passed", pa.bool_()), ("score", pa.float64()), ("explanation", pa.string())]
        )
    )
    return pa.table(
        {
            "probe_id": [f"p{i}" for i in range(n)],
            "category": ["c"] * n,
            "severity": ["low"] * n,
            "passed": [True] * n,
            "risk_score": [math.nan, 0.5, -0.0][:n] + [0.25] * (n - 3),
            "task": pa.array([None] * n, pa.string()),
            "verdicts": pa.array(verdicts, kind),
            "extra": pa.array(extras, pa.string()),
        }
    )


def test_cases_the_columns_cannot_make_are_made_case_by_case():
    """An extra naming a field of the table's or a key the writer adds, a judge named twice or not at all: those
    cases (or that chunk) are made the per-case way, as the per-case writer makes them."""
    v = {"judge": "j", "passed": True, "score": 1.0, "explanation": None}
    extras = ['{"task": "mine"}', '{"derived_failure_modes": ["x"], "z": 1}', '{"weighted_risk": 3}', None, '{"q": 2}']
    unused = {"none": ("error", "strategy", "task"), "empty": ("verdicts",)}

    def shape(record):
        return record

    for verdicts in ([[v], None, [], [v, {**v, "judge": "k"}], [v]], [[v, v], None, [], [], [{**v, "judge": None}]]):
        table = _table(extras, verdicts)
        added = ([1.0, 2.0, math.nan, 0.5, 1.5], [0.1, math.nan, -0.0, 1e-7, 2.0], [[], ["a"], [], ["b", '"'], []])
        made = case_lines._chunk(table, added, "t", 0, shape=shape, **unused)
        by_case = [case_lines._per_case(table, i, added, "t", 0, shape=shape, **unused) for i in range(5)]
        assert made == by_case
        assert json.loads(made[1])["derived_failure_modes"] == ["a"] and json.loads(made[1])["z"] == 1
        assert json.loads(made[0])["risk_score"] is None and "task" not in json.loads(made[3])


def test_an_extra_msgspec_does_not_encode_is_made_case_by_case():
    v = {"judge": "j", "passed": True, "score": 1.0, "explanation": None}
    table = _table(['{"big": 123456789012345678901234567890}', None, '{"s": "\\u2028\\u007f"}'], [[v], None, []])
    added = ([1.0, 2.0, 0.5], [0.1, 0.2, 0.3], [[], [], []])
    unused = {"none": ("error",), "empty": ("verdicts",)}
    made = case_lines._chunk(table, added, "t", 0, shape=lambda r: r, **unused)
    assert made == [case_lines._per_case(table, i, added, "t", 0, shape=lambda r: r, **unused) for i in range(3)]
    assert '"big":123456789012345678901234567890' in made[0] and "\\u2028\\u007f" in made[2]


def test_a_null_row_backed_by_items_does_not_shift_the_rows_after_it():
    """A list array whose null row spans items (Arrow allows it; ``flatten`` drops them): every reader of the items
    by their offsets takes each row's own (``list_items``)."""
    from reporting.format.table_records import list_items, python_values, verdict_maps

    texts = pa.ListArray.from_arrays(
        pa.array([0, 2, 3, 4, 4, 6], pa.int32()),
        pa.array(["a", "b", "c", "d", "é", "f"]),
        mask=pa.array([False, True, False, False, False]),
    )
    want = [["a", "b"], None, ["d"], [], ["é", "f"]]
    assert texts.to_pylist() == want
    assert python_values(texts) == want and python_values(texts.slice(1)) == want[1:]
    made = case_lines._text_lists(texts).to_pylist()
    assert made == [None if w is None else json.dumps(w, separators=(",", ":"), ensure_ascii=False) for w in want]
    assert case_lines._wide_rows(texts, [list_items(texts)]).tolist() == [False, False, False, False, True]
    kind = pa.list_(
        pa.struct(
            [("judge", pa.string()), ("passed", pa.bool_()), ("score", pa.float64()), ("explanation", pa.string())]
        )
    )
    items = pa.array(
        [{"judge": j, "passed": True, "score": 1.0, "explanation": None} for j in "abcdef"], kind.value_type
    )
    verdicts = pa.ListArray.from_arrays(
        pa.array([0, 2, 3, 4, 4, 6], pa.int32()), items, type=kind, mask=pa.array([False, True, False, False, False])
    )
    assert [None if m is None else list(m) for m in verdict_maps(verdicts)] == [["a", "b"], None, ["d"], [], ["e", "f"]]
    assert [None if v is None else list(json.loads(v)) for v in case_lines.verdicts_json(verdicts).to_pylist()] == [
        ["a", "b"],
        None,
        ["d"],
        None,  # no verdicts: left out of the line
        ["e", "f"],
    ]


def test_a_chunk_of_repeated_texts_is_written_alike(tmp_path, monkeypatch):
    """Chunks of more than ``DISTINCT_LEAST`` cases whose texts repeat (each distinct text's JSON made once, read
    as a dictionary by the join): hostile texts with DEL beside texts beyond ASCII, nulls, a piece of one value
    over the chunk and pieces whose every value differs."""
    document = synthetic_run(2600, seed=11)
    document["schema_version"] = 3
    for i, case in enumerate(document["cases"]):
        text = HOSTILE[i % len(HOSTILE)]
        case["response"] = text if i % 2 else f"unique {i}\x7f"
        case["task"] = None if i % 13 == 0 else text
        case["explanation"] = "same everywhere"
        case["risk_score"] = [0.0, 0.5, 1.0][i % 3]
        if i % 17 == 0:
            case.update(passed=None, risk_score=None, error="timeout")
    path = tmp_path / "run.json"
    path.write_text(json.dumps(document))
    assert written(path, monkeypatch, rows=1500)
    assert written(path)


def test_a_parquet_run_whose_texts_are_dictionaries_is_written_alike(tmp_path, monkeypatch):
    """A Parquet run's texts come as dictionary arrays, which Arrow's string functions do not take: its lines are
    the per-case writer's all the same, and the JSON run's (``recompute`` of a Parquet run above COMPACT_ABOVE
    cases was an internal error)."""
    from reporting.format.parquet import case_table, write_case_table

    document = synthetic_run(1300, seed=5)
    for i, case in enumerate(document["cases"]):
        case["response"] = HOSTILE[i % len(HOSTILE)] + ("\x7f" if i % 3 else "")
        case["task"] = None if i % 7 == 0 else HOSTILE[i % 2]
    path = tmp_path / "run.json"
    path.write_text(json.dumps(document))
    write_case_table(case_table(reporting.read_run(str(path))), str(tmp_path / "run.parquet"))
    run = reporting.read_run(str(tmp_path / "run.parquet"))
    table = table_of(run)
    assert table is not None and any(pa.types.is_dictionary(t) for t in table.schema.types)
    assert written(tmp_path / "run.parquet", monkeypatch, rows=1100)
    texts = []
    for name in ("run.json", "run.parquet"):
        report = build_report(reporting.read_run(str(tmp_path / name)), with_observability=False)
        texts.append("".join(report_document(report, stream_cases=True)["cases"]))
    assert texts[0] == texts[1]
