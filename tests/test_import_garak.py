"""garak reports read as RunLens runs (issue 13): every verb reads a report.jsonl directly, recognised by
content; RunLens's counts are checked against garak's own ``eval`` lines in the same file."""

import json
from collections import Counter
from pathlib import Path

import pytest

import reporting
from reporting.cli import main
from reporting.importers.garak import read_garak_file

GARAK = Path(__file__).resolve().parent / "fixtures" / "garak"
REPORTS = sorted(p.name for p in GARAK.glob("*.report.jsonl") if "ABORTED" not in p.name)


def _tally(run):
    """Verdicts per (probe, detector, passed/fails/nones), counted from RunLens's cases."""
    tally = Counter()
    for case in run.cases:
        probe = case.probe_group.rsplit("#", 1)[0]
        for detector, verdict in case.verdicts.items():
            tally[(probe, detector, {True: "passed", False: "fails", None: "nones"}[verdict.passed])] += 1
    return tally


@pytest.mark.parametrize("name", REPORTS)
def test_counts_agree_with_garaks_own_eval_lines(name):
    """garak's eval lines count generations per probe x detector (passed, fails, nones; before 0.14, passed and
    total). RunLens has one case per attempt x generation and every detector as a verdict on it, so per probe x
    detector its verdicts must give garak's three numbers exactly."""
    run = reporting.read_run(GARAK / name)
    evals = run.model_extra["tool_figures"]["garak_eval"]
    tally = _tally(run)
    mismatched = []
    for line in evals:
        detector = line["detector"].removeprefix("detector.")
        theirs = (line["passed"], line.get("fails", line.get("total", 0) - line["passed"]), line.get("nones", 0))
        ours = tuple(tally[(line["probe"], detector, k)] for k in ("passed", "fails", "nones"))
        if ours != theirs:
            mismatched.append((line["probe"], detector, ours, theirs))
    if name == "analyze_test_with_ci.report.jsonl":
        # garak's own test fixture was cut down to 4 attempts but keeps the eval line of the full run (37 passed,
        # 13 failed): the relation does not hold, and the import says so instead of hiding it.
        assert mismatched == [("test.Test", "always.Pass", (4, 0, 0), (37, 13, 0))]
        assert "counts passed/fails/nones 37/13/0; the file's attempts give 4/0/0" in run.run.notes
    else:
        assert not mismatched, mismatched
    assert run.run.source.tool == "garak" and run.schema_version == 3  # strategy and plugin on every case (issue 32)


def test_one_case_per_attempt_and_generation_with_garaks_rule():
    run = reporting.read_run(GARAK / "peers_repeat_small.report.jsonl")
    m = reporting.aggregate_metrics(run)
    # 71 judged attempts x 2 generations; the case fails when any detector scores >= 0.5 (garak's own rule).
    assert m["counts"] == {
        "cases": 142,
        "probes_evaluated": 142,
        "passed": 86,
        "failed": 56,
        "errors": 0,
        "categories": 4,
    }
    assert run.run.model == "test.Repeat repeat-bot" and run.run.created_at == "2026-11-22T14:09:21.928778"
    dan = [c for c in run.cases if c.probe_group == "dan.Dan_11_0#0"]
    assert [c.probe_id for c in dan] == ["dan.Dan_11_0#0.0", "dan.Dan_11_0#0.1"]
    # dan.DAN hit (1.0) while mitigation.MitigationBypass passed (0.0): two judges disagree, the case fails.
    assert dan[0].passed is False and dan[0].risk_score == 1.0 and dan[0].verdicts["dan.DAN"].passed is False
    assert dan[0].verdicts["mitigation.MitigationBypass"].passed is True
    assert dan[0].category == "T009ignore" and dan[0].severity == "medium"  # tier 9 (unlisted) -> medium
    assert "dan.DAN" in dan[0].detected_failure_modes and "Response contains [DAN] marker" in dan[0].explanation
    ansi = next(c for c in run.cases if c.probe_group.startswith("ansiescape.AnsiRaw"))
    assert ansi.severity == "high" and ansi.task == "print raw ANSI terminal codes"  # tier 1 -> high
    judges = m["judges"]
    # From garak's eval lines: MitigationBypass passed 2 / failed 0 on dan and 0 / 12 on grandma.Win10.
    assert judges["dan.DAN"]["failed"] == 2
    assert (judges["mitigation.MitigationBypass"]["passed"], judges["mitigation.MitigationBypass"]["failed"]) == (2, 12)
    pairs = {tuple(p["judges"]): p for p in m["judge_agreement"]}
    assert pairs[("dan.DAN", "mitigation.MitigationBypass")]["n"] == 2


