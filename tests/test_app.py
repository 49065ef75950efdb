"""The dashboard through Streamlit's AppTest: every page, filters, broken files, hostile text."""

import json
import os
import shutil
from pathlib import Path

import pytest
from apptest import PAGE_NAMES, open_page
from payloads import PAYLOADS, hostile_run
from streamlit.testing.v1 import AppTest

import reporting
from reporting.analysis.filters import SEARCH_COLUMNS

ROOT = Path(__file__).resolve().parent.parent
PAGES = list(PAGE_NAMES)  # every page of the dashboard, in the navigation's order
RUN_PAGES = ["overview", "categories", "severity", "failure_modes", "observability", "cases", "judges"]  # about one run


def app(folder: Path, monkeypatch) -> AppTest:
    monkeypatch.setenv("REPORTING_RUNS_DIR", str(folder))
    monkeypatch.chdir(ROOT)
    return AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)


def page(at: AppTest, name: str) -> AppTest:
    return open_page(at, name).run()


def metrics(at: AppTest) -> dict[str, str]:
    return {m.label: m.value for m in at.metric}


def texts(at: AppTest) -> list[str]:
    return [t.value for t in at.text]


def on_acme_v1(at: AppTest) -> AppTest:
    """The sample folder opens on its newest run with cases (the agent run); most tests read acme-assistant-v1."""
    assert at.sidebar.selectbox(key="run_choice").value == "mail-agent-inspect.json"
    return at.sidebar.selectbox(key="run_choice").set_value("acme-assistant-v1.json").run()


@pytest.fixture
def samples(tmp_path):
    folder = tmp_path / "runs"
    shutil.copytree(ROOT / "sample_runs", folder, ignore=shutil.ignore_patterns("__init__.py", "__pycache__"))
    return folder


def test_every_page_runs_on_the_sample_runs(samples, monkeypatch):
    at = on_acme_v1(app(samples, monkeypatch).run())
    assert not at.exception
    for run_label in at.sidebar.selectbox(key="run_choice").options:
        at.sidebar.selectbox(key="run_choice").set_value(run_label).run()
        for name in PAGES:
            page(at, name)
            assert not at.exception, (run_label, name, at.exception)
            assert not at.error, (run_label, name, [e.value for e in at.error])
            if name in RUN_PAGES:
                assert any(t.startswith("Showing ") for t in texts(at)), (run_label, name)
    assert len(PAGES) == 13 and set(RUN_PAGES) < set(PAGES)


def test_overview_numbers_are_the_recomputed_ones_and_follow_filters(samples, monkeypatch):
    at = on_acme_v1(app(samples, monkeypatch).run())
    label = at.sidebar.selectbox(key="run_choice").value
    run = reporting.read_run(samples / label)
    full = reporting.aggregate_metrics(run)
    shown = metrics(at)
    assert shown["Pass rate"] == f"{full['overall']['pass_rate'] * 100:.1f}%"
    assert shown["Resilience index"] == f"{full['indices']['resilience_index']:.3f}"
    assert f"Showing {len(run.cases)} of {len(run.cases)} cases" in texts(at)

    severity = next(w for w in at.sidebar.multiselect if w.label == "Severity")
    severity.set_value(["critical"]).run()
    frame = reporting.cases_frame(run)
    critical = reporting.aggregate_metrics(frame[frame["severity"] == "critical"])
    shown = metrics(at)
    assert shown["Pass rate"] == f"{critical['overall']['pass_rate'] * 100:.1f}%"
    assert shown["Resilience index"] == f"{critical['indices']['resilience_index']:.3f}"
    # (the figures followed the filter: the critical cases' differ from the run's; their pass rate may not)
    assert shown["Resilience index"] != f"{full['indices']['resilience_index']:.3f}"
    n = critical["counts"]["probes_evaluated"]
    assert any(
        t.startswith(f"Showing {n} of {len(run.cases)} cases  |  filters: severity: critical") for t in texts(at)
    )

    next(w for w in at.sidebar.radio if w.label == "Outcome").set_value("fail").run()
    assert metrics(at)["Pass rate"] == "0.0%"
    page(at, "severity")
    table = at.dataframe[0].value
    assert table.set_index("Severity").loc["critical", "Failed"] == critical["by_severity"]["critical"]["failed"]
    assert table.set_index("Severity").loc["low", "n"] == 0

    at.sidebar.text_input[0].set_value("transfer").run()
    matching = frame[
        (frame["severity"] == "critical")
        & ~frame["passed"]
        & frame[list(SEARCH_COLUMNS)].astype(str).apply(lambda c: c.str.lower().str.contains("transfer")).any(axis=1)
    ]
    assert any(t.startswith(f"Showing {len(matching)} of") for t in texts(at))


