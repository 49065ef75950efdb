"""Runs as Parquet case tables: written by ``recompute --format parquet`` and by the run store, read by every
verb like any run file (recognised by content: Parquet's ``PAR1`` magic at both ends).

One row per case (``CASE_COLUMNS``), evaluated or not (``passed`` null with its ``error``), with the effective
severity weight and the recomputed weighted risk; the run's header (id, model, suite, time, source) rides in the
file's key-value metadata under ``runlens.run``. docs/scale.md describes the columns.
"""

from __future__ import annotations

import io
import json
import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any, BinaryIO, Optional, Union

from reporting.format.problems import Problem
from reporting.format.schema import RunReport
from reporting.format.severity import DEFAULT_SEVERITY_WEIGHTS, weighted_risk
from reporting.textsafe import file_name

RUN_METADATA_KEY = b"runlens.run"
TOOL_FIGURES_KEY = b"runlens.tool_figures"
SCHEMA_VERSION_KEY = b"runlens.schema_version"  # absent: a table written before version 3 (read as version 2)
# Version 3 fields ride in ``extra`` (as JSON, beside the case's own extra fields) under their own names; a table
# that says it is version 3 reads them back as those fields.
V3_FIELDS = ("messages", "judged_turn", "strategy", "plugin", "limit", "tags")
# Column -> Arrow type name of the case table, in order; SQL over the store reads these names.
CASE_COLUMNS = {
    "run_key": "string",
    "probe_id": "string",
    "probe_group": "string",
    "category": "string",
    "severity": "string",
    "passed": "bool_",
    "risk_score": "float64",
    "severity_weight": "float64",
    "weighted_risk": "float64",
    "error": "string",
    "task": "string",
    "probe_input": "string",
    "response": "string",
    "explanation": "string",
    "source_id": "string",
    "safe_signal_hits": "int64",
    "unsafe_signal_hits": "int64",
    "boundary_or_refusal_signal": "bool_",
    "matched_safe_patterns": "list<string>",
    "matched_unsafe_patterns": "list<string>",
    "detected_failure_modes": "list<string>",
    "failure_modes": "list<string>",
    "verdicts": "list<struct<judge, passed, score, explanation>>",
    "extra": "string",  # the case's fields beyond the format's (a conversation, ...), as JSON
}
LISTS = ("matched_safe_patterns", "matched_unsafe_patterns", "detected_failure_modes", "failure_modes")


def _arrow_type(kind: str):
    import pyarrow as pa

    if kind == "list<string>":
        return pa.list_(pa.string())
    if kind.startswith("list<struct"):
        fields = [("judge", pa.string()), ("passed", pa.bool_()), ("score", pa.float64()), ("explanation", pa.string())]
        return pa.list_(pa.struct(fields))
    return getattr(pa, kind)()


REQUIRED = ("probe_id", "category", "severity", "passed", "risk_score")


def looks_like_parquet(data: bytes) -> bool:
    return len(data) >= 12 and data[:4] == b"PAR1" and data[-4:] == b"PAR1"


def case_table(run: RunReport, key: Optional[str] = None):
    """The run's cases as an Arrow table of ``CASE_COLUMNS``, the run's header in its metadata."""
    import pyarrow as pa

    columns: dict[str, list[Any]] = {name: [] for name in CASE_COLUMNS}
    for case in run.cases:
        row = case_row(case, key)
        for name in CASE_COLUMNS:
            columns[name].append(row[name])
    return pa.table(columns, schema=case_schema()).replace_schema_metadata(table_metadata(run))


