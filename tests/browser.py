"""Helpers for the real-browser tests: Debian's Chromium through Playwright, and a Streamlit server."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from contextlib import contextmanager
from pathlib import Path

import pytest

CHROMIUM = "/usr/bin/chromium"
ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
]
ROOT = Path(__file__).resolve().parent.parent

IN_CI = os.environ.get("RUNLENS_CI") == "1"
_MISSING = "Debian's Chromium is not installed at /usr/bin/chromium (apt-get install -y chromium; .ci/run installs it)"

if IN_CI and not os.access(CHROMIUM, os.X_OK):
    # In CI a missing browser is a failure, never a skip: the browser tests are what prove hostile text stays text.
    def needs_chromium(test):
        def fail(*args, **kwargs):
            pytest.fail(_MISSING + " and RUNLENS_CI=1: browser tests cannot be skipped in CI")

        fail.__name__ = test.__name__
        return fail
else:
    needs_chromium = pytest.mark.skipif(not os.access(CHROMIUM, os.X_OK), reason=_MISSING)


_NO_POPPLER = "poppler-utils (pdftotext, pdftoppm) is not installed (apt-get install -y poppler-utils)"
_HAS_POPPLER = all(shutil.which(tool) for tool in ("pdftotext", "pdftoppm"))

if IN_CI and not _HAS_POPPLER:

    def needs_poppler(test):
        def fail(*args, **kwargs):
            pytest.fail(_NO_POPPLER + " and RUNLENS_CI=1: the print tests cannot be skipped in CI")

        fail.__name__ = test.__name__
        return fail
else:
    needs_poppler = pytest.mark.skipif(not _HAS_POPPLER, reason=_NO_POPPLER)


@contextmanager
def browser():
    if IN_CI:
        import playwright.sync_api as playwright  # in CI a missing playwright is an error, not a skip
    else:
        playwright = pytest.importorskip(
            "playwright.sync_api", reason="playwright is not installed (pip install -e '.[test]')"
        )
    with playwright.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        try:
            yield b
        finally:
            b.close()


def offline_page(b, record: dict):
    """A page whose every request other than file: and data: is recorded and aborted (network cut)."""
    context = b.new_context(viewport={"width": 1400, "height": 1000})
    page = context.new_page()
    record.setdefault("errors", [])
    record.setdefault("requests", [])
    record.setdefault("dialogs", [])

    def route(r):
        url = r.request.url
        if url.startswith(("file:", "data:", "blob:")):
            r.continue_()
        else:
            record["requests"].append(url)
            r.abort()

    context.route("**/*", route)
    page.on("pageerror", lambda e: record["errors"].append(str(e)))
    page.on("dialog", lambda d: (record["dialogs"].append(d.message), d.dismiss()))
    return page


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def streamlit_server(runs_dir: Path):
    port = free_port()
    env = {**os.environ, "REPORTING_RUNS_DIR": str(runs_dir)}
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "streamlit",
            "run",
            str(ROOT / "app.py"),
            "--server.port",
            str(port),
            "--server.address",
            "127.0.0.1",
            "--server.headless",
            "true",
            "--browser.gatherUsageStats",
            "false",
            "--server.fileWatcherType",
            "none",
        ],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.time() + 60
        while time.time() < deadline:
            try:
                if urllib.request.urlopen(f"{url}/_stcore/health", timeout=2).read() == b"ok":
                    break
            except OSError:
                time.sleep(0.3)
        else:
            raise RuntimeError("streamlit did not start: " + proc.stdout.read1(4000).decode(errors="replace"))
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()


def open_conversation(page, url: str, probe_id: str) -> None:
    """The Cases page of a served dashboard with one case's conversation open (shared with the screenshots)."""
    page.goto(f"{url}/cases")
    page.wait_for_selector('[data-testid="stText"]', timeout=60000)
    page.get_by_label("Probe id to show").fill(probe_id)
    page.keyboard.press("Enter")
    page.wait_for_function("document.body.innerText.includes('judged turn')", timeout=60000)
    page.wait_for_timeout(1000)
