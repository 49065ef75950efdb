"""Trust, second round (issue 30): one strict decoding layer and expansion limits for every reader of other tools'
files (garak, promptfoo, Inspect AI, Parquet). Every hostile file here is made by the test itself; each must be a
listed problem naming the file (exit 2), never an internal error (exit 1), an abort, or gigabytes of memory."""

from __future__ import annotations

import io
import json
import struct
import subprocess
import sys
import zipfile
import zlib
from pathlib import Path

import pytest
from _helpers_cli import ROOT, assert_listed, cli

FIXTURES = Path(__file__).resolve().parent / "fixtures"
GARAK = FIXTURES / "garak" / "analyze_test.report.jsonl"
PROMPTFOO = FIXTURES / "promptfoo" / "promptfoo.json"
INSPECT = FIXTURES / "inspect" / "cli_mockllm_default.json"
SAMPLE = ROOT / "sample_runs" / "acme-assistant-v1.json"


# --- garak, promptfoo and Inspect files, made hostile ---------------------------------------------------------


def garak_lines() -> list[str]:
    return GARAK.read_text().splitlines()


def judged_index(lines: list[str]) -> int:
    return next(i for i, line in enumerate(lines) if '"status": 2' in line and '"entry_type": "attempt"' in line)


def garak_with(tmp_path: Path, name: str, change) -> Path:
    """The garak fixture with its first judged attempt line replaced by ``change(line)`` (text in, text out)."""
    lines = garak_lines()
    i = judged_index(lines)
    lines[i] = change(lines[i])
    path = tmp_path / f"{name}.report.jsonl"
    path.write_bytes("\n".join(lines).encode("utf-8", "surrogatepass") + b"\n")
    return path


def garak_field(**fields):
    def change(line: str) -> str:
        entry = json.loads(line)
        entry.update(fields)
        return json.dumps(entry)

    return change


def edited(source: Path, tmp_path: Path, name: str, change) -> Path:
    """``source``'s JSON document changed in place by ``change``, written as ``name``.json."""
    document = json.loads(source.read_text())
    change(document)
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps(document))
    return path


def promptfoo_with(tmp_path: Path, name: str, change) -> Path:
    return edited(PROMPTFOO, tmp_path, name, change)


def inspect_with(tmp_path: Path, name: str, change) -> Path:
    return edited(INSPECT, tmp_path, name, change)


def nested(depth: int) -> str:
    return "[" * depth + "]" * depth


def _set(path: list, value):
    def change(document):
        node = document
        for key in path[:-1]:
            node = node[key]
        node[path[-1]] = value

    return change


def _raw(path: Path, old: str, new: str) -> Path:
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new, 1))
    return path


def _deep_and_huge(tmp_path: Path, made, short: str, anchor: str, score: list, key: str) -> dict[str, tuple[Path, str]]:
    """Two hostile files from ``made`` (promptfoo_with or inspect_with), each with a word its problem must say:
    "deep", an array nested 5,000 deep before ``anchor``; "huge score", the score at ``score`` (the field ``key``)
    an integer of 401 digits."""
    deep = _raw(made(tmp_path, f"{short}-deep", lambda d: None), anchor, '"deep": ' + nested(5000) + ", " + anchor)
    huge = _raw(made(tmp_path, f"{short}-huge", _set(score, 12345)), f'"{key}": 12345', f'"{key}": 1' + "0" * 400)
    return {"deep": (deep, "nesting"), "huge score": (huge, "integer out of range")}


