"""A report's output never replaces a run RunLens did not write (the third audit's H1): another tool's run (garak,
promptfoo, Inspect, a benchmark's), a case table, or a run of RunLens's format written by a harness or by import. A
report RunLens wrote, or a scored run, is replaced by the next, as before. Every verb says so before its work (H7/H8:
a run's name was refused only when the file existed, and only after the work, a judge's calls included)."""

from __future__ import annotations

import json
import shutil
import socket
from pathlib import Path

import pytest

from reporting.cli import main

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests" / "fixtures"
SAMPLE = str(ROOT / "sample_runs" / "acme-assistant-v1.json")
OTHER = str(ROOT / "sample_runs" / "acme-assistant-v2.json")
SUITE = ROOT / "reporting" / "scoring" / "suites"
PROBES = str(SUITE / "agent-safety-core.probes.jsonl")
RESPONSES = str(SUITE / "responses" / "acme-assistant-v2.responses.jsonl")

# (what the file is, the fixture copied to the output path under a .json name, what the refusal names)
HELD = [
    ("promptfoo", FIXTURES / "promptfoo" / "promptfoo.json", "a promptfoo output file"),
    ("inspect", FIXTURES / "inspect" / "2025-05-12T20-28-13-04-00_popularity.json", "an Inspect AI log"),
    ("jailbreakbench", FIXTURES / "jailbreakbench" / "PAIR-black_box-gpt-3.5-turbo-1106.json", "a JailbreakBench"),
    ("garak", FIXTURES / "garak" / "peers_repeat_small.report.jsonl", "a garak report.jsonl"),
    ("hitlog", FIXTURES / "garak" / "peers_repeat_small.hitlog.jsonl", "a garak hit log"),
    ("avid", FIXTURES / "garak" / "peers_repeat_small.avid.jsonl", "a garak AVID export"),
    ("harness", None, "a run RunLens did not mark as its own"),  # (the sample as a harness writes it: _harness)
]


def _harness(path: Path, source: str = SAMPLE) -> Path:
    """``source`` as a harness writes a run of RunLens's format, at ``path``: without the mark RunLens gives the runs
    it writes (the samples are scored runs, marked)."""
    document = json.loads(Path(source).read_text())
    assert document.pop("generator")["name"] == "runlens"
    path.write_text(json.dumps(document, indent=2))
    return path


def _verbs(out: Path) -> list[list[str]]:
    return [
        ["recompute", SAMPLE, "-o", str(out)],
        ["export", SAMPLE, "-o", str(out)],
        ["compare", SAMPLE, OTHER, "-o", str(out)],
        ["compare", SAMPLE, OTHER, "--html", str(out)],
        ["trend", str(ROOT / "sample_runs"), "-o", str(out)],
        ["score", "--probes", PROBES, "--responses", RESPONSES, "-o", str(out)],
        ["score", "--run", SAMPLE, "-o", str(out)],
    ]


@pytest.mark.parametrize("kind,source,named", HELD, ids=[h[0] for h in HELD])
def test_no_report_replaces_a_run_it_did_not_write(tmp_path, capsys, kind, source, named):
    out = tmp_path / "taken.json"
    shutil.copyfile(source, out) if source else _harness(out)
    before = out.read_bytes()
    for argv in _verbs(out):
        assert main(argv) == 2, argv
        err = capsys.readouterr().err
        assert f"{out}: refusing to replace {named}" in err, (argv, err)
        assert out.read_bytes() == before, argv
    assert sorted(p.name for p in tmp_path.iterdir()) == ["taken.json"]  # nothing left beside it


def test_an_imported_run_is_not_replaced_but_a_report_is(tmp_path, capsys):
    imported = tmp_path / "imported.json"
    assert (
        main(
            ["import", str(FIXTURES / "jailbreakbench" / "PAIR-black_box-gpt-3.5-turbo-1106.json"), "-o", str(imported)]
        )
        == 0
    )
    before = imported.read_bytes()
    assert main(["recompute", SAMPLE, "-o", str(imported)]) == 2
    assert "refusing to replace a run RunLens did not mark as its own" in capsys.readouterr().err
    assert imported.read_bytes() == before
    # the verb's own earlier output is replaced by the next: a report, a scored run, an HTML page
    report, scored, page = tmp_path / "report.json", tmp_path / "scored.json", tmp_path / "page.html"
    for argv in (
        ["recompute", SAMPLE, "-o", str(report)],
        ["recompute", OTHER, "-o", str(report)],
        ["score", "--probes", PROBES, "--responses", RESPONSES, "-o", str(scored)],
        ["score", "--probes", PROBES, "--responses", RESPONSES, "-o", str(scored), "--run-id", "again"],
        ["score", "--run", SAMPLE, "-o", str(scored)],
        ["recompute", OTHER, "-o", str(scored)],
        ["export", SAMPLE, "-o", str(page)],
        ["export", OTHER, "-o", str(page)],
    ):
        assert main(argv) == 0, (argv, capsys.readouterr().err)
    assert b"acme-assistant-v2" in report.read_bytes() and b"acme-assistant-v2" in scored.read_bytes()
    assert b"acme-assistant-v2" in page.read_bytes()


