"""The figures each tool stored in its own file, recounted from the cases, are drift findings where they differ
(issue 13): garak's eval lines, promptfoo's stats, Inspect's scores, JailbreakBench's header."""

import json
from pathlib import Path

from reporting.cli import main

FIXTURES = Path(__file__).resolve().parent / "fixtures"


def _drift(tmp_path, path, *extra):
    out = tmp_path / "r.json"
    out.unlink(missing_ok=True)
    assert main(["recompute", str(path), "-o", str(out), *extra]) == 0
    return json.loads(out.read_text())["drift"]


def test_every_tools_own_figures_agree_on_the_real_files(tmp_path):
    clean = [
        FIXTURES / "garak" / "peers_repeat_small.report.jsonl",
        FIXTURES / "promptfoo" / "promptfoo_redteam.json",
        FIXTURES / "inspect" / "cli_mockllm_default.eval",
    ]
    for path in clean:
        assert _drift(tmp_path, path) == [], path


def test_where_they_differ_each_is_a_finding_naming_the_figure(tmp_path):
    # garak's own test fixture keeps the eval line of 50 generations for a file cut down to 4 attempts.
    found = _drift(tmp_path, FIXTURES / "garak" / "analyze_test_with_ci.report.jsonl")
    assert found == [
        {"path": "tool_figures.garak_eval[test.Test x always.Pass].passed", "stored": 37, "recomputed": 4},
        {"path": "tool_figures.garak_eval[test.Test x always.Pass].fails", "stored": 13, "recomputed": 0},
    ]
    # JailbreakBench's header states 76 jailbreaks; its rows flag fewer.
    jbb = FIXTURES / "jailbreakbench" / "PAIR-black_box-gpt-3.5-turbo-1106.json"
    rows = json.loads(jbb.read_text())["jailbreaks"]
    flagged = sum(1 for r in rows if r.get("jailbroken") is True)
    assert _drift(tmp_path, jbb) == [
        {"path": "tool_figures.jailbreakbench.total_number_of_jailbreaks", "stored": 76, "recomputed": flagged}
    ]
    # A promptfoo file of one model whose stats were edited; an Inspect log whose accuracy was.
    doc = json.loads((FIXTURES / "promptfoo" / "promptfoo_redteam.json").read_text())
    doc["results"]["stats"]["failures"] += 3
    edited = tmp_path / "pf.json"
    edited.write_text(json.dumps(doc))
    paths = [(f["path"], f["recomputed"] + 3 == f["stored"]) for f in _drift(tmp_path, edited)]
    assert paths == [("tool_figures.promptfoo_stats.failures", True)]
    log = json.loads((FIXTURES / "inspect" / "cli_mockllm_default.json").read_text())
    score = log["results"]["scores"][0]
    metric = "accuracy" if "accuracy" in score["metrics"] else "mean"
    score["metrics"][metric]["value"] += 0.25
    edited = tmp_path / "inspect.json"
    edited.write_text(json.dumps(log))
    found = _drift(tmp_path, edited)
    assert [f["path"] for f in found] == [f"tool_figures.inspect_results.scores[{score['name']}].{metric}"]
    assert abs(found[0]["stored"] - found[0]["recomputed"] - 0.25) < 1e-9


def test_a_file_of_several_models_is_not_held_to_its_whole_file_stats(tmp_path):
    path = FIXTURES / "promptfoo" / "promptfoo.json"
    assert _drift(tmp_path, path, "--model", "canned-model") == []