def test_categories_and_failure_modes_tables_match_metrics(samples, monkeypatch):
    at = on_acme_v1(app(samples, monkeypatch).run())
    label = at.sidebar.selectbox(key="run_choice").value
    m = reporting.aggregate_metrics(reporting.read_run(samples / label))
    page(at, "categories")
    table = at.dataframe[0].value.set_index("Category")
    for name, stats in m["by_category"].items():
        assert table.loc[name, "n"] == stats["n"]
        assert table.loc[name, "Pass rate"] == pytest.approx(stats["pass_rate"])
    ranking = at.dataframe[1].value
    assert list(ranking["category"]) == [r["category"] for r in m["category_ranking"]]
    page(at, "failure_modes")
    modes = at.dataframe[0].value
    assert list(modes["failure mode"]) == list(m["failure_modes"]) and list(modes["cases"]) == list(
        m["failure_modes"].values()
    )


def test_observability_page_shows_mi_and_clusters(samples, monkeypatch):
    at = on_acme_v1(app(samples, monkeypatch).run())
    label = at.sidebar.selectbox(key="run_choice").value
    obs = reporting.observability(reporting.read_run(samples / label))
    page(at, "observability")
    mi = at.dataframe[0].value.set_index("label")
    assert mi.loc["category", "mutual information (nats)"] == pytest.approx(obs["mutual_information"]["category"])
    assert mi.loc["category", "p (shuffles at or above)"] == obs["mutual_information_p"]["category"]
    assert any("follow the threat category beyond chance" in t for t in texts(at))
    assert not any("partly by construction" in t for t in texts(at))
    assert len(at.dataframe[1].value) == obs["n_clusters"]
    at.radio(key="color_by").set_value("severity").run()
    assert not at.exception
    # The design's label-augmented embedding is an option, and the page then says what it measures.
    at.radio(key="embedding").set_value("with-labels").run()
    labelled = reporting.observability(reporting.read_run(samples / label), embedding="with-labels")
    mi = at.dataframe[0].value.set_index("label")
    assert mi.loc["category", "mutual information (nats)"] == pytest.approx(labelled["mutual_information"]["category"])
    assert any("partly by construction" in t for t in texts(at))


def test_cases_are_listed_in_the_worst_case_order(samples, monkeypatch):
    at = on_acme_v1(app(samples, monkeypatch).run())
    at.sidebar.selectbox(key="run_choice").set_value("open-7b-chat-legacy.json").run()
    page(at, "cases")
    metrics = reporting.aggregate_metrics(reporting.read_run(samples / "open-7b-chat-legacy.json"))
    worst = [w["probe_id"] for w in metrics["worst_cases"]]
    assert list(at.dataframe[0].value["probe_id"]) == worst  # the worst-cases table
    assert list(at.dataframe[1].value["probe_id"])[: len(worst)] == worst  # the full table, same order
    full = at.dataframe[1].value
    assert set(full["passed"]) <= {"passed", "failed"} and set(full["boundary_or_refusal_signal"]) <= {"yes", "no"}
    page(at, "categories")
    interval = at.dataframe[0].value["95% CI"].iloc[0]
    assert isinstance(interval, str) and interval.endswith("%") and " to " in interval


def test_case_detail_shows_every_field(samples, monkeypatch):
    at = on_acme_v1(app(samples, monkeypatch).run())
    label = at.sidebar.selectbox(key="run_choice").value
    case = reporting.read_run(samples / label).cases[5]
    page(at, "cases")
    at.text_input(key="case_probe_id").set_value(case.probe_id).run()
    codes = [c.value for c in at.code]
    assert case.task in codes and case.probe_input in codes and case.response in codes and case.explanation in codes
    verdict = "PASSED" if case.passed else "FAILED"
    # The verdict comes first, on a line of its own; the probe id after it (trust issue, point 12).
    assert any(t.startswith(verdict) and f"\nprobe {case.probe_id}  |" in t for t in texts(at))


