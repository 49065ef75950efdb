"""A run the columnar reader read, as the typed run: a ``RunReport`` whose cases are the rows of its Arrow case table.

The figures read the table's columns and never make a case (``reporting.analysis.table_frame``); a ``Case`` is
made when one is asked for (a drill-down, a review card, a writer that encodes one case at a time), validated by
the schema exactly as the per-record reader validates it, a chunk of rows at a time. The reader has checked every
rule of the schema over whole columns before (``reporting.format.columnar_checks``), so no case can fail here; a
test reads every sample, imported and hostile run both ways and compares them case by case.
"""

from __future__ import annotations

import operator
from collections.abc import Collection, Iterable, Iterator, Mapping, Sequence
from typing import Any, Optional, Union, overload

from reporting.format.columnar_checks import ColumnarRun
from reporting.format.parquet import case_records, case_schema, case_table, table_metadata, verdict_map
from reporting.format.schema import Case, RunReport
from reporting.format.table_records import dumped_rows

CHUNK = 2048  # rows made into cases at once


class TableCases(Sequence[Case]):
    """The cases of a run, held as its case table (``reporting.format.parquet.CASE_COLUMNS``) and the file's own
    severity weights and weighted risks (``given``); ``table``: the table, whose columns the figures read."""

    def __init__(self, columnar: ColumnarRun) -> None:
        import pyarrow as pa

        self.columnar = columnar
        self.table = columnar.table
        rows = self.table
        for name in ("severity_weight", "weighted_risk"):  # a case says what the file said, not the effective value
            at = rows.column_names.index(name)
            rows = rows.set_column(at, pa.field(name, pa.float64()), columnar.given.column(name))
        self._rows = rows
        # (first row, its chunk's cases) as one value: a reader on another thread (the dashboard's sessions share a
        # run) sees a whole pair, never one chunk's start with another's cases
        self._cached: tuple[int, list[Case]] = (-1, [])

    def __len__(self) -> int:
        return self.table.num_rows

    def _records(self, start: int, rows: Any = None, count: Optional[int] = None) -> list[dict[str, Any]]:
        """The case documents of ``count`` rows (a chunk) from ``start`` (of the case table, or of ``rows`` taken
        from it)."""
        rows = self._rows if rows is None else rows
        count = min(CHUNK if count is None else count, rows.num_rows - start)
        problems: list[Any] = []
        records = case_records(rows.slice(start, count), self.columnar.label, problems, first=start, ours=True)
        if problems or len(records) != count:
            raise ValueError(f"{self.columnar.label}: the case table's rows cannot be read back: {problems[:1]}")
        return records

    def _cases(self, start: int) -> list[Case]:
        return [Case.model_validate(record) for record in self._records(start)]

    @overload
    def __getitem__(self, index: int) -> Case: ...

    @overload
    def __getitem__(self, index: slice) -> list[Case]: ...

    def __getitem__(self, index: Union[int, slice]) -> Union[Case, list[Case]]:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        i = operator.index(index)
        if i < 0:
            i += len(self)
        if not 0 <= i < len(self):
            raise IndexError("case index out of range")
        start = i - i % CHUNK
        cached_start, chunk = self._cached
        if cached_start != start:
            chunk = self._cases(start)
            self._cached = (start, chunk)
        return chunk[i - start]

    def __iter__(self) -> Iterator[Case]:
        for start in range(0, len(self), CHUNK):
            cached_start, chunk = self._cached
            yield from (chunk if start == cached_start else self._cases(start))

    def dumped(
        self, positions: Iterable[int], none: Sequence[str] = (), empty: Sequence[str] = ()
    ) -> Iterator[dict[str, Any]]:
        """The cases at ``positions`` (ascending) as ``case.model_dump(mode="json")`` gives them, made from the
        table's rows without a case object: every field in the schema's order (its default where the row has
        none), then the case's own extra fields; without the fields of ``none`` that are None and those of
        ``empty`` that are empty (``table_records.unused_left_out``). A writer of many cases takes this."""
        wanted = [int(i) for i in positions]
        if not wanted:
            return
        rows, first = self._rows, wanted[0]
        if wanted[-1] - first + 1 != len(wanted):
            import pyarrow as pa

            # Rows spread over the table (the HTML's held cases): taken once, into one table of only those rows.
            rows, first = rows.take(pa.array(wanted, type=pa.int64())), 0
        for start in range(first, first + len(wanted), CHUNK):
            part = rows.slice(start, min(CHUNK, first + len(wanted) - start))
            yield from dumped_rows(part, self.columnar.label, start, none, empty)

    def columns(self, names: Sequence[str], keep: Any = None) -> Iterator[dict[str, Any]]:
        """Each case's ``names`` only (columns of the table: verdicts as judge -> verdict), read a column at a time:
        what a recount of a tool's figures reads, without the rest of each case. ``keep``: a mask of the rows to
        read (the others are not read at all)."""
        step = CHUNK * 16
        rows = self._rows.select(list(names))
        if keep is not None:
            rows = rows.filter(keep)
        for start in range(0, rows.num_rows, step):
            part = rows.slice(start, step).to_pydict()
            for values in zip(*(part[name] for name in names)):
                row = dict(zip(names, values))
                if "verdicts" in row:
                    row["verdicts"] = verdict_map(row["verdicts"] or [])
                yield row

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Sequence) and not isinstance(other, (str, bytes)):
            return len(self) == len(other) and all(a == b for a, b in zip(self, other))
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"<{len(self)} cases of {self.columnar.label!r} in a case table>"