def hostile_importer_files(tmp_path: Path) -> dict[str, tuple[Path, str]]:
    """Name -> (file, a word its problem must say): the shapes that made the new readers fail with an internal
    error (issue 30 point 13)."""
    files: dict[str, tuple[Path, str]] = {}
    # garak: deep nesting, an integer beyond float range, a number where an object is, invalid UTF-8
    files["garak deep"] = (
        garak_with(
            tmp_path, "deep", lambda line: line.replace('"notes": {', '"deep": ' + nested(5000) + ', "notes": {', 1)
        ),
        "nesting",
    )
    files["garak huge score"] = (
        garak_with(
            tmp_path, "huge", lambda line: line.replace('"always.Pass": [0.0]', '"always.Pass": [1' + "0" * 400 + "]")
        ),
        "integer out of range",
    )
    files["garak results a number"] = (
        garak_with(tmp_path, "shape", garak_field(detector_results=7)),
        "detector_results",
    )
    files["garak outputs an object"] = (garak_with(tmp_path, "outputs", garak_field(outputs={"a": 1})), "outputs")
    files["garak plugin cache a list"] = (
        garak_with(
            tmp_path,
            "cache",
            lambda line: line + '\n{"entry_type": "plugin_cache", "plugin_cache": {"probes": [1, 2]}}',
        ),
        "plugin_cache",
    )
    # promptfoo: deep nesting, an integer beyond float range, assertions of the wrong shape, a plugin id a list
    pf = _deep_and_huge(tmp_path, promptfoo_with, "pf", '"evalId":', ["results", "results", 0, "score"], "score")
    files.update({f"promptfoo {name}": made for name, made in pf.items()})
    files["promptfoo components a number"] = (
        promptfoo_with(tmp_path, "pf-shape", _set(["results", "results", 0, "gradingResult", "componentResults"], 5)),
        "results.results[0].gradingResult.componentResults",
    )
    files["promptfoo plugin a list"] = (
        promptfoo_with(tmp_path, "pf-plugin", _set(["results", "results", 0, "metadata"], {"pluginId": ["a"]})),
        "metadata.pluginId",
    )
    # Inspect: deep nesting, an integer beyond float range, results of the wrong shape, invalid UTF-8
    ins = _deep_and_huge(
        tmp_path, inspect_with, "in", '"version":', ["samples", 0, "scores", "harm_risk", "value"], "value"
    )
    files.update({f"inspect {name}": made for name, made in ins.items()})
    files["inspect results a list"] = (
        inspect_with(tmp_path, "in-shape", _set(["results"], [1, 2])),
        "results: must be",
    )
    bad_utf8 = promptfoo_with(tmp_path, "pf-utf8", lambda d: None)
    bad_utf8.write_bytes(bad_utf8.read_bytes().replace(b'"canned-model"', b'"canned-\xff\xfe"', 1))
    files["promptfoo invalid UTF-8"] = (bad_utf8, "not UTF-8")
    return files


HOSTILE = [
    "garak deep",
    "garak huge score",
    "garak results a number",
    "garak outputs an object",
    "garak plugin cache a list",
    "promptfoo deep",
    "promptfoo huge score",
    "promptfoo components a number",
    "promptfoo plugin a list",
    "inspect deep",
    "inspect huge score",
    "inspect results a list",
    "promptfoo invalid UTF-8",
]


@pytest.mark.parametrize("name", HOSTILE)
def test_point_13_every_importer_decodes_strictly_and_names_the_problem(tmp_path, name):
    """issue 30 point 13: deep nesting, integers beyond float range, fields of the wrong shape and invalid UTF-8 in
    garak / promptfoo / Inspect files are a listed problem naming the file (exit 2), for `validate` and `import`
    alike, never an internal error (exit 1); and nothing is written."""
    path, word = hostile_importer_files(tmp_path)[name]
    assert_listed(cli("validate", path), path, word)
    out = tmp_path / "out"
    assert_listed(cli("import", path, "-o", out), path, word)
    assert not out.exists() or not any(out.iterdir())


def test_point_4_lone_surrogates_are_problems_in_every_reader(tmp_path):
    """issue 30 point 4: a lone surrogate (``\\ud800``) in a garak output, a promptfoo provider (the model name),
    an Inspect completion, or a Parquet file's run header is a problem naming the file and the field; `validate`
    says so (exit 2) and `import` / `recompute` never fail with an internal error."""
    garak = garak_with(tmp_path, "sur", garak_field(outputs=[{"text": "ok \ud800 then"}]))
    promptfoo = promptfoo_with(
        tmp_path, "pf-sur", _set(["results", "results", 0, "provider"], {"id": "x", "label": "model \udc00"})
    )
    inspect = inspect_with(tmp_path, "in-sur", _set(["samples", 0, "output", "completion"], "done \ud83d"))
    parquet = tmp_path / "sur.parquet"
    _parquet_with_header(parquet, {"run_id": "r", "model": "m \ud800", "suite": "s"})
    expected = {
        garak: "outputs[0].text",
        promptfoo: "provider.label",
        inspect: "output.completion",
        parquet: "runlens.run",
    }
    for path, field in expected.items():
        validated = cli("validate", path)
        assert_listed(validated, path, "surrogate", field)
        assert_listed(cli("recompute", path), path, "surrogate")
        if path.suffix != ".parquet":
            assert_listed(cli("import", path, "-o", tmp_path / f"{path.stem}-out"), path, "surrogate")


