"""A Parquet case table read as the columnar reader's run (``ColumnarRun``): its columns kept as they are, checked
over whole columns, with no case document made per row. ``recompute --format parquet`` and the run store write such
tables; before this, every verb read one back a case document and a pydantic case per row (a million cases: a
million dicts; ten million did not fit in 24 GB).

Like the columnar reader of JSON, this path only says "this run, exactly" or "not me": where anything is wrong or cannot
be vouched for (a table written before version 3, a verdict with no judge or given twice, a case's ``extra`` that the
strict decoder or the schema refuses, a field of the format hidden in ``extra``, a limit (``extra`` holds it without
its nulls), a conversation not written as the columnar reader of JSON writes it (so were those of tables written
before 2026-11-28)),
``read_parquet_run`` returns None and the per-record reader (``reporting.format.parquet.read_parquet_document``) reads
the table and names every problem as always. The cases a table-backed run makes on demand come from the same rows by the
same ``case_records`` the per-record reader uses, so the two give the same run (tests/test_columnar_parquet.py)."""

from __future__ import annotations

from typing import Any, Optional, Union

from reporting.format.columnar_checks import MAX_INTEGER, ColumnarRun, NotMine, finish, kept_type
from reporting.format.parquet import (
    CASE_COLUMNS,
    RUN_METADATA_KEY,
    SCHEMA_VERSION_KEY,
    TOOL_FIGURES_KEY,
    V3_FIELDS,
    _read_table,
    table_document,
    table_run_id,
)
from reporting.format.problems import Problem

_EVERY_NULL_KEPT = ("passed", "risk_score")  # a null kept as the case's value (REQUIRED); others leave the key out
# A minimal valid case: what a case's ``extra`` is checked beside (its version 3 fields, its own fields)
_BASE = {"probe_id": "p", "category": "c", "severity": "low", "passed": True, "risk_score": 0.0}


def read_parquet_run(data: bytes, label: str) -> Union[ColumnarRun, tuple[Optional[dict[str, Any]], list[Problem]]]:
    """The Parquet case table in ``data`` as a columnar run; where this path cannot vouch for it, the document the
    per-record reader makes of the same table (read once), or the problems that stop it."""
    table, problems = _read_table(data, label)
    if table is None or problems:
        return None, problems
    try:
        return _run(table, label)
    except NotMine:
        pass
    except (ValueError, TypeError, KeyError, AttributeError, OverflowError, UnicodeDecodeError):
        pass  # (pyarrow's errors are ValueError and TypeError): the per-record reader names the problem
    return table_document(table, label)


def _run(table: Any, label: str) -> ColumnarRun:
    import pyarrow as pa

    from reporting.format.migrate import check_version
    from reporting.format.reading import _check_header
    from reporting.format.strict_json import strict_loads

    metadata = table.schema.metadata or {}
    if metadata.get(SCHEMA_VERSION_KEY) != b"3" or set(table.column_names) - {"run_key"} != set(CASE_COLUMNS) - {
        "run_key"
    }:
        # A table written before version 3 goes through the migration chain case by case; a column beyond the
        # format's is a case's field there (checked, kept), and one of the format's missing is its default
        raise NotMine
    header: dict[str, Any] = {}
    if RUN_METADATA_KEY in metadata:
        header, problems = strict_loads(label, metadata[RUN_METADATA_KEY], "metadata.runlens.run")
        if problems or not isinstance(header, dict):
            raise NotMine
    header.setdefault("run_id", table_run_id(label))
    document: dict[str, Any] = {"schema_version": 3, "run": header}
    if TOOL_FIGURES_KEY in metadata:
        figures, problems = strict_loads(label, metadata[TOOL_FIGURES_KEY], "metadata.runlens.tool_figures")
        if problems:
            raise NotMine
        if figures is not None:
            document["tool_figures"] = figures
    if check_version(label, 3):
        raise NotMine
    header_problems: list = []
    meta, stored = _check_header(label, document, header_problems)
    if header_problems:
        raise NotMine
    plain = pa.schema(
        [(name, kept_type(name, table.schema.field(name).type)) for name in CASE_COLUMNS if name in table.column_names],
        metadata=metadata,
    )
    table = table.select(plain.names).cast(plain)
    _check_verdicts(table)
    extra = _checked_extra(table, label)
    return finish(label, meta, 3, stored, table, _explicit(table), None, extra=extra, whole=True)


