"""The HTML export written in pieces (render/page_json.py): the report data's JSON a thousand cases at a time,
the same text as ``tojson`` writes whole, as safe, and the file as ``render_html`` makes it; Arrow's memory pool
(reporting/_memory.py)."""

import json
import math
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import reporting
import reporting.render.html as html
import reporting.render.page_json as page_json
from reporting.cli import main
from reporting.render.html import environment, render_html, render_html_pieces

ROOT = Path(__file__).resolve().parent.parent
RUN = ROOT / "sample_runs" / "acme-assistant-v1.json"
HOSTILE = "</script><script>alert('x')</script> & <!-- \u2028\u2029 \U0001f600 \\ \" caf\u00e9"

VALUES = [
    {"rows": [[i, HOSTILE if i % 3 == 0 else f"t{i}", i / 7, None, True] for i in range(11)], "n": 11},
    {"a": {"b": {"c": {"d": [HOSTILE] * 9, "e": {}}, "rows": list(range(10))}}, "empty": [], "e": {}},
    [{"x": HOSTILE}] * 8 + [[1, [2, [3]]]],
    {"keys of other kinds": {None: 1, 2.5: "x", 3: [1e-06, 1e16]}, 1: "a number as a key", "t": (1, 2, 3, 4, 5)},
    {"text": HOSTILE, "floats": [-0.0, 3.841036915595932e-06, 1e16] * 3},
    "just a string " + HOSTILE,
    [],
    {},
]


@pytest.mark.parametrize("value", VALUES, ids=range(len(VALUES)))
@pytest.mark.parametrize("per_piece", [1, 2, 3, 1000])
def test_the_pieces_are_what_tojson_writes(value, per_piece, monkeypatch):
    monkeypatch.setattr(page_json, "ITEMS_A_PIECE", per_piece)
    whole = str(environment().from_string("{{ v | tojson }}").render(v=value))
    parts = list(page_json.pieces(value))
    assert "".join(parts) == whole
    assert not set(whole) & set("<>&'\u2028\u2029")
    if isinstance(value, dict) and per_piece == 1 and len(value.get("rows", ())) == 11:
        assert len(parts) > 11  # the long list was written a row at a time, not whole
    assert json.loads(whole) == json.loads(json.dumps(value))


def test_a_value_json_cannot_hold_fails_as_tojson_does(monkeypatch):
    monkeypatch.setattr(page_json, "ITEMS_A_PIECE", 2)
    for bad in ({"rows": [1.0, 2.0, math.nan, 4.0]}, {"x": {"y": [math.inf]}}, {"o": object()}):
        with pytest.raises((ValueError, TypeError)) as whole:
            environment().from_string("{{ v | tojson }}").render(v=bad)
        with pytest.raises(whole.type):
            "".join(page_json.pieces(bad))


def _hostile_run() -> dict:
    run = json.loads(RUN.read_text())
    for i, case in enumerate(run["cases"]):
        case["response"] = f"{HOSTILE} <!--runlens-report-data-{'0' * 32}--> {i}"
    return run


def test_the_exported_file_is_render_html_and_its_data_the_page_data(tmp_path, monkeypatch):
    monkeypatch.setattr(page_json, "ITEMS_A_PIECE", 7)  # the 120 cases' rows in 18 pieces
    src = tmp_path / "run.json"
    src.write_text(json.dumps(_hostile_run()))
    out = tmp_path / "r.html"
    assert main(["export", str(src), "-o", str(out), "--timestamp", "2026-01-01T00:00:00Z"]) == 0
    report = reporting.build_report(reporting.read_run(src))
    page = render_html(report, timestamp="2026-01-01T00:00:00Z")
    assert out.read_text() == page
    pieces = list(render_html_pieces(report, timestamp="2026-01-01T00:00:00Z"))
    assert "".join(pieces) == page and len(pieces) > 18
    block = re.search(r'<script type="application/json" id="report-data">(.*?)</script>', page, re.S)[1]
    assert json.loads(block) == json.loads(json.dumps(html.page_data(report)))
    assert not set(block) & set("<>&'\u2028\u2029")
    assert "runlens-report-data-" not in page.replace("runlens-report-data-" + "0" * 32, "")  # no marker left


def test_a_failure_while_writing_keeps_the_earlier_file(tmp_path, monkeypatch):
    out = tmp_path / "r.html"
    out.write_text("the earlier report")

    def broken(value, depth=0):
        yield "{"
        raise ValueError("Out of range float values are not JSON compliant")

    monkeypatch.setattr(html, "pieces", broken)
    assert main(["export", str(RUN), "-o", str(out)]) != 0
    assert out.read_text() == "the earlier report"
    assert [p.name for p in tmp_path.iterdir()] == ["r.html"]  # no temporary file left


POOL = """
import os, sys
{before}
from reporting.cli import main
code = main(["validate", sys.argv[1]])
import pyarrow as pa
print(code, pa.default_memory_pool().backend_name)
"""


@pytest.mark.parametrize(
    ("before", "chosen", "expected"),
    [("", None, "system"), ("import pyarrow", None, "system"), ("", "mimalloc", "mimalloc")],
    ids=["before pyarrow", "after pyarrow", "the user's choice"],
)
def test_the_command_line_allocates_arrow_memory_with_malloc(before, chosen, expected):
    env = {k: v for k, v in os.environ.items() if k != "ARROW_DEFAULT_MEMORY_POOL"}
    if chosen:
        env["ARROW_DEFAULT_MEMORY_POOL"] = chosen
    script = POOL.format(before=before)
    done = subprocess.run([sys.executable, "-c", script, str(RUN)], capture_output=True, text=True, env=env, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-1].split() == ["0", expected]


def test_a_failure_while_making_the_page_is_not_blamed_on_the_output(tmp_path, monkeypatch, capsys):
    """The page is made before the output's temporary file is opened: an error reading a resource is an internal
    error (exit 1), not "cannot write" the output (exit 2), and no temporary file is made for it."""
    out = tmp_path / "r.html"
    out.write_text("the earlier report")
    made = []

    def unreadable():
        made.append(sorted(p.name for p in tmp_path.iterdir()))
        raise PermissionError(13, "Permission denied", "/usr/lib/plotly.min.js")

    monkeypatch.setattr(html, "_trusted_plotly_js", unreadable)
    assert main(["export", str(RUN), "-o", str(out)]) == 1
    err = capsys.readouterr().err
    assert "internal error: PermissionError" in err and "cannot write" not in err
    assert made == [["r.html"]]  # no temporary file while the page was made
    assert out.read_text() == "the earlier report" and [p.name for p in tmp_path.iterdir()] == ["r.html"]