def rows_for(run: RunReport, probes: Optional[Collection[str]], names: Sequence[str]) -> Iterator[dict[str, Any]]:
    """The fields ``names`` of the cases whose probe id is in ``probes`` (None: every case), in the run's order,
    verdicts as judge -> verdict: for a run read by columns, read from the rows of those cases alone
    (``TableCases.columns``, no case object); for a run of case objects, from its cases."""
    cases = run.cases
    if not isinstance(cases, TableCases):
        wanted = None if probes is None else set(probes)
        return (_fields(case, names) for case in cases if wanted is None or case.probe_id in wanted)
    if probes is None:
        return cases.columns(names)
    import pyarrow as pa
    import pyarrow.compute as pc

    named = sorted(p for p in probes if _encodable(p))  # (a lone surrogate from argv names no case of a run)
    if not named:
        return iter(())
    return cases.columns(names, pc.is_in(cases.table.column("probe_id"), value_set=pa.array(named, pa.string())))


def _encodable(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _fields(case: Case, names: Sequence[str]) -> dict[str, Any]:
    row = {name: getattr(case, name) for name in names}
    if "verdicts" in row:
        row["verdicts"] = {name: v.model_dump() for name, v in case.verdicts.items()}
    return row


def pass_fail_counts(run: RunReport) -> tuple[int, int]:
    """The cases the run passed and failed (those not evaluated in neither), from the ``passed`` column of a run
    read by columns."""
    cases = run.cases
    if not isinstance(cases, TableCases):
        verdicts = [case.passed for case in cases]
        return verdicts.count(True), verdicts.count(False)
    import pyarrow.compute as pc

    passed = cases.table.column("passed")
    passes = int(pc.sum(passed).as_py() or 0)
    return passes, len(passed) - passed.null_count - passes


UPDATABLE = (
    "passed",
    "error",
    "risk_score",
    "severity",
    "severity_weight",
    "weighted_risk",
)  # what updated_cases replaces
_GIVEN = ("severity_weight", "weighted_risk")  # as the case gives them (the table holds the effective values)


def updated_cases(
    run: RunReport, updates: Mapping[str, Mapping[str, Any]], stored_figures: bool = True
) -> Union[list[Case], TableCases]:
    """The run's cases with ``updates`` (probe id -> field -> value, fields of ``UPDATABLE``) applied: case
    objects copied with them, or, for a run read by columns, a case table whose rows of those cases are replaced
    (their effective severity weight and weighted risk made again, as the reader makes them), every other row
    shared with the run's. ``stored_figures=False``: the table no longer carries the figures the file stored
    (the producer's own tool figures in its metadata), as a run whose verdicts changed must not."""
    cases = run.cases
    for update in updates.values():
        if not set(update) <= set(UPDATABLE):
            raise ValueError(f"updated_cases: only {', '.join(UPDATABLE)} can be updated, not {sorted(update)}")
    if not isinstance(cases, TableCases):
        return [
            case.model_copy(update=dict(updates[case.probe_id])) if case.probe_id in updates else case for case in cases
        ]
    if not updates and stored_figures:
        return cases
    return TableCases(_updated(cases.columnar, updates, stored_figures))


def _updated(columnar: ColumnarRun, updates: Mapping[str, Mapping[str, Any]], stored_figures: bool) -> ColumnarRun:
    import dataclasses

    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    from reporting.format.severity import DEFAULT_SEVERITY_WEIGHTS

    table, given = columnar.table, columnar.given
    ids = table.column("probe_id")
    mask = pc.is_in(ids, value_set=pa.array(list(updates), pa.string()))
    at = np.flatnonzero(mask.to_numpy(zero_copy_only=False))
    old = {name: pc.take((given if name in _GIVEN else table).column(name), at).to_pylist() for name in UPDATABLE}
    new: dict[str, list[Any]] = {name: [] for name in (*UPDATABLE, "effective", "effective_risk")}
    for i, probe in enumerate(pc.take(ids, at).to_pylist()):
        update = updates[probe]
        row = {name: update[name] if name in update else old[name][i] for name in UPDATABLE}
        evaluated = row["passed"] is not None
        weight = row["severity_weight"]
        effective = (DEFAULT_SEVERITY_WEIGHTS[row["severity"]] if weight is None else weight) if evaluated else None
        risk = row["risk_score"] = row["risk_score"] if evaluated else None  # (the table holds no risk unevaluated)
        for name in UPDATABLE:
            new[name].append(row[name])
        new["effective"].append(effective)
        new["effective_risk"].append(None if risk is None or effective is None else min(risk * effective, 1.0))
    flags = mask.combine_chunks()

    def replaced(rows: Any, name: str, values: list[Any]) -> Any:
        column = rows.column(name).combine_chunks()
        column = pc.replace_with_mask(column, flags, pa.array(values, type=column.type))
        return rows.set_column(rows.schema.get_field_index(name), rows.schema.field(name), column)

    for name, values in (("severity_weight", new["effective"]), ("weighted_risk", new["effective_risk"])):
        table = replaced(table, name, values)
    for name in UPDATABLE:
        if name in _GIVEN:
            given = replaced(given, name, new[name])
        else:
            table = replaced(table, name, new[name])
    identity = columnar.identity
    if identity is not None:  # (probe ids, verdicts, risk scores, responses): the fingerprint of the run as reviewed
        identity = (identity[0], table.column("passed"), table.column("risk_score"), identity[3])
    stored = columnar.stored
    if not stored_figures:
        from reporting.format.parquet import TOOL_FIGURES_KEY

        kept = {k: v for k, v in (table.schema.metadata or {}).items() if k != TOOL_FIGURES_KEY}
        table, stored = table.replace_schema_metadata(kept), {}
    return dataclasses.replace(columnar, table=table, given=given, identity=identity, stored=stored)


def run_of_table(columnar: ColumnarRun) -> RunReport:
    """The typed run of a table the columnar reader made: its header as read (the stored figures and any other top
    key, kept as the per-record reader keeps them), its cases as the table's rows."""
    return RunReport.model_construct(
        schema_version=columnar.version,
        run=columnar.meta,
        cases=TableCases(columnar),  # type: ignore[arg-type]
        **columnar.stored,
    )


def table_of(run: RunReport) -> Any:
    """The case table behind a run's cases, or None for a run of case objects."""
    cases = run.cases
    return cases.table if isinstance(cases, TableCases) else None


def run_case_table(run: RunReport, key: Optional[str] = None) -> Any:
    """``parquet.case_table`` of a run: of a run read by columns, its own table (which holds its cases as a case
    table does: effective weights, risks of evaluated cases), no case object made; the same table."""
    table = table_of(run)
    if table is None:
        return case_table(run, key)
    import pyarrow as pa

    schema = case_schema()
    keys = pa.array([key] * table.num_rows, pa.string())
    table = table.drop_columns([name for name in ("run_key",) if name in table.column_names])
    table = table.append_column("run_key", keys)
    return table.select(schema.names).cast(schema).replace_schema_metadata(table_metadata(run))
