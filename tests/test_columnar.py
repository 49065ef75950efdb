"""The columnar reader (issue 15): a run read into Arrow columns is the same table the per-record reader gives, and
whatever the per-record reader finds wrong, the columnar one never accepts (it hands the file back instead)."""

import copy
import json
from pathlib import Path

import pyarrow as pa
import pytest

from reporting.analysis.compare import run_fingerprint
from reporting.format import columnar
from reporting.format.columnar import _count_in_file, read_table
from reporting.format.columnar_checks import DICTIONARY_TEXTS, REPEATED
from reporting.format.parquet import _plain, case_table
from reporting.format.reading import load_document
from reporting.format.synthetic import synthetic_run
from reporting.store.engine import table_figures

BASE = synthetic_run(60, seed=3)


def _v2(document):
    document = copy.deepcopy(document)
    document["schema_version"] = 2
    return document


def _with_error(document):
    document = _v2(document)
    case = document["cases"][4]
    case.update(passed=None, risk_score=None, error="the model timed out")
    document["cases"][5].update(passed=None, error="refused by the API")  # keeps its risk score
    return document


def _drop(field, where=7):
    def change(document):
        document = copy.deepcopy(document)
        document["cases"][where].pop(field)
        return document

    return change


def _set(field, value, where=7, version=1):
    def change(document):
        document = copy.deepcopy(document) if version == 1 else _v2(document)
        document["cases"][where][field] = value
        return document

    return change


def _text(document, dump=json.dumps):
    return dump(document)


# Runs both readers accept: the columnar table must equal the per-record one.
VALID = {
    "plain": lambda d: d,
    "indented": lambda d: d,
    "version 2": _v2,
    "errors": _with_error,
    "no lists": _drop("matched_safe_patterns"),
    "no hits": _drop("safe_signal_hits"),
    "no refusal flag": _drop("boundary_or_refusal_signal"),
    "no weight": _drop("severity_weight"),
    "no texts": lambda d: _drop("response")(_drop("task")(d)),
    "upper case severity": _set("severity", "HIGH"),
    "whole-number risk": _set("risk_score", 1),
    "null weight": _set("severity_weight", None),
    "empty run": lambda d: {**d, "cases": []},
    "no run header": lambda d: {"cases": d["cases"]},
}
# Runs the per-record reader finds a problem in, and runs it reads that the columnar reader may hand back (a
# severity to normalise) or read (extra fields, verdicts): the columnar one must hand each back, or read it alike.
HANDED_BACK = {"severity with spaces", "extra field", "verdicts", "v2 field in version 1"}
INVALID = {
    "absent passed": _drop("passed"),
    "absent risk": _drop("risk_score"),
    "null list": _set("failure_modes", None),
    "null in a list": _set("failure_modes", ["a", None]),
    "null hits": _set("unsafe_signal_hits", None),
    "null refusal flag": _set("boundary_or_refusal_signal", None),
    "string risk": _set("risk_score", "0.5"),
    "risk above one": _set("risk_score", 1.5),
    "negative weight": _set("severity_weight", -1.0),
    "float hits": _set("safe_signal_hits", 1.0),
    "bool hits": _set("safe_signal_hits", True),
    "huge hits": _set("safe_signal_hits", 2**60),
    "int passed": _set("passed", 1),
    "unknown severity": _set("severity", "severe"),
    "severity with spaces": _set("severity", " high"),
    "empty probe id": _set("probe_id", ""),
    "repeated probe id": lambda d: _set("probe_id", d["cases"][0]["probe_id"])(d),
    "null passed in version 1": _set("passed", None),
    "error on a passed case": _set("error", "x", version=2),
    "error without text": lambda d: _set("error", "", where=4, version=2)(_with_error(d)),
    "extra field": _set("latency_ms", 12),
    "verdicts": _set("verdicts", {"judge": {"passed": True}}, version=2),
    "v2 field in version 1": _set("probe_group", "g"),
    "bad run time": lambda d: {**d, "run": {**d["run"], "created_at": "yesterday"}},
    "newer version": lambda d: {**d, "schema_version": 99},
}


def per_record(path):
    """The per-record reader alone (a pydantic model per case), whatever ``reporting.load_run`` asks first: the
    reference the columnar reader is held to."""
    return load_document(str(path), [Path(path).read_bytes()])


def _compare(tmp_path, document, text=None, name="run.json"):
    path = tmp_path / name
    path.write_text(text if text is not None else json.dumps(document))
    return read_table(str(path)), per_record(path)