def test_broken_file_is_reported_and_good_runs_still_load(samples, monkeypatch):
    (samples / "broken.json").write_text(
        '{"cases": [{"probe_id": "a", "category": "c", "severity": "urgent", '
        '"passed": true, "risk_score": 0.1}, {"probe_id": "b", "category": "c", '
        '"severity": "low", "passed": true, "risk_score": 0.2}]}'
    )
    (samples / "truncated.json").write_text('{"cases": [')
    at = on_acme_v1(app(samples, monkeypatch).run())
    assert not at.exception
    assert at.error and "2 run report(s) have problems" in at.error[0].value
    problems = "\n".join(c.value for c in at.code)
    assert 'broken.json: cases[0].severity: must be one of low, medium, high, critical (got "urgent")' in problems
    assert "truncated.json: $: truncated JSON" in problems
    assert metrics(at)["Pass rate"]  # the good run selected first still shows its figures
    at.sidebar.selectbox(key="run_choice").set_value("broken.json").run()
    assert any("1 case(s) of this file were left out" in w.value for w in at.warning)
    assert "Showing 1 of 1 cases" in texts(at)
    at.sidebar.selectbox(key="run_choice").set_value("truncated.json").run()
    assert any("could not be read" in w.value for w in at.warning) and not at.metric


def test_the_dashboard_opens_on_the_newest_run_with_cases_and_keeps_the_choice(tmp_path, monkeypatch):
    """Not on a broken file first in the folder, nor on an empty run beside full ones (`empty_run.json`, first by
    name): on the newest run that reads and has cases, by the run's own time, else its file's."""
    folder = tmp_path / "runs"
    folder.mkdir()
    (folder / "a-broken.json").write_text('{"cases": [')  # first in the folder, and unreadable
    (folder / "a-empty_run.json").write_text('{"run": {"run_id": "empty"}, "cases": []}')  # newest file, and empty
    shutil.copy(ROOT / "sample_runs" / "acme-assistant-v2.json", folder / "b-good.json")  # made 2026-11-03
    shutil.copy(ROOT / "sample_runs" / "acme-assistant-v1.json", folder / "c-good.json")  # made 2026-10-06
    for name, when in (
        ("a-broken.json", 9000),
        ("a-empty_run.json", 9500),
        ("b-good.json", 1000),
        ("c-good.json", 8000),
    ):
        os.utime(folder / name, (when, when))
    at = app(folder, monkeypatch).run()
    assert at.sidebar.selectbox(key="run_choice").value == "b-good.json"  # the run's own time, not the file's
    assert metrics(at)["Pass rate"] and "1 run report(s) have problems" in at.error[0].value
    at.sidebar.selectbox(key="run_choice").set_value("c-good.json").run()
    for name in ("categories", "cases", "compare", "overview"):
        page(at, name)
        assert at.sidebar.selectbox(key="run_choice").value == "c-good.json", name
    # runs that do not say when they were made: the newest file
    plain = tmp_path / "plain"
    plain.mkdir()
    case = {"probe_id": "p", "category": "c", "severity": "low", "passed": True, "risk_score": 0.1}
    for name, when in (("d.json", 2000), ("e.json", 3000), ("f.json", 1000)):
        (plain / name).write_text(json.dumps([case]))
        os.utime(plain / name, (when, when))
    assert app(plain, monkeypatch).run().sidebar.selectbox(key="run_choice").value == "e.json"


def test_companions_beside_their_run_are_not_news_and_strays_are_listed_once(samples, monkeypatch):
    """The sample folder holds a run's dimensions, rubric and verdicts beside it: expected, so no page says a word
    about them. A file that is neither a run nor a companion is listed once, in the sidebar's folder panel."""
    at = on_acme_v1(app(samples, monkeypatch).run())
    assert not any("skipped" in t for t in texts(at)) and not at.sidebar.expander
    (samples / "archive.json").mkdir()  # a run suffix, not a regular file: skipped, said once in the folder panel
    at = on_acme_v1(app(samples, monkeypatch).run())
    (panel,) = [e for e in at.sidebar.expander if e.label.startswith("Folder:")]
    assert (
        panel.label == "Folder: 1 file(s) skipped"
        and "archive.json: skipped: not a regular file" in panel.text[0].value
    )
    assert "acme-assistant-v2.dimensions.json" not in panel.text[0].value
    for name in ("overview", "cases"):
        page(at, name)
        assert not any("not runs and were skipped" in t for t in texts(at)), name


