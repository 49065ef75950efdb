"""Probes asked more than once (issue 13): any repetition failed, the mean share failed, and hit@k, by hand and
against garak's own hit@k in its eval lines."""

import json
from pathlib import Path

import pytest

import reporting
from reporting.analysis.metrics import aggregate_metrics, cases_frame
from reporting.analysis.repetitions import hit_at_k, repetition_figures
from tests.conftest import case

GARAK = Path(__file__).resolve().parent / "fixtures" / "garak"


def _run(cases):
    return reporting.read_run(
        json.dumps({"schema_version": 2, "run": {"run_id": "r", "model": "m"}, "cases": cases}).encode()
    )


def test_known_answers_by_hand():
    # A: 3 repetitions, 1 failed; B: 2, none failed, plus one not evaluated; C: 1, failed.
    cases = [
        case("a#0", "x", "low", True, 0.1, probe_group="A"),
        case("a#1", "x", "low", False, 0.9, probe_group="A"),
        case("a#2", "x", "low", True, 0.1, probe_group="A"),
        case("b#0", "x", "low", True, 0.1, probe_group="B"),
        case("b#1", "x", "low", True, 0.1, probe_group="B"),
        case("b#2", "x", "low", None, None, probe_group="B", error="timeout"),
        case("c", "x", "low", False, 0.7),
    ]
    figures = aggregate_metrics(_run(cases))["repetitions"]
    assert figures["probes"] == 3 and figures["repeated_probes"] == 2 and figures["most_repetitions"] == 3
    assert figures["any_failed"] == 2 and figures["any_failed_rate"] == pytest.approx(2 / 3)
    assert figures["share_failed_mean"] == pytest.approx((1 / 3 + 0 + 1) / 3)
    # hit@1 = mean of c/n; hit@2 for A = 1 - C(2,2)/C(3,2) = 2/3 (C has one repetition: left out); hit@3 for A = 1.
    assert figures["hit_at_k"]["1"] == {"score": pytest.approx(4 / 9), "probes": 3}
    assert figures["hit_at_k"]["2"] == {"score": pytest.approx((2 / 3 + 0) / 2), "probes": 2}
    assert figures["hit_at_k"]["3"] == {"score": pytest.approx(1.0), "probes": 1}


def test_hit_at_k_is_one_minus_the_chance_of_drawing_no_failure():
    from math import comb

    for n in range(1, 9):
        for c in range(n + 1):
            for k in range(1, n + 1):
                assert hit_at_k(n, c, k) == pytest.approx(1 - comb(n - c, k) / comb(n, k))
    with pytest.raises(ValueError):
        hit_at_k(2, 1, 3)


def test_hit_at_k_agrees_with_garaks_eval_lines():
    """garak's eval lines give hit@k per probe x detector over the attempts (the prompts), counting a detector's
    scored generations; the engine's figures of the cases a detector judged, with that detector's verdicts as
    their outcome, give the same."""
    run = reporting.read_run(GARAK / "peers_repeat_small.report.jsonl")  # the fixture garak wrote hit@k in
    frame = cases_frame(run)
    checked = 0
    for line in run.model_extra["tool_figures"]["garak_eval"]:
        theirs = line.get("hit_at_k") or {}
        probe, detector = line["probe"], line["detector"].removeprefix("detector.")
        subset = frame[[g.rsplit("#", 1)[0] == probe for g in frame["probe_group"]]]
        subset = subset[[detector in v for v in subset["verdicts"]]]
        subset = subset.assign(passed=[v[detector].passed for v in subset["verdicts"]])
        ours = aggregate_metrics(subset)["repetitions"]["hit_at_k"]
        for k, figure in theirs.items():
            if not k.isdigit():
                continue
            assert ours[k]["probes"] == figure["prompts"], (probe, k)
            assert ours[k]["score"] == pytest.approx(figure["score"]), (probe, k)
            checked += 1
    assert checked == 12  # 6 eval lines x k = 1, 2


