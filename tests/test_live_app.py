"""The dashboard (AppTest) on a folder whose runs a writer process is still writing: a garak report.jsonl and a
RunLens JSON Lines run grow in chunks (a torn line between chunks); at each rerun the counts rise, the page says the
run is in progress, the Overview draws the pass rate per 100 cases, the filters stay, and a torn line is no
problem."""

import json
import re

from _helpers_live import GARAK, ROOT, dashboard, growing_folder, replaying, step, synthetic_jsonl
from apptest import open_page
from streamlit.testing.v1 import AppTest

from reporting.sources.reading import load_run


def shown_total(at: AppTest) -> int:
    line = next(t.value for t in at.sidebar.text if t.value.startswith("Showing"))
    return int(re.fullmatch(r"Showing ([\d,]+) of ([\d,]+) cases", line).group(2).replace(",", ""))


def progress(at: AppTest) -> str:
    return " ".join(i.value for i in at.info if "in progress" in i.value or "stopped" in i.value)


def test_the_dashboard_sees_a_garak_run_grow(tmp_path, monkeypatch):
    dest = growing_folder(tmp_path, monkeypatch, "live.report.jsonl")
    with replaying(GARAK, dest, 5) as process:
        at = dashboard()
        assert not at.exception and not at.error, [e.value for e in at.error]
        first = shown_total(at)
        assert re.search(r"in progress: [\d,]+ attempts so far, the last \d+ s ago", progress(at)), progress(at)
        at.sidebar.radio(key=next(r.key for r in at.sidebar.radio if r.label == "Outcome")).set_value("fail").run()
        totals = [first]
        for _ in range(4):
            step(process)
            at.run()
            assert not at.exception and not at.error, [e.value for e in at.error]  # a torn line is no problem
            totals.append(shown_total(at))
            assert next(r for r in at.sidebar.radio if r.label == "Outcome").value == "fail"  # the filter stayed
            assert any(s.value == "Pass rate over the run" for s in at.subheader)
    whole = load_run(GARAK.read_bytes(), name="live").run
    assert totals == sorted(totals) and totals[0] < totals[-1] == len(whole.cases)
    assert "in progress" not in progress(at)  # garak's completion line: the run is done
    shown = next(t.value for t in at.sidebar.text if t.value.startswith("Showing"))
    assert shown == f"Showing {sum(c.passed is False for c in whole.cases)} of {len(whole.cases)} cases"


def test_the_dashboard_sees_a_runlens_run_grow(tmp_path, monkeypatch):
    src = synthetic_jsonl(tmp_path, 300)
    dest = growing_folder(tmp_path, monkeypatch, "live.jsonl")
    with replaying(src, dest, 3) as process:
        at = dashboard()
        counts = [shown_total(at)]
        assert "in progress: " in progress(at) and " cases so far" in progress(at)
        open_page(at, "cases").run()
        first = json.loads(src.read_text().splitlines()[0])["probe_id"]
        at.text_input(key="case_probe_id").set_value(first).run()
        for _ in range(2):
            step(process)
            at.run()
            assert not at.exception and not at.error
            counts.append(shown_total(at))
            assert at.text_input(key="case_probe_id").value == first  # the page and the case shown stayed
            assert any(first in t.value for t in at.text) or any(first in c.value for c in at.code)
    assert counts == sorted(counts) and counts[0] < counts[-1] == 300


def test_a_large_growing_run_keeps_its_pages_figures_a_little_longer(tmp_path, monkeypatch):
    """While the pages' figures of a growing run are not made again (they took long to make: here, forced), the
    line on top counts what the file holds now and says which cases the figures below are of."""
    import reporting.ui.live as live

    monkeypatch.setattr(live, "PAGES_EVERY", 1e12)
    monkeypatch.setattr(live, "SLOW_PAGES", 0.0)
    src = synthetic_jsonl(tmp_path, 200)
    dest = growing_folder(tmp_path, monkeypatch, "live.jsonl")
    with replaying(src, dest, 2) as process:
        at = dashboard()
        before = shown_total(at)
        step(process)
        at.run()
    assert shown_total(at) == before < 200  # the pages: the figures made first
    assert re.search(
        rf"in progress: 200 cases so far.* The figures below are of its first {before} cases", progress(at)
    )


def test_the_review_card_keeps_its_case_while_a_growing_run_puts_a_worse_failure_first(tmp_path, monkeypatch):
    """A live run's new, worse failure jumps ahead in "failures first"; the case on the reviewer's card stays until
    it is decided (the typed reason belongs to it), and the new one comes next."""
    from reporting.ui.review_page import queue

    def case(pid, passed, risk, severity):
        return {"probe_id": pid, "category": "c", "severity": severity, "passed": passed, "risk_score": risk}

    runs = tmp_path / "runs"
    runs.mkdir()
    live = runs / "live.jsonl"
    live.write_text("".join(json.dumps(c) + "\n" for c in (case("a", False, 0.7, "low"), case("b", True, 0.1, "low"))))
    monkeypatch.setenv("REPORTING_RUNS_DIR", str(runs))
    monkeypatch.chdir(ROOT)
    at = open_page(dashboard(), "review").run()
    assert not at.exception
    assert any(t.value.startswith("probe a  |") for t in at.text)
    with live.open("a") as handle:  # the harness writes a worse failure
        handle.write(json.dumps(case("z", False, 1.0, "critical")) + "\n")
    at.run()
    assert not at.exception and not at.error
    assert [c.probe_id for c in queue(load_run(live).run, "failures", set())][0] == "z"  # z leads the queue now
    assert any(t.value.startswith("probe a  |") for t in at.text)  # but the card still shows a
    assert any("3 case(s) left in this queue" in t.value for t in at.text)