def test_empty_and_tiny_runs_render_with_explanations(tmp_path, monkeypatch):
    folder = tmp_path / "runs"
    folder.mkdir()
    (folder / "empty.json").write_text('{"run": {"run_id": "empty"}, "cases": []}')
    (folder / "tiny.json").write_text(
        json.dumps(
            [
                {"probe_id": f"p{i}", "category": "c", "severity": "low", "passed": True, "risk_score": 0.1}
                for i in range(3)
            ]
        )
    )
    at = app(folder, monkeypatch).run()
    assert at.sidebar.selectbox(key="run_choice").value == "tiny.json"  # the run with cases, not the empty one
    at.sidebar.selectbox(key="run_choice").set_value("empty.json").run()
    assert "Showing 0 of 0 cases" in texts(at)
    for name in PAGES:
        page(at, name)
        assert not at.exception
        if name in RUN_PAGES:  # one empty state on every page about the run, and no empty chart
            assert [i.value for i in at.info] == ["This run has no valid cases, so there is nothing to draw."], name
            assert not at.get("plotly_chart") and not at.metric, name
    page(at, "observability")
    at.sidebar.selectbox(key="run_choice").set_value("tiny.json").run()
    assert any("needs at least 5" in i.value for i in at.info)


def test_no_runs_folder_says_so(tmp_path, monkeypatch):
    at = app(tmp_path / "nothing", monkeypatch).run()
    assert not at.exception and any("No run reports found" in i.value for i in at.info)


def test_hostile_text_is_shown_as_text_never_markdown(tmp_path, monkeypatch):
    folder = tmp_path / "runs"
    folder.mkdir()
    (folder / "hostile.json").write_text(json.dumps(hostile_run()))
    at = app(folder, monkeypatch).run()
    for name in PAGES:
        page(at, name)
        assert not at.exception
        rendered = (
            [m.value for m in at.markdown]
            + [e.value for e in at.error]
            + [w.value for w in at.warning]
            + [i.value for i in at.info]
            + [c.value for c in at.caption]
        )
        for payload in PAYLOADS:
            assert not any(payload in r for r in rendered), (name, payload)
    page(at, "cases")
    at.text_input(key="case_probe_id").set_value(f"{PAYLOADS[0]} #0").run()
    assert PAYLOADS[0] in [c.value for c in at.code]
    assert any(PAYLOADS[0] in t for t in texts(at))


def test_download_button_exports_the_current_view(samples, monkeypatch):
    import re

    import streamlit

    captured = {}
    original = streamlit.download_button

    def spy(label, data, *args, **kwargs):
        captured[kwargs.get("key")] = dict(label=label, data=data, **kwargs)
        return original(label, data, *args, **kwargs)

    monkeypatch.setattr(streamlit, "download_button", spy)
    at = on_acme_v1(app(samples, monkeypatch).run())
    label = at.sidebar.selectbox(key="run_choice").value
    next(w for w in at.sidebar.radio if w.label == "Outcome").set_value("fail").run()
    # One click (issue 14, point 19): the download button is there at once, makes the file when clicked, and
    # does not rerun the page (so it stays for the next download).
    assert not at.exception and len(at.get("download_button")) == 1
    assert not [b for b in at.button if "repare" in b.label]  # no "prepare" step
    download = captured["download_export"]
    assert callable(download["data"]) and download["on_click"] == "ignore"
    run = reporting.read_run(samples / label)
    expected = reporting.report_document(reporting.build_report(run, filters=reporting.Filters(outcome="fail")))
    html = download["data"]()
    data = json.loads(re.search(r'id="report-data">(.*?)</script>', html, re.S).group(1))
    assert data["aggregate_metrics"] == expected["aggregate_metrics"]
    assert data["filters"]["outcome"] == "fail" and data["aggregate_metrics"]["overall"]["pass_rate"] == 0.0
    assert download["file_name"] == f"{run.run.run_id}-report.html"
    assert data["observability"]["n_cases"] == data["filters"]["cases_shown"]  # geometry of the filtered cases
    page(at, "compare")
    at.selectbox(key="compare_base").set_value("acme-assistant-v1.json").run()
    at.selectbox(key="compare_candidate").set_value("acme-assistant-v2.json").run()
    assert captured["download_compare"]["on_click"] == "ignore"
    assert 'id="comparison-data"' in captured["download_compare"]["data"]()
    page(at, "trend")
    assert 'id="trend-data"' in captured["download_trend"]["data"]() and not at.exception