def test_a_lone_surrogate_beside_other_non_ascii_text_is_a_problem_not_an_internal_error(tmp_path):
    """A lone surrogate in a text that also holds other non-ASCII characters is named as any lone surrogate is (the
    text shown with the surrogate escaped and the rest as it is), in a run and in an imported log alike."""
    run = tmp_path / "run.json"
    run.write_text('{"schema_version": 3, "run": {}, "cases": [{"probe_id": "p", "response": "\\ud800 caf\u00e9"}]}')
    validated = cli("validate", run)
    assert_listed(validated, run, "surrogate", "cases[0].response")
    assert "internal error" not in validated.stderr and "\\ud800 café" in validated.stderr
    inspect = inspect_with(tmp_path, "in-sur2", _set(["samples", 0, "output", "completion"], "\ud83d déjà"))
    assert_listed(cli("validate", inspect), inspect, "surrogate", "output.completion")


def _parquet_with_header(path: Path, header: dict) -> None:
    """The sample run as a Parquet case table whose ``runlens.run`` metadata is ``header`` (JSON, ASCII-escaped)."""
    import pyarrow.parquet as pq

    made = cli("recompute", SAMPLE, "--format", "parquet", "-o", path.with_suffix(".json"))
    assert made.returncode == 0, made.stderr
    table = pq.read_table(path)
    metadata = dict(table.schema.metadata)
    metadata[b"runlens.run"] = json.dumps(header).encode("ascii")
    pq.write_table(table.replace_schema_metadata(metadata), path)
    path.with_suffix(".json").unlink()


# --- decompression bombs ---------------------------------------------------------------------------------------


def inspect_header() -> bytes:
    """The header.json of an .eval archive: the Inspect log without its samples."""
    log = json.loads(INSPECT.read_text())
    return json.dumps({k: v for k, v in log.items() if k != "samples"}).encode()


def overlapping_eval(path: Path, members: int, member_bytes: int) -> None:
    """An Inspect .eval archive whose sample members all point at one zstd stream (overlapping members: a few KB
    that expand to members x member_bytes), beside a real header.json."""
    import zstandard

    header = inspect_header()
    payload = b'{"id": 1, "pad": "' + b" " * (member_bytes - 20) + b'"}'
    payload = payload[:member_bytes]
    compressed = zstandard.ZstdCompressor(level=19).compress(payload)
    crc = zlib.crc32(payload)
    out = io.BytesIO()
    entries = []

    def local(name: bytes, method: int, data: bytes, size: int, crc: int) -> int:
        offset = out.tell()
        out.write(struct.pack("<IHHHHHIIIHH", 0x04034B50, 63, 0, method, 0, 0, crc, len(data), size, len(name), 0))
        out.write(name + data)
        return offset

    head = zlib.compress(header)[2:-4]
    entries.append(
        (
            b"header.json",
            8,
            len(head),
            len(header),
            zlib.crc32(header),
            local(b"header.json", 8, head, len(header), zlib.crc32(header)),
        )
    )
    shared = local(b"samples/0_epoch_1.json", 93, compressed, len(payload), crc)
    for i in range(members):
        entries.append((f"samples/{i}_epoch_1.json".encode(), 93, len(compressed), len(payload), crc, shared))
    directory = out.tell()
    for name, method, csize, size, crc_, offset in entries:
        out.write(
            struct.pack(
                "<IHHHHHHIIIHHHHHII",
                0x02014B50,
                63,
                63,
                0,
                method,
                0,
                0,
                crc_,
                csize,
                size,
                len(name),
                0,
                0,
                0,
                0,
                0,
                offset,
            )
        )
        out.write(name)
    end = out.tell()
    out.write(struct.pack("<IHHHHIIH", 0x06054B50, 0, 0, len(entries), len(entries), end - directory, directory, 0))
    path.write_bytes(out.getvalue())


