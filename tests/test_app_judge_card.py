"""Each judge's measured validity on the Judges page in AppTest (issue 26, part 3): the card's sentence beside the
verdicts, its table on demand, a judge with no card says so, a bad card file is an error box, and card text is
text."""

import json
from pathlib import Path

from _helpers_judge_card import judge_a_cards, two_judge_run
from apptest import open_page
from streamlit.testing.v1 import AppTest

from reporting.report import cards as report_cards

ROOT = Path(__file__).resolve().parent.parent
HOSTILE = "<img src=x onerror=alert(1)> **bold**"


def _folder(tmp_path):
    folder = tmp_path / "runs"
    folder.mkdir()
    (folder / "run.json").write_text(json.dumps(two_judge_run([True, False, True, False])))
    return folder


def _cards(tmp_path):
    path = tmp_path / "cards.json"
    path.write_text(json.dumps(judge_a_cards(HOSTILE, "hand-made")))
    return path


def _judges_page(folder, cards, monkeypatch) -> AppTest:
    # the page's cards are the user's alone: no shipped card file (whatever the package ships)
    monkeypatch.setattr(report_cards, "_shipped_bytes", lambda: None)
    report_cards.shipped_cards.cache_clear()
    monkeypatch.setenv("REPORTING_RUNS_DIR", str(folder))
    monkeypatch.setenv("REPORTING_JUDGE_CARDS", str(cards))
    monkeypatch.chdir(ROOT)
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120).run()
    return open_page(at, "judges").run()


def test_the_card_shows_beside_the_verdicts_and_a_judge_without_one_says_so(tmp_path, monkeypatch):
    at = _judges_page(_folder(tmp_path), _cards(tmp_path), monkeypatch)
    assert not at.exception and not at.error
    texts = [t.value for t in at.text]
    sentence = next(t for t in texts if t.startswith("judge-a agreed with people"))
    assert sentence.startswith(
        "judge-a agreed with people on 80% of harmful answers (95% CI 49.0% to 94.3%) and 90% of harmless answers "
        f"(95% CI 59.6% to 98.2%) on {HOSTILE} (n = 20: 10 harmful, 10 harmless; balanced accuracy 0.85"
    )
    assert sentence.endswith("labels: human; trained on it: no).")
    assert any(
        t.startswith(
            "judge-b: no measured validity for this judge: measure it against people's labels with: runlens judge-eval"
        )
        for t in texts
    )
    assert any(t == f"Label set: {HOSTILE}. hand-made" for t in texts)  # the set's name as text, never Markdown
    (card_table,) = [d.value for d in at.dataframe if "balanced accuracy" in d.value.columns]
    assert card_table.iloc[0]["group"] == "all" and card_table.iloc[0]["tp"] == 8 and card_table.iloc[0]["fp"] == 1
    assert card_table.iloc[0]["balanced accuracy"] == "0.850"


def test_a_bad_card_file_is_an_error_box_naming_the_file_and_field(tmp_path, monkeypatch):
    bad = tmp_path / "bad.json"
    bad.write_text('{"judge_cards": [{"card_version": 1, "judge": 3}]}')
    at = _judges_page(_folder(tmp_path), bad, monkeypatch)
    assert not at.exception
    assert [e.value for e in at.error] == [
        "The judge card file has 7 problem(s) and gives no card; each is listed below."
    ]
    (listing,) = [c.value for c in at.code if "judge_cards[0]" in c.value]
    assert f"{bad}: $.judge_cards[0].label_set: is missing" in listing
    assert f"{bad}: $.judge_cards[0].judge: must be a judge's name" in listing
    assert any(t.value.startswith("judge-a: no measured validity") for t in at.text)


def test_a_run_with_one_judge_names_it_and_says_it_has_no_card(tmp_path, monkeypatch):
    folder = tmp_path / "runs"
    folder.mkdir()
    case = {"probe_id": "p1", "category": "c", "severity": "high", "passed": True, "risk_score": 0.0}
    run = {
        "schema_version": 2,
        "run": {"run_id": "r", "model": "m", "config": {"scorer": "reporting.scorer"}},
        "cases": [case],
    }
    (folder / "run.json").write_text(json.dumps(run))
    at = _judges_page(folder, _cards(tmp_path), monkeypatch)  # the user's card is judge-a's: not this run's judge
    assert not at.exception and not at.error
    texts = [t.value for t in at.text]
    assert any(t.startswith("runlens-rules: no measured validity for this judge") for t in texts)
    assert not any("judge-a" in t for t in texts)
    assert at.info[0].value.startswith("This run has one judge: its verdicts.")


def teardown_function():
    report_cards.shipped_cards.cache_clear()