def test_the_overview_and_the_html_show_them_only_for_repeated_probes(tmp_path, monkeypatch):
    import shutil

    from streamlit.testing.v1 import AppTest

    from reporting.cli import main
    from reporting.render.presentation import fmt_percent

    root = Path(__file__).resolve().parent.parent
    source = GARAK / "peers_repeat_small.report.jsonl"
    figures = aggregate_metrics(reporting.read_run(source))["repetitions"]
    folder = tmp_path / "runs"
    folder.mkdir()
    shutil.copy(source, folder)
    shutil.copy(root / "sample_runs" / "acme-assistant-v1.json", folder)
    monkeypatch.setenv("REPORTING_RUNS_DIR", str(folder))
    monkeypatch.chdir(root)
    at = AppTest.from_file(str(root / "app.py"), default_timeout=120).run()
    at.sidebar.selectbox(key="run_choice").set_value("peers_repeat_small.report.jsonl").run()
    assert "Probes asked more than once" in [s.value for s in at.subheader]
    sentence = (
        f"At least one repetition failed on {figures['any_failed']} probes ({fmt_percent(figures['any_failed_rate'])}"
    )
    assert any(sentence in t.value for t in at.text)
    assert list(at.dataframe[0].value["hit@k"]) == [fmt_percent(figures["hit_at_k"][k]["score"]) for k in ("1", "2")]
    at.sidebar.selectbox(key="run_choice").set_value("acme-assistant-v1.json").run()
    assert "Probes asked more than once" not in [s.value for s in at.subheader] and not at.exception
    out = tmp_path / "g.html"
    assert main(["export", str(source), "-o", str(out)]) == 0
    html = out.read_text()
    assert '<section id="repetitions">' in html and sentence.replace("'", "&#39;") in html
    assert main(["export", str(root / "sample_runs" / "acme-assistant-v1.json"), "-o", str(tmp_path / "a.html")]) == 0
    assert '<section id="repetitions">' not in (tmp_path / "a.html").read_text()


def test_hit_at_k_over_many_probes_is_the_mean_of_each_probes_hit_at_k():
    """Probes share few (repetitions, failures) pairs and hit@k is computed once per pair: the figures equal the
    plain mean over probes of each probe's own hit@k, and the counts are the plain counts."""
    import random

    rng = random.Random(7)
    cases, per_probe = [], []
    for p in range(400):
        n = rng.randint(1, 7)
        outcomes = [rng.random() < 0.3 for _ in range(n)]
        per_probe.append((n, sum(outcomes)))
        cases += [case(f"p{p}#{i}", "x", "low", not f, 0.5, probe_group=f"p{p}") for i, f in enumerate(outcomes)]
    rng.shuffle(cases)  # repetitions of a probe need not stand together
    figures = aggregate_metrics(_run(cases))["repetitions"]
    assert figures["probes"] == 400 and figures["most_repetitions"] == max(n for n, _ in per_probe)
    assert figures["any_failed"] == sum(1 for _, c in per_probe if c)
    assert figures["repeated_probes"] == sum(1 for n, _ in per_probe if n > 1)
    for k in range(1, figures["most_repetitions"] + 1):
        eligible = [(n, c) for n, c in per_probe if n >= k]
        expected = sum(hit_at_k(n, c, k) for n, c in eligible) / len(eligible)
        assert figures["hit_at_k"][str(k)]["probes"] == len(eligible)
        assert figures["hit_at_k"][str(k)]["score"] == pytest.approx(expected, abs=1e-12)