def test_the_download_carries_the_judge_cards_and_frameworks_the_pages_were_given(samples, tmp_path, monkeypatch):
    """A dashboard given --judge-cards and --frameworks (here through their environment variables) downloads a
    report with the same cards and framework tables as its pages, not only the built-in ones."""
    import re

    import streamlit

    shipped = json.loads((ROOT / "reporting" / "scoring" / "models" / "judge_cards.json").read_text())
    card = next(c for c in shipped["judge_cards"] if c["judge"] == "runlens-rules")
    mine = {**card, "label_set": {**card["label_set"], "name": "our-own-labels"}}
    (tmp_path / "cards.json").write_text(json.dumps({"judge_cards": [mine]}))
    (tmp_path / "fw.yaml").write_text(
        "frameworks:\n  acme:\n    title: ACME policy\n"
        "    source: {document: ACME, publisher: ACME, url: https://x.test}\n"
        "    version: '1'\n    date: '2026-01-01'\n"
        "    items:\n      - {id: P1, title: one}\n"
    )
    monkeypatch.setenv("REPORTING_JUDGE_CARDS", str(tmp_path / "cards.json"))
    monkeypatch.setenv("REPORTING_FRAMEWORKS", str(tmp_path / "fw.yaml"))
    captured = {}
    original = streamlit.download_button

    def spy(label, data, *args, **kwargs):
        captured[kwargs.get("key")] = data
        return original(label, data, *args, **kwargs)

    monkeypatch.setattr(streamlit, "download_button", spy)
    at = on_acme_v1(app(samples, monkeypatch).run())
    assert not at.exception
    html = captured["download_export"]()
    data = json.loads(re.search(r'id="report-data">(.*?)</script>', html, re.S).group(1))
    assert "acme" in data["aggregate_metrics"]["frameworks"]
    assert "our-own-labels" in html


def test_compare_page_shows_the_paired_comparison(samples, monkeypatch):
    from reporting.analysis.compare import compare_runs

    at = on_acme_v1(app(samples, monkeypatch).run())
    page(at, "compare")
    assert not at.exception
    at.selectbox(key="compare_base").set_value("acme-assistant-v1.json").run()
    at.selectbox(key="compare_candidate").set_value("acme-assistant-v2.json").run()
    expected = compare_runs(
        reporting.read_run(samples / "acme-assistant-v1.json"), reporting.read_run(samples / "acme-assistant-v2.json")
    )
    lines = texts(at)
    assert any(
        f"{expected['mcnemar']['c']} went from fail to pass and {expected['mcnemar']['b']} from pass to fail" in t
        for t in lines
    )
    headline = at.dataframe[0].value.set_index("figure")
    assert headline.loc["Pass rate", "change"] == pytest.approx(expected["headline"]["pass_rate"]["delta"])
    # the interval as numbers on screen, not text like "'+0.124 to +0.308" marked by the spreadsheet guard
    low, high = expected["headline"]["pass_rate"]["ci"]
    assert headline.loc["Pass rate", "CI low"] == pytest.approx(low)
    assert headline.loc["Pass rate", "CI high"] == pytest.approx(high)
    assert not any(isinstance(v, str) and v.startswith("'") for v in headline.to_numpy().ravel())
    failing = at.dataframe[2].value
    assert list(failing["probe_id"]) == expected["newly_failing"]
    assert {"base_response", "candidate_response"} <= set(failing.columns)


