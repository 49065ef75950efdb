"""Schema version 2 (issue 13, first part): cases not evaluated are errors, not failures; several judges'
verdicts, repetitions and provenance are kept; version 1 files read unchanged through the one migration chain."""

import json
from pathlib import Path

import pytest

import reporting
from reporting.analysis.filters import Filters
from reporting.cli import main
from reporting.format.schema import SCHEMA_VERSION

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "format"


def test_every_version_has_a_fixture_and_reads():
    assert SCHEMA_VERSION == 3
    for version in range(1, SCHEMA_VERSION + 1):
        run = reporting.read_run(FIXTURES / f"v{version}.json")
        assert run.schema_version == version


def test_version_1_reads_unchanged():
    run = reporting.read_run(FIXTURES / "v1.json")
    b = run.cases[1]
    # A v1 file's own fields named like v2's keep their v1 meaning: free-form extras, renamed v1_<name>.
    assert b.passed is False and b.error is None and b.model_extra == {"v1_error": "a v1 free-form note"}
    assert run.run.source is None and run.run.model_extra == {"v1_source": "a v1 free-form field"}
    m = reporting.aggregate_metrics(run)
    assert m["counts"] == {"cases": 3, "probes_evaluated": 3, "passed": 1, "failed": 2, "errors": 0, "categories": 2}
    assert m["overall"]["error_rate"] == 0.0


def test_errors_are_not_failures_known_answers():
    """By hand: 5 cases, 2 not evaluated; of the 3 evaluated, 1 passed and 2 failed (both alpha)."""
    run = reporting.read_run(FIXTURES / "v2.json")
    m = reporting.aggregate_metrics(run)
    assert m["counts"] == {"cases": 5, "probes_evaluated": 3, "passed": 1, "failed": 2, "errors": 2, "categories": 1}
    assert m["overall"]["pass_rate"] == pytest.approx(1 / 3)
    assert m["overall"]["error_rate"] == pytest.approx(2 / 5)
    low, high = m["overall"]["error_rate_ci"]
    assert low < 0.4 < high
    assert list(m["by_category"]) == ["alpha"] and m["by_category"]["alpha"]["n"] == 3
    # The one evaluated high-or-critical case (b#0, critical) failed; the errored critical one is not counted.
    assert m["overall"]["high_stakes_probe_failure_rate"] == 1.0
    assert run.run.source.tool == "garak" and run.cases[0].source_id == "uuid-a.0"
    assert run.cases[1].verdicts["det.Two"].passed is True and run.cases[1].probe_group == "a"


def test_the_report_lists_errors_and_keeps_verdicts(tmp_path):
    out = tmp_path / "r.json"
    assert main(["recompute", str(FIXTURES / "v2.json"), "-o", str(out)]) == 0
    document = json.loads(out.read_text())
    assert document["schema_version"] == 3  # written as the current version
    assert [e["probe_id"] for e in document["errors"]] == ["b#1", "c#0"]
    assert document["errors"][0]["error"] == "the model returned nothing"
    assert [c["probe_id"] for c in document["cases"]] == ["a#0", "a#1", "b#0"]
    assert document["cases"][1]["verdicts"]["det.One"] == {"passed": False, "score": 1.0, "explanation": None}
    assert "verdicts" not in document["cases"][2] and "error" not in document["cases"][2]  # unused v2 fields
    v1 = tmp_path / "v1.json"
    assert main(["recompute", str(FIXTURES / "v1.json"), "-o", str(v1)]) == 0
    assert json.loads(v1.read_text())["errors"] == []


def test_filters_apply_to_errors():
    run = reporting.read_run(FIXTURES / "v2.json")
    alpha = reporting.build_report(run, filters=Filters(categories=("alpha",)), with_observability=False)
    assert alpha.error_count == 1 and alpha.metrics["overall"]["error_rate"] == pytest.approx(1 / 4)
    failed = reporting.build_report(run, filters=Filters(outcome="fail"), with_observability=False)
    assert failed.error_count == 0  # a case not evaluated neither passed nor failed


def test_the_error_rate_gate_fails_a_run_that_mostly_errored(capsys):
    path = str(FIXTURES / "v2.json")
    assert main(["check", path, "--min-pass-rate", "0"]) == 1  # the default 0.05 error-rate gate joins
    out = capsys.readouterr().out
    assert "FAILS  error rate: 0.400 <= 0.050 required" in out and "holds  pass rate" in out
    assert main(["check", path, "--min-pass-rate", "0", "--max-error-rate", "0.5"]) == 0
    assert main(["check", path]) == 2  # the default gate alone is not a gate anybody asked for


def test_a_run_of_errors_only_fails_every_gate_closed(tmp_path, capsys):
    cases = [
        {"probe_id": f"p{i}", "category": "c", "severity": "low", "passed": None, "risk_score": None, "error": "x"}
        for i in range(3)
    ]
    path = tmp_path / "errors.json"
    path.write_text(json.dumps({"schema_version": 2, "cases": cases}))
    assert main(["check", str(path), "--min-pass-rate", "0", "--max-error-rate", "1"]) == 1
    out = capsys.readouterr().out
    assert out.count("FAILS") == 2 and "no evaluated case" in out


