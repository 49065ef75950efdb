"""Reading run reports: accepted forms, and every kind of bad input reported clearly."""

import io
import json

import pytest
from conftest import HAND_CASES, case

import reporting


def problems_of(source, name="run.json"):
    result = reporting.load_run(source, name=name)
    return result, [str(p) for p in result.problems]


def test_object_array_and_jsonl_give_the_same_cases(hand_report, write_json):
    as_object = reporting.read_run(write_json("r.json", hand_report))
    as_array = reporting.read_run(write_json("r2.json", HAND_CASES))
    jsonl = "\n".join(json.dumps(c) for c in HAND_CASES) + "\n\n"
    as_lines = reporting.read_run(write_json("r3.jsonl", jsonl))
    as_lines_json_name = reporting.read_run(write_json("r4.json", jsonl))  # detected without the extension
    for run in (as_array, as_lines, as_lines_json_name):
        assert [c.model_dump() for c in run.cases] == [c.model_dump() for c in as_object.cases]
    assert as_array.run.run_id == "r2" and as_lines.run.run_id == "r3"  # derived from the file name
    assert as_object.cases[2].severity == "high" and as_object.cases[4].severity == "medium"


def test_path_bytes_and_file_objects(hand_report, write_json):
    path = write_json("x.json", hand_report)
    data = path.read_bytes()
    for source in (path, str(path), data, io.BytesIO(data), io.StringIO(data.decode()), open(path, "rb")):
        assert len(reporting.read_run(source).cases) == 6
    with pytest.raises(TypeError, match="path, bytes or a file object"):
        reporting.read_run(42)


def test_missing_schema_version_means_1_and_extras_are_kept():
    data = {
        "run": {"run_id": "r", "owner": "red team"},
        "cases": [case("a", "c", "low", True, 0.1, lang="fr", meta={"k": [1, 2]})],
    }
    run = reporting.read_run(json.dumps(data).encode())
    assert run.schema_version == 1
    assert run.cases[0].model_extra == {"lang": "fr", "meta": {"k": [1, 2]}}
    report = reporting.report_document(reporting.build_report(run))
    assert report["cases"][0]["lang"] == "fr" and report["run"]["owner"] == "red team"


@pytest.mark.parametrize(
    "raw, expected",
    [
        (b"", "run.json: $: the file is empty"),
        (b"   \n", "run.json: $: the file is empty"),
        (b'{"cases": [ {"probe_id": "a"', "run.json: $: truncated JSON"),
        (b'{"cases": [}', "run.json: $: invalid JSON: Expecting value at line 1, column 12"),
        (b'{"cases": [\xff]}', "run.json: $: not UTF-8 text: byte 0xff at offset 11"),
        (b"42", "run.json: $: not a run report: expected an object with 'cases' or an array of cases, not a number"),
        (b'"hello"', "not a string"),
        (b'{"run": {"run_id": "x"}}', "run.json: cases: required field is missing"),
        (b'{"probe_id": "a"}', "this looks like a single case"),
        (b'{"cases": {"a": 1}}', 'run.json: cases: must be an array of cases (got {"a": 1})'),
        (
            b'{"schema_version": 4, "cases": []}',
            "run.json: schema_version: version 4 is newer than this RunLens understands (up to 3)",
        ),
        (b'{"schema_version": "1", "cases": []}', 'run.json: schema_version: must be a whole number (got "1")'),
        (b"[" * 100000 + b"]" * 100000, "run.json: $: nesting is too deep"),
    ],
)
def test_documents_that_are_not_reports(raw, expected):
    result, problems = problems_of(raw)
    assert not result.ok
    assert any(expected in p for p in problems), problems


