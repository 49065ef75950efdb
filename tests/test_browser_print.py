"""The printed handout (issue 14, points 11 and 12): every RunLens page printed to A4 and US Letter by headless
Chromium with the network cut, read back with pdftotext and pdftoppm (poppler-utils). Every case id of the run is
in the PDF as a whole token beside its numbers, every changed case of a comparison prints with its header and both
responses, every chart fits the paper, and above the documented size the handout says which cases it holds."""

import re
import subprocess

import numpy as np
import pytest
from browser import ROOT, browser, needs_chromium, needs_poppler, offline_page
from PIL import Image

import reporting
from reporting.analysis.compare import compare_runs
from reporting.analysis.metrics import worst_first
from reporting.cli import main

pytestmark = [pytest.mark.browser, needs_chromium, needs_poppler]
SAMPLES = ROOT / "sample_runs"
RUNS = ("acme-assistant-v1.json", "acme-assistant-v2.json", "open-7b-chat-legacy.json")
PAPERS = {"A4": (595, 842), "Letter": (612, 792)}  # points
MARGIN_MM = 12  # the print CSS's @page margin


def pdf_text(path) -> str:
    return subprocess.run(["pdftotext", "-layout", str(path), "-"], capture_output=True, text=True, check=True).stdout


def tokens(text: str) -> set[str]:
    return set(re.split(r"[\s,]+", text))


def print_pdfs(html_path, out_dir, name):
    """The page printed to each paper size, once every chart and its print copy is drawn."""
    record: dict = {}
    paths = {}
    with browser() as b:
        page = offline_page(b, record)
        page.goto(html_path.as_uri())
        page.wait_for_selector("body[data-print-ready=true]", timeout=60000)
        charts = page.evaluate("document.querySelectorAll('[data-figure]').length")
        copies = page.evaluate("document.querySelectorAll('img.print-chart').length")
        for paper in PAPERS:
            paths[paper] = out_dir / f"{name}-{paper}.pdf"
            page.pdf(path=str(paths[paper]), format=paper)
    assert record["requests"] == [] and record["errors"] == [], record
    assert charts > 0 and copies == charts  # every chart has a copy laid out for the paper
    return paths


def assert_nothing_in_the_margin(pdf, paper):
    """Rendered to pixels, no page has ink in its right or left margin: no chart or table runs off the paper (a
    chart drawn at screen width overflows the 186 mm of an A4 page by ~130 mm)."""
    out = pdf.with_suffix("")
    subprocess.run(["pdftoppm", "-r", "40", "-png", str(pdf), str(out)], check=True)
    pages = sorted(pdf.parent.glob(out.name + "-*.png"))
    assert pages
    for png in pages:
        pixels = np.asarray(Image.open(png).convert("L"))
        width_px = pixels.shape[1]
        strip = int(width_px * (MARGIN_MM - 4) / (PAPERS[paper][0] / 72 * 25.4))  # 8 mm of each 12 mm margin
        assert pixels[:, -strip:].min() > 235, (png.name, "ink in the right margin")
        assert pixels[:, :strip].min() > 235, (png.name, "ink in the left margin")


@pytest.mark.parametrize("name", RUNS)
def test_printed_report_holds_every_case_whole_on_a4_and_letter(tmp_path, name):
    html = tmp_path / "report.html"
    assert main(["export", str(SAMPLES / name), "-o", str(html)]) in (0, 2)  # 2: a companion problem, if any
    run = reporting.read_run(SAMPLES / name)
    frame = reporting.cases_frame(run)
    for paper, pdf in print_pdfs(html, tmp_path, "report").items():
        text = pdf_text(pdf)
        words = tokens(text)
        missing = [pid for pid in frame["probe_id"] if pid not in words]
        assert not missing, (paper, missing[:10])
        assert f"Every one of the {len(frame)} cases shown" in " ".join(text.split())
        lines = text.splitlines()
        for row in frame.itertuples():
            # The case's line holds its id, risk and weighted risk whole: no "EA-/001", no "0.83/3".
            mine = [line for line in lines if line.strip().startswith(row.probe_id + " ")]
            wanted = (f"{row.risk_score:.3f}", f"{row.weighted_risk:.3f}")
            assert any(all(w in line.split() for w in wanted) for line in mine), (paper, row.probe_id, mine)
        assert not re.search(r"\b[A-Z]{2}-\s*$", text, re.M), "a probe id broken at its hyphen"
        assert_nothing_in_the_margin(pdf, paper)