def case_row(case: Any, key: Optional[str] = None) -> dict[str, Any]:
    """A case's row of the case table: its effective weight and recomputed weighted risk when evaluated."""
    evaluated = case.passed is not None
    weight = case.severity_weight if case.severity_weight is not None else DEFAULT_SEVERITY_WEIGHTS[case.severity]
    risk = case.risk_score if evaluated else None
    return {
        "run_key": key,
        "probe_id": case.probe_id,
        "probe_group": case.probe_group,
        "category": case.category,
        "severity": case.severity,
        "passed": case.passed,
        "risk_score": risk,
        "severity_weight": float(weight) if evaluated else None,
        "weighted_risk": float(weighted_risk(risk, weight)) if evaluated and risk is not None else None,
        "error": case.error,
        "task": case.task,
        "probe_input": case.probe_input,
        "response": case.response,
        "explanation": case.explanation,
        "source_id": case.source_id,
        "safe_signal_hits": case.safe_signal_hits,
        "unsafe_signal_hits": case.unsafe_signal_hits,
        "boundary_or_refusal_signal": case.boundary_or_refusal_signal,
        **{name: list(getattr(case, name)) for name in LISTS},
        "verdicts": [
            {"judge": judge, "passed": v.passed, "score": v.score, "explanation": v.explanation}
            for judge, v in case.verdicts.items()
        ],
        "extra": _extra_json(case),
    }


def case_schema():
    """The Arrow schema of a case table (``CASE_COLUMNS``, texts plain)."""
    import pyarrow as pa

    return pa.schema([(name, _arrow_type(kind)) for name, kind in CASE_COLUMNS.items()])


def table_metadata(run: RunReport) -> dict[bytes, bytes]:
    """A case table's metadata: the run's header, the schema version and the producing tool's own figures."""
    metadata = {
        RUN_METADATA_KEY: json.dumps(run.run.model_dump(mode="json", exclude_none=True)).encode(),
        SCHEMA_VERSION_KEY: b"3",
    }
    tool_figures = (run.model_extra or {}).get("tool_figures")
    if tool_figures:  # the producing tool's own figures, so drift against them survives the conversion
        metadata[TOOL_FIGURES_KEY] = json.dumps(tool_figures).encode()
    return metadata


def _extra_json(case: Any) -> Optional[str]:
    """The case's own extra fields and its version 3 fields, as one JSON object (None when it has neither). A
    conversation's turns keep their nulls (a turn's own field written null is the file's, and written back)."""
    extra = dict(case.__pydantic_extra__ or {})
    for name in V3_FIELDS:
        value = getattr(case, name)
        if value is not None:
            extra[name] = case.model_dump(mode="json", include={name}, exclude_none=name != "messages")[name]
    return json.dumps(extra) if extra else None


def fill_case_table(table, handle: BinaryIO) -> None:
    """The case table written to an open file, as every RunLens case table is (zstd)."""
    import pyarrow.parquet as pq

    pq.write_table(table, handle, compression="zstd")


def write_case_table(table, path: Union[str, Path]) -> None:
    """Through a temporary file in the same folder and a rename, with the user's umask."""
    from reporting.format.writing import OutputError, check_output_path, current_umask

    target = check_output_path(path)
    folder = target.parent if str(target.parent) else Path(".")
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=folder)
    except OSError as exc:
        raise OutputError(f"{target}: cannot write in {folder}: {exc.strerror or type(exc).__name__}") from None
    try:
        os.fchmod(fd, 0o666 & ~current_umask())
        with os.fdopen(fd, "wb") as handle:
            fill_case_table(table, handle)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, target)
    except BaseException as exc:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        if isinstance(exc, OSError):  # (a full disk, a quota: said as the output's problem)
            raise OutputError(f"{target}: cannot write: {exc.strerror or type(exc).__name__}") from None
        raise


def read_parquet_document(data: bytes, label: str) -> tuple[Optional[dict[str, Any]], list[Problem]]:
    """A Parquet case table as a RunLens document (schema version 3, or 2 for a table written before it), or the
    problems that stop it.

    The footer's rows, values and uncompressed sizes are checked against the expansion limits before a page is
    read; text columns are read as dictionaries and their expanded size counted before any row is made (a small
    file of one long text repeated by run-length encoding never becomes gigabytes); each column must be of its
    type; the JSON in the metadata and in ``extra`` goes through the strict decoder; no thread pool is started
    (pyarrow's pools could abort the interpreter at exit)."""
    table, problems = _read_table(data, label)
    if table is None:
        return None, problems
    return table_document(table, label)


