"""The run-level figures of a store, computed by an engine over the Parquet case tables: DuckDB on one machine
(in-process, out of core), Apache Spark for stores that outgrow it (``--engine spark``; tested in local mode).

Each aggregate is one SQL expression, written once in ``reporting.analysis.engine.AGGREGATES`` (the same text
computes every run's own figures), run here by both engines over the store's files; the figures are derived from
them by ``reporting.analysis.figures``, as a run's are, and shaped like ``aggregate_metrics`` so the figure
registry reads them. Percentiles interpolate linearly (DuckDB ``quantile_cont``, Spark ``percentile``); sums are
DuckDB's compensated ``fsum`` and Spark's ``sum``: the same numbers as the per-run figures, checked to 1e-9 on the
known-answer and sample runs.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any, Optional

from reporting.analysis import figures as derive
from reporting.analysis.engine import DUCKDB, SPARK, Session, one_row, query

_DUCKDB_GLOB = re.compile(r"([*?\[])")
_HADOOP_GLOB = re.compile(r"([{}\[\]*?\\])")


def duckdb_literal_path(path: str) -> str:
    """``path`` as DuckDB's file readers match it exactly: each glob character (``*``, ``?``, ``[``) in a class of
    its own (``[*]``), so a store in a folder named ``st*`` or ``s[ab]`` reads its own files and no other store's.
    (DuckDB has no backslash escape; ``{`` and ``]`` alone are not special to it.)"""
    return _DUCKDB_GLOB.sub(r"[\1]", path)


def hadoop_literal_path(path: str) -> str:
    """``path`` as Spark (Hadoop's glob) matches it exactly: each of ``{}[]*?\\`` escaped with a backslash."""
    return _HADOOP_GLOB.sub(r"\\\1", path)


def figures(row: Mapping[str, Any]) -> dict[str, Any]:
    """``aggregate_metrics``-shaped figures of one run's row of the engine's aggregates (counts, overall, indices)."""
    errors = int(row.get("errors") or 0)
    overall = derive.with_error_rate(derive.overall(row), errors, derive.evaluated(row) + errors)
    found = {"counts": derive.counts(row, errors, 0), "overall": overall, "indices": derive.indices(row)}
    del found["counts"]["categories"]  # a store's run row does not know them: category_figures does
    return found


def category_figures(rows: Sequence[Mapping[str, Any]]) -> dict[str, dict[str, dict[str, Any]]]:
    """Per run key, per category: cases evaluated, pass rate and its interval, from the ``category`` rows."""
    found: dict[str, dict[str, dict[str, Any]]] = {}
    for row in rows:
        figures_of = derive.category(row)
        found.setdefault(row["run_key"], {})[str(row["category"])] = {
            key: figures_of[key] for key in ("n", "pass_rate", "pass_rate_ci")
        }
    return found


def table_figures(table) -> dict[str, Any]:
    """The figures of one run's case table (an Arrow table of ``CASE_COLUMNS``, such as the columnar reader
    gives) computed by the engine over it in place: counts, overall, indices and per-category pass rates."""
    with Session(table) as session:
        rows = {group: session.groups(group) for group in ("run", "category")}
    result_figures = figures(one_row(rows["run"]))
    result_figures["by_category"] = category_figures(rows["category"]).get("", {})
    result_figures["counts"]["categories"] = len(result_figures["by_category"])
    return result_figures


class DuckDBEngine:
    """DuckDB in-process over the store's Parquet files."""

    name = "duckdb"
    dialect = DUCKDB

    def rows(self, files: Sequence[str], group: str) -> list[dict[str, Any]]:
        import duckdb

        if not files:
            return []
        connection = duckdb.connect()
        try:
            # The paths are values, never spliced into SQL; DuckDB expands globs in them, so each is escaped to
            # match itself only (the store lists its files in Python: no pattern is ever meant).
            try:
                cases = connection.read_parquet([duckdb_literal_path(path) for path in files])
                connection.register("cases", cases)
                result = connection.execute(query(group, self.dialect))
            except (duckdb.IOException, duckdb.InvalidInputException, duckdb.ConversionException) as exc:
                from reporting.format.problems import Problem
                from reporting.store.layout import StoreError

                reason = str(exc).strip().splitlines()[0][:300] if str(exc).strip() else type(exc).__name__
                raise StoreError(
                    [Problem(files[0].rsplit("/cases/", 1)[0], "cases", f"cannot be read: {reason}")]
                ) from None
            names = [d[0] for d in result.description]
            return [dict(zip(names, row)) for row in result.fetchall()]
        finally:
            connection.close()

    def close(self) -> None:
        pass


class SparkEngine:
    """Apache Spark (PySpark): local mode by default, or the cluster ``SPARK_REMOTE`` / spark-submit gives."""

    name = "spark"
    dialect = SPARK

    def __init__(self, master: Optional[str] = None):
        self._session = None
        self.master = master

    @property
    def session(self):
        if self._session is None:
            self._session = spark_session(self.master)
        return self._session

    def rows(self, files: Sequence[str], group: str) -> list[dict[str, Any]]:
        import warnings

        if not files:
            return []
        with warnings.catch_warnings():  # PySpark's notice about the pandas version: nothing RunLens uses
            warnings.simplefilter("ignore", FutureWarning)
            frame = self.session.read.parquet(*[hadoop_literal_path(path) for path in files])
            frame.createOrReplaceTempView("cases")
            return [row.asDict() for row in self.session.sql(query(group, self.dialect)).collect()]

    def close(self) -> None:
        if self._session is not None:
            self._session.stop()
            self._session = None


class EngineUnavailable(RuntimeError):
    """The engine asked for cannot start here (no PySpark, no Java): the message says what is missing."""


def spark_session(master: Optional[str] = None):
    """Spark's session: the one spark-submit made (its master and settings), else local mode on this machine,
    bound to 127.0.0.1 with no web UI."""
    import os
    import shutil
    import warnings

    try:
        with warnings.catch_warnings():  # PySpark's notice about the pandas version: nothing RunLens uses
            warnings.simplefilter("ignore", FutureWarning)
            from pyspark.sql import SparkSession
    except ImportError:
        raise EngineUnavailable("--engine spark needs PySpark: pip install 'runlens[spark]'") from None
    builder = SparkSession.builder.appName("runlens").config("spark.sql.session.timeZone", "UTC")
    if not os.environ.get("PYSPARK_GATEWAY_PORT") or master:  # not under spark-submit: local mode
        if master is None and not shutil.which("java") and not os.environ.get("JAVA_HOME"):
            raise EngineUnavailable(
                "--engine spark needs a Java runtime (17 or later) for Spark's local mode: on Debian, "
                "apt-get install openjdk-17-jre-headless"
            )
        builder = (
            builder.master(master or "local[2]")
            .config("spark.ui.enabled", "false")
            .config("spark.driver.host", "127.0.0.1")
            .config("spark.driver.bindAddress", "127.0.0.1")
            .config("spark.sql.shuffle.partitions", "4")
            .config("spark.ui.showConsoleProgress", "false")
            # The exact 90th percentile keeps a group's values in memory: 10M cases need about 3 GB of heap.
            .config("spark.driver.memory", os.environ.get("RUNLENS_SPARK_MEMORY", "4g"))
        )
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    return session


def engine(name: str):
    if name == "duckdb":
        return DuckDBEngine()
    if name == "spark":
        return SparkEngine()
    raise ValueError(f"engine: duckdb or spark, not {name!r}")
