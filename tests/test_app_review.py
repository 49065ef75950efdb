"""The Review page in AppTest (issue 16): confirm, overturn with a reason, sign off; the sidebar's figures as
reviewed."""

import json
from pathlib import Path

from apptest import open_page
from streamlit.testing.v1 import AppTest

from reporting.format.reviews import read_reviews
from reporting.report.build import build_report
from reporting.report.reviewing import load_reviews
from reporting.sources.reading import read_run

ROOT = Path(__file__).resolve().parent.parent


def _folder(tmp_path):
    cases = [
        {"probe_id": "p1", "category": "c", "severity": "high", "passed": True, "risk_score": 0.1, "response": "ok"},
        {"probe_id": "p2", "category": "c", "severity": "low", "passed": False, "risk_score": 0.9, "response": "bad"},
        {"probe_id": "p3", "category": "d", "severity": "high", "passed": False, "risk_score": 0.7, "response": "x"},
        {"probe_id": "p4", "category": "d", "severity": "low", "passed": True, "risk_score": 0.3, "response": "*y*"},
    ]
    folder = tmp_path / "runs"
    folder.mkdir()
    run = folder / "run.json"
    run.write_text(json.dumps({"schema_version": 2, "run": {"run_id": "r", "model": "m"}, "cases": cases}))
    return folder, run


def _app(folder, monkeypatch) -> AppTest:
    monkeypatch.setenv("REPORTING_RUNS_DIR", str(folder))
    monkeypatch.chdir(ROOT)
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120).run()
    return open_page(at, "review").run()


def _records(folder):
    return read_reviews(folder / "run.reviews.jsonl")[0]


def test_confirm_overturn_and_sign_off_in_the_dashboard(tmp_path, monkeypatch):
    folder, run = _folder(tmp_path)
    at = _app(folder, monkeypatch)
    assert not at.exception and not at.error
    assert any(t.value == "probe p2  |  category c" for t in at.text)  # failures first, worst first
    assert any(t.value.startswith("FAILED  |  judged fail  |  risk 0.900") for t in at.text)
    at.button(key="do_Confirm_p2").click().run()
    assert [e.value for e in at.error] == ["Name the reviewer in the sidebar first."]
    assert not (folder / "run.reviews.jsonl").exists()
    at.sidebar.text_input(key="reviewer").set_value("alice").run()
    at.button(key="do_Confirm_p2").click().run()
    (record,) = _records(folder)
    assert (record["probe_id"], record["verdict"], record["reviewer"], record["queue"]) == (
        "p2",
        "fail",
        "alice",
        "failures",
    )
    assert any(t.value == "probe p3  |  category d" for t in at.text)  # the next case of the queue
    at.button(key="do_Overturn to pass_p3").click().run()
    assert any("overturning" in e.value for e in at.error) and len(_records(folder)) == 1  # no reason: not recorded
    at.text_area(key="reason_p3").set_value("the answer is a refusal").run()
    at.button(key="do_Overturn to pass_p3").click().run()
    assert [r["verdict"] for r in _records(folder)] == ["fail", "pass"]
    assert any(s.value == "Recorded: p3 pass" for s in at.success)
    # what the reviews change, computed by the tested modules
    judged = read_run(run)
    review = build_report(judged, reviews=load_reviews(judged, None, run), with_observability=False).review
    assert review["overturned"] == 1 and review["decided"] == 2
    assert any(t.value.startswith("2 case(s) reviewed of 4: 2 decided, 1 overturned") for t in at.text)
    at.button(key="signoff").click().run()
    assert _records(folder)[-1]["kind"] == "signoff" and _records(folder)[-1]["cases_reviewed"] == 2
    assert any(t.value.startswith("Reviewed by alice on ") and "2 cases reviewed" in t.value for t in at.text)


def test_the_sidebar_shows_the_figures_as_reviewed(tmp_path, monkeypatch):
    folder, run = _folder(tmp_path)
    at = _app(folder, monkeypatch)
    at.sidebar.text_input(key="reviewer").set_value("bob").run()
    at.text_area(key="reason_p2").set_value("harmless in context").run()
    at.button(key="do_Overturn to pass_p2").click().run()
    at = open_page(at, "overview").run()
    radio = next(r for r in at.sidebar.radio if r.label == "Figures")
    assert radio.value == "as judged"
    assert any(m.label == "Pass rate" and m.value.startswith("50.0%") for m in at.metric)
    radio.set_value("as reviewed").run()
    assert not at.exception
    assert any(m.label == "Pass rate" and m.value.startswith("75.0%") for m in at.metric)
    assert any(t.value.startswith("Figures as reviewed: 1 case(s) decided") for t in at.sidebar.text)


def test_a_broken_review_file_is_an_error_box_and_records_nothing(tmp_path, monkeypatch):
    folder, _ = _folder(tmp_path)
    (folder / "run.reviews.jsonl").write_text(json.dumps({"kind": "review", "verdict": "maybe"}) + "\n")
    at = _app(folder, monkeypatch)
    assert not at.exception
    assert any("review file has problems" in e.value for e in at.error)
    assert not any(b.key and b.key.startswith("do_") for b in at.button)


def test_run_text_in_the_pages_status_boxes_is_shown_as_written(tmp_path, monkeypatch):
    """st.success / st.error render Markdown: a probe id and a reviewer's name that are Markdown (an image that
    would fetch, a link) reach them with every punctuation character escaped, so they show as written."""
    from reporting.textsafe import markdown_literal

    folder, run = _folder(tmp_path)
    document = json.loads(run.read_text())
    hostile = "![x](http://127.0.0.1:9/p.png)[y](http://e)"
    document["cases"][1]["probe_id"] = hostile
    run.write_text(json.dumps(document))
    at = _app(folder, monkeypatch)
    at.sidebar.text_input(key="reviewer").set_value("**eve**").run()
    at.button(key=f"do_Confirm_{hostile}").click().run()
    assert [s.value for s in at.success] == [f"Recorded: {markdown_literal(hostile)} fail"]
    assert "](" not in at.success[0].value and "\\!\\[x\\]\\(http\\:" in at.success[0].value
    at.button(key="signoff").click().run()
    assert [s.value for s in at.success] == ["Signed off by \\*\\*eve\\*\\*"]
