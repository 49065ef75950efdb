"""The run-level figures of a store, computed by an engine over the Parquet case tables: DuckDB on one machine
(in-process, out of core), Apache Spark for stores that outgrow it (``--engine spark``; tested in local mode).

Each aggregate is one SQL expression, written once in ``AGGREGATES`` and run by both engines; the figures are then
derived from them in ``figures`` with the same interval methods as ``reporting.analysis`` (Wilson, Kish's
effective n, Student's t), and shaped like ``aggregate_metrics`` so the figure registry reads them. Percentiles
interpolate linearly (DuckDB ``quantile_cont``, Spark ``percentile``), standard deviations are population ones:
the same numbers as the per-run figures, checked to 1e-9 on the known-answer and sample runs.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from typing import Any, Optional

from reporting.analysis.stats import wilson

EVALUATED = "passed IS NOT NULL"
HIGH = "severity IN ('high', 'critical')"
# name -> SQL over the cases of a group; {quantile} is the engine's linear-interpolation percentile.
AGGREGATES: dict[str, str] = {
    "cases": "count(*)",
    "errors": "sum(CASE WHEN passed IS NULL THEN 1 ELSE 0 END)",
    "passed": "sum(CASE WHEN passed THEN 1 ELSE 0 END)",
    "failed": "sum(CASE WHEN NOT passed THEN 1 ELSE 0 END)",
    "weight_sum": f"sum(CASE WHEN {EVALUATED} THEN severity_weight ELSE 0 END)",
    "weight_sq_sum": f"sum(CASE WHEN {EVALUATED} THEN severity_weight * severity_weight ELSE 0 END)",
    "weight_passed": "sum(CASE WHEN passed THEN severity_weight ELSE 0 END)",
    "high": f"sum(CASE WHEN {EVALUATED} AND {HIGH} THEN 1 ELSE 0 END)",
    "high_failed": f"sum(CASE WHEN NOT passed AND {HIGH} THEN 1 ELSE 0 END)",
    "risk_mean": f"avg(CASE WHEN {EVALUATED} THEN risk_score END)",
    "risk_std": f"stddev_pop(CASE WHEN {EVALUATED} THEN risk_score END)",
    "risk_p90": f"{{quantile}}(CASE WHEN {EVALUATED} THEN risk_score END, 0.9)",
    "risk_max": f"max(CASE WHEN {EVALUATED} THEN risk_score END)",
    "weighted_risk_mean": f"avg(CASE WHEN {EVALUATED} THEN weighted_risk END)",
    "weighted_risk_sd": f"stddev_samp(CASE WHEN {EVALUATED} THEN weighted_risk END)",
}
GROUPS = {"run": ["run_key"], "category": ["run_key", "category"]}


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


def query(group: str, quantile: str) -> str:
    columns = GROUPS[group]
    aggregates = ",\n  ".join(f"{sql.format(quantile=quantile)} AS {name}" for name, sql in AGGREGATES.items())
    keys = ", ".join(columns)
    return f"SELECT {keys},\n  {aggregates}\nFROM cases\nGROUP BY {keys}\nORDER BY {keys}"


def _num(value: Any) -> Optional[float]:
    return None if value is None else float(value)


def _ratio(a: float, b: float) -> Optional[float]:
    return None if not b else a / b


def _t_interval(mean: Optional[float], sd: Optional[float], n: int) -> Optional[list[float]]:
    if mean is None or sd is None or n < 2:
        return None
    import scipy.stats as sps

    half = float(sps.t.ppf(0.975, n - 1)) * sd / math.sqrt(n)
    return [mean - half, mean + half]


def figures(row: Mapping[str, Any]) -> dict[str, Any]:
    """``aggregate_metrics``-shaped figures from one row of ``AGGREGATES``."""
    cases, errors = int(row["cases"]), int(row["errors"] or 0)
    passed, failed = int(row["passed"] or 0), int(row["failed"] or 0)
    n = passed + failed
    high, high_failed = int(row["high"] or 0), int(row["high_failed"] or 0)
    weight_sum, weight_sq = float(row["weight_sum"] or 0.0), float(row["weight_sq_sum"] or 0.0)
    weighted_rate = _ratio(float(row["weight_passed"] or 0.0), weight_sum)
    n_eff = weight_sum**2 / weight_sq if weight_sq > 0 else 0.0
    weighted_mean = _num(row["weighted_risk_mean"])
    weighted_ci = _t_interval(weighted_mean, _num(row["weighted_risk_sd"]), n)

    def clip(v: Optional[float]) -> Optional[float]:
        return None if v is None else min(1.0, max(0.0, v))

    return {
        "counts": {"cases": cases, "probes_evaluated": n, "passed": passed, "failed": failed, "errors": errors},
        "overall": {
            "pass_rate": _ratio(passed, n),
            "pass_rate_ci": wilson(passed, n),
            "error_rate": _ratio(errors, cases),
            "error_rate_ci": wilson(errors, cases),
            "severity_weighted_pass_rate": weighted_rate,
            "severity_weighted_pass_rate_ci": None
            if weighted_rate is None or n_eff <= 0
            else wilson(weighted_rate * n_eff, n_eff),
            "high_stakes_failure_rate": _ratio(high_failed, failed),
            "high_stakes_failures": high_failed,
            "high_stakes_probe_failure_rate": _ratio(high_failed, high),
            "high_stakes_probe_failure_rate_ci": wilson(high_failed, high),
            "risk_mean": _num(row["risk_mean"]),
            "risk_std": _num(row["risk_std"]),
            "risk_p90": _num(row["risk_p90"]),
            "risk_max": _num(row["risk_max"]),
            "weighted_risk_mean": weighted_mean,
            "weighted_risk_mean_ci": weighted_ci,
        },
        "indices": {
            "resilience_index": clip(None if weighted_mean is None else 1.0 - weighted_mean),
            "resilience_index_ci": None
            if weighted_ci is None
            else [clip(1.0 - weighted_ci[1]), clip(1.0 - weighted_ci[0])],
            "exposure_index": clip(weighted_mean),
            "exposure_index_ci": None if weighted_ci is None else [clip(weighted_ci[0]), clip(weighted_ci[1])],
            "fragility_spread": _num(row["risk_std"]),
        },
    }


def category_figures(rows: Sequence[Mapping[str, Any]]) -> dict[str, dict[str, dict[str, Any]]]:
    """Per run key, per category: cases evaluated, pass rate and its interval, from the ``category`` rows."""
    found: dict[str, dict[str, dict[str, Any]]] = {}
    for row in rows:
        passed, failed = int(row["passed"] or 0), int(row["failed"] or 0)
        n = passed + failed
        found.setdefault(row["run_key"], {})[str(row["category"])] = {
            "n": n,
            "pass_rate": None if n == 0 else passed / n,
            "pass_rate_ci": wilson(passed, n),
        }
    return found


def table_figures(table) -> dict[str, Any]:
    """The figures of one run's case table (an Arrow table of ``CASE_COLUMNS``, such as the columnar reader
    gives) computed by DuckDB over it in place: counts, overall, indices and per-category pass rates."""
    import duckdb

    connection = duckdb.connect()
    try:
        connection.register("given", table)
        rest = "* EXCLUDE (run_key)" if "run_key" in table.column_names else "*"
        connection.execute(f"CREATE VIEW cases AS SELECT {rest}, '' AS run_key FROM given")
        rows = {}
        for group in GROUPS:
            result = connection.execute(query(group, DuckDBEngine.quantile))
            names = [d[0] for d in result.description]
            rows[group] = [dict(zip(names, row)) for row in result.fetchall()]
    finally:
        connection.close()
    result_figures = figures(rows["run"][0])
    result_figures["by_category"] = category_figures(rows["category"]).get("", {})
    result_figures["counts"]["categories"] = len(result_figures["by_category"])
    return result_figures


class DuckDBEngine:
    """DuckDB in-process over the store's Parquet files."""

    name = "duckdb"
    quantile = "quantile_cont"

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
                result = connection.execute(query(group, self.quantile))
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
    quantile = "percentile"

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
            return [row.asDict() for row in self.session.sql(query(group, self.quantile)).collect()]

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
