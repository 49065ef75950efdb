"""A non-editable install finds its templates and sample runs (package data)."""

import subprocess
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_wheel_ships_templates_and_samples_and_works_installed(tmp_path):
    build = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "-q",
            "-w",
            str(tmp_path / "dist"),
            str(ROOT),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert build.returncode == 0, build.stderr
    wheel = next((tmp_path / "dist").glob("runlens-*.whl"))
    names = zipfile.ZipFile(wheel).namelist()
    from reporting.format.folders import is_companion

    shipped = sorted(p.name for p in (ROOT / "sample_runs").iterdir() if p.suffix in (".json", ".jsonl", ".yaml"))
    for name in shipped:
        assert f"reporting/sample_runs/{name}" in names
    samples = [n for n in shipped if not is_companion(n)]
    assert "reporting/scoring/patterns.yaml" in names and "reporting/rubrics/examples/a-ref.rubric.yaml" in names
    assert "reporting/scoring/suites/agent-safety-core.probes.jsonl" in names
    templates = sorted(p.name for p in (ROOT / "templates").iterdir() if p.suffix in (".html", ".j2", ".css", ".js"))
    for name in templates:
        assert f"reporting/templates/{name}" in names
    target = tmp_path / "site"
    install = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--no-deps", "-q", "--target", str(target), str(wheel)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert install.returncode == 0, install.stderr
    code = (
        "import reporting, reporting.resources as r;"
        "files = r.sample_run_files();"
        "print(reporting.__file__);"
        "print(len(files), sum(len(reporting.read_run(f).cases) for f in files));"
        "print(r.templates_dir().is_dir())"
    )
    run = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={"PYTHONPATH": str(target), "PATH": "/usr/bin:/bin"},
        timeout=120,
    )
    assert run.returncode == 0, run.stderr
    where, counts, has_templates = run.stdout.split("\n")[:3]
    assert where.startswith(str(target))
    n_files, n_cases = map(int, counts.split())
    assert n_files == len(samples) and n_cases >= 300
    assert has_templates == "True"