def test_a_table_whose_probes_never_repeat_reads_the_same_counts_without_grouping():
    """``case_table`` marks a table whose probe keys never repeat (kept by a filter of its rows); the engine then
    reads one repetition a case instead of grouping the keys: the same counts, in the same order, as the query."""
    import numpy as np

    from reporting.analysis.case_table import PROBES_ONCE, case_table
    from reporting.analysis.engine import REPETITIONS, Session

    once = [case(f"p{i}", "x", "low", i % 3 != 0, 0.5) for i in range(9)]
    twice = once + [case("p1-again", "x", "low", False, 0.9, probe_group="p1")]
    table = case_table(cases_frame(_run(once)))
    assert table.schema.metadata[PROBES_ONCE] == b"1"
    assert (case_table(cases_frame(_run(twice))).schema.metadata or {}).get(PROBES_ONCE) is None
    kept = table.filter(np.array([i % 2 == 0 for i in range(9)]))
    for given in (table, kept):
        with Session(given) as engine:
            assert engine.probes_once
            fast = engine.repetitions()
            slow = engine.connection.execute(REPETITIONS).fetchnumpy()
            assert fast[0].tolist() == slow["n"].tolist() and fast[1].tolist() == slow["c"].tolist()
    with Session(kept) as engine:
        assert engine.repetitions()[1].tolist() == [1, 0, 0, 1, 0]  # p0, p2, p4, p6, p8: p0 and p6 failed (i % 3 == 0)
        counted = engine.repetition_counts()  # the figures' way: two counts, not a row a case
        assert [part.tolist() for part in counted] == [[1, 1], [0, 1], [3, 2]]  # 3 probes passed once, 2 failed
    for given in (table, kept, table.filter(np.zeros(9, dtype=bool)), table.filter(np.arange(9) % 3 != 0)):
        with Session(given) as engine:  # every figure the same, to the bit, as of the counts in the table's order
            assert repetition_figures(*engine.repetition_counts()) == repetition_figures(*engine.repetitions())
    assert aggregate_metrics(_run(twice))["repetitions"]["repeated_probes"] == 1


def test_probe_keys_of_any_size_are_told_apart_without_a_table_as_large_as_the_largest():
    """A frame made by hand may hold any integer keys: far apart, negative, repeated; each is told as it is."""
    import numpy as np

    from reporting.analysis.case_table import _each_once

    assert _each_once(np.array([0, 10**12], dtype=np.int64)) and _each_once(np.array([-5, 3], dtype=np.int64))
    assert not _each_once(np.array([10**12, 7, 10**12], dtype=np.int64))
    assert _each_once(np.array([2, 0, 1], dtype=np.int64)) and not _each_once(np.array([1, 0, 1], dtype=np.int64))
    assert _each_once(np.array([], dtype=np.int64))
    frame = cases_frame(_run([case("a", "x", "low", True, 0.1), case("b", "x", "low", False, 0.9)]))
    frame["probe_key"] = [0, 10**12]
    assert aggregate_metrics(frame)["repetitions"]["probes"] == 2


@pytest.mark.parametrize("most", [1, 4, 3000])
def test_counted_probes_give_the_figures_of_the_same_probes_one_by_one(most):
    """``repetition_figures`` of (repetitions, failures) pairs with how many probes each stands for: the figures of
    those probes listed one by one (pairs counted or, past the counting table's size, made unique); pairs that stand
    for no probe, or with no repetition, count for nothing."""
    import numpy as np

    rng = np.random.default_rng(most)
    n = rng.integers(0, most + 1, 40)
    c = np.array([rng.integers(0, k + 1) for k in n])
    w = rng.integers(0, 5, 40)
    one_by_one = repetition_figures(np.repeat(n, w), np.repeat(c, w))
    counted = repetition_figures(n, c, w)
    assert counted["probes"] == int(w[n > 0].sum()) > 0
    share = counted.pop("share_failed_mean")
    assert share == pytest.approx(one_by_one.pop("share_failed_mean"), rel=1e-12)
    assert counted == one_by_one
    none = repetition_figures(np.array([1, 1]), np.array([0, 1]), np.array([0, 0]))
    assert none["probes"] == 0 and none["share_failed_mean"] is None and none["hit_at_k"] == {}
