"""The one engine of the run-level figures: every aggregate written once, as SQL, and run by DuckDB in process over a
run's case table (an Arrow table: ``case_table`` of a case frame, or the columnar reader's table), and by the run
store's engines over its Parquet files (DuckDB, or Spark from the same text).

``AGGREGATES`` holds each aggregate as one SQL expression over the cases of a group; ``{sum}`` and ``{quantile}``
are the engine's exact sum (DuckDB ``fsum``, compensated; Spark ``sum``) and linear-interpolation percentile
(DuckDB ``quantile_cont``, Spark ``percentile``), ``{mean}`` a mean as that sum over the count. Each aggregate
names the columns it needs, so a table without the signal columns (a store's) gets the aggregates it can have.
The figures are derived from the aggregates in ``reporting.analysis.figures`` with the intervals of
``reporting.analysis.stats``; docs/metrics.md defines them. Worst cases and the case table's order are one
``ORDER BY`` (``WORST_ORDER``).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Optional

import numpy as np

from reporting.analysis.case_table import PROBES_ONCE, TIER
from reporting.analysis.figures import CATEGORY_READS, SEVERITY_READS
from reporting.format.schema import SEVERITIES

EVALUATED = "passed IS NOT NULL"
# The severity tests of the aggregates, spelled over the severity's text (a store's files) or, where the table has
# it, over ``severity_tier`` (``case_table``: the severity's place in SEVERITIES; an integer compared costs a quarter
# of a text: the run query over 2.9M cases 0.39 -> 0.30 s): the same cases either way.
SEVERITY_TESTS = {
    "high": ("severity IN ('high', 'critical')", f"{TIER} >= {SEVERITIES.index('high')}"),
    "critical": ("severity = 'critical'", f"{TIER} = {SEVERITIES.index('critical')}"),
    "high_tier": ("severity = 'high'", f"{TIER} = {SEVERITIES.index('high')}"),
}


@dataclass(frozen=True)
class Aggregate:
    sql: str
    needs: tuple[str, ...] = ()  # columns beyond passed, severity, risk_score, severity_weight, weighted_risk


def _of_evaluated(expression: str) -> str:
    return f"CASE WHEN {EVALUATED} THEN {expression} END"


AGGREGATES: dict[str, Aggregate] = {
    "cases": Aggregate("count(*)"),
    "errors": Aggregate("sum(CASE WHEN passed IS NULL THEN 1 ELSE 0 END)"),
    "passed": Aggregate("sum(CASE WHEN passed THEN 1 ELSE 0 END)"),
    "failed": Aggregate("sum(CASE WHEN NOT passed THEN 1 ELSE 0 END)"),
    "weight_sum": Aggregate(f"{{sum}}({_of_evaluated('severity_weight')})"),
    "weight_sq_sum": Aggregate(f"{{sum}}({_of_evaluated('severity_weight * severity_weight')})"),
    "weight_passed": Aggregate("{sum}(CASE WHEN passed THEN severity_weight END)"),
    "high": Aggregate(f"sum(CASE WHEN {EVALUATED} AND {{high}} THEN 1 ELSE 0 END)"),
    "high_failed": Aggregate("sum(CASE WHEN NOT passed AND {high} THEN 1 ELSE 0 END)"),
    "critical_failed": Aggregate("sum(CASE WHEN NOT passed AND {critical} THEN 1 ELSE 0 END)"),
    "high_tier_failed": Aggregate("sum(CASE WHEN NOT passed AND {high_tier} THEN 1 ELSE 0 END)"),
    "risk_sum": Aggregate(f"{{sum}}({_of_evaluated('risk_score')})"),
    "risk_std": Aggregate(f"stddev_pop({_of_evaluated('risk_score')})"),
    "risk_sd": Aggregate(f"stddev_samp({_of_evaluated('risk_score')})"),
    "risk_median": Aggregate(f"{{quantile}}({_of_evaluated('risk_score')}, {{levels}}){{first}}"),
    "risk_p90": Aggregate(f"{{quantile}}({_of_evaluated('risk_score')}, {{levels}}){{second}}"),
    "risk_max": Aggregate(f"max({_of_evaluated('risk_score')})"),
    "weighted_risk_sum": Aggregate(f"{{sum}}({_of_evaluated('weighted_risk')})"),
    "weighted_risk_sd": Aggregate(f"stddev_samp({_of_evaluated('weighted_risk')})"),
    "weighted_risk_median": Aggregate(f"{{quantile}}({_of_evaluated('weighted_risk')}, {{levels}}){{first}}"),
    "weighted_risk_p90": Aggregate(f"{{quantile}}({_of_evaluated('weighted_risk')}, {{levels}}){{second}}"),
    "boundary": Aggregate(
        f"sum(CASE WHEN {EVALUATED} AND boundary_or_refusal_signal THEN 1 ELSE 0 END)", ("boundary_or_refusal_signal",)
    ),
    "safe_hits": Aggregate(f"sum({_of_evaluated('safe_signal_hits')})", ("safe_signal_hits",)),
    "unsafe_hits": Aggregate(f"sum({_of_evaluated('unsafe_signal_hits')})", ("unsafe_signal_hits",)),
}
GROUPS: dict[str, tuple[str, ...]] = {
    "run": ("run_key",),
    "category": ("run_key", "category"),
    "severity": ("run_key", "severity"),
}
# each group's aggregates (with its case count): those its figures read; every one for a run
GROUP_READS: dict[str, tuple[str, ...]] = {"category": CATEGORY_READS, "severity": SEVERITY_READS}
# The worst cases first: weighted risk, then risk (both highest first, compared at 12 decimals, so 0.4 x 1.5 ties
# with 0.6 x 1.0 despite float noise), then probe id. The worst-case list and the case table's order.
WORST_ORDER = "round(weighted_risk, 12) DESC, round(risk_score, 12) DESC, probe_id ASC, pos ASC"


@dataclass(frozen=True)
class Dialect:
    """How the aggregates are spelled in one engine. The median and the 90th percentile of a column are one
    percentile aggregate over both levels, its two items picked (both engines compute an aggregate written twice in
    one query once): the column's values are held once, not twice (at 10M cases, 320 MB less a grouped query)."""

    name: str
    quantile: str
    sum: str
    levels: str  # the list of the two levels, 0.5 and 0.9
    first: str  # its first item, then its second
    second: str