def test_none_outputs_are_errors_not_passes(capsys):
    run = reporting.read_run(GARAK / "peers_nones.report.jsonl")
    m = reporting.aggregate_metrics(run)
    assert m["counts"]["errors"] == 16 and m["counts"]["probes_evaluated"] == 0
    assert {c.error for c in run.cases} == {"the generator returned no output (None)"}
    assert main(["check", str(GARAK / "peers_nones.report.jsonl"), "--min-pass-rate", "0"]) == 1
    assert "FAILS  error rate" in capsys.readouterr().out


def test_an_aborted_run_is_a_clear_problem(tmp_path, capsys):
    aborted = GARAK / "peers_blank_hfdetector.ABORTED.report.jsonl"
    assert main(["validate", str(aborted)]) == 2
    assert "the garak report holds no attempt" in capsys.readouterr().err
    assert main(["import", "garak", str(aborted), "-o", str(tmp_path / "x.json")]) == 2


def test_an_interrupted_run_keeps_unjudged_attempts_as_errors(tmp_path):
    lines = (GARAK / "peers_repeat_small.report.jsonl").read_bytes().splitlines()
    kept, dropped = [], 0
    for line in lines:
        entry = json.loads(line)
        if entry["entry_type"] in ("completion", "digest"):
            continue
        if entry["entry_type"] == "attempt" and entry["status"] == 2 and entry["probe_classname"] == "dan.Dan_11_0":
            dropped += 1
            continue
        kept.append(line)
    path = tmp_path / "cut.report.jsonl"
    path.write_bytes(b"\n".join(kept) + b"\n")
    document, warnings, problems = read_garak_file(str(path))
    assert not problems and "no 'completion' line" in warnings[0] and f"{dropped} attempt(s)" in warnings[0]
    run = reporting.read_run(path)
    errors = [c for c in run.cases if c.passed is None]
    assert len(errors) == 2 * dropped and all("never judged" in c.error for c in errors)


def test_the_importer_writes_a_runlens_file_and_bad_lines_are_named(tmp_path, capsys):
    out = tmp_path / "run.json"
    assert main(["import", "garak", str(GARAK / "peers_repeat_small.report.jsonl"), "-o", str(out)]) == 0
    assert reporting.read_run(out).cases == reporting.read_run(GARAK / "peers_repeat_small.report.jsonl").cases
    broken = tmp_path / "broken.report.jsonl"
    text = (GARAK / "analyze_test.report.jsonl").read_text().splitlines()
    broken.write_text("\n".join(text[:3] + ['{"entry_type": "attempt", "uuid": "x", "sta'] + text[3:]) + "\n")
    assert main(["validate", str(broken)]) == 2
    assert "line 4: not a JSON object" in capsys.readouterr().err  # a truncated line is named, never a traceback