def assert_read_alike(fast, slow):
    """The columnar table is the per-record one (``case_table`` of the pydantic run), column by column."""
    assert fast is not None, "the columnar reader handed back a valid run"
    reference = case_table(slow.run)
    assert fast.table.schema.names == reference.schema.names
    for column in reference.column_names:
        values = fast.table.column(column)
        if not values.type.equals(reference.column(column).type):  # texts that repeat, each held once: the same
            assert column in (*DICTIONARY_TEXTS, *REPEATED), column
            assert _plain(values.type).equals(reference.column(column).type), column
            values = values.cast(reference.column(column).type)
        assert values.equals(reference.column(column)), column
    assert fast.meta == slow.run.run
    assert fast.fingerprint == run_fingerprint(slow.run)
    assert fast.version == slow.run.schema_version


@pytest.mark.parametrize("name", list(VALID))
def test_the_columnar_table_is_the_per_record_one(tmp_path, name):
    document = VALID[name](BASE)
    text = json.dumps(document, indent=2) if name == "indented" else None
    fast, slow = _compare(tmp_path, document, text)
    assert slow.ok, slow.problems
    assert_read_alike(fast, slow)


@pytest.mark.parametrize("name", list(INVALID))
def test_whatever_the_per_record_reader_finds_wrong_is_handed_back(tmp_path, name):
    fast, slow = _compare(tmp_path, INVALID[name](BASE))
    if name in HANDED_BACK:
        assert slow.ok, slow.problems
        if fast is not None:
            assert_read_alike(fast, slow)
        return
    assert slow.problems, "the mutation should be a problem for the per-record reader"
    assert fast is None


@pytest.mark.parametrize(
    "text",
    [
        # a duplicated key in a case: ambiguous, readers differ on which value wins
        lambda t: t.replace('"passed": true', '"passed": true, "passed": false', 1),
        # a key written with an escape, standing in for the one left out
        lambda t: t.replace('"passed": true', '"p\\u0061ssed": true', 1),
        # a duplicated top-level key
        lambda t: t.replace('"run":', '"schema_version": 1, "run":', 1),
        lambda t: t.replace('"risk_score": 0', '"risk_score": NaN, "x": 0', 1),
        lambda t: t.replace('"task": "', '"task": "\\ud800', 1),
        lambda t: t[:-5],
        lambda t: "\ufeff" + t,
    ],
    ids=["duplicate key", "escaped key", "duplicate top-level key", "NaN", "lone surrogate", "truncated", "BOM"],
)
def test_hostile_texts_are_handed_back_or_read_alike(tmp_path, text):
    fast, slow = _compare(tmp_path, None, text(json.dumps(BASE)))
    if slow.problems:
        assert fast is None
    else:  # the per-record reader took it (a BOM): then both must give the same cases
        assert fast is None or fast.table.column("probe_id").equals(case_table(slow.run).column("probe_id"))


def _mixed(document):
    """Chunks of every kind in one document (at seven cases a chunk): explicit nulls in the first, an extra field
    in the second, verdicts in the fifth, the rest with no key Arrow's schema does not name."""
    document = _with_error(document)  # version 2; cases 4 and 5 with nulls
    document["cases"][12]["latency_ms"] = 12
    document["cases"][30]["verdicts"] = {"judge": {"passed": True, "score": 0.5}}
    return document


@pytest.mark.parametrize("chunk", [1, 7, 60])
def test_a_document_parsed_a_chunk_at_a_time_in_threads_is_read_alike(tmp_path, monkeypatch, chunk):
    """Chunks whose every key the schema names skip decoding each case's keys; the others decode them: one run
    mixing both is the per-record reader's, whatever the chunk size (``columnar.CHUNK``)."""
    monkeypatch.setattr(columnar, "CHUNK", chunk)
    fast, slow = _compare(tmp_path, _mixed(BASE))
    assert slow.ok, slow.problems
    assert_read_alike(fast, slow)
    assert fast.table.column("extra").to_pylist()[12] == '{"latency_ms": 12}'


@pytest.mark.parametrize("where", [2, 20, 59])
def test_a_duplicated_key_in_any_chunk_is_handed_back(tmp_path, monkeypatch, where):
    monkeypatch.setattr(columnar, "CHUNK", 7)
    text = json.dumps(BASE)
    probe = BASE["cases"][where]["probe_id"]
    text = text.replace(f'"probe_id": "{probe}"', f'"probe_id": "{probe}", "probe_id": "{probe}"', 1)
    fast, slow = _compare(tmp_path, None, text)
    assert slow.problems and fast is None


@pytest.mark.parametrize("first", ["schema_version", "run", "cases"])
def test_no_other_tools_detector_reads_a_runlens_document(monkeypatch, first):
    """A document that opens with a RunLens key is RunLens's own: the other tools' detectors, which each search a
    file's first line (a one-line document's whole 0.9 GB at a million cases), are not asked."""
    from reporting import importers
    from reporting.importers import garak, garak_hitlog

    def refuse(data):
        raise AssertionError("a detector read a RunLens document")

    monkeypatch.setattr(garak, "looks_like_garak", refuse)
    monkeypatch.setattr(garak_hitlog, "looks_like_hitlog", refuse)
    document = {first: BASE[first], **{k: v for k, v in BASE.items() if k != first}}
    assert importers.detect(b" \n " + json.dumps(document).encode()) is None
    with pytest.raises(AssertionError):  # any other first key is still put to the detectors
        importers.detect(b'{"entry_type": "start_run setup", "run": 1}\n')