DUCKDB = Dialect("duckdb", "quantile_cont", "fsum", "[0.5, 0.9]", "[1]", "[2]")
SPARK = Dialect("spark", "percentile", "sum", "array(0.5, 0.9)", "[0]", "[1]")


def _spelled(sql: str, dialect: Dialect, tiers: bool = False) -> str:
    tests = {name: spellings[tiers] for name, spellings in SEVERITY_TESTS.items()}
    return sql.format(
        quantile=dialect.quantile,
        sum=dialect.sum,
        levels=dialect.levels,
        first=dialect.first,
        second=dialect.second,
        **tests,
    )


# The run's percentiles and deviations (the longest of its aggregates to compute): a report asks for them in a query
# of their own beside the rest (``Session.together``), each query on one thread, each aggregate the same to the bit.
SPREAD = frozenset(
    ("risk_std", "risk_sd", "risk_median", "risk_p90", "weighted_risk_sd", "weighted_risk_median", "weighted_risk_p90")
)


def query(
    group: str,
    dialect: Dialect,
    columns: Optional[Sequence[str]] = None,
    one_run: bool = False,
    only: Optional[Callable[[str], bool]] = None,
) -> str:
    """The aggregates of every group of ``group`` (``GROUPS``) its figures read (``GROUP_READS``) over the view
    ``cases``; with ``columns``, only the aggregates whose columns the table has; with ``only``, those it holds
    (the case count always). ``one_run``: the view is a Session's (``run_key`` '' on every row), not grouped by that
    constant (0.02-0.04 s a query over 2.9M cases)."""
    present, reads = set(columns or ()), {"cases", *GROUP_READS.get(group, AGGREGATES)}
    reads = {name for name in reads if only is None or name == "cases" or only(name)}
    chosen = {n: a for n, a in AGGREGATES.items() if n in reads and (columns is None or present.issuperset(a.needs))}
    tiers = TIER in present  # the severity's tests over its tier, where the table has it
    sql = ",\n  ".join(f"{_spelled(agg.sql, dialect, tiers)} AS {name}" for name, agg in chosen.items())
    by = [TIER if key == "severity" and "severity" not in present and tiers else key for key in GROUPS[group]]
    keys = ", ".join(key for key in by if key != "run_key" or not one_run)  # (a copy without the severity's text)
    if not keys:  # the run's row: none where no case is, as grouped
        return f"SELECT '' AS run_key,\n  {sql}\nFROM cases\nHAVING count(*) > 0"
    head = "'' AS run_key, " if one_run else ""
    return f"SELECT {head}{keys},\n  {sql}\nFROM cases\nGROUP BY {keys}\nORDER BY {keys}"


