"""A run the columnar reader read, as the typed run: a ``RunReport`` whose cases are the rows of its Arrow case table.

The figures read the table's columns and never make a case (``reporting.analysis.table_frame``); a ``Case`` is
made when one is asked for (a drill-down, a review card, a writer that encodes one case at a time), validated by
the schema exactly as the per-record reader validates it, a chunk of rows at a time. The reader has checked every
rule of the schema over whole columns before (``reporting.format.columnar_checks``), so no case can fail here; a
test reads every sample, imported and hostile run both ways and compares them case by case.
"""

from __future__ import annotations

import operator
from collections.abc import Iterable, Iterator, Sequence
from typing import Any, Optional, Union, overload

from reporting.format.columnar_checks import ColumnarRun
from reporting.format.parquet import case_records, verdict_map
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

    def columns(self, names: Sequence[str]) -> Iterator[dict[str, Any]]:
        """Each case's ``names`` only (columns of the table: verdicts as judge -> verdict), read a column at a time:
        what a recount of a tool's figures reads, without the rest of each case."""
        step = CHUNK * 16
        for start in range(0, len(self), step):
            part = self._rows.slice(start, step).select(list(names)).to_pydict()
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


def run_of_table(columnar: ColumnarRun) -> RunReport:
    """The typed run of a table the columnar reader made: its header as read, its cases as the table's rows."""
    stored = columnar.stored
    extras = {"tool_figures": stored["tool_figures"]} if stored.get("tool_figures") is not None else {}
    return RunReport.model_construct(
        schema_version=columnar.version,
        run=columnar.meta,
        cases=TableCases(columnar),  # type: ignore[arg-type]
        aggregate_metrics=stored.get("aggregate_metrics"),
        observability=stored.get("observability"),
        **extras,
    )


def table_of(run: RunReport) -> Any:
    """The case table behind a run's cases, or None for a run of case objects."""
    cases = run.cases
    return cases.table if isinstance(cases, TableCases) else None