def test_printed_comparison_shows_every_changed_case_with_both_responses(tmp_path):
    base, candidate = SAMPLES / "acme-assistant-v1.json", SAMPLES / "acme-assistant-v2.json"
    html = tmp_path / "compare.html"
    assert main(["compare", str(base), str(candidate), "--html", str(html)]) in (0, 1)
    b, c = reporting.read_run(base), reporting.read_run(candidate)
    comparison = compare_runs(b, c)
    changed = comparison["newly_failing"] + comparison["newly_passing"]
    before = {case.probe_id: case.passed for case in b.cases}  # each case whose verdict changed, counted here
    flipped = [case.probe_id for case in c.cases if before.get(case.probe_id, case.passed) != case.passed]
    assert flipped and sorted(changed) == sorted(flipped)
    responses = {case.probe_id: case.response for case in c.cases}
    for paper, pdf in print_pdfs(html, tmp_path, "compare").items():
        text = pdf_text(pdf)
        flat = " ".join(text.split())
        for pid in changed:
            category = next(case.category for case in c.cases if case.probe_id == pid)
            assert f"{pid} | {category} |" in flat, (paper, pid)  # the header of a closed <details>
            first_words = " ".join(responses[pid].split()[:4])
            assert first_words in flat, (paper, pid, first_words)  # and its content
        assert b.run.run_id in tokens(text) and c.run.run_id in tokens(text)
        assert_nothing_in_the_margin(pdf, paper)


def test_printed_trend_keeps_every_run_id_and_date_whole(tmp_path):
    folder = tmp_path / "runs"
    folder.mkdir()
    for name in RUNS:
        (folder / name).write_bytes((SAMPLES / name).read_bytes())
    html = tmp_path / "trend.html"
    assert main(["trend", str(folder), "--html", str(html)]) == 0
    runs = [reporting.read_run(SAMPLES / n) for n in RUNS]
    for paper, pdf in print_pdfs(html, tmp_path, "trend").items():
        words = tokens(pdf_text(pdf))
        for run in runs:
            assert run.run.run_id in words and str(run.run.created_at) in words, (paper, run.run.run_id)
        assert_nothing_in_the_margin(pdf, paper)


def test_above_the_print_cap_the_handout_says_which_cases_it_holds(tmp_path, monkeypatch):
    import reporting.render.html as html_module

    monkeypatch.setattr(html_module, "PRINT_CASE_CAP", 50)
    run = reporting.read_run(SAMPLES / "acme-assistant-v2.json")
    report = reporting.build_report(run)
    html = tmp_path / "capped.html"
    html.write_text(html_module.render_html(report), encoding="utf-8")
    order = report.frame["probe_id"].to_numpy()[worst_first(report.frame)]
    pdf = print_pdfs(html, tmp_path, "capped")["A4"]
    text = pdf_text(pdf)
    words = tokens(text)
    assert "This printout lists the 50 worst of the 120 cases shown" in " ".join(text.split())
    assert all(pid in words for pid in order[:50])
    assert not [pid for pid in order[50:] if pid in words], text  # exactly the cases it says


def test_export_writes_the_handout_as_pdf(tmp_path, capsys):
    source = SAMPLES / "acme-assistant-v2.json"
    for paper, size in (("a4", PAPERS["A4"]), ("letter", PAPERS["Letter"])):
        out = tmp_path / f"handout-{paper}.pdf"
        assert main(["export", str(source), "--pdf", str(out), "--paper", paper]) == 0
        assert out.read_bytes()[:5] == b"%PDF-"
        info = subprocess.run(["pdfinfo", str(out)], capture_output=True, text=True, check=True).stdout
        width, height = (round(float(v)) for v in re.search(r"Page size:\s+([\d.]+) x ([\d.]+)", info).groups())
        assert (width, height) == size, info
        words = tokens(pdf_text(out))
        assert all(case.probe_id in words for case in reporting.read_run(source).cases)
    assert not (SAMPLES / "acme-assistant-v2.report.html").exists()  # --pdf alone writes no HTML
    assert "the printed handout (letter)" in capsys.readouterr().err