FAILURE_MODES = """
SELECT mode, count(*) AS n FROM (SELECT unnest(detected_failure_modes) AS mode FROM cases WHERE passed IS NOT NULL)
WHERE mode IS NOT NULL GROUP BY mode ORDER BY n DESC, mode ASC"""
WORST = f"SELECT pos FROM cases WHERE passed IS NOT NULL ORDER BY {WORST_ORDER}"
EVALUATED = "SELECT count(*) FROM cases WHERE passed IS NOT NULL"
# Each probe's repetitions and failures (a probe: the cases of one ``probe_key``), in order of first appearance.
REPETITIONS = """
SELECT count(*) AS n, CAST(sum(CASE WHEN NOT passed THEN 1 ELSE 0 END) AS BIGINT) AS c
FROM cases WHERE passed IS NOT NULL GROUP BY probe_key ORDER BY min(pos)"""
ONE_CASE_EACH = "SELECT NOT passed AS failed FROM cases WHERE passed IS NOT NULL"  # in the table's order
ONE_CASE_COUNTS = "SELECT count(*), count(*) FILTER (WHERE NOT passed) FROM cases WHERE passed IS NOT NULL"
# Attack success per strategy and per strategy and category (cases that name a strategy), and the turns multi-turn
# attacks took to break the model (failed cases with a conversation), in the strategies' order.
STRATEGIES = """
SELECT strategy, count(*) AS n, CAST(sum(CASE WHEN NOT passed THEN 1 ELSE 0 END) AS BIGINT) AS failed
FROM cases WHERE passed IS NOT NULL AND strategy IS NOT NULL GROUP BY strategy ORDER BY strategy"""
STRATEGY_CATEGORIES = """
SELECT strategy, category, count(*) AS n, CAST(sum(CASE WHEN NOT passed THEN 1 ELSE 0 END) AS BIGINT) AS failed
FROM cases WHERE passed IS NOT NULL AND strategy IS NOT NULL GROUP BY strategy, category ORDER BY strategy, category"""
TURNS_TO_BREAK = """
SELECT strategy, user_turns AS turns, count(*) AS cases FROM cases
WHERE NOT passed AND strategy IS NOT NULL AND user_turns > 0 GROUP BY strategy, user_turns ORDER BY strategy, turns"""
MOST_AT_ONCE = 4  # queries run at once by ``Session.together``

# The judges' figures and agreement, over a table of verdicts (``reporting.analysis.judges.verdict_table``): one
# row a judge's verdict on a case, ``judge`` the judge's number, ``row`` the case's, ``passed`` null where the judge
# did not judge it, ``evaluated`` false for a case not evaluated (its primary verdict null: an importer gives every
# judge that was to judge it a null verdict, an error of that judge; a verdict it does carry counts as given).
JUDGE_COUNTS = """
SELECT judge, evaluated, count(*) AS n, count(*) FILTER (WHERE passed) AS passed,
       count(*) FILTER (WHERE NOT passed) AS failed
FROM verdicts GROUP BY judge, evaluated ORDER BY judge, evaluated"""
# each pair of judges, over the evaluated cases both judged, of a table of the paired judges' verdicts alone (so
# that a case judged by thousands of judges joins at most ``JUDGE_PAIR_CAP`` of them)
JUDGE_PAIRS = """
SELECT a.judge AS first, b.judge AS second, count(*) AS n, count(*) FILTER (WHERE a.passed = b.passed) AS agree,
       count(*) FILTER (WHERE a.passed) AS first_passed, count(*) FILTER (WHERE b.passed) AS second_passed
FROM verdicts AS a JOIN verdicts AS b ON a.row = b.row AND a.judge < b.judge
WHERE a.evaluated AND b.evaluated AND a.passed IS NOT NULL AND b.passed IS NOT NULL
GROUP BY a.judge, b.judge ORDER BY a.judge, b.judge"""


def report_columns(table: Any) -> list[str]:
    """The columns of a case table the report's queries read (``metrics._queries``), which a filter's copy of its
    kept rows holds: not the probe keys where no probe repeats (two counts read), nor the strategies' columns where
    no case names one, nor the severity's text where every case has its tier (its rows grouped by tier); at ten
    million cases, 0.1 s of a 0.3 s copy."""
    drop = {"pos", "run_key"}
    if (table.schema.metadata or {}).get(PROBES_ONCE) == b"1":
        drop.add("probe_key")
    if "strategy" in table.column_names and table["strategy"].null_count == table.num_rows:
        drop |= {"strategy", "user_turns"}
    if TIER in table.column_names and table[TIER].null_count == 0:
        drop.add("severity")
    return [name for name in table.column_names if name not in drop]


