"""Framework figures (issue 33): for every item of every framework table, what the run's cases say about it, and
the ``--require FRAMEWORK:ITEM>=RATE`` gate. docs/frameworks.md has the tables, the precedence and the API.

Figures are computed from plain per-case columns (lists, numpy arrays, pandas or Arrow columns turned to lists):
case ids, verdicts (``True`` passed, ``False`` failed, ``None``/NaN not evaluated: an error), severities,
categories, plugins and tag lists. As in ``metrics``, a case with no verdict is an error: counted apart, never in a
rate. Every item of every framework is listed; an item no evaluated case maps to is ``tested: False`` with
``n = 0`` and ``pass_rate`` and ``interval`` null: what was not tested is a finding, never hidden.

Nothing heavy is imported here at module level (the Wilson interval comes from ``stats`` when figures are made), so
the command line can parse ``--require`` without loading numpy or scipy.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple, Optional

from reporting.analysis.framework_maps import (
    BUILTIN_ORDER,
    Catalog,
    Framework,
    FrameworksError,
    Item,
    builtin_catalog,
    load_catalog,
)
from reporting.analysis.framework_tally import (
    Keys,
    Tally,
    _name,
    _tag_list,
    failing_ids,
    grouped,
    grouped_by_loop,
)
from reporting.format.problems import InputError, Problem
from reporting.format.severity import SEVERITIES

__all__ = [
    "BUILTIN_ORDER",
    "Catalog",
    "Framework",
    "FrameworksError",
    "Item",
    "Requirement",
    "RequirementError",
    "RequirementResult",
    "aggregate_figures",
    "builtin_catalog",
    "case_tags",
    "check_requirements",
    "coverage",
    "figures_of_cases",
    "framework_figures",
    "gate_rows",
    "items_of",
    "load_catalog",
    "parse_requirement",
]


# --- one case -------------------------------------------------------------------------------------------------


def _get(case: Any, name: str) -> Any:
    if isinstance(case, Mapping):
        return case.get(name)
    return getattr(case, name, None)


def case_tags(case: Any) -> tuple[str, ...]:
    """A case's tool tags: its ``tags`` (attribute or key), else ``extra["tags"]``; only strings are kept."""
    tags = _get(case, "tags")
    if tags is None:
        extra = _get(case, "extra")
        tags = extra.get("tags") if isinstance(extra, Mapping) else None
    return _tag_list(tags)


def items_of(case: Any, catalog: Optional[Catalog] = None) -> dict[str, set[str]]:
    """``{framework_id: {item_id, ...}}`` for one case (a ``Case``, a dict or any object with ``tags``,
    ``plugin`` and ``category``): its tool tags decide a framework they map to; its category decides the others."""
    catalog = catalog or builtin_catalog()
    return catalog.items_of(case_tags(case), _name(_get(case, "plugin")), _name(_get(case, "category")))


# --- the figures ----------------------------------------------------------------------------------------------


def framework_figures(
    case_ids: Sequence[Any],
    passed: Sequence[Any],
    *,
    severity: Optional[Sequence[Any]] = None,
    category: Optional[Sequence[Any]] = None,
    plugin: Optional[Sequence[Any]] = None,
    tags: Optional[Sequence[Any]] = None,
    catalog: Optional[Catalog] = None,
    ids_when_read: bool = False,
) -> dict[str, dict[str, dict[str, Any]]]:
    """``{framework_id: {item_id: figures}}`` for every item of every framework of ``catalog`` (built-in by default),
    in table order. Figures: ``title``, ``tested`` (some evaluated case maps to it), ``n`` (evaluated cases),
    ``passed``, ``failed``, ``errors`` (cases with no verdict, not in the rate), ``pass_rate`` (None when n = 0),
    ``interval`` (Wilson 95% of the pass rate, None when n = 0), ``worst_failing_severity`` (None without a failure
    of a known tier) and ``failing_case_ids`` (in the columns' order: a list, or with ``ids_when_read`` a sequence
    whose ids are made as they are read, for a report that shows a count and the first few). Columns are per case,
    all the same length."""
    catalog = catalog or builtin_catalog()
    count = len(case_ids)
    for name, column in (
        ("passed", passed),
        ("severity", severity),
        ("category", category),
        ("plugin", plugin),
        ("tags", tags),
    ):
        if column is not None and len(column) != count:
            raise ValueError(f"framework_figures: {name} has {len(column)} values for {count} case ids")
    rank = {tier: i for i, tier in enumerate(SEVERITIES)}
    try:
        groups = grouped(count, passed, severity, category, plugin, tags, rank)
    except TypeError:  # a value that cannot be hashed where a name belongs: the loop below tells it as none
        groups = grouped_by_loop(count, passed, severity, category, plugin, tags, rank)
    return figures_of_groups(groups, case_ids, catalog, ids_when_read)