def _explicit(table: Any):
    """A null of ``passed`` or ``risk_score`` is the case's own null (the per-record reader keeps it); a null of a
    count, a flag or a list leaves the key out (the case's default)."""

    def explicit_nulls(name: str) -> int:
        if name in _EVERY_NULL_KEPT and name in table.column_names:
            return table.column(name).null_count
        return 0

    return explicit_nulls


def _check_verdicts(table: Any) -> None:
    """Each verdict names its judge, once per case, with a finite score (``Verdict``; the per-record reader makes
    a case's verdicts a mapping, where a judge given twice would keep only its last verdict)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if "verdicts" not in table.column_names:
        return
    for chunk in table.column("verdicts").chunks:
        values = pc.list_flatten(chunk)
        if not len(values):
            continue
        if values.null_count:
            raise NotMine
        judges = values.field("judge")
        if judges.null_count:
            raise NotMine
        scores = values.field("score")
        if len(scores) > scores.null_count:
            if pc.any(pc.invert(pc.is_finite(scores))).as_py():
                raise NotMine
            bounds = pc.min_max(scores).as_py()
            if bounds["min"] < -MAX_INTEGER or bounds["max"] > MAX_INTEGER:
                raise NotMine
        pairs = pa.table({"row": pc.list_parent_indices(chunk), "judge": judges})
        if pairs.group_by(["row", "judge"], use_threads=False).aggregate([]).num_rows != len(values):
            raise NotMine  # a judge given twice in one case


def _checked_extra(table: Any, label: str) -> Any:
    """The ``extra`` column, once each distinct text is what the per-record reader accepts: a JSON object (by the
    strict decoder) whose version 3 fields the schema validates (a judged turn an assistant turn of its messages),
    whose own fields are finite and of bounded depth, and which hides no other field of the format."""
    import pyarrow as pa
    import pyarrow.compute as pc

    from reporting.format.reading import _nonfinite_and_depth
    from reporting.format.schema import Case, evaluation_problem
    from reporting.format.strict_json import strict_loads

    if "extra" not in table.column_names:
        return pa.nulls(table.num_rows, pa.string())
    column = table.column("extra")
    if column.null_count == len(column):
        return column
    format_fields = set(Case.model_fields) - set(V3_FIELDS)
    for text in pc.unique(column).to_pylist():
        if text is None:
            continue
        value, problems = strict_loads(label, text, "extra")
        if problems or not isinstance(value, dict) or format_fields.intersection(value):
            raise NotMine
        if "limit" in value or ("messages" in value and _as_written(label, value) != text):
            raise NotMine  # a limit is written without its nulls, and a conversation was before 2026-11-28
        try:
            case = Case.model_validate({**_BASE, **value})
        except ValueError:  # (pydantic's ValidationError)
            raise NotMine from None
        if evaluation_problem(case, 3) is not None:
            raise NotMine
        for key, item in (case.__pydantic_extra__ or {}).items():
            _nonfinite_and_depth(label, key, item, problems)
        if problems:
            raise NotMine
    return column


def _as_written(label: str, value: dict[str, Any]) -> str:
    """The ``extra`` text the columnar reader of JSON makes of a case with a conversation (``extra_column``): its own
    fields, then its version 3 fields, the turns as the models dump them (``columnar_turns``: nulls too); a table
    whose text is not this one exactly goes to the per-record reader."""
    import json

    from reporting.format.columnar_turns import conversations

    written = {key: item for key, item in value.items() if key not in V3_FIELDS}
    for name in V3_FIELDS:
        item = value.get(name)
        if item is not None and name == "messages":
            item = json.loads(conversations(label, 1, [0], [json.dumps(item).encode()])[1][0])
        if item is not None:
            written[name] = item
    return json.dumps(written)