def test_a_key_left_out_cannot_be_made_up_by_a_text_that_looks_like_it(tmp_path):
    """JSON Lines: counting keys to tell an absent key from an explicit null, a text equal to the key's name, or
    ending in a quote and the name, would count as one, so the columnar reader hands the file back. A document's
    keys are read case by case (msgspec), so there the text is only a text and the run is read alike."""
    for change in (
        lambda cases: cases[9].update(category="boundary_or_refusal_signal"),
        lambda cases: cases[9].update(response='she wrote "boundary_or_refusal_signal'),
    ):
        document = _drop("boundary_or_refusal_signal")(BASE)
        change(document["cases"])
        fast, slow = _compare(tmp_path, document)
        assert slow.ok
        assert_read_alike(fast, slow)
        path = tmp_path / "run.jsonl"
        path.write_text("".join(json.dumps(case) + "\n" for case in document["cases"]))
        assert per_record(path).ok and read_table(str(path)) is None


def test_json_lines_read_in_blocks_with_only_the_columns_asked(tmp_path, monkeypatch):
    import reporting.format.columnar as columnar

    monkeypatch.setattr(columnar, "BLOCK", 4096)  # many blocks
    path = tmp_path / "run.jsonl"
    path.write_text("".join(json.dumps(case) + "\n" for case in BASE["cases"]))
    slow = per_record(path)
    assert slow.ok
    full = read_table(str(path))
    reference = case_table(slow.run).replace_schema_metadata(full.table.schema.metadata)
    assert full is not None and full.table.equals(reference)
    few = read_table(str(path), columns=["probe_id", "passed", "risk_score"])
    assert few.table.column_names == ["probe_id", "passed", "risk_score"] and few.fingerprint == ""
    assert few.table.column("risk_score").equals(full.table.column("risk_score"))


def test_counting_a_name_across_block_boundaries(tmp_path):
    path = tmp_path / "t"
    path.write_bytes(b'x"name"' * 1000)
    for block in (3, 4, 7, 64, 10_000):
        assert _count_in_file(str(path), b'"name"', block=block) == 1000


def test_engine_figures_over_the_columnar_table_equal_the_per_run_figures(tmp_path):
    from reporting.analysis.metrics import aggregate_metrics

    document = _with_error(BASE)
    fast, slow = _compare(tmp_path, document)
    got = table_figures(fast.table)
    want = aggregate_metrics(slow.run)
    assert got["counts"] == want["counts"]
    for key, value in got["overall"].items():
        assert value == pytest.approx(want["overall"][key], abs=1e-9), key
    assert got["by_category"].keys() == want["by_category"].keys()
    for category, figures in got["by_category"].items():
        assert figures["pass_rate"] == pytest.approx(want["by_category"][category]["pass_rate"], abs=1e-12)


def test_a_table_of_the_columns_the_figures_need_is_all_the_engine_reads(tmp_path):
    fast, _ = _compare(tmp_path, BASE)
    needed = ["probe_id", "category", "severity", "passed", "risk_score", "severity_weight"]
    narrow = fast.table.select([*needed, "safe_signal_hits", "unsafe_signal_hits", "boundary_or_refusal_signal"])
    narrow = narrow.append_column("weighted_risk", fast.table.column("weighted_risk"))
    assert table_figures(narrow)["overall"] == table_figures(fast.table)["overall"]
    # without the signal columns the engine gives every figure but the signals' (a narrow 10M read)
    bare = fast.table.select([*needed, "weighted_risk"])
    figures, full = table_figures(bare)["overall"], table_figures(fast.table)["overall"]
    assert figures == {k: v for k, v in full.items() if k in figures}
    assert set(full) - set(figures) == {
        "boundary_language_rate",
        "boundary_language_rate_ci",
        "safe_signal_total",
        "unsafe_signal_total",
        "safe_unsafe_signal_ratio",
    }
    assert isinstance(fast.table, pa.Table)