def test_every_case_problem_is_reported_not_just_the_first():
    cases = [case(f"p{i}", "c", "low", True, 0.1) for i in range(20)]
    cases[3]["risk_score"] = 1.7
    cases[5]["severity"] = "extreme"
    cases[7]["passed"] = "yes"
    cases[8]["probe_id"] = 17
    cases[9]["safe_signal_hits"] = -1
    cases[10]["matched_safe_patterns"] = ["ok", 3]
    cases[11]["severity_weight"] = -0.5
    del cases[12]["category"]
    cases[13]["created"] = "x"  # an unknown extra field is fine
    cases[14]["probe_id"] = "p1"  # duplicate
    cases[15]["risk_score"] = True
    text = json.dumps(cases).replace('"risk_score": 0.1, "p16"', "")
    raw = text.encode()
    raw = raw.replace(
        b'{"probe_id": "p17", "category": "c", "severity": "low", "passed": true, "risk_score": 0.1}',
        b'{"probe_id": "p17", "category": "c", "severity": "low", "passed": true, "risk_score": NaN}',
    )
    raw = raw.replace(
        b'{"probe_id": "p18", "category": "c", "severity": "low", "passed": true, "risk_score": 0.1}',
        b'{"probe_id": "p18", "category": "c", "severity": "low", "passed": true, "risk_score": 0.1, "x": -Infinity}',
    )
    result, problems = problems_of(raw)
    assert problems == [
        "run.json: cases[3].risk_score: must be between 0 and 1 (got 1.7)",
        'run.json: cases[5].severity: must be one of low, medium, high, critical (got "extreme")',
        'run.json: cases[7].passed: must be true or false (got "yes")',
        "run.json: cases[8].probe_id: must be a string (got 17)",
        "run.json: cases[9].safe_signal_hits: must be >= 0 (got -1)",
        "run.json: cases[10].matched_safe_patterns[1]: must be a string (got 3)",
        "run.json: cases[11].severity_weight: must be >= 0.0 (got -0.5)",
        "run.json: cases[12].category: required field is missing",
        'run.json: cases[14].probe_id: duplicate probe_id, first used by cases[1] (got "p1")',
        "run.json: cases[15].risk_score: must be a number (got true)",
        "run.json: cases[17].risk_score: must be a finite number (NaN and Infinity are not allowed) (got NaN)",
        "run.json: cases[18].x: must be a finite number (NaN and Infinity are not allowed) (got -Infinity)",
    ]
    # Lenient: the valid cases are kept, and the count of what was left out is exact.
    assert len(result.run.cases) == 8 and result.cases_in_file == 20 and result.cases_left_out == 12
    with pytest.raises(reporting.ReportError) as info:
        reporting.read_run(raw, name="run.json")
    assert len(info.value.problems) == 12


def test_jsonl_problems_name_the_line():
    lines = [
        json.dumps(case("a", "c", "low", True, 0.1)),
        "{not json",
        "[1]",
        json.dumps(case("b", "c", "weird", True, 0.1)),
    ]
    result, problems = problems_of("\n".join(lines).encode(), name="cases.jsonl")
    assert problems == [
        "cases.jsonl: line 2: invalid JSON: Expecting property name enclosed in double quotes at line 1, column 2",
        "cases.jsonl: line 3: must be a case object, not an array",
        'cases.jsonl: line 4.severity: must be one of low, medium, high, critical (got "weird")',
    ]
    assert [c.probe_id for c in result.run.cases] == ["a"] and result.cases_left_out == 3


def test_run_metadata_problems_and_deep_extras():
    deep = {"k": 1}
    for _ in range(70):
        deep = {"k": deep}
    data = {
        "run": {"run_id": 5, "created_at": "last tuesday", "config": {"t": float("inf")}},
        "cases": [case("a", "c", "low", True, 0.1, blob=deep)],
    }
    result, problems = problems_of(json.dumps(data).encode())
    assert "run.json: run.run_id: must be a string (got 5)" in problems
    assert any(p.startswith("run.json: run.created_at: must be an ISO 8601 date-time") for p in problems)
    assert (
        "run.json: run.config.t: must be a finite number (NaN and Infinity are not allowed) (got Infinity)" in problems
    )
    assert any("cases[0].blob" in p and "nesting deeper than 64 levels" in p for p in problems)


def test_unreadable_file(tmp_path):
    result, problems = problems_of(tmp_path / "nope.json", name=None)
    assert problems == [f"{tmp_path / 'nope.json'}: $: cannot read the file: No such file or directory"]
    result, problems = problems_of(tmp_path, name=None)  # a folder
    assert problems and "cannot read the file" in problems[0]