def figures_of_groups(
    groups: Mapping[Keys, Tally],
    case_ids: Sequence[Any],
    catalog: Catalog,
    ids_when_read: bool = False,
    names: Optional[list[Any]] = None,
) -> dict[str, dict[str, dict[str, Any]]]:
    """``framework_figures`` from the tally of each group of cases (``grouped``, or ``tallies`` of some of a run's
    cases, whose failing positions index ``case_ids``). ``names``: the case ids as one array of text once made
    (``CaseIds``), kept by a caller that reads the ids of many reports of one run."""
    from reporting.analysis.figures import proportion

    by_item: dict[tuple[str, str], Tally] = {}
    failing: dict[tuple[str, str], list[Any]] = {}
    for key, group in groups.items():
        for framework_id, items in catalog.items_of(*key).items():
            for item_id in items:
                pair = (framework_id, item_id)
                tally = by_item.get(pair)
                if tally is None:
                    tally = by_item[pair] = Tally()
                tally.add(group)
                if len(group.failing):
                    failing.setdefault(pair, []).append(group.failing)
    figures: dict[str, dict[str, dict[str, Any]]] = {}
    names = [] if names is None else names  # the case ids as text, made once when first read
    for framework in catalog.frameworks.values():
        rows = figures[framework.id] = {}
        for item in framework.items.values():
            tally = by_item.get((framework.id, item.id)) or Tally()
            n = tally.passed + tally.failed
            rows[item.id] = {
                "title": item.title,
                "tested": n > 0,
                "n": n,
                "passed": tally.passed,
                "failed": tally.failed,
                "errors": tally.errors,
                "pass_rate": proportion(tally.passed, n)[0],
                "interval": proportion(tally.passed, n)[1],
                "worst_failing_severity": SEVERITIES[tally.worst] if tally.worst >= 0 else None,
                "failing_case_ids": failing_ids(
                    failing.get((framework.id, item.id), ()), case_ids, names, ids_when_read
                ),
            }
    return figures


def figures_of_cases(cases: Iterable[Any], catalog: Optional[Catalog] = None) -> dict[str, dict[str, dict[str, Any]]]:
    """``framework_figures`` over case objects or dicts (``probe_id``, ``passed``, ``severity``, ``category``,
    ``plugin`` and ``tags`` as ``items_of`` reads them): every case of a run, errors included (``passed`` None)."""
    rows = list(cases)
    return framework_figures(
        [_get(c, "probe_id") for c in rows],
        [_get(c, "passed") for c in rows],
        severity=[_get(c, "severity") for c in rows],
        category=[_get(c, "category") for c in rows],
        plugin=[_get(c, "plugin") for c in rows],
        tags=[case_tags(c) for c in rows],
        catalog=catalog,
    )


AGGREGATE_KEYS = ("title", "n", "passed", "failed", "errors", "pass_rate", "interval")


def aggregate_figures(figures: Mapping[str, Mapping[str, Mapping[str, Any]]]) -> dict[str, dict[str, dict[str, Any]]]:
    """The shape ``recompute`` stores as ``aggregate_metrics.frameworks``: every item, with ``AGGREGATE_KEYS`` only
    (no case ids, so its size does not grow with the run)."""
    return {f: {i: {k: row[k] for k in AGGREGATE_KEYS} for i, row in items.items()} for f, items in figures.items()}


def coverage(figures: Mapping[str, Mapping[str, Mapping[str, Any]]]) -> dict[str, dict[str, Any]]:
    """Per framework: how many items it lists, how many the run tested, and the ids of those it did not."""
    result = {}
    for framework_id, items in figures.items():
        untested = [item for item, row in items.items() if not row["n"]]
        result[framework_id] = {"items": len(items), "tested": len(items) - len(untested), "not_tested": untested}
    return result


# --- the gate -------------------------------------------------------------------------------------------------


class RequirementError(InputError):
    """A ``--require`` that cannot be read, or names a framework or item that does not exist."""