def parquet_bomb(path: Path, rows: int, text_bytes: int) -> None:
    """A valid case table of ``rows`` cases whose response is one text of ``text_bytes`` repeated: dictionary and
    run-length encoding keep the file a few KB; read, it is rows x text_bytes."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from reporting.format.parquet import CASE_COLUMNS, _arrow_type

    columns = {}
    for name, kind in CASE_COLUMNS.items():
        kind_type = _arrow_type(kind)
        if name == "probe_id":
            columns[name] = pa.array([f"p{i}" for i in range(rows)])
        elif name in ("category", "severity"):
            columns[name] = pa.array(["c" if name == "category" else "low"] * rows)
        elif name == "passed":
            columns[name] = pa.array([True] * rows)
        elif name == "risk_score":
            columns[name] = pa.array([0.1] * rows)
        elif name == "response":
            columns[name] = pa.DictionaryArray.from_arrays(
                pa.array([0] * rows, pa.int32()), pa.array(["A" * text_bytes])
            )
        else:
            columns[name] = pa.nulls(rows, kind_type)
    table = pa.table(columns)
    pq.write_table(table, path, compression="zstd", use_dictionary=True)


PEAK = (
    "import resource, subprocess, sys\n"
    "child = subprocess.run([sys.executable, '-m', 'reporting', *sys.argv[1:]], capture_output=True, text=True)\n"
    "sys.stderr.write(child.stderr)\n"
    "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n"
    "sys.exit(child.returncode)\n"
)


def peak_run(*args):
    """The verb run in a child process: its result, and its peak resident memory in MB."""
    result = subprocess.run(
        [sys.executable, "-c", PEAK, *map(str, args)], capture_output=True, text=True, cwd=ROOT, timeout=600
    )
    return result, int(result.stdout.strip().splitlines()[-1]) / 1024


def test_point_2_decompression_bombs_are_refused_under_1_gb(tmp_path):
    """issue 30 point 2: an Inspect .eval whose zip members overlap (a few KB, 1.5 GB expanded) and Parquet case
    tables of one text repeated by dictionary encoding (a few KB, 1.2 GB expanded) are refused before they expand,
    with a problem naming the file, the member or the limit (exit 2); the process never reaches 1 GB. An archive
    that is not a bomb but expands beyond --max-file-mb (counted on expanded bytes) is refused too."""
    bomb = tmp_path / "bomb.eval"
    overlapping_eval(bomb, members=150, member_bytes=10 << 20)
    assert bomb.stat().st_size < 64 << 10
    small = tmp_path / "rows.parquet"
    parquet_bomb(small, rows=1200, text_bytes=1 << 20)
    wide = tmp_path / "wide.parquet"
    parquet_bomb(wide, rows=300_000, text_bytes=4 << 10)
    assert small.stat().st_size < 64 << 10 and wide.stat().st_size < 2 << 20
    peaks = {}
    for path, words in ((bomb, ("overlaps",)), (small, ("expands",)), (wide, ("expands",))):
        for verb in ("validate", "import"):
            args = (verb, path) if verb == "validate" else (verb, path, "-o", tmp_path / f"{path.stem}-out")
            result, peak = peak_run(*args)
            if verb == "import" and path.suffix == ".parquet":
                assert result.returncode == 2, result.stderr  # a Parquet table is a RunLens run already
                continue
            peaks[(path.name, verb)] = peak
            assert peak < 1024, (path.name, verb, peak)
            assert_listed(result, path, *words)
    print("peak MB", peaks)
    # Not a bomb, but more expanded bytes than the cap: counted as they expand, and refused.
    honest = tmp_path / "honest.eval"
    with zipfile.ZipFile(honest, "w", zipfile.ZIP_DEFLATED) as target:
        target.writestr("header.json", inspect_header())
        for sample in json.loads(INSPECT.read_text())["samples"]:
            target.writestr(f"samples/{sample['id']}_epoch_{sample['epoch']}.json", json.dumps(sample))
        target.writestr("samples/zz_epoch_1.json", json.dumps({"id": "zz", "pad": " " * (3 << 20)}))
    assert honest.stat().st_size < 1 << 20
    assert_listed(cli("validate", honest, "--max-file-mb", "2"), honest, "expands to more than")


def test_point_2_zip_members_must_be_what_their_directory_declares(tmp_path):
    """issue 30 point 2: a member that expands beyond the size its directory entry declares is refused as it
    expands (declared vs real sizes), and so is a member whose real size falls short of it."""
    data = json.dumps({"id": 1, "pad": "x" * 100_000}).encode()
    path = tmp_path / "lying.eval"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("header.json", inspect_header())
        archive.writestr("samples/1_epoch_1.json", data)
    raw = bytearray(path.read_bytes())
    directory = raw.rfind(b"PK\x01\x02")  # the last member's central directory entry: declare 1,000 bytes
    struct.pack_into("<I", raw, directory + 24, 1000)
    path.write_bytes(bytes(raw))
    assert_listed(cli("validate", path), path, "samples/1_epoch_1.json", "declares")


# --- Parquet and pyarrow's threads ------------------------------------------------------------------------------


READ_PARQUET = (
    "import os, sys\n"
    "import pyarrow\n"
    "from reporting.sources.reading import load_run\n"
    "before = len(os.listdir('/proc/self/task'))\n"
    "result = load_run(sys.argv[1])\n"
    "assert result.ok and len(result.run.cases) == 120, result.problems\n"
    "print(len(os.listdir('/proc/self/task')) - before)\n"
)


@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="counts threads in /proc (Linux)")
def test_point_14_reading_parquet_starts_no_thread_pool_and_always_exits_0(tmp_path):
    """issue 30 point 14: pyarrow's thread pools aborted the interpreter at exit (exit 134) in a third of runs. A
    Parquet run is read with no pool (use_threads=False, no pre-buffering): reading it starts no thread, and 20
    processes in a row each exit 0. The run has two judges' verdicts (the check that no case names a judge twice
    grouped them with Arrow's thread pool)."""
    made = cli("recompute", SAMPLE, "--format", "parquet", "-o", tmp_path / "run.json")
    assert made.returncode == 0, made.stderr
    path = tmp_path / "run.parquet"
    import pyarrow.parquet as pq

    verdicts = pq.read_table(path, columns=["verdicts"]).column("verdicts").combine_chunks()
    assert set(verdicts.value_lengths().to_pylist()) == {2}
    for _ in range(20):
        result = subprocess.run(
            [sys.executable, "-c", READ_PARQUET, str(path)], capture_output=True, text=True, cwd=ROOT, timeout=120
        )
        assert result.returncode == 0, (result.returncode, result.stderr[-2000:])
        assert result.stdout.strip() == "0", f"reading the Parquet file started {result.stdout.strip()} thread(s)"


