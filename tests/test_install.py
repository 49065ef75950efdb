"""The wheel, installed into a fresh virtual environment, finds its templates and sample runs and starts the
dashboard: AppTest opens every page of the installed app, and `runlens dashboard` serves it over HTTP."""

import os
import shutil
import socket
import subprocess
import sys
import sysconfig
import time
import urllib.request
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SOURCES = ("pyproject.toml", "README.md", "reporting", "templates", "sample_runs")


def uv() -> str:
    """The uv that `make` installs (.tools/bin/uv), else one on PATH; without it the install tests cannot run."""
    found = ROOT / ".tools" / "bin" / "uv"
    path = str(found) if found.exists() else shutil.which("uv")
    if not path:
        pytest.fail("uv is not installed: run the tests through `make test`, which installs it")
    return path


@pytest.fixture(scope="module")
def wheel(tmp_path_factory):
    """The wheel, built from a copy of the sources (the checkout gets no build/ or *.egg-info)."""
    tmp = tmp_path_factory.mktemp("wheel")
    source = tmp / "src"
    for name in SOURCES:
        path = ROOT / name
        if path.is_dir():
            shutil.copytree(path, source / name, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        else:
            source.mkdir(exist_ok=True)
            shutil.copy(path, source / name)
    build = subprocess.run(
        [uv(), "build", "--wheel", "--no-build-isolation", "--python", sys.executable, "--out-dir", str(tmp / "dist")]
        + [str(source)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert build.returncode == 0, build.stderr
    # Every folder of data files is a declared package: no setuptools "Package would be ignored" warnings (they
    # were ~110 lines of `make run`'s output).
    assert "would be ignored" not in build.stdout + build.stderr, build.stderr[-2000:]
    assert not (ROOT / "build").exists() or (ROOT / "build").stat().st_mtime < time.time() - 3600
    return next((tmp / "dist").glob("runlens-*.whl"))


@pytest.fixture(scope="module", params=["borrowed", "ranges"])
def installed(request, wheel, tmp_path_factory):
    """The wheel in a fresh venv, two ways. "borrowed": without its dependencies, which it borrows from this
    (locked) environment through a .pth file. "ranges": as a user's `pip install runlens` would, its dependencies
    resolved afresh from the ranges in pyproject.toml (the lock binds the project's own installs, not its users)."""
    tmp = tmp_path_factory.mktemp(request.param)
    venv = tmp / "venv"
    made = subprocess.run(
        [uv(), "venv", "--quiet", "--python", sys.executable, str(venv)], capture_output=True, text=True, timeout=120
    )
    assert made.returncode == 0, made.stderr
    python = venv / "bin" / "python"
    site = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    borrowed = request.param == "borrowed"
    install = subprocess.run(
        [uv(), "pip", "install", "--quiet", "--python", str(python)]
        + (["--no-deps"] if borrowed else [])
        + [str(wheel)],
        capture_output=True,
        text=True,
        timeout=900,
        env={**os.environ, "UV_PYTHON_DOWNLOADS": "never"},
    )
    assert install.returncode == 0, install.stderr
    if borrowed:
        # Only now borrow the dependencies: the borrowed folder comes after the venv's own site-packages, so the
        # wheel wins over this environment's editable runlens.
        Path(site, "borrowed-deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    else:
        listed = subprocess.run(
            [uv(), "pip", "list", "--python", str(python)], capture_output=True, text=True, check=True
        ).stdout
        assert all(name in listed for name in ("streamlit", "pandas", "scikit-learn", "duckdb")), listed
        assert not any(p.suffix == ".pth" and "borrowed" in p.name for p in Path(site).iterdir())
    return {"wheel": wheel, "venv": venv, "python": python, "site": Path(site), "tmp": tmp}


def _env():
    # No PYTHONPATH and a working folder outside the checkout: only the installed package can be imported.
    return {"PATH": "/usr/bin:/bin", "HOME": os.environ.get("HOME", "/tmp")}


def test_wheel_ships_templates_and_samples(installed):
    names = zipfile.ZipFile(installed["wheel"]).namelist()
    from reporting.format.folders import is_companion

    shipped = sorted(p.name for p in (ROOT / "sample_runs").iterdir() if p.suffix in (".json", ".jsonl", ".yaml"))
    for name in shipped:
        assert f"reporting/sample_runs/{name}" in names
    assert "reporting/scoring/patterns.yaml" in names and "reporting/rubrics/examples/a-ref.rubric.yaml" in names
    assert "reporting/scoring/suites/agent-safety-core.probes.jsonl" in names
    for folder in ("scoring/suites/responses", "rubrics/examples/contradiction/positive"):
        data_files = (ROOT / "reporting" / folder).iterdir()
        shipped_data = sorted(p.name for p in data_files if p.suffix in (".json", ".jsonl"))
        assert shipped_data and all(f"reporting/{folder}/{n}" in names for n in shipped_data), folder
    assert "reporting/ui/app.py" in names
    templates = sorted(p.name for p in (ROOT / "templates").iterdir() if p.suffix in (".html", ".j2", ".css", ".js"))
    for name in templates:
        assert f"reporting/templates/{name}" in names
    code = (
        "import reporting, reporting.resources as r;"
        "files = r.sample_run_files();"
        "print(reporting.__file__);"
        "print(len(files), sum(len(reporting.read_run(f).cases) for f in files));"
        "print(r.templates_dir().is_dir())"
    )
    run = subprocess.run(
        [str(installed["python"]), "-c", code],
        capture_output=True,
        text=True,
        cwd=installed["tmp"],
        env=_env(),
        timeout=120,
    )
    assert run.returncode == 0, run.stderr
    where, counts, has_templates = run.stdout.split("\n")[:3]
    assert where.startswith(str(installed["site"]))
    n_files, n_cases = map(int, counts.split())
    assert n_files == len([n for n in shipped if not is_companion(n)]) and n_cases >= 300
    assert has_templates == "True"


def test_installed_app_opens_every_page_in_apptest(installed):
    code = """
import sys
from streamlit.testing.v1 import AppTest
from streamlit.util import calc_hash
import reporting.resources as r
from reporting.ui.pages import PAGES
assert str(r.dashboard_script()).startswith(sys.argv[1]), r.dashboard_script()
at = AppTest.from_file(str(r.dashboard_script()), default_timeout=120).run()
for name, title, _ in PAGES:
    at._page_hash = calc_hash(name)
    at.run()
    assert not at.exception, (name, at.exception)
    assert not at.error, (name, [e.value for e in at.error])
    assert at.title and title.split()[0].lower() in at.title[0].value.lower(), (name, [t.value for t in at.title])
    print(name, len(at.metric))
"""
    run = subprocess.run(
        [str(installed["python"]), "-c", code, str(installed["site"])],
        capture_output=True,
        text=True,
        cwd=installed["tmp"],
        env=_env(),
        timeout=600,
    )
    assert run.returncode == 0, run.stderr[-3000:]
    shown = dict(line.split() for line in run.stdout.strip().splitlines())
    from reporting.ui.pages import PAGES

    assert list(shown) == [name for name, _, _ in PAGES]
    assert int(shown["overview"]) >= 8  # the key figures of a packaged sample run


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_runlens_dashboard_serves_the_installed_app(installed, tmp_path):
    runs = tmp_path / "runs"
    runs.mkdir()
    shutil.copy(ROOT / "sample_runs" / "acme-assistant-v1.json", runs)
    port = _free_port()
    runlens = installed["venv"] / "bin" / "runlens"
    assert runlens.exists()
    server = subprocess.Popen(
        [str(runlens), "dashboard", str(runs), "--port", str(port)],
        cwd=installed["tmp"],
        env=_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline, body = time.time() + 120, ""
        while time.time() < deadline and server.poll() is None:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/_stcore/health", timeout=5) as response:
                    body = response.read().decode()
                    break
            except OSError:
                time.sleep(0.5)
        assert body == "ok", server.poll()
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=10) as response:
            assert "<title>Streamlit</title>" in response.read().decode()
    finally:
        server.terminate()
        out, err = server.communicate(timeout=30)
    assert f"RunLens dashboard on http://127.0.0.1:{port}" in err
    assert str(installed["site"]) in out + err or "streamlit" in (out + err).lower()


def test_dashboard_verb_refuses_a_missing_folder(installed, tmp_path):
    run = subprocess.run(
        [str(installed["venv"] / "bin" / "runlens"), "dashboard", str(tmp_path / "nope")],
        capture_output=True,
        text=True,
        env=_env(),
        timeout=60,
    )
    assert run.returncode == 2 and "not a folder of run reports" in run.stderr and "Traceback" not in run.stderr


def test_an_install_that_does_not_match_the_lock_stops_and_says_how_to_refresh_it(tmp_path):
    """Issue 25: `make run` / `make test` install from uv.lock only. A pyproject.toml that no longer matches the lock
    stops the install before anything is installed, with the way out (`make lock`); the shipped pair matches."""
    for name in ("Makefile", "pyproject.toml", "uv.lock", "README.md"):
        shutil.copy(ROOT / name, tmp_path / name)
    (tmp_path / "scripts").mkdir()
    shutil.copy(ROOT / "scripts" / "uv-requirements.txt", tmp_path / "scripts")
    os.utime(tmp_path / "scripts" / "uv-requirements.txt", (0, 0))  # older than the borrowed uv: make keeps it
    tools = ROOT / ".tools"
    if not (tools / "bin" / "uv").exists():
        pytest.fail("uv is not installed: run the tests through `make test`, which installs it")
    (tmp_path / ".tools").symlink_to(tools)
    env = {**os.environ, "UV_PYTHON_DOWNLOADS": "never"}
    env.pop("VIRTUAL_ENV", None)
    check = subprocess.run(
        [uv(), "lock", "--check", "--python", sys.executable], cwd=tmp_path, capture_output=True, text=True, env=env
    )
    assert check.returncode == 0, check.stderr
    pyproject = (tmp_path / "pyproject.toml").read_text()
    assert '    "msgspec>=0.18",\n' in pyproject
    (tmp_path / "pyproject.toml").write_text(
        pyproject.replace('    "msgspec>=0.18",\n', '    "msgspec>=0.18",\n    "six",\n')
    )
    stopped = subprocess.run(
        ["make", ".venv/.installed", f"PYTHON={sys.executable}"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert stopped.returncode != 0
    assert "uv.lock does not match pyproject.toml; run `make lock` to refresh it" in stopped.stderr, stopped.stderr
    assert not (tmp_path / ".venv").exists()