def test_a_scored_run_names_runlens_as_it_was_written(tmp_path):
    """The mark a later output reads: schema_version first, then RunLens as the generator, as a report has it."""
    scored = tmp_path / "scored.json"
    assert main(["score", "--probes", PROBES, "--responses", RESPONSES, "-o", str(scored)]) == 0
    head = scored.read_text(encoding="utf-8")[:120]
    assert head.startswith('{\n  "schema_version": 2,\n  "generator": {\n    "name": "runlens",'), head
    import reporting

    assert reporting.load_run(str(scored)).ok  # still a run every verb reads


@pytest.mark.parametrize("name", ["out.jsonl", "OUT.NDJSON", "out.parquet", "out.eval"])
def test_a_run_name_is_refused_before_the_work(tmp_path, capsys, name):
    """score with a judge endpoint was refused only at the end, after every call; trend and compare only when the
    file existed. Now every report verb refuses the name first: here score's inputs do not even exist, and its
    endpoint is a port nothing listens on (a call would fail the run, not name the output)."""
    with socket.socket() as free:
        free.bind(("127.0.0.1", 0))
        port = free.getsockname()[1]
    store = tmp_path / "store"
    assert main(["store", "add", SAMPLE, "--store", str(store)]) == 0
    out = str(tmp_path / name)
    missing = str(tmp_path / "missing.jsonl")
    for argv in (
        ["score", "--probes", missing, "--responses", missing, "-o", out, "--judge", f"http://127.0.0.1:{port}/v1"]
        + ["--judge-model", "m", "--judge-format", "llama-guard"],
        ["trend", str(ROOT / "sample_runs"), "-o", out],
        ["compare", SAMPLE, OTHER, "--html", out],
        ["export", SAMPLE, "--pdf", out],
        ["store", "trend", "--store", str(store), "-o", out],
    ):
        assert main(argv) == 2, argv
        err = capsys.readouterr().err
        assert f"{name}: refusing this name: it is a run's" in err, (argv, err)
    assert [p.name for p in tmp_path.iterdir()] == ["store"]


def test_figures_with_their_keys_sorted_are_skipped_beside_their_table(tmp_path, capsys):
    """Figures of `recompute --format parquet` whose keys another tool sorted (jq -S: cases_file neither first nor
    last) stopped a folder scan, naming the field (the third audit's H6). Now they are skipped as their table's
    companion; a run that names a table but holds its cases is still read."""
    import json

    from reporting.sources.folders import run_files

    assert main(["recompute", SAMPLE, "--format", "parquet", "-o", str(tmp_path / "v1.json")]) == 0
    figures = tmp_path / "v1.json"
    figures.write_text(json.dumps(json.loads(figures.read_text()), indent=2, sort_keys=True))
    assert not figures.read_text().lstrip("{ \n").startswith('"cases_file"')  # (neither first nor last)
    assert not figures.read_text().rstrip("} \n").endswith('"v1.parquet"')
    run = json.loads(Path(OTHER).read_text())
    (tmp_path / "holds.json").write_text(json.dumps({**run, "cases_file": "v1.parquet"}, sort_keys=True))
    runs, skipped = run_files(tmp_path)
    assert [p.name for p in runs] == ["holds.json", "v1.parquet"]
    assert [(s.name, s.companion) for s in skipped] == [("v1.json", True)]
    assert "their case table 'v1.parquet'" in skipped[0].reason
    capsys.readouterr()
    assert main(["trend", str(tmp_path)]) == 0
    assert "v1.json: skipped: the figures" in capsys.readouterr().err


def _shapes(tmp_path: Path) -> dict[str, Path]:
    """A harness's run in every shape RunLens reads it (docs/report-format.md) and key order a tool may give it."""
    document = json.loads(_harness(tmp_path / "harness.json").read_text())
    shapes = {
        "array.json": json.dumps(document["cases"]),
        "lines.json": "".join(json.dumps(case) + "\n" for case in document["cases"]),
        "sorted.json": json.dumps(document, sort_keys=True, indent=2),  # jq -S: aggregate_metrics first
        "schema-first.json": json.dumps({"$schema": "x", **document}),
        "spaced.json": " " * 300 + "\n" + json.dumps(document),
    }
    for name, text in shapes.items():
        (tmp_path / name).write_text(text)
    import reporting

    assert all(reporting.load_run(str(tmp_path / name)).ok for name in shapes)  # each one a run the reader reads
    return {name: tmp_path / name for name in shapes}