def table_run_id(label: str) -> str:
    """The run id of a case table whose metadata names none: its file name up to the first dot."""
    return file_name(label).split(".")[0] or "run"


def table_document(table, label: str) -> tuple[Optional[dict[str, Any]], list[Problem]]:
    """A case table already read (``_read_table``) as a RunLens document, or the problems that stop it."""
    try:
        return _document(table, label)
    except (ValueError, TypeError, KeyError, AttributeError, OverflowError, UnicodeDecodeError) as exc:
        return None, [Problem(label, "$", f"not a readable case table: {type(exc).__name__}: {str(exc)[:160]}")]


def _read_table(data: bytes, label: str):
    """The Arrow table of a Parquet file within the expansion limits, or the problems."""
    from reporting.format.expansion import dense_bytes, expansion_limit, parquet_limits

    try:
        import pyarrow as pa
        import pyarrow.parquet as pq

        probe = pq.ParquetFile(io.BytesIO(data), pre_buffer=False)
        problems = parquet_limits(probe.metadata, label, len(data))
        if problems:
            return None, problems
        texts = [
            column.path
            for column in (probe.schema.column(i) for i in range(len(probe.schema)))
            if column.physical_type == "BYTE_ARRAY"
        ]
        source = pq.ParquetFile(io.BytesIO(data), pre_buffer=False, read_dictionary=texts)
        # A row group at a time: pyarrow cannot give the list columns' elements as dictionaries across row groups
        # ("Nested data conversions not implemented for chunked array outputs"), and pq.write_table starts a new
        # row group every 1,048,576 rows. The groups' tables are joined as chunks, nothing copied.
        groups = [source.read_row_group(i, use_threads=False) for i in range(source.num_row_groups)]
        table = pa.concat_tables(groups) if groups else source.read(use_threads=False)
    except Exception as exc:  # noqa: BLE001 - a broken file is a problem of that file, whatever pyarrow raises
        return None, [Problem(label, "$", f"not a readable Parquet file: {str(exc)[:200]}")]
    twice = sorted({name for name in table.column_names if table.column_names.count(name) > 1})
    if twice:
        return None, [Problem(label, str(twice[0]), "a column of the case table is given more than once")]
    for name, column in zip(table.column_names, table.columns):
        try:
            column.validate(full=True)  # offsets, the UTF-8 of every text, dictionary indices in range
        except Exception as exc:  # noqa: BLE001 - pyarrow's ArrowInvalid and kin
            return None, [Problem(label, str(name), f"the column does not hold valid data: {str(exc)[:200]}")]
    expanded = sum(dense_bytes(column) for column in table.columns)
    if expanded > expansion_limit(len(data)):
        from reporting.format.expansion import Budget

        budget = Budget(label, len(data))
        budget.take(expanded)
        return None, [budget.problem("$")]
    wrong = [
        Problem(
            label,
            name,
            f"a column of the case table must be of type {kind}",
            str(_plain(table.schema.field(name).type)),
        )
        for name, kind in CASE_COLUMNS.items()
        if name in table.column_names and not _plain(table.schema.field(name).type).equals(_arrow_type(kind))
    ]
    return (None, wrong) if wrong else (table, [])


def _plain(kind):
    """An Arrow type with its dictionaries replaced by their value types (text read as dictionaries)."""
    import pyarrow as pa

    if pa.types.is_dictionary(kind):
        return _plain(kind.value_type)
    if pa.types.is_list(kind):
        return pa.list_(_plain(kind.value_type))
    if pa.types.is_struct(kind):
        return pa.struct([pa.field(f.name, _plain(f.type), f.nullable) for f in kind])
    return kind


def _json(label: str, path: str, raw: Any, problems: list[Problem]) -> Any:
    """JSON text held in the file (its metadata, a case's ``extra``) through the strict decoder; None if bad."""
    from reporting.format.strict_json import strict_loads

    value, errors = strict_loads(label, raw if isinstance(raw, (bytes, str)) else b"", path)
    problems.extend(errors)
    return value


