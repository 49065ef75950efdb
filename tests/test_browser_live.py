"""The dashboard in headless Chromium while a writer process appends to a garak report.jsonl: the Overview's count
rises without a reload (the app notices the file grew and reruns itself), the page says the run is in progress, and
a filter chosen in the sidebar stays while the run grows."""

import re
import subprocess
import sys

import pytest
from browser import ROOT, browser, needs_chromium, offline_page, streamlit_server

from reporting.sources.reading import load_run

pytestmark = [pytest.mark.browser, needs_chromium]

GARAK = ROOT / "tests" / "fixtures" / "garak" / "peers_repeat_small.report.jsonl"
WRITER = ROOT / "tests" / "live_writer.py"


def sidebar_total(page) -> int:
    text = page.locator('[data-testid="stSidebar"]').inner_text()
    found = re.search(r"Showing ([\d,]+) of ([\d,]+) cases", text)
    return int(found.group(2).replace(",", "")) if found else -1


def test_the_overview_count_rises_without_a_reload(tmp_path):
    runs = tmp_path / "runs"
    runs.mkdir()
    dest = runs / "live.report.jsonl"
    dest.write_bytes(b"")
    total = len(load_run(GARAK.read_bytes(), name="g").run.cases)
    writer = subprocess.Popen(
        [sys.executable, str(ROOT / "tests" / "live_writer.py"), str(GARAK), str(dest), "6"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )

    def step():
        writer.stdin.write("next\n")
        writer.stdin.flush()
        writer.stdout.readline()

    record = {}
    try:
        for _ in range(3):
            step()
        with streamlit_server(runs) as url, browser() as b:
            page = offline_page(b, record)
            page.context.unroute("**/*")
            page.goto(url)
            page.wait_for_function(
                "document.body.innerText.includes('in progress: ')", timeout=60000
            )  # says the run is being written
            page.wait_for_function("/Showing [0-9,]+ of [0-9,]+ cases/.test(document.body.innerText)", timeout=60000)
            seen = [sidebar_total(page)]
            assert 0 <= seen[0] < total
            page.locator('[data-testid="stSidebar"] label').filter(has_text=re.compile("^fail$")).click()
            page.wait_for_timeout(1500)
            for _ in range(3):
                step()  # the writer appends; nobody touches the page
                before = seen[-1]
                page.wait_for_function(
                    f"""() => {{
                        const m = document.body.innerText.match(/Showing [0-9,]+ of ([0-9,]+) cases/);
                        return m && parseInt(m[1].replace(/,/g, '')) > {before};
                    }}""",
                    timeout=30000,
                )
                seen.append(sidebar_total(page))
            page.wait_for_function(f"document.body.innerText.includes('of {total} cases')", timeout=30000)
            seen.append(sidebar_total(page))
            checked = page.locator('[data-testid="stSidebar"] label:has(input:checked)').filter(
                has_text=re.compile("^fail$")
            )
            assert checked.count() == 1  # the filter chosen before the run grew is still chosen
            page.wait_for_function("!document.body.innerText.includes('in progress: ')", timeout=30000)
            assert record["errors"] == [] and record["dialogs"] == []
    finally:
        writer.stdin.close()
        writer.wait(timeout=30)
    assert seen == sorted(seen) and seen[-1] == total
