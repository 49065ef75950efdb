"""The framework figures a report carries (issue 33, docs/frameworks.md): every item of every framework table, from
the report's kept cases (errors included, counted apart), the coverage, and garak's standing against its reference
models where the run keeps garak's digest. ``build_report`` attaches them once (``Report.frameworks``) and puts
``aggregate_figures`` of them under ``aggregate_metrics.frameworks``; the dashboard, the HTML and ``check
--require`` read them from there, never computing their own.

The catalog is the built-in tables, extended by a user's ``--frameworks FILE.yaml`` (the command line), or in the
dashboard by ``--frameworks FILE`` after ``--`` or ``$REPORTING_FRAMEWORKS``.
"""

from __future__ import annotations

import argparse
import os
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Optional

from reporting.analysis.framework_tally import CaseGroups, case_groups, tallies
from reporting.analysis.frameworks import (
    Catalog,
    FrameworksError,
    Requirement,
    aggregate_figures,
    builtin_catalog,
    check_requirements,
    coverage,
    figures_of_groups,
    framework_figures,
    gate_rows,
    load_catalog,
)
from reporting.format.severity import SEVERITIES

ENVIRONMENT = "REPORTING_FRAMEWORKS"
_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")


@dataclass(frozen=True)
class Standing:
    """garak's own standing of the run against its calibration's reference models (never recomputed here)."""

    garak_version: Optional[str]
    date: Optional[str]  # the calibration's day (YYYY-MM-DD) when garak gave one
    model_count: int
    models: tuple[str, ...]
    rows: tuple[dict[str, Any], ...]  # one per probe and detector: absolute and relative scores, garak's comments


@dataclass(frozen=True)
class FrameworkResults:
    """Figures of every item (``framework_figures``' shape: with the failing case ids and the worst failing
    severity), each framework's description, the coverage, and garak's standing (None without a digest)."""

    figures: Mapping[str, Mapping[str, Mapping[str, Any]]]
    frameworks: tuple[Mapping[str, Any], ...]
    coverage: Mapping[str, Mapping[str, Any]]
    standing: Optional[Standing] = None
    problems: tuple[str, ...] = field(default_factory=tuple)  # a user file's problems (the dashboard shows them)

    def aggregate(self) -> dict[str, dict[str, dict[str, Any]]]:
        """``aggregate_metrics.frameworks``: every item, title, n, passed, failed, errors, pass rate, interval."""
        found = aggregate_figures(self.figures)
        for items in found.values():
            for row in items.values():
                if row["interval"] is not None:
                    row["interval"] = [float(v) for v in row["interval"]]
        return found


def kept_cases(run: Any, frame: Any, errors: Any) -> dict[str, list[Any]]:
    """The report's kept cases, evaluated and not, in the run's order (frame and error indexes are positions), as
    the columns the framework figures read: taken from the case frames, no case object made."""
    import numpy as np
    import pandas as pd

    parts = _parts(frame, errors)
    positions = _positions(parts)
    in_order = len(parts) == 1 and bool((positions[1:] > positions[:-1]).all())
    order = None if in_order else np.argsort(positions, kind="stable")

    def column(name: str, errors_value: Any = None) -> Any:
        held = frame[name].array if name == "severity" else None  # (a case frame's tiers: a Categorical)
        if len(parts) == 1 and (name == "passed" or isinstance(held, pd.Categorical)):  # as the frame holds them
            values = frame[name].to_numpy() if held is None else held
            return values if in_order else values.take(order)
        values = [frame[name].to_numpy(dtype=object)]
        if len(parts) > 1:
            values.append(
                parts[1][name].to_numpy(dtype=object) if errors_value is None else np.full(len(parts[1]), None)
            )
        return values[0] if in_order else np.concatenate(values)[order]

    tags = column("tags")
    if not pd.notna(tags).all():  # a case without tags of its own may carry them among its extra fields
        from reporting.analysis.grouping import by_identity

        extra = column("extra")
        which, firsts = by_identity(extra)  # (a case frame shares one mapping among the rows with the same extras)
        named = np.empty(len(firsts), dtype=object)
        named[:] = [x.get("tags") if x else None for x in extra[firsts].tolist()]
        if pd.notna(named).any():  # (else the cases have no tags anywhere: the column stays as it is)
            tags = np.where(pd.notna(tags), tags, named[which])
    return {
        "probe_id": _ids(parts, order, in_order, column),
        "passed": column("passed", errors_value=True),  # a case not evaluated has no verdict
        "severity": _named_tiers(column("severity")),
        "category": column("category"),
        "plugin": column("plugin"),
        "tags": tags,
    }


def _ids(parts: list[Any], order: Any, in_order: bool, column: Any) -> Any:
    """The kept cases' probe ids in the run's order: as the frames hold them, Arrow text (``metrics.probe_ids``), one
    Arrow array whose ids are made Python strings only where a figure's failing ids are read (``CaseIds``), not a
    string a case (650 MB at ten million cases); ``column`` for frames that hold them otherwise."""
    import pandas as pd
    import pyarrow as pa

    if not all(isinstance(part["probe_id"].dtype, pd.StringDtype) for part in parts):
        return column("probe_id")
    held = [part["probe_id"].array.__arrow_array__().cast(pa.large_string()) for part in parts]
    ids = pa.chunked_array([chunk for part_ids in held for chunk in part_ids.chunks], type=pa.large_string())
    return ids if in_order else ids.take(pa.array(order))