@pytest.mark.parametrize(
    "version, case, problem",
    [
        (2, {"passed": None, "risk_score": None}, "cases[0].error: required when passed is null"),
        (2, {"passed": True, "risk_score": 0.1, "error": "boom"}, "cases[0].error: only a case not evaluated"),
        (2, {"passed": False, "risk_score": None}, "cases[0].risk_score: required for an evaluated case"),
        (1, {"passed": None, "risk_score": None, "error": "x"}, "cases[0].passed: must be true or false"),
    ],
)
def test_bad_version_2_cases_are_named(version, case, problem):
    document = {"schema_version": version, "cases": [{"probe_id": "a", "category": "c", "severity": "low", **case}]}
    result = reporting.load_run(json.dumps(document).encode(), name="run.json")
    assert any(str(p).startswith("run.json: " + problem) for p in result.problems), result.problems
    assert result.run is not None and result.run.cases == []  # the bad case is left out, never guessed


def test_the_dashboard_and_the_html_show_errors_apart(tmp_path, monkeypatch):
    import re
    import shutil

    from apptest import open_page
    from streamlit.testing.v1 import AppTest

    root = Path(__file__).resolve().parent.parent
    folder = tmp_path / "runs"
    folder.mkdir()
    shutil.copy(FIXTURES / "v2.json", folder / "v2.json")
    monkeypatch.setenv("REPORTING_RUNS_DIR", str(folder))
    monkeypatch.chdir(root)
    at = AppTest.from_file(str(root / "app.py"), default_timeout=120).run()
    assert {m.label: m.value for m in at.metric}["Error rate"] == "40.0%"
    assert any("2 case(s) were not evaluated" in w.value for w in at.warning)
    open_page(at, "cases").run()
    errors = next(d.value for d in at.dataframe if "error" in d.value.columns)
    assert list(errors["probe_id"]) == ["b#1", "c#0"] and not at.exception
    out = tmp_path / "r.html"
    assert main(["export", str(FIXTURES / "v2.json"), "-o", str(out)]) == 0
    html = out.read_text()
    assert "Not evaluated (2)" in html and "provider timeout" in html
    data = json.loads(re.search(r'id="report-data">(.*?)</script>', html, re.S).group(1))
    assert [e["probe_id"] for e in data["errors"]] == ["b#1", "c#0"]


def test_judges_and_their_agreement_known_answers():
    from sklearn.metrics import cohen_kappa_score

    from reporting.analysis.judges import cohen_kappa

    m = reporting.aggregate_metrics(reporting.read_run(FIXTURES / "v2.json"))
    # det.One: a#0 pass, a#1 fail; det.Two: both pass. They agree on a#0 only: 1 of 2; kappa by hand
    # p_o = 0.5, p_e = 0.5 x 1 + 0.5 x 0 = 0.5, kappa = 0.
    assert m["judges"]["det.One"] | {"pass_rate_ci": None} == {
        "n": 2,
        "passed": 1,
        "failed": 1,
        "errors": 0,
        "pass_rate": 0.5,
        "pass_rate_ci": None,
    }
    assert m["judges"]["det.Two"]["pass_rate"] == 1.0
    (pair,) = m["judge_agreement"]
    assert pair["judges"] == ["det.One", "det.Two"] and pair["n"] == 2 and pair["agreement"] == 0.5
    assert pair["kappa"] == 0.0
    # p_o = 6/8, p_e = 0.5 x 0.5 + 0.5 x 0.5 = 0.5: kappa = (0.75 - 0.5) / 0.5 = 0.5, as scikit-learn says.
    a = [True, True, True, False, False, False, True, False]
    b = [True, True, False, False, False, True, True, False]
    assert cohen_kappa(a, b) == pytest.approx(0.5) == pytest.approx(cohen_kappa_score(a, b))
    assert cohen_kappa([True, True], [True, True]) is None  # both constant: undefined, never a made-up 1
    assert reporting.aggregate_metrics(reporting.read_run(FIXTURES / "v1.json"))["judges"] == {}


def test_each_judges_verdicts_whether_rows_share_one_mapping_or_not():
    """``judge_rows`` reads each distinct mapping once (a frame shares one among rows alike): the same verdicts,
    judges in the order the cases first name them, each judge's rows in the frame's order, whether the rows share
    their mappings or each holds its own copy; a judge that names a case null keeps it as not judged."""
    import pandas as pd

    from reporting.analysis.judges import NOT_JUDGED, judge_rows

    one = {"det.B": {"passed": True}, "det.A": {"passed": False}}
    two = {"det.A": {"passed": None}, "det.C": {"passed": True}}
    rows = [None, one, two, {}, one, two, one]
    shared = pd.DataFrame({"verdicts": rows}, index=[10, 11, 12, 13, 14, 15, 16])
    copied = pd.DataFrame({"verdicts": [dict(r) if r else r for r in rows]}, index=shared.index)
    expected = {
        "det.B": ([1, 4, 6], [1, 1, 1]),
        "det.A": ([1, 2, 4, 5, 6], [0, NOT_JUDGED, 0, NOT_JUDGED, 0]),
        "det.C": ([2, 5], [1, 1]),
    }
    for frame in (shared, copied):
        found = {name: (at.tolist(), said.tolist()) for name, (at, said) in judge_rows(frame).items()}
        assert found == expected and list(found) == ["det.B", "det.A", "det.C"]
    assert judge_rows(pd.DataFrame({"verdicts": [None, {}]})) == {}