def plain_json(text: Union[str, bytes]) -> Any:
    """JSON that RunLens wrote itself (the columnar reader's ``extra``), decoded by msgspec (2.6x ``json.loads``; the
    same values), by ``json.loads`` where msgspec refuses it (a NaN written as such)."""
    import msgspec

    try:
        return msgspec.json.decode(text)
    except msgspec.DecodeError:
        return json.loads(text)


def plain_json_once() -> Callable[[Optional[str]], Any]:
    """``plain_json`` that decodes each distinct text once ({} for none): rows with the same ``extra`` (a garak
    probe's tags, strategy and plugin over its attempts) share one decoded value, which nothing changes."""
    decoded: dict[Optional[str], Any] = {None: {}, "": {}}

    def decode(text: Optional[str]) -> Any:
        found = decoded.get(text)
        return found if found is not None else decoded.setdefault(text, plain_json(text))  # type: ignore[arg-type]

    return decode


def verdict_map(structs: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """A row's verdicts (the table's list of structs) as the case document holds them: judge -> verdict."""
    return {
        str(v["judge"]): {"passed": v["passed"], "score": v["score"], "explanation": v["explanation"]} for v in structs
    }


def case_records(
    table, label: str, problems: list[Problem], first: int = 0, ours: bool = False
) -> list[dict[str, Any]]:
    """The rows of a case table as case documents (what a run file holds for each case); a row whose ``extra`` is
    not a JSON object's text is left out with its problem. ``first``: the first row's position, for messages.
    ``ours``: the table is the columnar reader's, whose ``extra`` it wrote itself from what it checked (decoded
    plainly; a file's is decoded by the strict reader)."""
    keep = [c for c in table.column_names if c != "run_key"]
    plain = [c for c in keep if c not in ("verdicts", "extra")]
    required = [c in REQUIRED for c in plain]
    columns = table.select(keep).to_pydict()  # a column at a time: many times faster than a row of dicts each
    verdicts = columns.get("verdicts") or [None] * table.num_rows
    extras = columns.get("extra") or [None] * table.num_rows
    cases = []
    decode = plain_json_once()  # the reader's own extra texts (read only: merged into a new dict)
    for i, values, row_verdicts, row_extra in zip(
        range(first, first + table.num_rows), zip(*(columns[c] for c in plain)), verdicts, extras
    ):
        case = {k: v for k, v, needed in zip(plain, values, required) if v is not None or needed}
        row = {"verdicts": row_verdicts, "extra": row_extra}
        if row.get("verdicts"):
            case["verdicts"] = verdict_map(row["verdicts"])
        if row.get("extra"):
            before = len(problems)
            extra = decode(row["extra"]) if ours else _json(label, f"cases[{i}].extra", row["extra"], problems)
            if len(problems) > before:
                continue
            if isinstance(extra, dict):
                case = {**{k: v for k, v in extra.items() if k not in case}, **case}
        cases.append(case)
    return cases


def _document(table, label: str) -> tuple[Optional[dict[str, Any]], list[Problem]]:
    missing = [c for c in REQUIRED if c not in table.column_names]
    if missing:
        return None, [Problem(label, "$", f"a Parquet case table needs the column(s) {', '.join(missing)}")]
    metadata = table.schema.metadata or {}
    header: dict[str, Any] = {}
    problems: list[Problem] = []
    if RUN_METADATA_KEY in metadata:
        header = _json(label, "metadata.runlens.run", metadata[RUN_METADATA_KEY], problems)
        if problems:
            return None, problems
        if not isinstance(header, dict):
            return None, [Problem(label, "metadata.runlens.run", "must be an object")]
    if "run_id" not in header:
        header["run_id"] = table_run_id(label)
    cases = case_records(table, label, problems)
    version = 3 if metadata.get(SCHEMA_VERSION_KEY) == b"3" else 2
    document: dict[str, Any] = {"schema_version": version, "run": header, "cases": cases}
    if TOOL_FIGURES_KEY in metadata:
        figures = _json(label, "metadata.runlens.tool_figures", metadata[TOOL_FIGURES_KEY], problems)
        if figures is not None:
            document["tool_figures"] = figures
    return document, problems