def test_point_13_parquet_with_wrong_column_types_is_a_problem(tmp_path):
    """issue 30 point 13: a Parquet case table whose columns have the wrong types (``passed`` as text, ``verdicts``
    as a number) is a listed problem naming the column, never an internal error."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = tmp_path / "types.parquet"
    pq.write_table(
        pa.table(
            {
                "probe_id": ["a", "b"],
                "category": ["c", "c"],
                "severity": ["low", "low"],
                "passed": ["yes", "no"],
                "risk_score": [0.1, 0.2],
                "verdicts": [1, 2],
            }
        ),
        path,
    )
    assert_listed(cli("validate", path), path, "passed", "verdicts", "type")
    assert_listed(cli("recompute", path), path, "passed")


# --- NaN scores and all-or-nothing import ----------------------------------------------------------------------


def test_point_6_nan_scores_are_problems_and_import_writes_all_or_nothing(tmp_path):
    """issue 30 point 6: a NaN detector score (garak) or a scorer value of "NaN" (Inspect) is a problem (exit 2),
    never a pass at risk 0; and `import` of several files writes nothing when a later file cannot be written:
    the first file's run is not left behind."""
    nan = garak_with(tmp_path, "nan", lambda line: line.replace('"always.Pass": [0.0]', '"always.Pass": [NaN]'))
    assert_listed(cli("validate", nan), nan, "detector_results", "finite")
    assert_listed(cli("check", nan, "--strict"), nan, "finite")
    out = tmp_path / "nan-out"
    assert_listed(cli("import", nan, "-o", out), nan, "finite")
    inspect = inspect_with(tmp_path, "in-nan", _set(["samples", 0, "scores", "harm_risk", "value"], "NaN"))
    assert_listed(cli("validate", inspect), inspect, "scores.harm_risk.value", "finite")
    # All or nothing: a good file, then one whose streamed cases fail while it is being written.
    good = tmp_path / "good.report.jsonl"
    good.write_text(GARAK.read_text())
    bad = garak_with(tmp_path, "late", garak_field(outputs=[{"text": "fine"}, {"text": "x \udfff"}]))
    out = tmp_path / "both"
    result = cli("import", good, bad, "-o", out)
    assert_listed(result, bad, "surrogate")
    assert not out.exists() or sorted(p.name for p in out.iterdir()) == [], sorted(p.name for p in out.iterdir())