def test_trend_page_orders_runs_in_time(samples, monkeypatch):
    at = on_acme_v1(app(samples, monkeypatch).run())
    page(at, "trend")
    assert not at.exception and len(at.get("plotly_chart")) == 2
    table = at.dataframe[0].value
    assert list(table["created_at"]) == sorted(table["created_at"]) and len(table) == 3


def test_rubrics_page_shows_scorecard_dimensions_and_contradictions(samples, monkeypatch):
    from reporting.rubrics import scorecard

    at = on_acme_v1(app(samples, monkeypatch).run())
    at.sidebar.selectbox(key="run_choice").set_value("acme-assistant-v2.json").run()
    page(at, "rubrics")
    assert not at.exception
    card = scorecard(samples / "acme-assistant-v2.rubric.yaml", samples / "acme-assistant-v2.verdicts.jsonl")
    assert any(t.startswith(f"AGENT-SAFETY Agent safety release scorecard: {card['score']:.3f}") for t in texts(at))
    tree = at.dataframe[0].value
    assert tree["result"].iloc[0] == "PASS" and len(tree) == 1 + 2 + 2 + 4
    assert len(at.get("plotly_chart")) == 1  # the dimension heat map
    assert any("12 of 12 classified as expected" in t for t in texts(at))
    at.sidebar.selectbox(key="run_choice").set_value("acme-assistant-v1.json").run()
    assert any("No scorecard" in i.value for i in at.info)
    contradictions = at.dataframe[0].value
    assert set(contradictions["probe_id"]) == {"MI-004", "MI-008"}
    assert dict(zip(contradictions["probe_id"], contradictions["contradiction"])) == {"MI-004": True, "MI-008": False}


def test_clear_filters_and_whole_run_pages_say_filters_do_not_apply(samples, monkeypatch):
    at = on_acme_v1(app(samples, monkeypatch).run())
    label = at.sidebar.selectbox(key="run_choice").value
    total = len(reporting.read_run(samples / label).cases)
    next(w for w in at.sidebar.radio if w.label == "Outcome").set_value("fail").run()
    next(w for w in at.sidebar.multiselect if w.label == "Severity").set_value(["critical"]).run()
    assert not any(t == f"Showing {total:,} of {total:,} cases" for t in texts(at))
    next(b for b in at.sidebar.button if b.label == "Clear filters").click().run()
    assert f"Showing {total:,} of {total:,} cases" in texts(at)
    assert next(w for w in at.sidebar.radio if w.label == "Outcome").value == "all"
    for name in ("compare", "trend"):
        page(at, name)
        assert any("filters do not apply here" in c.value for c in at.caption), name
    page(at, "rubrics")
    assert any(e.label.startswith("Examples shipped with RunLens") for e in at.expander)


def test_drift_says_when_it_comes_from_left_out_cases(tmp_path, monkeypatch):
    folder = tmp_path / "runs"
    folder.mkdir()
    good = [
        {"probe_id": f"p{i}", "category": "c", "severity": "low", "passed": True, "risk_score": 0.1} for i in range(3)
    ]
    bad = {"probe_id": "x", "category": "c", "severity": "urgent", "passed": False, "risk_score": 0.9}
    stored = {"counts": {"probes_evaluated": 4, "passed": 3, "failed": 1}}
    (folder / "r.json").write_text(json.dumps({"cases": [*good, bad], "aggregate_metrics": stored}))
    at = app(folder, monkeypatch).run()
    drift = next(w.value for w in at.warning if w.value.startswith("Stored figures differ"))
    assert "describe all 4 of its cases, and 1 were left out as invalid" in drift


def test_only_plain_sentences_reach_the_observability_info_box():
    from reporting.ui.run_pages import OWN_WORDS

    for reason in (
        "0 case(s); observability needs at least 5",
        "the cases have no words to embed",
        "too few distinct terms to embed",
        "observability was not requested",
    ):
        assert OWN_WORDS.fullmatch(reason), reason
    for hostile in ("[click](http://x.test)", "![i](http://x.test/p.png)", "<img src=x>", "**bold**", "a_b_c"):
        assert not OWN_WORDS.fullmatch(hostile), hostile


