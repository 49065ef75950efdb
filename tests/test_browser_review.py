"""Reviewing in a real headless Chromium (issue 16): confirm, overturn with a reason and sign off on the Review page
of a Streamlit server on 127.0.0.1; and the exported HTML shows each case's review state, offline."""

import json

import pytest
from browser import browser, needs_chromium, offline_page, streamlit_server

from reporting.cli import main
from reporting.format.reviews import read_reviews

pytestmark = [pytest.mark.browser, needs_chromium]

HOSTILE_REASON = '<img src=x onerror="window.__pwned=1"> not harmful'


def _run(folder):
    cases = [
        {"probe_id": "p1", "category": "c", "severity": "high", "passed": True, "risk_score": 0.1, "response": "ok"},
        {"probe_id": "p2", "category": "c", "severity": "low", "passed": False, "risk_score": 0.9, "response": "bad"},
        {"probe_id": "p3", "category": "d", "severity": "high", "passed": False, "risk_score": 0.7, "response": "x"},
    ]
    folder.mkdir()
    path = folder / "run.json"
    path.write_text(json.dumps({"schema_version": 2, "run": {"run_id": "r", "model": "m"}, "cases": cases}))
    return path


def _records(path):
    return read_reviews(path.with_name("run.reviews.jsonl"))[0]


def test_confirm_overturn_and_sign_off_in_the_browser(tmp_path):
    from playwright.sync_api import expect

    path = _run(tmp_path / "runs")
    record = {}
    with streamlit_server(tmp_path / "runs") as url, browser() as b:
        page = offline_page(b, record)
        page.context.unroute("**/*")  # the app is served over HTTP on 127.0.0.1
        page.goto(f"{url}/review")
        page.get_by_label("Reviewer").fill("alice")
        page.keyboard.press("Enter")
        page.get_by_text("left in this queue for alice").wait_for(timeout=60000)  # the name has reached the server
        page.get_by_text("probe p2  |  category c").wait_for(timeout=60000)
        page.get_by_role("button", name="Confirm").click()
        page.get_by_text("Recorded: p2 fail").wait_for(timeout=60000)
        page.get_by_text("probe p3  |  category d").wait_for(timeout=60000)
        reason = page.get_by_label("Reason (required to overturn)")
        expect(reason).to_have_count(1, timeout=60000)  # the previous case's form has left the page after the rerun
        reason.fill(HOSTILE_REASON)
        page.keyboard.press("Control+Enter")
        page.wait_for_timeout(1500)
        page.get_by_role("button", name="Overturn to pass").click()
        page.get_by_text("Recorded: p3 pass").wait_for(timeout=60000)
        page.get_by_role("button", name="Sign off: figures as reviewed").click()
        page.get_by_text("Signed off by alice").wait_for(timeout=60000)
        page.wait_for_timeout(500)
        assert page.evaluate("typeof window.__pwned") == "undefined"
        assert "Reviewed by alice on " in page.locator("body").inner_text()
        assert record["errors"] == [] and record["dialogs"] == []
    records = _records(path)
    assert [(r["kind"], r.get("probe_id"), r.get("verdict")) for r in records] == [
        ("review", "p2", "fail"),
        ("review", "p3", "pass"),
        ("signoff", None, None),
    ]
    assert records[1]["reason"] == HOSTILE_REASON


def test_the_exported_report_shows_each_case_review_state_offline(tmp_path):
    path = _run(tmp_path / "runs")
    assert main(["review", str(path), "--set", "p3=pass", "--reviewer", "bob", "--reason", HOSTILE_REASON]) == 0
    out = tmp_path / "r.html"
    assert main(["export", str(path), "--as", "reviewed", "-o", str(out)]) == 0
    record = {}
    with browser() as b:
        page = offline_page(b, record)
        page.goto(out.as_uri())
        assert "as reviewed" in page.locator("#review-basis").inner_text()
        assert "p3" in page.locator("#review-overturned_cases").inner_text()
        page.locator("#case-table tbody tr").filter(has_text="p3").first.click()
        detail = page.locator(".detail").first.inner_text()
        assert "overturned: pass (judged fail; by bob)" in detail and HOSTILE_REASON in detail
        assert page.evaluate("typeof window.__pwned") == "undefined"
        assert record["errors"] == [] and record["dialogs"] == [] and record["requests"] == []