def test_a_run_in_any_shape_or_key_order_is_kept(tmp_path, capsys):
    """The second audit of this guard: a bare array of cases, JSON Lines under a .json name, keys sorted by jq -S, a
    $schema key first, or a long run of blanks before the object were replaced by every report verb."""
    for name, path in _shapes(tmp_path).items():
        before = path.read_bytes()
        for argv in (["recompute", SAMPLE, "-o", str(path)], ["export", SAMPLE, "--pdf", str(path)]):
            assert main(argv) == 2, (name, argv)
            assert "refusing to replace a run RunLens did not mark as its own" in capsys.readouterr().err, name
        assert path.read_bytes() == before, name


def test_a_large_file_is_told_by_its_head(tmp_path, capsys, monkeypatch):
    """Above 16 MB a file is read by its first megabyte (a benchmark's file, one JSON value, cannot be parsed from
    its head): a JailbreakBench artifact and a harness's run, each read as if over the bound, are kept."""
    from reporting.commands import outputs

    monkeypatch.setattr(outputs, "WHOLE_BELOW", 1000)
    monkeypatch.setattr(outputs, "HEAD_BYTES", 1 << 16)
    artifact = tmp_path / "artifact.json"
    shutil.copyfile(HELD[2][1], artifact)
    shapes = _shapes(tmp_path)
    for path, named in [(artifact, "a JailbreakBench"), *[(p, "a run RunLens did not mark") for p in shapes.values()]]:
        assert path.stat().st_size > 1000
        before = path.read_bytes()
        assert main(["recompute", SAMPLE, "-o", str(path)]) == 2
        assert f"refusing to replace {named}" in capsys.readouterr().err, path.name
        assert path.read_bytes() == before
    page = tmp_path / "page.html"
    page.write_text("<!doctype html>" + "x" * 5000)
    assert main(["recompute", SAMPLE, "-o", str(page)]) == 0  # no run: replaced, as before


def test_a_run_put_there_during_the_work_is_kept(tmp_path, capsys, monkeypatch):
    """The file is looked at again as the report is written: a run copied to -o while recompute worked was
    replaced."""
    from reporting.commands import reports

    out = tmp_path / "out.json"
    made = reports._report

    harness = _harness(tmp_path / "harness.json", OTHER)

    def meanwhile(*args, **kwargs):
        shutil.copyfile(harness, out)
        return made(*args, **kwargs)

    monkeypatch.setattr(reports, "_report", meanwhile)
    assert main(["recompute", SAMPLE, "-o", str(out)]) == 2
    assert "refusing to replace a run" in capsys.readouterr().err
    assert out.read_bytes() == harness.read_bytes()


def test_a_file_that_cannot_be_read_is_not_replaced(tmp_path, capsys, monkeypatch):
    """A file the user cannot read (another user's run in a shared folder) was replaced: it may be a run."""
    from reporting.commands import outputs

    out = tmp_path / "theirs.json"
    out.write_text("{}")

    def refused(path, *args, **kwargs):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(outputs, "open", refused, raising=False)
    assert main(["recompute", SAMPLE, "-o", str(out)]) == 2
    assert "refusing to replace a file that cannot be read (Permission denied), which may be a run" in (
        capsys.readouterr().err
    )
    assert out.read_text() == "{}"


def test_earlier_outputs_of_runlens_are_replaced_and_old_ones_said(tmp_path, capsys):
    """The figures beside a case table are RunLens's (replaced by a report); a scored run written before the mark
    is refused with a message that says so; compare and trend refuse -o and --html naming one file; export and
    compare refuse before they read their inputs."""
    import json

    assert main(["recompute", SAMPLE, "--format", "parquet", "-o", str(tmp_path / "figures.json")]) == 0
    assert main(["recompute", SAMPLE, "-o", str(tmp_path / "figures.json")]) == 0
    scored = tmp_path / "scored.json"
    assert main(["score", "--probes", PROBES, "--responses", RESPONSES, "-o", str(scored)]) == 0
    old = json.loads(scored.read_text())
    del old["generator"]
    scored.write_text(json.dumps(old))
    capsys.readouterr()
    assert main(["score", "--probes", PROBES, "--responses", RESPONSES, "-o", str(scored)]) == 2
    assert "or one `score` wrote before it marked its runs" in capsys.readouterr().err
    both = str(tmp_path / "both.json")
    page = str(tmp_path / "both.html")
    for argv in (
        ["compare", SAMPLE, OTHER, "-o", both, "--html", both],
        ["trend", str(ROOT / "sample_runs"), "-o", both, "--html", both],
        ["export", SAMPLE, "-o", page, "--pdf", page],
    ):
        assert main(argv) == 2
        assert "named twice as an output" in capsys.readouterr().err
    missing = str(tmp_path / "missing.json")
    for argv in (["export", missing, "-o", str(scored)], ["compare", missing, missing + "2", "-o", str(scored)]):
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert "refusing to replace a run" in err and "missing" not in err, err
    assert not (tmp_path / "both.json").exists()