def _named_tiers(values: Any) -> Any:
    """The frames' severity values (a tier's name, NaN where the frame's categorical has none) as text: ``str`` of
    each, without a call per case; the frame's Categorical itself when it is one frame's (its codes are read)."""
    import pandas as pd

    if isinstance(values, pd.Categorical):
        return values
    missing = pd.isna(values)
    if missing.any():
        values = values.copy()
        values[missing] = "nan"
    return values


def _tags(case: Any) -> Any:
    if case.tags is not None:
        return case.tags
    extra = case.model_extra
    return extra.get("tags") if extra else None


def case_figures(cases: Iterable[Any], catalog: Optional[Catalog] = None) -> dict[str, Any]:
    """``figures_of_cases`` over typed cases (``Case``), read by attribute: the same figures, several times faster
    on a large run; a run whose cases name no tag or plugin passes none."""
    rows = list(cases)
    return column_figures(
        {
            "probe_id": [c.probe_id for c in rows],
            "passed": [c.passed for c in rows],
            "severity": [c.severity for c in rows],
            "category": [c.category for c in rows],
            "plugin": [c.plugin for c in rows],
            "tags": [_tags(c) for c in rows],
        },
        catalog,
    )


def column_figures(columns: Mapping[str, list[Any]], catalog: Optional[Catalog] = None) -> dict[str, Any]:
    """The framework figures of cases given as columns (``kept_cases``)."""
    import numpy as np
    import pandas as pd

    plugins, tags = columns["plugin"], columns["tags"]
    return framework_figures(
        columns["probe_id"],
        columns["passed"],
        severity=columns["severity"],
        category=columns["category"],
        plugin=plugins if pd.notna(np.asarray(plugins, dtype=object)).any() else None,
        tags=tags if any(t for t in tags) else None,
        catalog=catalog,
        ids_when_read=True,  # the report's own columns (kept_cases), shown as a count and the first few ids
    )


@dataclass(frozen=True)
class RunCases:
    """Every case of a run (evaluated and not) in the run's order, each put in its framework group once
    (``case_groups``): the framework figures of any filter of the run are then counts over the kept cases'
    positions, not a grouping of them again. ``groups`` is None where a value cannot be hashed (the figures are
    then counted from the kept cases' columns); ``names`` holds the ids as text once a report reads them."""

    positions: Any  # each case's position in the run, ascending
    ids: Any  # the probe ids, in that order
    groups: Optional[CaseGroups]
    names: list[Any] = field(default_factory=list, compare=False)


def run_cases(run: Any, frame: Any, errors: Any) -> RunCases:
    """The ``RunCases`` of a run's case frame and error frame (``kept_cases`` of every case)."""
    import pandas as pd

    columns = kept_cases(run, frame, errors)
    positions = _positions(_parts(frame, errors), ascending=True)
    rank = {tier: i for i, tier in enumerate(SEVERITIES)}
    plugins, tags = (columns[name] for name in ("plugin", "tags"))
    try:
        groups: Optional[CaseGroups] = case_groups(
            len(positions),
            columns["passed"],
            columns["severity"],
            columns["category"],
            plugins if pd.notna(plugins).any() else None,  # no case names one: every case's is None, not grouped
            tags if pd.notna(tags).any() else None,
            rank,
        )
    except TypeError:  # a value that cannot be hashed where a name belongs: counted from the kept columns
        groups = None
    return RunCases(positions, columns["probe_id"], groups)


def kept_figures(
    cases: Optional[RunCases],
    run: Any,
    frame: Any,
    errors: Any,
    catalog: Optional[Catalog] = None,
    every_column: Optional[Callable[[], Any]] = None,
) -> dict[str, Any]:
    """The framework figures of the kept cases (``frame``, ``errors``: rows of the run's frames, indexed by
    position): from the run's ``RunCases`` when given, else from the kept cases' columns; the same figures.
    ``every_column``: the kept cases' frame with every column, when ``frame`` holds only some."""
    catalog = catalog or builtin_catalog()
    if cases is not None and cases.groups is not None:
        at = _places(cases.positions, _positions(_parts(frame, errors), ascending=True))
        if at is not None:
            return figures_of_groups(tallies(cases.groups, at), cases.ids, catalog, True, cases.names)
    return column_figures(kept_cases(run, frame if every_column is None else every_column(), errors), catalog)


def _parts(frame: Any, errors: Any) -> list[Any]:
    """A report's case frames: the evaluated cases, and the cases not evaluated when there are any."""
    return [frame] + ([errors] if errors is not None and len(errors) else [])