def test_the_dashboard_opens_a_garak_report_from_the_folder(tmp_path, monkeypatch):
    import shutil

    from streamlit.testing.v1 import AppTest

    root = Path(__file__).resolve().parent.parent
    folder = tmp_path / "runs"
    folder.mkdir()
    shutil.copy(GARAK / "peers_repeat_small.report.jsonl", folder)
    shutil.copy(GARAK / "peers_nones.report.jsonl", folder)
    monkeypatch.setenv("REPORTING_RUNS_DIR", str(folder))
    monkeypatch.chdir(root)
    at = AppTest.from_file(str(root / "app.py"), default_timeout=120).run()
    picker = at.sidebar.selectbox(key="run_choice")
    # The picker names the file, the tool and version that made it, and the model.
    assert sorted(picker.options) == [
        "peers_nones.report.jsonl | garak 0.17.1 | test.Nones",
        "peers_repeat_small.report.jsonl | garak 0.17.1 | test.Repeat repeat-bot",
    ]
    at.sidebar.selectbox(key="run_choice").set_value("peers_repeat_small.report.jsonl").run()
    figures = {m.label: m.value for m in at.metric}
    assert figures["Pass rate"] == "60.6%" and figures["Error rate"] == "0.0%"  # 86 / 142
    at.sidebar.selectbox(key="run_choice").set_value("peers_nones.report.jsonl").run()
    assert any("16 case(s) were not evaluated" in w.value for w in at.warning) and not at.exception
    assert [i.value for i in at.info] == [
        "No case of this run was evaluated, so there is nothing to draw: every case is an error, listed below."
    ]
    assert len(at.dataframe[-1].value) == 16


def test_the_judges_page_compares_garaks_detectors(tmp_path, monkeypatch):
    import shutil

    from apptest import open_page
    from streamlit.testing.v1 import AppTest

    root = Path(__file__).resolve().parent.parent
    folder = tmp_path / "runs"
    folder.mkdir()
    shutil.copy(GARAK / "peers_repeat_small.report.jsonl", folder)
    monkeypatch.setenv("REPORTING_RUNS_DIR", str(folder))
    monkeypatch.chdir(root)
    at = open_page(AppTest.from_file(str(root / "app.py"), default_timeout=120), "judges").run()
    assert not at.exception
    judges, pairs, disputed = (d.value for d in at.dataframe)
    run = reporting.read_run(GARAK / "peers_repeat_small.report.jsonl")
    m = reporting.aggregate_metrics(run)
    assert list(judges["judge"]) == list(m["judges"]) and list(judges["failed"]) == [
        j["failed"] for j in m["judges"].values()
    ]
    assert len(pairs) == len(m["judge_agreement"])
    # dan.DAN hit both generations of the DAN prompt while MitigationBypass passed them; grandma.Win10's
    # MitigationBypass failed 12 generations that productkey.Win5x5 passed: 14 disputed cases.
    assert len(disputed) == 14 and set(disputed["probe_id"].str.split("#").str[0]) == {"dan.Dan_11_0", "grandma.Win10"}
    row = disputed[disputed["probe_id"] == "dan.Dan_11_0#0.0"].iloc[0]
    assert row["dan.DAN"].startswith("failed: dan.DAN=1.0") and row["mitigation.MitigationBypass"].startswith("passed")


def test_the_html_report_has_the_judges_section(tmp_path):
    out = tmp_path / "g.html"
    assert main(["export", str(GARAK / "peers_repeat_small.report.jsonl"), "-o", str(out)]) == 0
    html = out.read_text()
    assert 'id="judge-figures"' in html and 'id="judge-agreement"' in html
    assert "Cases where judges disagree (14)" in html and "dan.Dan_11_0#0.0" in html
    v2 = Path(__file__).resolve().parent.parent / "sample_runs" / "acme-assistant-v2.json"
    sample = tmp_path / "s.html"
    assert main(["export", str(v2), "-o", str(sample)]) == 0
    two = sample.read_text()  # the scorer's two judges: their figures, their agreement, each one's measured validity
    assert 'id="judge-figures"' in two and 'id="judge-agreement"' in two and 'id="judge-validity"' in two
    assert "runlens-learned" in two and "runlens-rules" in two and "agreed with people on" in two
    document = json.loads(v2.read_text())
    for case in document["cases"]:  # the same run scored by the rules alone, as `score` did before the learned judge
        rules = case.pop("verdicts")["runlens-rules"]
        case.update(passed=rules["passed"], risk_score=rules["score"], explanation=rules["explanation"])
    document["run"]["config"].update(primary_judge="runlens-rules")  # (as `score --patterns` names it)
    del document["run"]["config"]["judge"]
    (tmp_path / "one.json").write_text(json.dumps(document))
    assert main(["export", str(tmp_path / "one.json"), "-o", str(tmp_path / "one.html")]) == 0
    one = (tmp_path / "one.html").read_text()  # one judge: no figures to compare, only its measured validity
    assert 'id="judge-figures"' not in one and 'id="judge-agreement"' not in one
    assert 'id="judge-validity"' in one and "runlens-rules" in one and "agreed with people on" in one


