"""The methodology of a report and a comparison says where the case verdicts come from: RunLens's rules, its
learned judge, or the producing tool (the HTML said "a rule-based evaluator" of every run, the learned judge's, a
garak or promptfoo import's alike); a comparison of runs judged by different judges says a changed verdict may be
the judge's."""

from __future__ import annotations

import json
import re
from html import unescape
from pathlib import Path

from payloads import PAYLOADS

import reporting
from reporting.analysis.compare import compare_runs
from reporting.cli import main
from reporting.render.presentation import compare_methodology, methodology

ROOT = Path(__file__).resolve().parents[1]
V2 = ROOT / "sample_runs" / "acme-assistant-v2.json"
GARAK = ROOT / "tests" / "fixtures" / "garak" / "peers_repeat_small.report.jsonl"


def _methodology(html: str) -> str:
    section = html.split('<section id="methodology">')[1].split("</section>")[0]
    return unescape(" ".join(re.sub(r"<[^>]+>", " ", section).split()))


def _rules_alone(tmp_path: Path) -> Path:
    """The v2 sample as `score --patterns` writes it: the rules primary, no learned verdict."""
    document = json.loads(V2.read_text())
    for case in document["cases"]:
        rules = case.pop("verdicts")["runlens-rules"]
        case.update(passed=rules["passed"], risk_score=rules["score"], explanation=rules["explanation"])
    document["run"]["config"].update(primary_judge="runlens-rules")
    del document["run"]["config"]["judge"]
    path = tmp_path / "rules.json"
    path.write_text(json.dumps(document))
    return path


def test_each_report_names_the_judge_of_its_verdicts(tmp_path):
    said = {}
    for name, path in (("learned", V2), ("rules", _rules_alone(tmp_path)), ("garak", GARAK)):
        out = tmp_path / f"{name}.html"
        assert main(["export", str(path), "-o", str(out)]) == 0
        said[name] = _methodology(out.read_text())
    assert "RunLens's learned judge (runlens-learned)" in said["learned"] and "rule-based" not in said["learned"]
    assert "RunLens's rule-based evaluator (runlens-rules)" in said["rules"] and "learned" not in said["rules"]
    assert "the run file's own, as its producer gave them" in said["garak"]
    assert "RunLens" not in said["garak"].split("Every figure")[1].split("Weighted risk")[0]


def test_a_run_scored_before_runs_named_their_judge_is_the_rules(tmp_path):
    """`score` named no primary judge before the learned judge (22-25 November: the scorer's module alone, as an
    older one did under its former name): those verdicts are the rules'."""
    for scorer in ("reporting.scorer", "reporting.scoring.scorer"):
        assert "(runlens-rules)" in methodology({"scorer": scorer, "patterns": "built-in"})[1]
    assert "the run file's own" in methodology({"scorer": "my.harness"})[1]


def test_a_tools_judge_is_named_as_text(tmp_path):
    """A producer's primary judge named in the run (an Inspect run's primary scorer): shown, escaped, never markup."""
    for payload in PAYLOADS:
        lines = methodology({"primary_scorer": payload})
        assert any("the producing tool's own" in line for line in lines)
    document = json.loads(V2.read_text())
    document["run"]["config"] = {"primary_judge": "<script>window.__pwned=1</script>"}
    path = tmp_path / "hostile.json"
    path.write_text(json.dumps(document))
    out = tmp_path / "hostile.html"
    assert main(["export", str(path), "-o", str(out)]) == 0
    section = out.read_text().split('<section id="methodology">')[1].split("</section>")[0]
    assert "<script>" not in section and "&lt;script&gt;window.__pwned=1&lt;/script&gt;" in section


def test_a_comparison_of_two_judges_says_so(tmp_path):
    learned, rules = reporting.read_run(V2), reporting.read_run(_rules_alone(tmp_path))
    same = compare_runs(learned, learned)
    assert same["base"]["primary_judge"] == same["candidate"]["primary_judge"] == "runlens-learned"
    assert not any("different judges" in w for w in same["warnings"])
    assert [line for line in compare_methodology(same) if "learned judge" in line][0].startswith("Both runs: ")
    mixed = compare_runs(rules, learned)
    assert any("different judges" in w for w in mixed["warnings"])
    lines = compare_methodology(mixed)
    assert any(line.startswith("Base: ") and "runlens-rules" in line for line in lines)
    assert any(line.startswith("Candidate: ") and "runlens-learned" in line for line in lines)
    out = tmp_path / "compare.html"
    assert main(["compare", str(_rules_alone(tmp_path)), str(V2), "--html", str(out)]) in (0, 1)
    text = _methodology(out.read_text())
    assert "Base: Case scores come from RunLens's rule-based evaluator" in text
    assert "Candidate: Case verdicts come from RunLens's learned judge" in text