# --- output names that one file system takes for one file ------------------------------------------------------


@pytest.mark.parametrize("first,second", [("Model-A", "model-a"), ("acme", "ACME")])
def test_point_17_output_names_equal_but_for_case_or_unicode_form_are_refused(tmp_path, first, second):
    """issue 30 point 17: `import -o DIR` of a file holding two models whose names differ only by case (compared
    after NFKC casefolding) is a problem (exit 2) saying so and that RunLens refuses rather than renames; nothing
    is written. A name that only clashes, that way, with a file already in the folder is refused the same way."""

    def two_models(document):
        results = document["results"]["results"]
        for i, result in enumerate(results):
            result["provider"] = {"id": "x", "label": first if i % 2 else second}

    path = promptfoo_with(tmp_path, "two", two_models)
    out = tmp_path / "out"
    result = cli("import", path, "-o", out)
    assert_listed(result, out, "differ only by case or Unicode form", "refuses")
    assert not out.exists() or list(out.iterdir()) == []
    single = promptfoo_with(tmp_path, "Single", lambda d: None)
    folder = tmp_path / "existing"
    folder.mkdir()
    (folder / "single.canned-model.json").write_text("{}")
    assert_listed(cli("import", single, "-o", folder), folder, "differs only by case")
    assert sorted(p.name for p in folder.iterdir()) == ["single.canned-model.json"]


# --- promptfoo's repeated metric names --------------------------------------------------------------------------


def lines_run(function, *args):
    """``function(*args)`` and how many lines of RunLens's own code it ran: a count of the work done, the same on any
    machine (a loop over the assertions is counted once a turn; json's C parser, once)."""
    import reporting

    package = str(Path(reporting.__file__).resolve().parent)
    count = 0

    def each_line(frame, event, arg):
        nonlocal count
        count += event == "line"
        return each_line

    def each_call(frame, event, arg):
        return each_line if frame.f_code.co_filename.startswith(package) else None

    before = sys.gettrace()
    sys.settrace(each_call)
    try:
        result = function(*args)
    finally:
        sys.settrace(before)
    return result, count


def repeated_metric(tmp_path: Path, assertions: int) -> Path:
    """A promptfoo file of one result whose ``assertions`` assertions all name the metric "m"; the 8th fails."""

    def repeated(document):
        result = document["results"]["results"][0]
        result["gradingResult"]["componentResults"] = [
            {"pass": i != 7, "score": 1.0 if i != 7 else 0.25, "reason": f"r{i}", "assertion": {"metric": "m"}}
            for i in range(assertions)
        ]
        document["results"]["results"] = [result]

    return promptfoo_with(tmp_path, f"repeat-{assertions}", repeated)


def test_promptfoo_repeated_metric_names_stay_linear(tmp_path):
    """issue 30 point 5 (promptfoo part): assertions that repeat one metric name were told apart by growing the
    name ("m", "m'", "m''", ...), which made reading quadratic and every consumer of the names worse (export:
    8.7 GB). Assertions of one metric are now that metric's one verdict (failed if any failed, the lowest score,
    every reason). The work is counted, not timed (its speed is no unit test's business): 10 times the assertions
    run at most 10 times the lines of RunLens's code (the grown names ran n^2 / 2 turns of a loop: 4.5 million lines
    at 3,000, 100 times those at 300), and exporting 3,000 of them takes no more memory than exporting 30."""
    from reporting.importers.promptfoo import read_promptfoo

    paths = {n: repeated_metric(tmp_path, n) for n in (30, 300, 3000)}
    (documents, _, problems), lines = lines_run(read_promptfoo, paths[3000].read_bytes(), str(paths[3000]))
    _, lines_300 = lines_run(read_promptfoo, paths[300].read_bytes(), str(paths[300]))
    assert lines <= 10 * lines_300, (lines, lines_300)
    assert not problems
    (case,) = documents[0]["cases"]
    assert list(case["verdicts"]) == ["m"]
    verdict = case["verdicts"]["m"]
    assert verdict["passed"] is False and verdict["score"] == 0.25 and verdict["explanation"].count("; ") == 2999
    peaks = {}
    for n in (30, 3000):
        exported, peaks[n] = peak_run("export", paths[n], "-o", tmp_path / f"r{n}.html")
        assert exported.returncode == 0, exported.stderr[-2000:]
    assert peaks[3000] < peaks[30] + 64, peaks  # MB: what 3,000 short verdicts could take, many times over


