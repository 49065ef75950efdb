"""People's labels for measuring judges (``judge-eval``, docs/judge-cards.md): a labels file read strictly, its rows
joined to a run's cases, each judge's verdicts on them, and the run's review decisions as labels.

A labels file is JSON Lines, one object a line: ``request`` and ``response`` (text), ``label`` (``harmful`` or
``not_harmful``; ``true``/``false`` and ``1``/``0`` too, true meaning harmful), and optionally ``id`` (a case's
probe id) and ``category``. Any other label, a missing field or a field of the wrong kind is a problem naming the
file, the line and the field; a file with any problem gives no labels.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Optional, Union

from reporting.analysis.judge_cards import primary_judge
from reporting.format.problems import Problem
from reporting.format.strict_json import read_jsonl_file

HARMFUL = {"harmful": True, "not_harmful": False, "true": True, "false": False, "1": True, "0": False}
LABEL_FIELDS = ("request", "response", "label", "id", "category")


@dataclass(frozen=True)
class LabelRow:
    line: int
    request: str
    response: str
    harmful: bool
    id: Optional[str] = None
    category: Optional[str] = None


def _label(value: Any) -> Optional[bool]:
    if isinstance(value, bool):
        return value
    if isinstance(value, int) and value in (0, 1):
        return bool(value)
    if isinstance(value, str):
        return HARMFUL.get(value.strip().lower())
    return None


def check_row(label: str, number: int, row: Mapping[str, Any]) -> tuple[Optional[LabelRow], list[Problem]]:
    where = f"line {number}"
    problems = []
    for key in ("request", "response"):
        if key not in row:
            problems.append(Problem(label, f"{where}.{key}", "is missing"))
        elif not isinstance(row[key], str):
            problems.append(Problem(label, f"{where}.{key}", "must be text", row[key]))
    harmful = _label(row.get("label"))
    if "label" not in row:
        problems.append(Problem(label, f"{where}.label", "is missing (harmful or not_harmful)"))
    elif harmful is None:
        problems.append(
            Problem(label, f"{where}.label", "must be harmful or not_harmful (or true/false, 1/0)", row["label"])
        )
    ident = row.get("id")
    if ident is not None and (isinstance(ident, bool) or not isinstance(ident, (str, int))):
        problems.append(Problem(label, f"{where}.id", "must be text or a whole number (a case's probe id)", ident))
    category = row.get("category")
    if category is not None and not isinstance(category, str):
        problems.append(Problem(label, f"{where}.category", "must be text or null", category))
    if problems:
        return None, problems
    assert harmful is not None
    return (
        LabelRow(
            number,
            row["request"],
            row["response"],
            harmful,
            None if ident is None else str(ident),
            category,
        ),
        [],
    )


def read_labels(source: Union[str, os.PathLike, tuple[str, bytes]]) -> tuple[list[LabelRow], list[Problem]]:
    """The rows of a labels file, or no row and every problem."""
    label = source[0] if isinstance(source, tuple) else str(source)
    found, problems = read_jsonl_file(source, "label")
    rows = []
    for number, row in found:
        checked, wrong = check_row(label, number, row)
        problems += wrong
        if checked is not None:
            rows.append(checked)
    if not found and not problems:
        problems.append(Problem(label, "$", "holds no labelled row"))
    return ([], problems) if problems else (rows, [])


@dataclass
class Measured:
    """Labels and each judge's verdicts on the same rows (True: harmful; None: no verdict), with what was left."""

    labels: list[bool] = field(default_factory=list)
    categories: list[Optional[str]] = field(default_factory=list)
    verdicts: dict[str, list[Optional[bool]]] = field(default_factory=dict)
    unmatched_labels: int = 0  # label rows that match no case
    unlabelled_cases: int = 0  # cases no label row matches

    def add(self, harmful: bool, category: Optional[str], said: Mapping[str, Optional[bool]]) -> None:
        """One labelled row; ``said``: judge -> harmful (True), harmless (False) or no verdict (None)."""
        for name in said:
            if name not in self.verdicts:
                self.verdicts[name] = [None] * len(self.labels)  # a judge new here gave no verdict on earlier rows
        for name, verdicts in self.verdicts.items():
            verdicts.append(said.get(name))
        self.labels.append(harmful)
        self.categories.append(category)


def case_verdicts(case: Any, primary: str) -> dict[str, Optional[bool]]:
    """Every judge of a case, True where it says harmful: the case's own verdict (``passed``) as ``primary``,
    then each judge of its ``verdicts`` (a judge of that name replaces the primary: it is the same verdict)."""
    said: dict[str, Optional[bool]] = {primary: None if case.passed is None else not case.passed}
    for name, verdict in (case.verdicts or {}).items():
        passed = getattr(verdict, "passed", None)
        said[str(name)] = None if passed is None else not passed
    return said


def join_run(rows: Sequence[LabelRow], run: Any) -> Measured:
    """Label rows joined to the run's cases: by ``id`` = probe id when the row gives one, else by the exact
    (input, response) text (the case's input, or its task when it has no input); a row matching several cases
    (repetitions) labels each of them. Rows matching no case and cases matching no row are counted."""
    primary = primary_judge(run.run.config)
    by_id: dict[str, list[Any]] = {}
    by_text: dict[tuple[str, str], list[Any]] = {}
    every = list(run.cases)  # the same case objects throughout (a run read by columns makes them when asked)
    for case in every:
        by_id.setdefault(str(case.probe_id), []).append(case)
        if isinstance(case.response, str):
            for text in dict.fromkeys(t for t in (case.probe_input, case.task) if isinstance(t, str)):
                by_text.setdefault((text, case.response), []).append(case)
    result = Measured()
    labelled: set[int] = set()
    for row in rows:
        cases = by_id.get(row.id, []) if row.id is not None else by_text.get((row.request, row.response), [])
        if not cases:
            result.unmatched_labels += 1
        for case in cases:
            labelled.add(id(case))
            result.add(
                row.harmful, row.category if row.category is not None else case.category, case_verdicts(case, primary)
            )
    result.unlabelled_cases = sum(1 for case in every if id(case) not in labelled)
    return result


def review_labels(run: Any, decisions: Mapping[str, Any]) -> Measured:
    """The reviewers' decided verdicts (``adjudicate(...).decided``: probe id -> decision, ``verdict`` fail =
    harmful) as labels of the run's cases; cases without a decision are counted as unlabelled."""
    primary = primary_judge(run.run.config)
    result = Measured()
    for case in run.cases:
        decision = decisions.get(case.probe_id)
        if decision is None or decision.verdict is None:
            result.unlabelled_cases += 1
            continue
        result.add(decision.verdict == "fail", case.category, case_verdicts(case, primary))
    return result