KEPT = "_kept_"  # a filter's mask, as a column of the table a Session reads


class Session:
    """DuckDB in process over one case table (single-threaded: the same figures, to the last bit, on every run).
    ``pos`` is each row's position in the table, as the worst-case order gives them back. ``kept``: a mask of the
    table's rows; the cases are then the kept rows alone (a filter), read by DuckDB's scan, never copied into a
    table of their own, and ``pos`` is a row's position among them."""

    def __init__(self, table, kept: Any = None) -> None:
        import pyarrow as pa

        self.probes_once = (table.schema.metadata or {}).get(PROBES_ONCE) == b"1"
        # a table none of whose cases names a strategy: the strategies' queries (``strategy IS NOT NULL``) are empty
        self.strategies_named = "strategy" in table.column_names and table["strategy"].null_count < table.num_rows
        table = table.drop_columns([name for name in ("pos", KEPT) if name in table.column_names])
        if kept is None:
            positions = np.arange(table.num_rows, dtype=np.int64)
        else:
            kept = np.asarray(kept, dtype=bool)
            positions = np.cumsum(kept, dtype=np.int64) - 1  # a kept row's place among the kept rows
            table = table.append_column(KEPT, pa.array(kept))
        table = table.append_column("pos", pa.array(positions))
        self.table = table
        self.columns = tuple(name for name in table.column_names if name != KEPT)
        dropped = [name for name in ("run_key", KEPT) if name in table.column_names]
        rest = f"* EXCLUDE ({', '.join(dropped)})" if dropped else "*"  # one run: one group, whatever a table says
        where = f" WHERE {KEPT}" if kept is not None else ""
        self.view = f"CREATE TEMP VIEW cases AS SELECT {rest}, '' AS run_key FROM given{where}"
        self.connection = self._cursor(_database())

    def rows(self, sql: str, connection: Any = None) -> list[dict[str, Any]]:
        return _rows((connection or self.connection).execute(sql))

    def groups(self, group: str, connection: Any = None, only: Optional[Callable[[str], bool]] = None) -> list[dict]:
        rows = self.rows(query(group, DUCKDB, self.columns, one_run=True, only=only), connection)
        if group != "severity" or "severity" in self.columns:
            return rows
        named = [{"severity": SEVERITIES[row.pop(TIER)], **row} for row in rows]  # grouped by tier: a text each
        return [{"run_key": row.pop("run_key"), **row} for row in sorted(named, key=lambda row: row["severity"])]

    def failure_modes(self, connection: Any = None) -> dict[str, int]:
        if "detected_failure_modes" not in self.columns:
            return {}
        return {str(r["mode"]): int(r["n"]) for r in self.rows(FAILURE_MODES, connection)}

    def worst_positions(self, limit: Optional[int] = None, connection: Any = None) -> np.ndarray:
        sql = WORST if limit is None else f"{WORST} LIMIT {int(limit)}"
        return np.asarray((connection or self.connection).execute(sql).fetchnumpy()["pos"], dtype=np.int64)

    def evaluated(self, connection: Any = None) -> int:
        """How many cases ``WORST`` orders: the evaluated ones."""
        return int(((connection or self.connection).execute(EVALUATED).fetchone() or (0,))[0])

    def repetitions(self, connection: Any = None) -> tuple[np.ndarray, np.ndarray]:
        """Each probe's repetitions and failures (``REPETITIONS``), of a table with ``probe_key`` (``case_table``)."""
        if "probe_key" not in self.columns and not self.probes_once:
            raise ValueError("the case table has no probe_key column: make it with case_table")
        connection = connection or self.connection
        if self.probes_once:  # one case a probe: one repetition each, failed or not
            failures = np.asarray(connection.execute(ONE_CASE_EACH).fetchnumpy()["failed"], dtype=np.int64)
            return np.ones(len(failures), dtype=np.int64), failures
        found = connection.execute(REPETITIONS).fetchnumpy()
        return np.asarray(found["n"], dtype=np.int64), np.asarray(found["c"], dtype=np.int64)

    def repetition_counts(self, connection: Any = None) -> tuple[np.ndarray, np.ndarray, Optional[np.ndarray]]:
        """The repetitions and failures of the probes, and how many probes each stands for (the figures,
        ``repetition_figures``, read no order): where each probe is one case, two counts read (a probe passed once,
        one failed once), not a row a case; else each probe's (``repetitions``), one probe each (None)."""
        if not self.probes_once:
            return (*self.repetitions(connection), None)
        cases, failed = (connection or self.connection).execute(ONE_CASE_COUNTS).fetchone() or (0, 0)
        once = np.ones(2, dtype=np.int64)
        return once, np.array([0, 1], dtype=np.int64), np.array([cases - failed, failed], dtype=np.int64)

    def strategies(self, connection: Any = None) -> dict[str, list[dict[str, Any]]]:
        """The rows of ``STRATEGIES``, ``STRATEGY_CATEGORIES`` and ``TURNS_TO_BREAK`` (none without strategies)."""
        if not self.strategies_named:  # (Arrow counts a column's nulls: no scan of the cases)
            return {"strategies": [], "strategy_categories": [], "turns_to_break": []}
        return {
            "strategies": self.rows(STRATEGIES, connection),
            "strategy_categories": self.rows(STRATEGY_CATEGORIES, connection),
            "turns_to_break": self.rows(TURNS_TO_BREAK, connection),
        }

    def together(
        self, jobs: Mapping[str, Callable[[Any], Any]], meanwhile: Optional[Callable[[], None]] = None
    ) -> dict[str, Any]:
        """Each job (called with a connection) on a cursor of its own, as many at once as the machine has cores
        (up to ``MOST_AT_ONCE``): each query still runs on one thread, so every figure is the one a query alone
        gives, to the last bit; only the queries overlap. ``meanwhile`` is called in this thread as they run."""
        workers = min(len(jobs), MOST_AT_ONCE, os.cpu_count() or 1)
        if workers <= 1:
            if meanwhile is not None:
                meanwhile()
            return {name: job(self.connection) for name, job in jobs.items()}
        pending = iter(list(jobs.items()))
        lock = threading.Lock()
        found: dict[str, Any] = {}

        def work(cursor: Any) -> None:
            try:
                while True:
                    with lock:
                        item = next(pending, None)
                    if item is None:
                        return
                    found[item[0]] = item[1](cursor)
            finally:
                cursor.close()

        with ThreadPoolExecutor(workers) as pool:
            running = [pool.submit(work, self._cursor()) for _ in range(workers)]
            if meanwhile is not None:
                meanwhile()  # should it raise, leaving the pool waits for every worker first
            for done in running:
                done.result()  # a job's error is raised here, after every worker stopped
        return {name: found[name] for name in jobs}

    def _cursor(self, of: Any = None) -> Any:
        """A connection of its own to the process's database (``_database``): the table registered as ``given`` and
        the view ``cases`` over it, both the connection's own (temporary: another session's are not seen)."""
        cursor = (of or self.connection).cursor()
        cursor.register("given", self.table)
        cursor.execute(self.view)
        return cursor

    def close(self) -> None:
        self.connection.close()

    def __enter__(self) -> Session:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