@dataclass(frozen=True)
class Requirement:
    framework: str
    item: str
    minimum: float

    def __str__(self) -> str:
        return f"{self.framework}:{self.item}>={self.minimum:g}"


class RequirementResult(NamedTuple):
    requirement: Requirement
    ok: bool
    message: str


_REQUIREMENT = re.compile(r"([A-Za-z0-9._-]+):([A-Za-z0-9._-]+)>=([0-9]*\.?[0-9]+)")
_EXAMPLE = "owasp-llm-2025:LLM01>=0.95"


def parse_requirement(text: str, catalog: Optional[Catalog] = None) -> Requirement:
    """``FRAMEWORK:ITEM>=RATE`` (no spaces; RATE between 0 and 1), checked against ``catalog`` (built-in by
    default). ``RequirementError`` says what is wrong: the form, the rate, an unknown framework or item."""
    catalog = catalog or builtin_catalog()

    def fail(message: str) -> RequirementError:
        return RequirementError([Problem("", "--require", message, text)])

    if not isinstance(text, str):
        raise fail(f"expected FRAMEWORK:ITEM>=RATE, e.g. {_EXAMPLE}")
    match = _REQUIREMENT.fullmatch(text)
    if match is None:
        hint = " (a rate is a fraction: 0.95, not 95%)" if "%" in text else ""
        raise fail(f"expected FRAMEWORK:ITEM>=RATE, e.g. {_EXAMPLE}{hint}")
    framework_id, item_id, rate = match.groups()
    minimum = float(rate)
    if not 0.0 <= minimum <= 1.0:
        raise fail(f"the rate must be between 0 and 1, e.g. {_EXAMPLE}")
    framework = catalog.frameworks.get(framework_id)
    if framework is None:
        raise fail(f"no framework {framework_id} (known: {', '.join(catalog.frameworks)})")
    if item_id not in framework.items:
        close = [i for i in framework.items if i.casefold() == item_id.casefold()]
        hint = f"did you mean {close[0]}?" if close else f"its items: {', '.join(framework.items)}"
        raise fail(f"{framework_id} has no item {item_id}; {hint}")
    return Requirement(framework_id, item_id, minimum)


def check_requirements(
    figures: Mapping[str, Mapping[str, Mapping[str, Any]]], requirements: Iterable[Requirement]
) -> list[RequirementResult]:
    """``(requirement, ok, message)`` for each requirement, against ``framework_figures``. The pass rate (over
    evaluated cases) must be at least the minimum; an item that is not in the figures, was not tested (n = 0) or
    has only errors fails closed, whatever the minimum."""
    results = []
    for requirement in requirements:
        row = figures.get(requirement.framework, {}).get(requirement.item)
        name, need = str(requirement).split(">=", 1)[0], f"{requirement.minimum:.3f}"
        if row is None:
            message = f"{name}: not in the figures (no such framework or item); >= {need} required: fails closed"
            results.append(RequirementResult(requirement, False, message))
            continue
        label = f"{name} ({row['title']})"
        errors = row["errors"]
        if not row["n"]:
            why = (
                f"its {errors} case{'s' if errors != 1 else ''} all have no verdict (errors)"
                if errors
                else "no case of the run maps to it"
            )
            results.append(
                RequirementResult(requirement, False, f"{label}: not tested, {why}; >= {need} required: fails closed")
            )
            continue
        rate, interval = row["pass_rate"], row["interval"]
        ok = rate >= requirement.minimum
        message = f"{label}: pass rate {rate:.3f} ({row['passed']} of {row['n']}"
        if interval:
            message += f", 95% CI {interval[0]:.3f}-{interval[1]:.3f}"
        message += f") {'>=' if ok else '<'} {need} required"
        if errors:
            message += f"; {errors} case{'s' if errors != 1 else ''} with no verdict not counted"
        results.append(RequirementResult(requirement, ok, message))
    return results


def gate_rows(
    figures: Mapping[str, Mapping[str, Mapping[str, Any]]], results: Iterable[RequirementResult]
) -> list[dict[str, Any]]:
    """The results in the shape of ``report.gates.run_gates``' rows: gate, holds, value, limit, line."""
    rows = []
    for requirement, ok, message in results:
        row = figures.get(requirement.framework, {}).get(requirement.item) or {}
        rows.append(
            {
                "gate": f"framework {requirement.framework}:{requirement.item}",
                "holds": ok,
                "value": row.get("pass_rate"),
                "limit": requirement.minimum,
                "line": message,
            }
        )
    return rows