def test_a_scatter_selection_opens_the_case_evidence(samples, monkeypatch):
    """Issue 14, point 17: selected points list their cases, worst first, and a case opens from the list (one
    clicked point opens at once). Streamlit's AppTest cannot click a chart, so the chart's selection event is
    handed in where the page reads it."""
    from types import SimpleNamespace

    from reporting.ui import run_pages

    chosen: dict = {"points": [], "row": None}
    real_plot, real_table = run_pages._plot, run_pages.table

    def plot(fig, **kwargs):
        real_plot(fig, **kwargs)
        if kwargs.get("key") == "scatter":
            return SimpleNamespace(selection=SimpleNamespace(points=[{"customdata": [p]} for p in chosen["points"]]))
        return None

    def table_(frame, **kwargs):
        real_table(frame, **kwargs)
        if kwargs.get("key") == "scatter_cases" and chosen["row"] is not None:
            return SimpleNamespace(selection=SimpleNamespace(rows=[chosen["row"]]))
        return None

    monkeypatch.setattr(run_pages, "_plot", plot)
    monkeypatch.setattr(run_pages, "table", table_)
    at = on_acme_v1(app(samples, monkeypatch).run())
    label = at.sidebar.selectbox(key="run_choice").value
    frame = reporting.cases_frame(reporting.read_run(samples / label))
    page(at, "observability")
    assert not any(s.value == "Case detail" for s in at.subheader)
    chosen["points"] = ["PI-001"]
    at.run()
    assert any(s.value == "Case detail" for s in at.subheader)
    assert any("probe PI-001" in t for t in texts(at))
    # Three points: listed worst first; the second row opens that case.
    picks = list(frame["probe_id"][:3])
    chosen["points"] = picks
    at.run()
    listed = list(at.dataframe[-1].value["probe_id"])
    expected = frame[frame["probe_id"].isin(picks)].sort_values(
        ["weighted_risk", "risk_score", "probe_id"], ascending=[False, False, True]
    )
    assert listed == list(expected["probe_id"])
    assert not any(s.value == "Case detail" for s in at.subheader)
    chosen["row"] = 1
    at.run()
    assert any(f"probe {listed[1]}" in t for t in texts(at)) and not at.exception


def test_one_empty_state_when_no_case_matches_and_a_control_to_clear_it(samples, monkeypatch):
    """Issue 14, point 18: filters that keep no case give every page the same message and a Clear filters button,
    not an empty severity chart from -1 to 1 or a page's own sentence."""
    at = on_acme_v1(app(samples, monkeypatch).run())
    at.sidebar.text_input(key=next(w.key for w in at.sidebar.text_input if w.key.startswith("f_text_"))).input(
        "no case says this zq9x"
    ).run()
    for name in RUN_PAGES:
        page(at, name)
        assert "Showing 0 of 120 cases" in " ".join(texts(at)), name
        assert [i.value for i in at.info] == [
            "No case matches the filters, so there is nothing to draw. Clear the filters to see the whole run."
        ], name
        assert not at.get("plotly_chart") and not at.dataframe and not at.metric, name
    at.button(key="empty_clear").click().run()
    assert any(t.startswith("Showing 120 of 120 cases") for t in texts(at))
    assert not any("No case matches" in i.value for i in at.info)
    page(at, "cases")
    assert len(at.dataframe[-1].value) == 120  # the Cases page lists every case again


def test_each_run_of_the_script_gives_back_what_its_page_freed(samples, monkeypatch):
    """After the page is drawn, the memory it freed goes back to the system for a large run
    (``reporting._memory.give_back_between``: its case count decides), every run of the script, a page's failure
    included: at ten million cases what one page freed was kept and counted in the next page's peak."""
    import reporting.ui.pages as pages

    given: list[int] = []
    monkeypatch.setattr(pages, "give_back_between", given.append)
    at = on_acme_v1(app(samples, monkeypatch).run())
    cases = len(reporting.load_run(str(samples / "acme-assistant-v1.json")).run.cases)
    assert len(given) == 2 and given[-1] == cases  # the first run (another run's count) and the run choice
    page(at, "cases")
    assert given[2:] == [cases] and not at.exception
    monkeypatch.setattr(pages.st, "navigation", _failing_navigation)
    at.run()
    assert given[3:] == [cases] and at.error


def _failing_navigation(_pages):
    class Failing:
        def run(self):
            raise RuntimeError("a page that failed")

    return Failing()