_DATABASE: list[Any] = []  # the process's DuckDB database in memory, opened once (an open takes 10 ms)
_DATABASE_OPENING = threading.Lock()


def _database() -> Any:
    """The process's DuckDB database (single-threaded queries): each Session a connection of its own to it."""
    with _DATABASE_OPENING:
        if not _DATABASE:
            import duckdb

            _DATABASE.append(duckdb.connect(config={"threads": 1}))
        return _DATABASE[0]


_PER_THREAD = threading.local()  # each thread's connection to the process's database for ``rows_of``


def rows_of(sql: str, tables: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The rows of ``sql`` over Arrow ``tables``, each registered under its name for this query only, on this
    thread's connection (one thread: a query alone)."""
    connection = getattr(_PER_THREAD, "connection", None)
    if connection is None:
        connection = _PER_THREAD.connection = _database().cursor()
    try:
        for name, table in tables.items():
            connection.register(name, table)
        return _rows(connection.execute(sql))
    finally:
        for name in tables:
            connection.unregister(name)


def _rows(result: Any) -> list[dict[str, Any]]:
    """A query's rows, each a mapping of its column names."""
    names = [d[0] for d in result.description]
    return [dict(zip(names, row)) for row in result.fetchall()]


def one_row(rows: Sequence[Mapping[str, Any]]) -> Mapping[str, Any]:
    """The run's row (an empty table has none: every aggregate of no cases)."""
    if rows:
        return rows[0]
    return {name: (0 if name in ("cases", "errors", "passed", "failed") else None) for name in AGGREGATES}