def _positions(parts: list[Any], ascending: bool = False) -> Any:
    """The run positions of the rows of ``parts`` (frames indexed by position), as they stand or ascending."""
    import numpy as np

    found = np.concatenate([part.index.to_numpy(dtype=np.int64) for part in parts])
    if ascending and (len(parts) > 1 or (len(found) > 1 and not bool((found[1:] > found[:-1]).all()))):
        found = np.sort(found, kind="stable")
    return found


def _places(positions: Any, kept: Any) -> Any:
    """Where the run positions ``kept`` (ascending) stand among ``positions`` (ascending); None when one is not
    there."""
    import numpy as np

    if len(kept) == 0:
        return kept
    if len(positions) and positions[0] == 0 and positions[-1] == len(positions) - 1:  # every position, 0 to n - 1
        return kept if kept[0] >= 0 and kept[-1] < len(positions) else None
    at = np.searchsorted(positions, kept)
    return at if at[-1] < len(positions) and np.array_equal(positions[at], kept) else None


def framework_results(
    run: Any, figures: Mapping[str, Any], catalog: Optional[Catalog] = None, problems: Iterable[str] = ()
) -> FrameworkResults:
    """The framework results of a run from the figures of its kept cases (``kept_figures``)."""
    catalog = catalog or builtin_catalog()
    return FrameworkResults(
        figures,
        tuple(f.describe() for f in catalog.frameworks.values()),
        coverage(figures),
        garak_standing(run),
        tuple(problems),
    )


# --- garak's standing -----------------------------------------------------------------------------------------


def _digest(run: Any) -> Optional[Mapping[str, Any]]:
    extra = getattr(run, "model_extra", None) or {}
    tool = extra.get("tool_figures") if isinstance(extra, Mapping) else None
    digest = tool.get("garak_digest") if isinstance(tool, Mapping) else None
    return digest if isinstance(digest, Mapping) else None


def _number(value: Any) -> Optional[float]:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _text(value: Any) -> Optional[str]:
    return value if isinstance(value, str) and value else None


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def garak_standing(run: Any) -> Optional[Standing]:
    """garak's digest as rows per probe and detector, with its calibration; None when the run keeps no digest."""
    digest = _digest(run)
    if digest is None:
        return None
    calibration = _mapping(digest.get("calibration"))
    date = _text(calibration.get("date"))
    day = date[:10] if date and _DATE.match(date) else date
    models = tuple(m for m in calibration.get("models") or () if isinstance(m, str))
    count = calibration.get("model_count")
    count = count if isinstance(count, int) and not isinstance(count, bool) else len(models)
    rows = []
    probes = _mapping(digest.get("probes"))
    for probe, summary in probes.items():
        detectors = summary.get("detectors") if isinstance(summary, Mapping) else None
        for detector, d in (detectors or {}).items() if isinstance(detectors, Mapping) else ():
            if not isinstance(d, Mapping):
                continue
            rows.append(
                {
                    "probe": str(probe),
                    "detector": str(detector),
                    "absolute_score": _number(d.get("absolute_score")),
                    "absolute_comment": _text(d.get("absolute_comment")),
                    "relative_score": _number(d.get("relative_score")),
                    "relative_comment": _text(d.get("relative_comment")),
                    "total_evaluated": _number(d.get("total_evaluated")),
                    "passed": _number(d.get("passed")),
                    "calibration_used": d.get("calibration_used") is True,
                }
            )
    return Standing(_text(digest.get("garak_version")), day, count, models, tuple(rows))


# --- the catalog and the gate ---------------------------------------------------------------------------------


def frameworks_path_from(argv: list[str], environ: Optional[Mapping[str, str]] = None) -> Optional[str]:
    """The dashboard's frameworks file: ``--frameworks FILE`` in ``argv`` (after ``--`` on the streamlit command
    line), else ``$REPORTING_FRAMEWORKS``, else None."""
    parser = argparse.ArgumentParser(add_help=False)
    parser.add_argument("--frameworks")
    known, _ = parser.parse_known_args(argv)
    environ = os.environ if environ is None else environ
    return known.frameworks or environ.get(ENVIRONMENT) or None


def catalog_or_problems(source: Any) -> tuple[Catalog, tuple[str, ...]]:
    """The catalog of a user file (a path or ``(label, bytes)``), or the built-in one and the file's problems as
    lines: for the dashboard, which shows them in an error box and goes on with the built-in tables."""
    if source is None:
        return builtin_catalog(), ()
    try:
        return load_catalog(source), ()
    except FrameworksError as exc:
        return builtin_catalog(), tuple(str(line) for line in exc.lines)


def requirement_rows(
    run: Any, requirements: Iterable[Requirement], catalog: Optional[Catalog] = None
) -> list[dict[str, Any]]:
    """``check --require``'s gate rows (``report.gates.run_gates``' shape) over every case of the run."""
    wanted = list(requirements)
    if not wanted:
        return []
    from reporting.analysis.metrics import cases_frame, error_frame

    figures = column_figures(kept_cases(run, cases_frame(run), error_frame(run)), catalog or builtin_catalog())
    return gate_rows(figures, check_requirements(figures, wanted))