def test_the_strict_decoder_made_once_starts_each_value_afresh():
    """``strict_loads`` keeps one decoder a thread: what one value raised (a duplicated key, a number out of range,
    a NaN) is never carried into the next, and each thread's flags are its own."""
    import threading

    from reporting.format.strict_json import strict_loads

    def problems(data: bytes) -> list[str]:
        return [p.message for p in strict_loads("f", data)[1]]

    assert problems(b'{"a": 1, "a": 2}') and problems(b'{"a": 1, "b": 2}') == []
    assert problems(b'{"n": 12345678901234567890}') and problems(b'{"n": 1234567890123456}') == []
    assert problems(b'{"x": NaN}') and problems(b'{"x": 1.5}') == []
    assert problems(b'{"x": 1e999}') and strict_loads("f", b'{"x": 1e99}') == ({"x": 1e99}, [])
    assert problems("\ufeff{}") and strict_loads("f", "\ufeff{}".encode())[0] == {}
    found: list[list[str]] = []
    threads = [threading.Thread(target=lambda d=d: found.append(problems(d))) for d in (b'{"a":1,"a":1}', b"{}") * 4]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(len(f) for f in found) == [0, 0, 0, 0, 1, 1, 1, 1]


QUICK_CASES = [
    b'{"a": 1, "b": [1, 2.5, -0, -0.0, 1e308, 5e-324, 0.1, 1.5e308, 123456789012345.6], "c": null}',
    b'{"b": [0.30000000000000004, 2.2250738585072011e-308, 9007199254740993.0, 12345678901234567e-3]}',
    b'{"b": [1.5, 12345678901234567], "s": "12345678901234567"}',
    b'{"b": -90071992547409930}',
    b'{"t": "02:21:36 +0000", "u": "a\\u003ab", "k:y": {"x": "::"}}',
    b'{"a": 1, "a": 2}',
    b'{"a": "x:y", "b": 1, "a": 3}',
    b'{"a": 1, "a": "\\u003a"}',  # a key dropped and a colon written as an escape: read by the strict decoder
    b'{"a": 1,"a":2, "b": 3}',
    b'{"a:": 1, "a:": 2}',
    b'{"n": 9007199254740992}',
    b'{"n": 9007199254740993}',
    b'{"n": -12345678901234567890123}',
    b'{"n": 1e999}',
    b'{"n": NaN}',
    b'{"s": "\\ud800"}',
    b'{"s": "\\ud83d\\ude00:"}',
    b'{"s": "\xff"}',
    b"\xef\xbb\xbf{}",
    b'{"s": "a\tb"}',
    b"[" * 150 + b"]" * 150,
    b"[" * 250 + b"]" * 250,
    b'{"a": [1, 2,]}',
    b'{"a": 1} x',
    b'"just a string: with a colon"',
    b"",
]


@pytest.mark.parametrize("data", QUICK_CASES, ids=range(len(QUICK_CASES)))
def test_strict_loads_read_by_msgspec_is_what_the_strict_decoder_reads(monkeypatch, data):
    """``strict_loads`` reads with msgspec first (``quick_json.read_quickly``) and with the strict decoder where
    msgspec's value might differ: the value and the problems are the strict decoder's, for every text, bytes or
    str."""
    from reporting.format import strict_json

    for given in (data, data.decode("utf-8", "surrogateescape")):
        quick = strict_json.strict_loads("f", given)
        with monkeypatch.context() as patched:
            patched.setattr(strict_json, "read_quickly", lambda data: None)
            strict = strict_json.strict_loads("f", given)
        assert (repr(quick[0]), [str(p) for p in quick[1]]) == (repr(strict[0]), [str(p) for p in strict[1]])