def test_garak_tally_by_arrow_is_the_per_case_count():
    """A case table's verdicts counted by Arrow (``garak_table_tally``) equal the per-case count ``garak_eval`` makes
    of case documents: a group with '#' in it, an empty or missing group (the id's probe), a verdict with no outcome,
    a case with no verdicts or several."""
    import pyarrow as pa

    from reporting.format.parquet import verdict_map
    from reporting.importers.recount import garak_eval, garak_table_tally

    verdict = pa.struct(
        [("judge", pa.string()), ("passed", pa.bool_()), ("score", pa.float64()), ("explanation", pa.string())]
    )
    rows = [
        ("a.B#0.1", "a.B#0", [("d.X", True), ("d.Y", False)]),
        ("a.B#1.0", "a.B#1", [("d.X", None)]),
        ("c#d#2.0", "c#d#2", [("d.X", False)]),
        ("e.F#3.0", "", [("d.X", False)]),
        ("e.F#4.0", None, [("d.X", True)]),
        ("e.F#5.0", None, None),
        ("g", None, []),
        ("g#x", "h#", [("d.Y", True), ("d.Z", None)]),
    ]
    cases = [
        {
            "probe_id": pid,
            "probe_group": group,
            "verdicts": None
            if vs is None
            else [{"judge": j, "passed": p, "score": 1.0, "explanation": ""} for j, p in vs],
        }
        for pid, group, vs in rows
    ]
    table = pa.table(
        {
            "probe_id": pa.array([c["probe_id"] for c in cases]),
            "probe_group": pa.array([c["probe_group"] for c in cases], pa.string()),
            "verdicts": pa.array([c["verdicts"] for c in cases], pa.list_(verdict)),
        }
    )
    documents = [{**c, "verdicts": verdict_map(c["verdicts"] or [])} for c in cases]
    evals = [
        {"probe": probe, "detector": f"detector.{d}", "passed": 1, "total": 2}
        for probe in ("a.B", "c#d", "e.F", "g", "h")
        for d in ("d.X", "d.Y", "d.Z")
    ]
    by_table = garak_table_tally(pa.concat_tables([table.slice(0, 3), table.slice(3)]))
    assert by_table == {
        ("a.B", "d.X", True): 1,
        ("a.B", "d.Y", False): 1,
        ("a.B", "d.X", None): 1,
        ("c#d", "d.X", False): 1,
        ("e.F", "d.X", False): 1,
        ("e.F", "d.X", True): 1,
        ("h", "d.Y", True): 1,
        ("h", "d.Z", None): 1,
    }

    class Table(list):
        pass

    held = Table(documents)
    held.table = table
    assert garak_eval(evals, held) == garak_eval(evals, documents)


def test_the_other_recounts_of_a_case_table_equal_the_per_case_ones():
    """Inspect's scores, promptfoo's stats and JailbreakBench's count recounted from a case table's columns (no case
    made) equal the same recounts case by case: judges named in any order, a verdict with no score or outcome, a
    case with no verdicts, several, or an empty list; a whole-number-looking score among floats."""
    import pyarrow as pa

    from reporting.format.parquet import verdict_map
    from reporting.importers.recount import inspect_scores, jailbreakbench, promptfoo_stats

    verdict = pa.struct(
        [("judge", pa.string()), ("passed", pa.bool_()), ("score", pa.float64()), ("explanation", pa.string())]
    )
    rows = [
        (True, [("acc", True, 1.0), ("risk", True, 0.25)]),
        (False, [("risk", False, 0.75), ("acc", False, 0.0), ("jailbreakbench", False, None)]),
        (None, [("acc", None, None)]),
        (False, None),
        (True, []),
        (False, [("jailbreakbench", False, 1.0), ("acc", True, 0.5)]),
        (None, [("jailbreakbench", True, 0.0)]),
    ]
    cases = [
        {
            "passed": passed,
            "verdicts": None
            if vs is None
            else [{"judge": j, "passed": p, "score": s, "explanation": None} for j, p, s in vs],
        }
        for passed, vs in rows
    ]
    table = pa.table(
        {
            "passed": pa.array([c["passed"] for c in cases], pa.bool_()),
            "verdicts": pa.array([c["verdicts"] for c in cases], pa.list_(verdict)),
        }
    )
    documents = [{**c, "verdicts": verdict_map(c["verdicts"] or [])} for c in cases]

    class Table(list):
        pass

    held = Table(documents)
    held.table = pa.concat_tables([table.slice(0, 2), table.slice(2)])
    results = {
        "scores": [
            {"name": "acc", "metrics": {"accuracy": {"value": 0.5}}},
            {"name": "risk", "metrics": {"mean": {"value": 0.5}}},
            {"name": "absent", "metrics": {"mean": {"value": 0.1}}},
        ]
    }
    by_table, by_case = inspect_scores(results, held), inspect_scores(results, documents)
    # acc: (1 + 0 + 0.5) / 3; risk: (0.25 + 0.75) / 2; "absent" judged no case
    assert by_table == by_case and [ours for _, _, ours in by_case] == [0.5, 0.5]
    stats = {"successes": 2, "failures": 3, "errors": 2}
    assert promptfoo_stats(stats, held) == promptfoo_stats(stats, documents)
    assert [ours for _, _, ours in promptfoo_stats(stats, held)] == [2, 3, 2]
    params = {"total_number_of_jailbreaks": 2}
    assert jailbreakbench(params, held) == jailbreakbench(params, documents)
    assert jailbreakbench(params, held)[0][2] == 2