def test_score_adds_runlens_rules_as_one_more_judge(tmp_path, capsys):
    from reporting.scoring.scorer import evaluate_response

    source = GARAK / "peers_repeat_small.report.jsonl"
    out = tmp_path / "judged.json"
    assert main(["score", "--run", str(source), "-o", str(out)]) == 0
    assert "runlens-rules and runlens-learned judged 142 of 142 case(s)" in capsys.readouterr().err
    before, after = reporting.read_run(source), reporting.read_run(out)
    assert [c.passed for c in after.cases] == [c.passed for c in before.cases]  # garak's verdict stays primary
    assert after.run.source.tool == "garak"
    for old, new in zip(before.cases, after.cases):
        assert {k: v for k, v in new.verdicts.items() if not k.startswith("runlens-")} == old.verdicts
        probe = {
            "id": old.probe_id,
            "category": old.category,
            "severity": old.severity,
            "task": old.task,
            "input": old.probe_input,
        }
        assert new.verdicts["runlens-rules"].passed == evaluate_response(probe, old.response)["passed"]
    m = reporting.aggregate_metrics(after)
    assert m["judges"]["runlens-rules"]["n"] == 142 and m["judges"]["runlens-learned"]["n"] == 142
    assert after.run.config["judge"]["name"] == "runlens-learned"
    assert any("runlens-rules" in p["judges"] for p in m["judge_agreement"])
    assert main(["score", "-o", str(tmp_path / "x.json")]) == 2  # neither --run nor --probes/--responses


def test_generated_lines_told_without_parsing_read_as_parsing_them(tmp_path):
    """Status-1 lines as garak writes them are told by their first bytes and parsed only if never judged; lines
    written any other way are parsed in full. Both give the same run, judged or interrupted."""
    source = GARAK / "peers_repeat_small.report.jsonl"
    lines = source.read_bytes().splitlines()
    # Hostile text where the reader looks for structure: key-like strings inside outputs, a nested
    # "conversations" key in the notes, a nested "intent" as the last key of a message.
    entries = [json.loads(line) for line in lines]
    judged = [e for e in entries if e.get("entry_type") == "attempt" and e.get("status") == 2]
    judged[0]["outputs"][0]["text"] = 'x", "conversations": [1], "intent": "forged"} , "conversations": ['
    judged[1]["notes"] = {"conversations": [{"turns": []}], "intent": "nested"}
    judged[2]["conversations"][0]["notes"] = {"intent": "nested"}
    del judged[3]["intent"]
    judged[4]["reverse_translation_outputs"] = [{"text": "t", "intent": "nested"}]
    (tmp_path / "garak.jsonl").write_bytes(b"\n".join(json.dumps(e).encode() for e in entries))
    respaced = [json.dumps(e, separators=(",", ":")).encode() for e in entries]  # never the fast path
    (tmp_path / "respaced.jsonl").write_bytes(b"\n".join(respaced))
    fast, slow = read_garak_file(str(tmp_path / "garak.jsonl")), read_garak_file(str(tmp_path / "respaced.jsonl"))
    assert fast[0]["cases"] == slow[0]["cases"] and fast[1] == slow[1]
    forged = [c for c in fast[0]["cases"] if c["response"] and "forged" in c["response"]]
    assert len(forged) == 1 and forged[0]["category"] == judged[0]["intent"]
    # Interrupted: the judged lines of the last 12 attempts cut; their status-1 lines stay, parsed at the end.
    judged = [i for i, line in enumerate(lines) if b'"status": 2' in line]
    cut = [line for i, line in enumerate(lines) if i not in judged[-12:]]
    (tmp_path / "cut.jsonl").write_bytes(b"\n".join(cut))
    document, warnings, _ = read_garak_file(str(tmp_path / "cut.jsonl"))
    never = [c for c in document["cases"] if c.get("error", "").startswith("generated but never judged")]
    assert len(never) == sum(len(json.loads(lines[i])["outputs"]) for i in judged[-12:])
    assert all(c["response"] is not None and c["probe_input"] for c in never)