def test_msgspec_reads_what_it_can_and_leaves_the_rest():
    from reporting.format.quick_json import read_quickly as _quick

    assert _quick(QUICK_CASES[0]) is not None and _quick(QUICK_CASES[5]) is None  # an escaped colon: strict
    assert _quick(b'{"t": "02:21:36", "k:y": {"x": "::"}}') == ({"t": "02:21:36", "k:y": {"x": "::"}},)
    for dropped in (6, 7, 9, 10):  # a key given twice, in every spacing, with colons in keys and values
        assert _quick(QUICK_CASES[dropped]) is None
    assert _quick(b'{"n": -900719925474099}') == ({"n": -900719925474099},)  # 15 digits: read
    assert _quick(QUICK_CASES[1]) == (
        {"b": [0.30000000000000004, 2.2250738585072011e-308, 9007199254740993.0, 12345678901234.567]},
    )
    assert _quick(QUICK_CASES[2]) is None and _quick(QUICK_CASES[3]) is None  # a whole number, even in a string
    assert _quick(QUICK_CASES[11]) is None and _quick(QUICK_CASES[12]) is None  # 16 or more: the strict decoder


@pytest.mark.parametrize(
    "text, read",
    [
        (b'{"time": 0.00014117999990048702, "t": 0.054213992999848415}', True),  # a float's many digits
        (b'{"n": 1234567890123456.5, "m": 12345678901234567e-3}', True),  # touching a point or an exponent
        (b'{"n": 123456789012345, "m": -123456789012345}', True),  # 15 digits
        (b"[1234567890123456]", False),  # 16 digits, where the text starts
        (b'{"n": 0.5, "m": 1234567890123456}', False),  # after a float
        (b'{"n": -12345678901234567}', False),
        (b'{"s": "id 12345678901234567"}', False),  # digits in a string: the strict decoder reads them
        (b'{"s": "id12345678901234567x"}', False),  # among letters: left to the strict decoder all the same
        (b'{"s": "v1.12345678901234567"}', True),  # after a point, in a string too
        (b'{"a": [0.1234567890123456789, 98765432109876543]}', False),  # one whole, after one that is not
    ],
)
def test_msgspec_leaves_every_integer_of_16_digits_to_the_strict_decoder(text, read):
    """An integer of 16 digits or more (perhaps beyond 2^53) is the strict decoder's to read, wherever it stands;
    a float's long fraction is msgspec's (the search looks for digits after a space, a quote or a letter only: the
    digits of a float's fraction follow its point)."""
    from reporting.format.quick_json import read_quickly as _quick

    assert (_quick(text) is not None) is read


def test_one_zstd_decompressor_a_thread_reads_each_member_alike_after_a_damaged_or_abandoned_one():
    """The thread's decompressor is made once and reused member after member: a damaged member, or one left part
    read (beyond its declared size), does not change what the next member reads as."""
    import types

    import zstandard

    from reporting.format import expansion

    good = json.dumps({"id": 7, "text": "x" * 3000}).encode()
    big = b"y" * (3 * expansion.CHUNK)
    packed = {name: zstandard.ZstdCompressor().compress(data) for name, data in (("good", good), ("big", big))}
    damaged = packed["good"][:20] + bytes(len(packed["good"]) - 20)

    def member(name, compressed, declared, crc):
        info = types.SimpleNamespace(
            filename=name, file_size=declared, compress_size=len(compressed), CRC=crc, compress_type=expansion.ZSTD
        )
        budget = expansion.Budget("log.eval", 1 << 30)
        return expansion._expand(compressed, info, 0, budget, "log.eval")

    assert member("a.json", packed["good"], len(good), zlib.crc32(good)) == (good, None)
    content, problem = member("b.json", damaged, len(good), zlib.crc32(good))
    assert content == b"" and "cannot be decompressed" in problem.message
    assert member("c.json", packed["good"], len(good), zlib.crc32(good)) == (good, None)
    content, problem = member("d.json", packed["big"], expansion.CHUNK, zlib.crc32(big))  # stopped after a piece
    assert content == b"" and "beyond the" in problem.message
    assert member("e.json", packed["good"], len(good), zlib.crc32(good)) == (good, None)
    assert member("f.json", packed["big"], len(big), zlib.crc32(big)) == (big, None)
