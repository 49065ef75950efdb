"""Each judge's measured validity in the exported HTML, opened in a real headless Chromium offline (issue 26, part
3): the card's sentence in the Judges section, its table on demand, a judge without a card says so, and a hostile
set name shows as text."""

import json

import pytest
from _helpers_judge_card import judge_a_cards, two_judge_run
from browser import browser, needs_chromium, offline_page

from reporting.cli import main

pytestmark = [pytest.mark.browser, needs_chromium]

HOSTILE = '<img src=x onerror="window.__pwned=1"><img src=x onerror=alert(1)>'


def test_the_card_shows_in_the_html_and_its_text_stays_text(tmp_path):
    run = tmp_path / "run.json"
    run.write_text(json.dumps(two_judge_run([True, False, True])))
    cards = tmp_path / "cards.json"
    cards.write_text(json.dumps(judge_a_cards(HOSTILE, HOSTILE, ["scam"] * 5 + ["cyber"] * 15)))
    out = tmp_path / "r.html"
    assert main(["export", str(run), "-o", str(out), "--judge-cards", str(cards)]) == 0
    record = {}
    with browser() as b:
        page = offline_page(b, record)
        page.goto(out.as_uri())
        section = page.locator("#judge-validity")
        text = section.inner_text()
        assert (
            "judge-a agreed with people on 80% of harmful answers (95% CI 49.0% to 94.3%) and 90% of harmless" in text
        )
        assert f"on {HOSTILE} (n = 20: 10 harmful, 10 harmless; balanced accuracy 0.85" in text
        missing = "judge-b: no measured validity for this judge: measure it against people's labels with: runlens"
        assert missing + " judge-eval" in text
        table = section.locator(".judge-card-table")
        assert not table.is_visible()  # on demand
        section.locator("details.judge-card summary").click()
        assert table.is_visible()
        rows = [r.inner_text().split("\t") for r in table.locator("tbody tr").all()]
        assert [r[0] for r in rows] == ["all", "cyber", "scam"]
        assert rows[0][1:7] == ["20", "0", "8", "2", "1", "9"]
        assert section.locator("img").count() == 0
        assert page.evaluate("typeof window.__pwned") == "undefined"
        assert record["errors"] == [] and record["dialogs"] == [] and record["requests"] == []