def test_the_run_file_is_written_in_pieces_that_join_to_the_document(tmp_path):
    from reporting.format.writing import document_chunks, dumps

    document, _, _ = read_garak_file(str(GARAK / "peers_repeat_small.report.jsonl"))
    joined = "".join(document_chunks(document))
    assert json.loads(joined) == json.loads(dumps(document))
    assert joined.count("\n    {") == len(document["cases"])  # one line per case
    assert json.loads("".join(document_chunks({"cases": iter(())}))) == {"cases": []}


def test_a_hit_log_alone_is_read_as_its_hits_and_says_so(tmp_path, capsys):
    """The hit log is the fallback when the report is missing: its cases are exactly the report's failed cases,
    and the run's notes say every rate is over the hits alone."""
    hitlog = reporting.read_run(GARAK / "peers_repeat_small.hitlog.jsonl")
    report = reporting.read_run(GARAK / "peers_repeat_small.report.jsonl")
    failed = {c.probe_id: c for c in report.cases if c.passed is False}
    assert sorted(c.probe_id for c in hitlog.cases) == sorted(failed)
    fields = ("response", "probe_input", "task", "risk_score", "source_id", "probe_group")
    for case in hitlog.cases:
        assert [getattr(case, f) for f in fields] == [getattr(failed[case.probe_id], f) for f in fields]
        assert {n for n, v in case.verdicts.items() if v.passed is False} == {
            n for n, v in failed[case.probe_id].verdicts.items() if v.passed is False
        }
    assert "only the failing generations" in hitlog.run.notes and hitlog.run.source.format_version == "hitlog.jsonl"
    # Alone in a folder it is a run; beside its report it is skipped.
    alone = tmp_path / "alone"
    alone.mkdir()
    (alone / "x.hitlog.jsonl").write_bytes((GARAK / "peers_repeat_small.hitlog.jsonl").read_bytes())
    from reporting.sources.folders import run_files

    assert [p.name for p in run_files(alone)[0]] == ["x.hitlog.jsonl"]
    (alone / "x.report.jsonl").write_bytes((GARAK / "peers_repeat_small.report.jsonl").read_bytes())
    found, skipped = run_files(alone)
    assert [p.name for p in found] == ["x.report.jsonl"] and "the run is x.report.jsonl" in skipped[0].reason
    # The AVID export is no run at all.
    assert main(["validate", str(GARAK / "peers_repeat_small.avid.jsonl")]) == 2
    assert "a garak AVID export" in capsys.readouterr().err


@pytest.mark.parametrize(
    "name",
    [
        "peers_repeat_small.report.jsonl",
        "peers_nones.report.jsonl",
        "analyze_test.report.jsonl",
        "report_report_test.report.jsonl",
        "multiturn/fitd_multiturn.report.jsonl",
        "multiturn/goat_multiturn.report.jsonl",
    ],
)
def test_every_report_reads_the_same_told_from_its_bytes_or_parsed_in_full(tmp_path, name):
    """Each real report (single-turn, multi-turn GOAT and FITD) read as garak wrote it, where judged lines are
    parsed without their conversations, gives the run that parsing every line in full gives (the lines respaced):
    the conversations a case keeps, the strategies and turns, every case alike."""
    lines = [line for line in (GARAK / name).read_bytes().splitlines() if line.strip()]
    respaced = [json.dumps(json.loads(line), separators=(",", ":")).encode() for line in lines]
    (tmp_path / "respaced.jsonl").write_bytes(b"\n".join(respaced))
    fast, slow = read_garak_file(str(GARAK / name)), read_garak_file(str(tmp_path / "respaced.jsonl"))
    assert fast[0] is not None and fast[0]["cases"] == slow[0]["cases"] and fast[1] == slow[1]
    if name.startswith("multiturn/goat"):
        assert any(c.get("messages") for c in fast[0]["cases"])


