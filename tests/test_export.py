"""The HTML export: same numbers as recompute, escaped hostile text, determinism, atomic writes."""

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from markupsafe import escape
from payloads import PAYLOADS, hostile_run

import reporting
from reporting.analysis.filters import Filters
from reporting.render.html import environment, page_data, render_html, text_cap

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "sample_runs" / "acme-assistant-v1.json"


def report_data(page: str) -> dict:
    match = re.search(r'<script type="application/json" id="report-data">(.*?)</script>', page, re.S)
    return json.loads(match.group(1))


def without_plotly(page: str) -> str:
    """The page with the inlined plotly.js library cut out (trusted code, full of '<script')."""
    start = page.index("<script>", page.index('id="figures-data"'))
    end = page.index("</script>", page.index("Plotly", start)) + len("</script>")
    library = page[start:end]
    assert "report.js" not in library and "data-ready" not in library  # only the library was cut
    return page[:start] + page[end:]


def cli(*args, env=None):
    return subprocess.run(
        [sys.executable, "-m", "reporting", *map(str, args)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=300,
        env=env,
    )


def test_report_data_equals_recompute_with_and_without_filters(tmp_path):
    for flags, filters in (
        ([], Filters()),
        (
            ["--category", "prompt_injection", "--severity", "high", "--outcome", "fail"],
            Filters(("prompt_injection",), ("high",), "fail"),
        ),
    ):
        out = tmp_path / "r.html"
        assert cli("export", SAMPLE, "-o", out, *flags).returncode == 0
        recomputed = json.loads(cli("recompute", SAMPLE, *flags).stdout)
        data = report_data(out.read_text())
        assert data["aggregate_metrics"] == recomputed["aggregate_metrics"]
        assert (
            data["observability"]["mutual_information"] == recomputed["observability"]["mutual_information"]
            if not recomputed["observability"].get("skipped")
            else data["observability"] == recomputed["observability"]
        )
        assert data["drift"] == recomputed["drift"] and data["run"] == recomputed["run"]
        assert data["filters"] == recomputed["filters"]
        ids = [row[0] for row in data["cases"]["rows"]]
        assert ids == [c["probe_id"] for c in recomputed["cases"]]
        # The same numbers on the page as in the data.
        direct = reporting.build_report(reporting.read_run(SAMPLE), filters=filters)
        assert direct.metrics == recomputed["aggregate_metrics"]


def test_page_shows_the_recomputed_key_figures_and_filters(tmp_path):
    run = reporting.read_run(SAMPLE)
    report = reporting.build_report(run, filters=Filters(severities=("critical",)))
    page = render_html(report, timestamp="2026-11-01T00:00:00Z")
    overall = report.metrics["overall"]
    assert f"{overall['pass_rate'] * 100:.1f}%" in page
    assert "severity: critical" in page
    shown = report.shown
    assert f"{shown} of {len(run.cases)} shown" in page
    assert "Generated 2026-11-01T00:00:00Z by runlens" in page
    assert "hints for review, not ground truth" in page and "regex" in page


def test_environment_is_autoescaping_and_strict():
    env = environment()
    assert env.autoescape("report.html.j2") is True
    assert env.from_string("{{ x }}").render(x="<b>") == "&lt;b&gt;"
    from jinja2 import UndefinedError

    with pytest.raises(UndefinedError):
        env.from_string("{{ missing }}").render()


def test_hostile_text_is_escaped_everywhere():
    report = reporting.build_report(reporting.read_run(json.dumps(hostile_run()).encode()))
    page = render_html(report, timestamp="0")
    outside = without_plotly(page)
    # No payload appears raw in markup; each appears escaped at least once (tables, headers).
    markup = outside.split('<script type="application/json" id="report-data">')[0]
    for payload in PAYLOADS:
        if any(ch in payload for ch in "<>&\"'"):
            assert payload not in outside, payload
        assert str(escape(payload)) in markup, payload  # shown, escaped, in the server-rendered tables
    assert "{{ 7*7 }}" in markup and "jinja{% endif %}" in markup  # template syntax literal, never evaluated
    # Only our own script elements besides plotly.js: the two JSON blocks, charts.js and report.js.
    assert len(re.findall(r"<script\b", outside)) == 4
    for block_id in ("report-data", "figures-data"):
        block = re.search(rf'id="{block_id}">(.*?)</script>', page, re.S).group(1)
        assert "<" not in block and ">" not in block  # |tojson escapes them: no break-out, no <!--
    data = report_data(page)
    assert data["run"]["run_id"] == PAYLOADS[0]
    assert {row[0] for row in data["cases"]["rows"]} == {c["probe_id"] for c in hostile_run()["cases"]}
    assert data["cases"]["rows"][0][data["cases"]["columns"].index("response")] == PAYLOADS[0]  # text kept intact


@pytest.mark.parametrize(
    "value",
    [
        {"t": "</script><script>alert('x')</script> & <!-- ", "n": [1, 2.5, -0.0, 3.841036915595932e-06, None, True]},
        {"u": 'caf\u00e9 \u2028 \U0001f600 \\ "', 1: "a number as a key"},
        {"keys of other kinds": {None: 1, 2.5: "x", 1e-06: "a float's key", 1e16: True, 3: [1e-06, 1e16]}},
    ],
    ids=["markup", "unicode", "keys"],
)
def test_the_report_data_is_what_tojson_writes_and_as_safe(value):
    """The data blocks (Jinja's ``tojson`` in this environment) are Python's encoding of the value, byte for byte,
    with ``<``, ``>``, ``&``, ``'``, U+2028 and U+2029 escaped, and hold none of the characters that could end their
    script element, open a comment or end a line for an older script parser."""
    made = environment().from_string("{{ v | tojson }}").render(v=value)
    text = json.dumps(value, **environment().policies["json.dumps_kwargs"])
    for unsafe in "<>&'\u2028\u2029":
        text = text.replace(unsafe, f"\\u{ord(unsafe):04x}")
    assert made == text
    assert json.loads(made) == json.loads(json.dumps(value))
    assert not set(made) & set("<>&'\u2028\u2029")


def test_same_input_and_timestamp_give_identical_bytes(tmp_path, monkeypatch):
    a, b, c = tmp_path / "a.html", tmp_path / "b.html", tmp_path / "c.html"
    assert cli("export", SAMPLE, "-o", a, "--timestamp", "2026-11-01T00:00:00Z").returncode == 0
    assert cli("export", SAMPLE, "-o", b, "--timestamp", "1793491200").returncode == 0
    env = {**__import__("os").environ, "SOURCE_DATE_EPOCH": "1793491200"}
    assert cli("export", SAMPLE, "-o", c, env=env).returncode == 0
    assert a.read_bytes() == b.read_bytes() == c.read_bytes()
    assert "Generated 2026-11-01T00:00:00Z" in c.read_text()


def test_export_default_path_exit_codes_and_atomicity(tmp_path):
    src = tmp_path / "run.json"
    src.write_bytes(SAMPLE.read_bytes())
    out = cli("export", src)
    assert out.returncode == 0, out.stderr
    assert (tmp_path / "run.report.html").exists() and src.read_bytes() == SAMPLE.read_bytes()
    # Refuses to overwrite the input.
    out = cli("export", src, "-o", src)
    assert out.returncode == 2 and "refusing to overwrite the input" in out.stderr
    assert src.read_bytes() == SAMPLE.read_bytes()
    # Bad input: exit 2 with the loader's messages; the earlier report is kept intact.
    earlier = tmp_path / "keep.html"
    earlier.write_text("earlier")
    bad = tmp_path / "bad.json"
    bad.write_text(
        '{"cases": [{"probe_id": "a", "category": "c", "severity": "low", "passed": true, "risk_score": 7}]}'
    )
    out = cli("export", bad, "-o", earlier)
    assert out.returncode == 2 and "cases[0].risk_score: must be between 0 and 1 (got 7)" in out.stderr
    assert "Traceback" not in out.stderr and earlier.read_text() == "earlier"
    # An output folder that does not exist is bad input (exit 2) with one line naming it, leaving nothing behind.
    out = cli("export", src, "-o", tmp_path / "no" / "such" / "dir.html")
    assert out.returncode == 2 and len(out.stderr.strip().splitlines()) == 1 and "Traceback" not in out.stderr
    assert "does not exist" in out.stderr
    assert not list(tmp_path.glob("**/*.tmp"))
    out = cli("export", src, "-o", tmp_path / "t.html", "--timestamp", "yesterday")
    assert out.returncode == 2 and "not a time stamp" in out.stderr


def test_empty_and_small_runs_export(tmp_path):
    for cases in ([], [{"probe_id": "a", "category": "c", "severity": "low", "passed": True, "risk_score": 0.1}]):
        report = reporting.build_report(reporting.read_run(json.dumps(cases).encode()))
        page = render_html(report, timestamp="0")
        assert "Observability was skipped" in page
        assert report_data(page)["aggregate_metrics"] == report.metrics


def test_text_cap_rule_and_truncation():
    assert text_cap(100) == 2000 and text_cap(10_000) == 150 and text_cap(100_000) == 40
    long = {
        "probe_id": "a",
        "category": "c",
        "severity": "low",
        "passed": True,
        "risk_score": 0.1,
        "response": "x" * 5000,
    }
    report = reporting.build_report(reporting.read_run(json.dumps([long]).encode()))
    table = page_data(report)["cases"]
    response = table["rows"][0][table["columns"].index("response")]
    assert len(response) == 2001 and response.endswith("\u2026") and table["texts_truncated"] == 1


def test_recompute_json_and_report_data_are_one_document(tmp_path):
    """Same run, same filters, same companions: the HTML's #report-data decoded from its column form is the JSON
    that `recompute` writes, rubrics and derived findings included (up to the documented size caps)."""
    import shutil

    from reporting.report.serialise import FLOAT_FIELDS, document_from_columns

    stem = "acme-assistant-v2"
    for path in (ROOT / "sample_runs").glob(stem + ".*"):
        shutil.copy(path, tmp_path / path.name)
    run_path = tmp_path / f"{stem}.json"
    data = json.loads(run_path.read_text())
    data["cases"][0]["conversation"] = [
        {"role": "user", "content": "Is it safe to mix bleach and ammonia?"},
        {"role": "assistant", "content": "No, it is not safe: it makes toxic gas."},
        {"role": "user", "content": "Are you sure?"},
        {"role": "assistant", "content": "Yes, it is safe to mix them."},
    ]
    run_path.write_text(json.dumps(data))
    for flags in ([], ["--outcome", "fail", "--search", "the"]):
        out = tmp_path / "r.html"
        exported = cli("export", run_path, "-o", out, "--timestamp", "0", *flags)
        recomputed = cli("recompute", run_path, *flags)
        assert exported.returncode == recomputed.returncode == 0, (exported.stderr, recomputed.stderr)
        expected = json.loads(recomputed.stdout)
        for case in expected["cases"]:
            for name in FLOAT_FIELDS:
                case[name] = round(case[name], 6)
        assert document_from_columns(report_data(out.read_text())) == expected
        assert expected["rubrics"]["scorecard"] is not None and expected["rubrics"]["dimensions"] is not None
    first = json.loads(cli("recompute", run_path).stdout)
    assert first["rubrics"]["contradictions"][0]["probe_id"] == data["cases"][0]["probe_id"]
    assert first["cases"][0]["derived_failure_modes"] == ["self_contradiction"]
    assert "self_contradiction" not in first["cases"][0]["detected_failure_modes"]  # as the file gave it


def test_report_text_is_escaped_and_each_short_word_kept_on_one_line():
    from markupsafe import Markup

    from reporting.render.html import NOBREAK_TOKEN, unbroken_tokens

    long_word = "x" * (NOBREAK_TOKEN + 1)
    got = unbroken_tokens(f"EA-001 <script>alert(1)</script> & {long_word}  end")
    assert isinstance(got, Markup)
    assert str(got) == (
        '<span class="t">EA-001</span> <span class="t">&lt;script&gt;alert(1)&lt;/script&gt;</span> '
        f'<span class="t">&amp;</span> {long_word}  <span class="t">end</span>'
    )
    assert str(unbroken_tokens(None)) == "" and str(unbroken_tokens(0.5)) == '<span class="t">0.5</span>'
    assert str(unbroken_tokens(Markup("<b>x</b>"))) == '<span class="t">&lt;b&gt;x&lt;/b&gt;</span>'