def test_store_add_reads_a_plain_run_by_columns_and_keeps_the_same_key(tmp_path):
    """`store add` takes a plain run through the columnar reader; the store it writes is the one the per-record
    path writes: same key (adding the run again either way is a no-op), same case table."""
    import pyarrow.parquet as pq

    from reporting.cli import main
    from reporting.store.layout import Store

    document = _with_error(BASE)
    path = tmp_path / "run.json"
    path.write_text(json.dumps(document))
    assert read_table(str(path)) is not None
    assert main(["store", "add", str(path), "--store", str(tmp_path / "a")]) == 0
    per_record_store = Store.open(str(tmp_path / "b"), create=True)
    stored, new = per_record_store.add(per_record(path).run, str(path))
    assert new
    (written,) = Store.open(str(tmp_path / "a")).runs()
    assert written == stored
    fast = pq.read_table(tmp_path / "a" / written.path)
    slow = pq.read_table(tmp_path / "b" / stored.path)
    assert fast.equals(slow.cast(fast.schema))
    again, new = Store.open(str(tmp_path / "a")).add(per_record(path).run, str(path))
    assert not new and again == written


@pytest.mark.parametrize("name", list(INVALID))
def test_a_run_handed_back_after_its_bytes_were_let_go_is_read_again(tmp_path, name):
    """The columnar reader lets a document's bytes go once every case is parsed (``read_document`` with the bytes in
    a list empties it) and may hand the run back after (a check over whole columns): ``load_run`` then reads the
    file again, and a run given as bytes is kept; the problems are the per-record reader's either way."""
    import reporting

    path = tmp_path / "run.json"
    path.write_text(json.dumps(INVALID[name](BASE)))
    expected = [str(p) for p in per_record(path).problems]
    assert [str(p) for p in reporting.load_run(str(path)).problems] == expected
    assert [str(p) for p in reporting.load_run(path.read_bytes(), name=str(path)).problems] == expected
    box = [path.read_bytes()]
    read = columnar.read_document(box, str(path))
    assert read is None or name in HANDED_BACK
    assert box in ([], [path.read_bytes()])  # let go once parsed, or left whole when handed back before


def test_a_document_read_by_columns_lets_its_bytes_go(tmp_path):
    path = tmp_path / "run.json"
    path.write_text(json.dumps(BASE))
    box = [path.read_bytes()]
    fast = columnar.read_document(box, str(path))
    assert fast is not None and box == []
    assert_read_alike(fast, per_record(path))
    data = path.read_bytes()
    assert columnar.read_document(data, str(path)) is not None and data == path.read_bytes()  # bytes: left as given


@pytest.mark.parametrize("suffix", [".json", ".jsonl"])
def test_a_deeply_nested_value_is_a_listed_problem_not_an_internal_error(tmp_path, suffix):
    """A case holding a value nested 5,000 deep, in a file with no conversation (which the columnar reader tries):
    msgspec's decoder stops on Python's recursion limit, and the per-record reader names the depth (exit 2)."""
    from _helpers_cli import assert_listed, cli

    case = '{"probe_id": "p", "category": "c", "severity": "low", "passed": true, "risk_score": 0.1, "x": '
    case += "[" * 5000 + "]" * 5000 + "}"
    path = tmp_path / f"deep{suffix}"
    path.write_text(
        case + "\n" if suffix == ".jsonl" else '{"schema_version": 1, "run_id": "r", "cases": [' + case + "]}"
    )
    for verb in ("validate", "recompute"):
        args = [verb, path] + (["-o", tmp_path / "out.json"] if verb == "recompute" else [])
        assert_listed(cli(*args), path, "nesting is too deep")


@pytest.mark.parametrize(
    "shape",
    [
        "tight",
        "spaced",
        "cases first",
        "cases last",
        "tabs and returns",
        "one case",
        "cases twice",
        "cases twice, apart",
    ],
)
def test_the_cases_array_is_found_whatever_its_white_space_or_place(tmp_path, shape):
    """The cases' place in the document comes from their first and last case and the white space around them:
    read alike in every layout; a document giving ``cases`` twice is handed back (the strict reader names it)."""
    document = {**BASE, "cases": BASE["cases"][:1]} if shape == "one case" else BASE
    cases = json.dumps(document["cases"])
    head = json.dumps({k: v for k, v in document.items() if k != "cases"})[1:-1]
    text = {
        "tight": "{" + head + ',"cases":' + cases + "}",
        "spaced": "{" + head + ', "cases" :  \n [ ' + cases[1:-1] + " \n ] \n}",
        "cases first": '{"cases":' + cases + "," + head + "}",
        "cases last": "{" + head + ',"cases":' + cases + "}\n\n",
        "tabs and returns": "{" + head + ',"cases":\t\r\n[\t\r\n' + cases[1:-1] + "\r\n\t]}",
        "one case": "{" + head + ',"cases":[' + cases[1:-1] + "]}",
        "cases twice": "{" + head + ',"cases":' + cases + ',"cases":' + cases + "}",
        "cases twice, apart": '{"cases":[],' + head + ',"cases":' + cases + "}",
    }[shape]
    fast, slow = _compare(tmp_path, None, text)
    if shape.startswith("cases twice"):
        assert fast is None and not slow.ok
    else:
        assert slow.ok
        assert_read_alike(fast, slow)