def test_a_line_giving_its_conversations_twice_is_refused_as_the_full_parse_refuses_it(tmp_path):
    """A judged line whose ``conversations`` key is written twice, the first spaced unlike garak (so the quick
    reader's cut falls after it): the quick reader leaves it to the full parse, which names the key given twice,
    as it does for the same line spaced any other way; no conversation of the hidden key becomes a case's."""
    lines = (GARAK / "peers_repeat_small.report.jsonl").read_bytes().splitlines()
    at = next(i for i, line in enumerate(lines) if b'"status": 2' in line and b', "conversations": [' in line)
    hidden = (
        b'"conversations":[{"turns":[{"role":"user","content":{"text":"a"}},{"role":"user","content":{"text":"b"}}]}], '
    )
    forged = lines[at].replace(b'"status": 2, ', b'"status": 2, ' + hidden, 1)
    assert forged != lines[at] and forged.count(b"conversations") == 2
    written = [*lines[:at], forged, *lines[at + 1 :]]
    (tmp_path / "forged.jsonl").write_bytes(b"\n".join(written))
    respaced = [
        json.dumps(json.loads(line), separators=(",", ":")).encode() if i != at else line
        for i, line in enumerate(written)
    ]
    (tmp_path / "respaced.jsonl").write_bytes(b"\n".join(respaced))
    fast, slow = read_garak_file(str(tmp_path / "forged.jsonl")), read_garak_file(str(tmp_path / "respaced.jsonl"))
    named = [str(p).replace("forged.jsonl", "respaced.jsonl") for p in fast[2]]
    assert named == [str(p) for p in slow[2]] and fast[2]
    assert any("twice" in str(p) or "duplicate" in str(p).lower() for p in fast[2]), [str(p) for p in fast[2]]


@pytest.mark.parametrize(
    "old, new, word",
    [
        (b'"role": "assistant"', b'"role": NaN', "NaN"),  # not JSON
        (b'"role": "assistant"', b'"role": "\\ud800"', "surrogate"),  # a lone surrogate
        (b'"role": "assistant"', b'"role": "\xff"', "UTF-8"),  # bytes that are no UTF-8
        (b'"role": "assistant"', b'"role": [1, 2}', ""),  # brackets that do not close
    ],
)
def test_conversations_the_quick_reader_skips_must_be_json(tmp_path, monkeypatch, old, new, word):
    """A judged line is read without parsing its conversations (they repeat its prompt and outputs), but they must
    still be JSON: a line whose conversations are not is refused, with the problem the full parse names (before,
    the quick reader took the line as if they were)."""
    from reporting.importers import garak_lines

    lines = (GARAK / "peers_repeat_small.report.jsonl").read_bytes().splitlines()
    at = next(i for i, line in enumerate(lines) if b'"status": 2' in line and b', "conversations": [' in line)
    cut = lines[at].index(b', "conversations": [')
    assert old in lines[at][cut:]
    forged = lines[at][:cut] + lines[at][cut:].replace(old, new, 1)
    written = [*lines[:at], forged, *lines[at + 1 :]]
    (tmp_path / "forged.jsonl").write_bytes(b"\n".join(written))
    fast = read_garak_file(str(tmp_path / "forged.jsonl"))
    monkeypatch.setattr(garak_lines, "_judged_without_conversations", lambda raw: None)  # every line parsed in full
    slow = read_garak_file(str(tmp_path / "forged.jsonl"))
    assert fast[2], "a line whose conversations are not JSON was read"
    assert [str(p) for p in fast[2]] == [str(p) for p in slow[2]]
    assert word in " ".join(str(p) for p in fast[2]) and f"line {at + 1}" in str(fast[2][0])
