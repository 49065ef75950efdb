"""The review queues over a run's columns: which cases a reviewer sees, in which order, with no case object but the
ones shown (a run of ten million cases is a table, not ten million ``Case`` objects; the Review page made every
one before).

- ``failures``: failures first, the riskiest first, then the other cases by risk; ties by probe id.
- ``random``: the cases by probe id, shuffled by ``random.Random(run_id)``: drawn once per run over every case, the
  same order for every reviewer, a reviewer's decided cases left out of it.
- ``disagreements``: the cases whose verdicts (the primary one and each judge's) are not all the same, in run order.

Each is the order the per-case definition gives (``tests/test_review_queue.py`` compares the two on runs read
both ways)."""

from __future__ import annotations

import random
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

from reporting.format.table_run import table_of

KINDS = ("failures", "random", "disagreements")


def _columns(run: Any):
    """The run's probe ids, primary verdicts, risks and verdicts as Arrow columns (a run of case objects: made
    from them)."""
    import pyarrow as pa

    table = table_of(run)
    if table is not None:
        return table.select(["probe_id", "passed", "risk_score", "verdicts"])
    cases = list(run.cases)
    return pa.table(
        {
            "probe_id": pa.array([c.probe_id for c in cases], pa.string()),
            "passed": pa.array([c.passed for c in cases], pa.bool_()),
            "risk_score": pa.array([c.risk_score for c in cases], pa.float64()),
            "verdicts": pa.array(
                [[{"passed": v.passed} for v in c.verdicts.values()] for c in cases],
                pa.list_(pa.struct([("passed", pa.bool_())])),
            ),
        }
    )


def _probe_ids(run: Any) -> Any:
    return _columns(run).column("probe_id")


def queue_order(run: Any, kind: str) -> np.ndarray:
    """The positions of the run's cases in the order of queue ``kind`` (every case the queue holds)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if kind not in KINDS:
        raise ValueError(f"queue: one of {', '.join(KINDS)}, not {kind!r}")
    columns = _columns(run)
    n = columns.num_rows
    if kind == "failures":
        # Sorted by probe id, then stably by risk, then stably by outcome: Arrow's sort on the three keys at once
        # took 21 s over ten million cases read from Parquet, these three sorts 6 s.
        order = pc.sort_indices(columns["probe_id"]).to_numpy().astype(np.int64)
        risk = pc.negate(pc.fill_null(columns["risk_score"], 0.0)).to_numpy()
        order = order[np.argsort(risk[order], kind="stable")]
        not_failed = pc.fill_null(pc.invert(pc.equal(columns["passed"], False)), True).to_numpy()
        return order[np.argsort(not_failed[order], kind="stable")]
    if kind == "random":
        ordered = pc.sort_indices(columns["probe_id"]).to_numpy().astype(np.int64).tolist()
        random.Random(run.run.run_id).shuffle(ordered)  # (by position only: as shuffling the cases themselves)
        return np.asarray(ordered, dtype=np.int64)
    said_true = np.zeros(n, dtype=bool)
    said_false = np.zeros(n, dtype=bool)
    passed = columns["passed"].to_numpy(zero_copy_only=False)
    said_true[passed == True] = True  # noqa: E712 - an object array of True, False and None
    said_false[passed == False] = True  # noqa: E712
    verdicts = columns["verdicts"]
    if isinstance(verdicts, pa.ChunkedArray):
        verdicts = verdicts.combine_chunks()
    values = pc.list_flatten(verdicts)
    if len(values):
        rows = pc.list_parent_indices(verdicts).to_numpy()
        judged = values.field("passed").to_numpy(zero_copy_only=False)
        said_true[rows[judged == True]] = True  # noqa: E712
        said_false[rows[judged == False]] = True  # noqa: E712
    return np.flatnonzero(said_true & said_false).astype(np.int64)


class Pending(Sequence):
    """The cases of a queue a reviewer has not decided, in the queue's order: each ``Case`` made when asked for."""

    def __init__(self, run: Any, order: np.ndarray, done: set[str]) -> None:
        import pyarrow as pa
        import pyarrow.compute as pc

        self.run = run
        if done and len(order):
            value_set = pa.array(sorted(done), pa.string())
            decided = pc.is_in(_probe_ids(run), value_set=value_set).to_numpy(zero_copy_only=False)
            order = order[~decided[order]]
        self.order = order

    def __len__(self) -> int:
        return len(self.order)

    def __getitem__(self, index: Any) -> Any:
        if isinstance(index, slice):
            return [self.run.cases[int(i)] for i in self.order[index]]
        return self.run.cases[int(self.order[index])]

    def __iter__(self) -> Iterator[Any]:
        return (self.run.cases[int(i)] for i in self.order)

    def index_of(self, probe_id: str) -> int:
        """Where the case ``probe_id`` stands in the queue, or -1 when it is not pending."""
        import pyarrow as pa
        import pyarrow.compute as pc

        found = pc.index(_probe_ids(self.run), pa.scalar(probe_id, pa.string())).as_py()
        if found is None or found < 0:
            return -1
        at = np.flatnonzero(self.order == found)
        return int(at[0]) if len(at) else -1


def pending(run: Any, kind: str, done: set[str], order: Any = None) -> Pending:
    """The cases of queue ``kind`` not in ``done`` (probe ids); ``order``: ``queue_order`` already computed."""
    return Pending(run, queue_order(run, kind) if order is None else order, done)
