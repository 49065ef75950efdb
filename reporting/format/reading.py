"""Read a RunLens run from its bytes, or from a document already parsed; report every problem, never crash.

``load_document`` reads RunLens's own file (a report object, a bare array of cases, or JSON Lines); ``run_of_document``
validates a parsed document of any schema version (another tool's file, made into one by ``reporting.importers``).
Both are lenient: they return the valid cases together with the list of problems, so one bad case does not hide a
thousand good ones. A run read by its content, whoever wrote it (``load_run``, ``read_run``), is
``reporting.sources.reading``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any, Optional, Union

from pydantic import TypeAdapter, ValidationError

from reporting.format.migrate import check_version, upgrade
from reporting.format.problems import Problem
from reporting.format.schema import (
    SCHEMA_VERSION,
    SEVERITIES,
    Case,
    Message,
    RunMeta,
    RunReport,
    ToolCall,
    evaluation_problem,
)
from reporting.format.strict_json import (
    MAX_SAFE_INTEGER,
    _HugeInt,
    _kind,
    _nonfinite_and_depth,
    jsonl_objects,
    parse_json_text,
)
from reporting.textsafe import file_name, path_text

_CASES_ADAPTER = TypeAdapter(list[Case])


@dataclass
class LoadResult:
    """What the lenient loader found: the run made of the valid cases, and every problem."""

    source: str
    run: Optional[RunReport]
    problems: list[Problem] = field(default_factory=list)
    cases_in_file: int = 0

    @property
    def ok(self) -> bool:
        return not self.problems and self.run is not None

    @property
    def cases_left_out(self) -> int:
        kept = len(self.run.cases) if self.run is not None else 0
        return max(0, self.cases_in_file - kept)


def _join_path(prefix: str, loc: Iterable[Union[str, int]]) -> str:
    path = prefix
    for part in loc:
        if isinstance(part, int):
            path += f"[{part}]"
        else:
            path = f"{path}.{part}" if path else str(part)
    return path or "$"


_MESSAGES = {
    "missing": "required field is missing",
    "string_type": "must be a string",
    "bool_type": "must be true or false",
    "bool_parsing": "must be true or false",
    "int_type": "must be a whole number",
    "int_parsing": "must be a whole number",
    "int_from_float": "must be a whole number",
    "float_type": "must be a number",
    "float_parsing": "must be a number",
    "finite_number": "must be a finite number (NaN and Infinity are not allowed)",
    "list_type": "must be an array",
    "dict_type": "must be an object",
    "model_type": "must be an object",
    "model_attributes_type": "must be an object",
    "string_too_short": "must not be empty",
    "string_pattern_mismatch": "must be one of " + ", ".join(SEVERITIES),
}


def _problems_from_validation(file: str, prefix: str, error: ValidationError) -> list[Problem]:
    problems = []
    for err in error.errors(include_url=False):
        loc = err["loc"]
        kind = err["type"]
        ctx = err.get("ctx") or {}
        field_name = next((p for p in reversed(loc) if isinstance(p, str)), "")
        if isinstance(err.get("input"), _HugeInt) or (
            kind in ("less_than_equal", "greater_than_equal")
            and abs(next(iter(ctx.values()), 0) or 0) == MAX_SAFE_INTEGER
        ):
            message = "integer out of range: integers must be between -2^53 and 2^53"
        elif kind in ("greater_than_equal", "less_than_equal", "greater_than", "less_than"):
            if field_name == "risk_score":
                message = "must be between 0 and 1"
            else:
                bound = {"greater_than_equal": ">=", "less_than_equal": "<=", "greater_than": ">", "less_than": "<"}[
                    kind
                ]
                limit = next(iter(ctx.values()), "")
                message = f"must be {bound} {limit}"
        elif kind == "value_error":
            message = str(ctx.get("error", err["msg"]))
        else:
            message = _MESSAGES.get(kind, err["msg"])
        path = _join_path(prefix, loc)
        if kind == "missing":
            problems.append(Problem(file, path, message))
        else:
            problems.append(Problem(file, path, message, err.get("input")))
    return problems


def _stem(label: str) -> str:
    base = file_name(label) or path_text(label)
    for suffix in (".jsonl", ".ndjson", ".json"):
        if base.lower().endswith(suffix):
            return base[: -len(suffix)] or base
    return base


_parse_json = parse_json_text
_CHUNK = 20_000  # cases validated at a time


def _validate_cases(
    file: str,
    raw_cases: list[Any],
    prefixes: Optional[list[str]] = None,
    bad: frozenset = frozenset(),
    version: int = SCHEMA_VERSION,
    release: bool = False,
) -> tuple[list[Case], list[Problem]]:
    """Validate parsed cases; return the valid ones (in order) and one problem per thing wrong.

    ``bad``: indices of cases already found wrong while parsing (their problems are listed by the caller).
    ``release``: the caller owns ``raw_cases`` and lets each chunk of it go (set to None) once validated."""
    prefix = _prefixer(prefixes)
    problems: list[Problem] = []
    indexed: list[tuple[int, Case]] = []
    field_sets: dict[frozenset, set[str]] = {}
    for start in range(0, len(raw_cases), _CHUNK):
        chunk, made = raw_cases[start : start + _CHUNK], len(indexed)
        valid: Optional[list[Case]] = None
        if not bad:
            try:
                valid = _CASES_ADAPTER.validate_python(chunk)
            except ValidationError:
                valid = None
        if valid is not None:
            indexed.extend(enumerate(valid, start))
        else:
            # Only when something is wrong: case by case, to keep the good ones and name each problem.
            for i, raw in enumerate(chunk, start):
                if i in bad:
                    continue
                try:
                    indexed.append((i, Case.model_validate(raw)))
                except ValidationError as case_error:
                    problems.extend(_problems_from_validation(file, prefix(i), case_error))
        for _, case in indexed[made:]:
            # Cases that set the same fields share one record of which they set (pydantic keeps a set per case:
            # 0.7 GB of a million-case run). Cases are frozen: no assignment adds to a shared set; model_copy copies.
            fields = case.__pydantic_fields_set__
            object.__setattr__(case, "__pydantic_fields_set__", field_sets.setdefault(frozenset(fields), fields))
        if release:  # the parsed dicts of a chunk go as soon as its cases are made: never both whole runs at once
            raw_cases[start : start + _CHUNK] = [None] * len(chunk)
        del chunk
    kept, screen_problems = _screen_cases(file, indexed, prefix, version)
    problems.extend(screen_problems)
    problems.sort(key=lambda p: _problem_order(p.path))
    return kept, problems


def _prefixer(prefixes: Optional[list[str]]):
    return (lambda i: prefixes[i]) if prefixes is not None else (lambda i: f"cases[{i}]")


_PLAIN = (str, bool, type(None))  # free-form values with nothing to check: a text, a flag, a null


def turn_values(turns: Any) -> Iterator[tuple[str, Any]]:
    """The free-form values of a conversation that have something to check, with where they are: each turn's own
    fields (``messages[j].key``), each tool call's arguments (an object) and own fields; a text, a flag or a null
    left out (every turn of an imported log holds a few: their paths cost more than the checks). ``turns``:
    ``Message`` models, or dicts of their shape (the columnar reader's, which checks them the same way; import's, as a
    tool's file gave them: a declared key may be missing)."""
    for j, turn in enumerate(turns or ()):
        for key, value in _own_fields(turn, Message.model_fields):
            if type(value) not in _PLAIN:
                yield f"messages[{j}].{key}", value
        for k, call in enumerate((turn.get("tool_calls") or ()) if isinstance(turn, dict) else turn.tool_calls):
            arguments = call.get("arguments") if isinstance(call, dict) else call.arguments
            if isinstance(arguments, dict):
                yield f"messages[{j}].tool_calls[{k}].arguments", arguments
            for key, value in _own_fields(call, ToolCall.model_fields):
                if type(value) not in _PLAIN:
                    yield f"messages[{j}].tool_calls[{k}].{key}", value


def _own_fields(item: Any, declared: Any) -> Any:
    """A turn's or a tool call's fields beyond the model's: a model's extras, or a dict's keys it does not declare (a
    dict as the model dumps it, every key declared, has none: told by one subset test)."""
    if isinstance(item, dict):
        return () if item.keys() <= declared.keys() else ((k, v) for k, v in item.items() if k not in declared)
    return (item.__pydantic_extra__ or {}).items()


def free_form_values(case: Case) -> Iterator[tuple[str, Any]]:
    """The free-form values inside a case's version 3 fields, with where they are, checked as a case's extras are:
    its conversation's (``turn_values``), a limit's value and its own fields."""
    yield from turn_values(case.messages)
    if case.limit is not None:
        yield "limit.limit", case.limit.limit
        for key, value in (case.limit.__pydantic_extra__ or {}).items():
            yield f"limit.{key}", value


def _screen_cases(
    file: str, indexed: Iterable[tuple[int, Case]], prefix, version: int = SCHEMA_VERSION
) -> tuple[list[Case], list[Problem]]:
    """Checks beyond one case's types: free-form extras (finite, bounded depth), unique probe ids, and an
    evaluated case or an error, never both nor neither."""
    problems: list[Problem] = []
    kept: list[Case] = []
    first_seen: dict[str, int] = {}
    for i, case in indexed:
        state = evaluation_problem(case, version)
        if state is not None:
            field, message, got = state
            problems.append(Problem(file, f"{prefix(i)}.{field}", message, got))
            continue
        before = len(problems)
        for key, value in (case.__pydantic_extra__ or {}).items():
            _nonfinite_and_depth(file, f"{prefix(i)}.{key}", value, problems)
        for where, value in free_form_values(case):  # a turn's, a tool call's and a limit's own fields too
            _nonfinite_and_depth(file, f"{prefix(i)}.{where}", value, problems)
        if len(problems) > before:
            continue
        earlier = first_seen.get(case.probe_id)
        if earlier is not None:  # the first occurrence is kept, later ones are problems
            problems.append(
                Problem(
                    file, f"{prefix(i)}.probe_id", f"duplicate probe_id, first used by {prefix(earlier)}", case.probe_id
                )
            )
            continue
        first_seen[case.probe_id] = i
        kept.append(case)
    return kept, problems


def _problem_order(path: str) -> tuple[int, str]:
    """Sort problems by case index (or JSONL line), so the list reads top to bottom."""
    match = re.match(r"(?:cases\[|line )(\d+)", path)
    return (int(match.group(1)) if match else -1, path)


def _load_jsonl(file: str, text: str) -> tuple[list[Any], list[str], list[Problem]]:  # noqa: D103
    rows, problems = jsonl_objects(file, text)
    return [value for _, value in rows], [f"line {number}" for number, _ in rows], problems


def _parse_document(
    label: str, text: str
) -> tuple[Optional[dict[str, Any]], Any, Optional[list[str]], list[Problem], frozenset]:
    """Parse and check the structure, naming every problem.

    Returns (header, raw cases, prefixes, problems, indices of cases already found wrong); header None when
    nothing can be read. A problem outside the cases (a duplicated top-level key, say) makes the file unreadable:
    a run whose own structure is ambiguous is not read at all."""
    prefixes: Optional[list[str]] = None
    if label.lower().endswith((".jsonl", ".ndjson")):
        raw_cases, prefixes, problems = _load_jsonl(label, text)
        return {}, raw_cases, prefixes, problems, frozenset()
    document, problems = parse_json_text(label, text)
    if document is None:
        if problems and "Extra data" in problems[0].message and text.lstrip().startswith("{"):
            raw_cases, prefixes, problems = _load_jsonl(label, text)  # JSON Lines under a .json name
            return {}, raw_cases, prefixes, problems, frozenset()
        return None, None, None, problems, frozenset()
    bad = set()
    for problem in problems:
        match = re.match(r"cases\[(\d+)\]", problem.path)
        if match and not isinstance(document, list):
            bad.add(int(match.group(1)))
        elif isinstance(document, list) and (found := re.match(r"\$?\[(\d+)\]", problem.path)):
            bad.add(int(found.group(1)))
        else:
            return None, None, None, problems, frozenset()
    if isinstance(document, list):
        return {}, document, None, problems, frozenset(bad)
    if not isinstance(document, dict):
        what = f"not a run report: expected an object with 'cases' or an array of cases, not {_kind(document)}"
        return None, None, None, [Problem(label, "$", what)], frozenset()
    if not document.get("cases") and "cases_file" in document:  # (the name is the file's, never opened: as text)
        return None, None, None, [Problem(label, "cases_file", FIGURES_ONLY, document["cases_file"])], frozenset()
    if "cases" not in document:
        hint = " (this looks like a single case; wrap it in an array)" if "probe_id" in document else ""
        return None, None, None, [Problem(label, "cases", "required field is missing" + hint)], frozenset()
    raw_cases = document["cases"]
    if not isinstance(raw_cases, list):
        return None, None, None, [Problem(label, "cases", "must be an array of cases", raw_cases)], frozenset()
    header = {k: v for k, v in document.items() if k != "cases"}
    return header, raw_cases, None, problems, frozenset(bad)


FIGURES_ONLY = (
    "this file holds the figures `recompute --format parquet` wrote, not the cases: they are in the Parquet case table "
    "written beside it, which this field names; read that table"
)


def _check_header(label: str, header: dict[str, Any], problems: list[Problem]) -> tuple[RunMeta, dict[str, Any]]:
    """Run metadata (derived from the file name where missing), stored figures and extra top-level fields."""
    raw_meta = header.get("run")
    if raw_meta is None:
        raw_meta = {}
    if not isinstance(raw_meta, dict):
        problems.append(Problem(label, "run", "must be an object", raw_meta))
        raw_meta = {}
    for key, value in raw_meta.items():
        _nonfinite_and_depth(label, f"run.{key}", value, problems)
    try:
        meta = RunMeta.model_validate({"run_id": _stem(label), **raw_meta})
    except ValidationError as error:
        problems.extend(_problems_from_validation(label, "run", error))
        meta = RunMeta(run_id=_stem(label))
    kept: dict[str, Any] = {}
    for key, value in header.items():
        if key in ("schema_version", "run") or value is None:
            continue
        if key in ("aggregate_metrics", "observability") and not isinstance(value, dict):
            problems.append(Problem(label, key, "must be an object", value))
            continue
        _nonfinite_and_depth(label, key, value, problems)
        kept[key] = value
    return meta, kept


def load_document(label: str, box: list[bytes]) -> LoadResult:
    """A RunLens run from the bytes of its file: a report object, a bare array of cases, or JSON Lines with one case
    per line. ``box`` holds the bytes alone and is emptied here, so that they go as soon as they are decoded (the
    caller keeps no reference: a run of a million cases, a gigabyte less)."""
    data = box.pop()
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        message = f"not UTF-8 text: byte 0x{data[exc.start]:02x} at offset {exc.start} cannot be decoded"
        return LoadResult(label, None, [Problem(label, "$", message)])
    del data
    header, raw_cases, prefixes, problems, bad = _parse_document(label, text)
    del text  # the parsed document holds what is needed (a run of a million cases: a gigabyte less)
    if header is None:
        return LoadResult(label, None, problems)
    return run_of_document(label, header, raw_cases, problems, prefixes, bad, release=True)


def run_of_document(
    label: str,
    header: dict[str, Any],
    raw_cases: list[Any],
    problems: list[Problem],
    prefixes: Optional[list[str]] = None,
    bad: frozenset = frozenset(),
    release: bool = False,
) -> LoadResult:
    """The run of a parsed document (its top-level fields ``header`` and its ``raw_cases``), of any schema version:
    upgraded, validated case by case, with ``problems`` found before (parsing) kept first. ``prefixes``: the JSON
    Lines line of each case; ``release``: the caller owns ``raw_cases`` (see ``_validate_cases``)."""
    version = header.get("schema_version", 1)
    version_problems = check_version(label, version)
    if version_problems:
        return LoadResult(label, None, version_problems)
    header, raw_cases = upgrade(header, raw_cases, version)
    # JSONL lines that did not parse count too
    cases_in_file = len(raw_cases) + (len({p.path.split(".")[0] for p in problems}) if prefixes is not None else 0)
    cases, case_problems = _validate_cases(label, raw_cases, prefixes, bad, version, release=release)
    problems = problems + case_problems

    meta, stored = _check_header(label, header, problems)
    problems.sort(key=lambda p: _problem_order(p.path))
    report = RunReport.model_construct(schema_version=version, run=meta, cases=cases, **stored)
    return LoadResult(label, report, problems, cases_in_file)