def test_drift_lists_stored_values_that_differ(hand_report):
    hand_report["cases"][1]["weighted_risk"] = 1.6  # uncapped: drift
    hand_report["cases"][0]["weighted_risk"] = 0.05 + 1e-12  # within tolerance: no drift
    hand_report["aggregate_metrics"] = {
        "overall": {"pass_rate": 0.5, "risk_max": 0.9, "legacy_only": 3},
        "counts": {"probes_evaluated": 6},
    }
    report = reporting.report_document(reporting.build_report(reporting.read_run(json.dumps(hand_report).encode())))
    assert report["drift"] == [  # run-level findings first
        {"path": "aggregate_metrics.overall.risk_max", "stored": 0.9, "recomputed": 0.8},
        {"path": "cases[1].weighted_risk", "probe_id": "b", "stored": 1.6, "recomputed": 1.0},
    ]


def test_round_trip_read_recompute_write_read(hand_report, tmp_path):
    run = reporting.read_run(json.dumps(hand_report).encode())
    report = reporting.report_document(reporting.build_report(run))
    out = tmp_path / "out.json"
    out.write_text(json.dumps(report, allow_nan=False))
    again = reporting.read_run(out)
    # What was read back is what was read first, plus the recomputed weights and the derived-modes mark.
    filled = {"weighted_risk", "severity_weight", "derived_failure_modes"}
    assert [{k: v for k, v in c.model_dump().items() if k not in filled} for c in again.cases] == [
        {k: v for k, v in c.model_dump().items() if k not in filled} for c in run.cases
    ]
    assert [c.model_extra for c in again.cases] == [{"derived_failure_modes": []}] * len(run.cases)
    assert again.cases[1].weighted_risk == 1.0 and again.cases[1].severity_weight == 2.0
    second = reporting.report_document(reporting.build_report(again))
    assert second["drift"] == []  # the written aggregates agree with themselves
    assert second["aggregate_metrics"] == report["aggregate_metrics"]
    assert second["observability"] == report["observability"]


def test_cases_validated_in_chunks_keep_every_problem_and_every_good_case(monkeypatch):
    """Cases are validated a chunk at a time (the parsed dicts of a chunk let go once its cases are made): a bad case
    in a later chunk is named by its own index and the good cases around it are kept, in order."""
    from reporting.format import reading

    monkeypatch.setattr(reading, "_CHUNK", 3)
    cases = [case(f"p{i}", "c", "low", True, 0.1) for i in range(8)]
    cases[4]["risk_score"] = 7.0
    cases[6]["probe_id"] = "p1"  # a duplicate, found after validation
    result = reporting.load_run(json.dumps(cases).encode(), name="run.json")
    assert [c.probe_id for c in result.run.cases] == ["p0", "p1", "p2", "p3", "p5", "p7"]
    assert [p.path for p in result.problems] == ["cases[4].risk_score", "cases[6].probe_id"]


def test_cases_share_what_pydantic_records_of_them_and_stay_unchanged():
    """Cases that set the same fields share one set of their names; cases are frozen, and a changed copy has its
    own set, so no case's record of its fields moves when another's does."""
    from pydantic import ValidationError

    records = [case("a", "c", "low", True, 0.1), case("b", "c", "low", True, 0.2), case("x", "c", "high", False, 0.9)]
    records[2]["task"] = "a task"
    run = reporting.read_run(json.dumps(records).encode())
    a, b, x = run.cases
    assert a.model_fields_set is b.model_fields_set and x.model_fields_set is not a.model_fields_set
    assert a.model_fields_set == {"probe_id", "category", "severity", "passed", "risk_score"}
    assert "task" in x.model_fields_set
    with pytest.raises(ValidationError):
        a.response = "changed"
    copy = a.model_copy(update={"response": "changed"})
    assert "response" in copy.model_fields_set and "response" not in b.model_fields_set
    assert copy.response == "changed" and a.response is None
