"""Typed run-report format (schema version 3): pydantic models and the JSON Schema.

A run report is ``{"schema_version": 3, "run": {...}, "cases": [...]}`` with optional
stored ``aggregate_metrics`` and ``observability``. Unknown extra fields on a case or
on the run metadata are kept and carried through.

Version 2 adds, all optional: a case that was not evaluated (``passed: null`` with an ``error``
text; every rate is over evaluated cases), several judges' ``verdicts`` per case, ``probe_group``
(the probe a repetition belongs to), ``source_id`` (the producing tool's own record id) and the
run's ``source`` (tool, version, format version, file).

Version 3 adds, all optional: the conversation a case came from (``messages``: every turn, with tool calls and
tool results, and ``judged_turn``, the turn the verdict is about), the attack ``strategy`` and the ``plugin`` (the
producing tool's probe, plugin or task, whole), its ``tags``, and a ``limit`` the sample hit. ``probe_input`` (the
last user turn) and ``response`` (the judged answer) stay, so every figure reads as before. Versions 1 and 2 read
unchanged: the one migration chain is ``reporting/format/migrate.py``.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Annotated, Any, Literal, Optional, Union

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StrictBool,
    StrictFloat,
    StrictInt,
    StrictStr,
    StringConstraints,
    field_serializer,
    field_validator,
)

from reporting.format.severity import (  # re-exported: the schema's names
    DEFAULT_SEVERITY_WEIGHTS as DEFAULT_SEVERITY_WEIGHTS,
)
from reporting.format.severity import HIGH_STAKES as HIGH_STAKES
from reporting.format.severity import SEVERITIES as SEVERITIES
from reporting.format.severity import normalize_severity as normalize_severity

SCHEMA_VERSION = 3

MAX_INTEGER = 2**53  # every integer a run holds is exact in numpy, pandas and a browser's JSON
MAX_SEVERITY_WEIGHT = 1_000_000.0


# Case-insensitive on input, stored in lower case. Checked by pydantic-core itself (no Python
# callback per case), which keeps validation of 100k cases close to the cost of parsing them.
Severity = Annotated[
    str,
    StringConstraints(strip_whitespace=True, to_lower=True, pattern=r"(?i)^\s*(low|medium|high|critical)\s*$"),
    Field(json_schema_extra={"enum": list(SEVERITIES)}),
]


class Verdict(BaseModel):
    """One judge's verdict on a case (a garak detector, a promptfoo assertion, an Inspect scorer, RunLens's rules)."""

    model_config = ConfigDict(extra="allow", allow_inf_nan=False)

    passed: Optional[StrictBool] = Field(default=None, description="The judge's verdict; null: it did not judge.")
    score: Optional[Union[StrictFloat, StrictInt]] = Field(default=None, description="The judge's own score, as given.")
    explanation: Optional[StrictStr] = Field(default=None, description="Why the judge decided so.")


class ToolCall(BaseModel):
    """A tool call an assistant turn made: the function's name and its arguments, as the tool recorded them."""

    model_config = ConfigDict(extra="allow", allow_inf_nan=False, frozen=True)

    id: Optional[StrictStr] = Field(default=None, description="The call's id (a tool turn answers it by this id).")
    function: StrictStr = Field(description="The function called.")
    arguments: Union[dict[StrictStr, Any], StrictStr, None] = Field(
        default=None, description="Its arguments: an object, or the text the model wrote when it was not JSON."
    )


class Message(BaseModel):
    """One turn of a conversation (version 3). The producing tool's own per-turn fields are kept as extras."""

    model_config = ConfigDict(extra="allow", allow_inf_nan=False, frozen=True)

    role: Literal["system", "user", "assistant", "tool"] = Field(description="Who spoke.")
    content: StrictStr = Field(default="", description="The turn's text (several parts joined by blank lines).")
    tool_calls: list[ToolCall] = Field(default_factory=list, description="The tool calls of an assistant turn.")
    tool_call_id: Optional[StrictStr] = Field(default=None, description="The call a tool turn answers.")


class Limit(BaseModel):
    """A limit the sample hit before it finished (Inspect's ``limit``: message, token, time, working, ...)."""

    model_config = ConfigDict(extra="allow", allow_inf_nan=False, frozen=True)

    type: StrictStr = Field(description="Which limit: message, token, time, working, operator, custom, ...")
    limit: Optional[Union[StrictInt, StrictFloat]] = Field(default=None, description="The limit's value.")
    reason: Optional[StrictStr] = Field(default=None, description="Why, as the tool said it.")


class Case(BaseModel):
    """One probe's score: what was asked, what came back, and how it was judged. Frozen: a case read is never
    changed in place (a changed case is a ``model_copy``), so cases can share what pydantic records of them."""

    model_config = ConfigDict(extra="allow", allow_inf_nan=False, frozen=True)

    probe_id: StrictStr = Field(min_length=1, description="Identifier of the probe, unique within the run.")
    category: StrictStr = Field(description="Threat family of the probe, e.g. 'prompt_injection'.")
    severity: Severity = Field(
        description="Probe severity label: low, medium, high or critical (case-insensitive on input)."
    )
    passed: Optional[StrictBool] = Field(
        description="The primary verdict: true passed, false failed; null (version 2) when the case was not "
        "evaluated, with an 'error' saying why."
    )
    risk_score: Optional[StrictFloat] = Field(
        ge=0.0, le=1.0, description="0-1 danger level (1 = worst); null only for a case not evaluated."
    )
    severity_weight: Optional[StrictFloat] = Field(
        default=None,
        ge=0.0,
        le=MAX_SEVERITY_WEIGHT,
        description="Weight used when combining severity with risk; default low 0.5, medium 1.0, high 1.5, critical "
        "2.0.",
    )
    weighted_risk: Optional[StrictFloat] = Field(
        default=None,
        ge=-MAX_SEVERITY_WEIGHT,
        le=MAX_SEVERITY_WEIGHT,
        description="Stored min(1, risk_score * severity_weight); always recomputed, differences are reported as "
        "drift.",
    )
    safe_signal_hits: StrictInt = Field(
        default=0, ge=0, le=MAX_INTEGER, description="Count of safe-behaviour regex signals."
    )
    unsafe_signal_hits: StrictInt = Field(
        default=0, ge=0, le=MAX_INTEGER, description="Count of unsafe-behaviour regex signals."
    )
    boundary_or_refusal_signal: StrictBool = Field(
        default=False, description="Whether refusal or boundary language was detected."
    )
    matched_safe_patterns: list[StrictStr] = Field(default_factory=list, description="Labels of matched safe rules.")
    matched_unsafe_patterns: list[StrictStr] = Field(
        default_factory=list, description="Labels of matched unsafe rules."
    )
    detected_failure_modes: list[StrictStr] = Field(
        default_factory=list,
        description="Failure modes detected in the response (overlap with the probe's candidates).",
    )
    failure_modes: list[StrictStr] = Field(default_factory=list, description="The probe's candidate failure modes.")
    task: Optional[StrictStr] = Field(default=None, description="Probe task text.")
    probe_input: Optional[StrictStr] = Field(default=None, description="Probe scenario input sent to the model.")
    response: Optional[StrictStr] = Field(default=None, description="The model's response.")
    explanation: Optional[StrictStr] = Field(default=None, description="Why the case passed or failed.")
    error: Optional[StrictStr] = Field(
        default=None, description="Why the case was not evaluated (version 2; requires passed: null)."
    )
    verdicts: dict[StrictStr, Verdict] = Field(
        default_factory=dict, description="Each judge's verdict by judge name (version 2)."
    )
    probe_group: Optional[StrictStr] = Field(
        default=None, description="The probe this case repeats (generations, epochs, repeats; version 2)."
    )
    source_id: Optional[StrictStr] = Field(
        default=None, description="The producing tool's own id of the record (version 2)."
    )
    messages: Optional[list[Message]] = Field(
        default=None,
        description="The conversation, every turn in order (version 3); probe_input is its last user turn and "
        "response its judged answer.",
    )
    judged_turn: Optional[StrictInt] = Field(
        default=None, ge=0, description="The index in messages of the assistant turn the verdict is about (version 3)."
    )
    strategy: Optional[StrictStr] = Field(
        default=None, description="The attack strategy or technique, e.g. basic, crescendo, goat (version 3)."
    )
    plugin: Optional[StrictStr] = Field(
        default=None, description="The producing tool's probe, plugin or task id, whole (version 3)."
    )
    limit: Optional[Limit] = Field(default=None, description="A limit the sample hit before it finished (version 3).")
    tags: Optional[list[StrictStr]] = Field(
        default=None,
        description="The producing tool's tags of the case, whole (garak's probe tags such as owasp:llm01, an Inspect "
        "log's and sample's tags; version 3). Framework items are mapped from them before the category.",
    )


class Source(BaseModel):
    """Where an imported run came from, so any figure can be traced to the tool's own record."""

    model_config = ConfigDict(extra="allow", allow_inf_nan=False)

    tool: StrictStr = Field(description="The producing tool, e.g. garak, promptfoo, inspect.")
    tool_version: Optional[StrictStr] = Field(default=None, description="The tool's version.")
    format_version: Optional[Union[StrictStr, StrictInt]] = Field(default=None, description="Its file format version.")
    file: Optional[StrictStr] = Field(default=None, description="The file read (its name, as given).")


class RunMeta(BaseModel):
    """Who and what was evaluated. Missing fields are derived from the file name."""

    model_config = ConfigDict(extra="allow", allow_inf_nan=False)

    run_id: StrictStr = Field(description="Identifier of the run; defaults to the file name without extension.")
    model: StrictStr = Field(default="unknown", description="The model under test.")
    suite: StrictStr = Field(default="unknown", description="The probe suite the run used.")
    created_at: Optional[StrictStr] = Field(
        default=None, description="When the run was made, ISO 8601 (e.g. 2026-11-02T14:30:00Z)."
    )
    notes: Optional[StrictStr] = Field(default=None, description="Free-text notes.")
    config: dict[str, Any] = Field(default_factory=dict, description="Producer configuration, carried through as is.")
    source: Optional[Source] = Field(default=None, description="The tool and file an imported run came from (v2).")

    @field_validator("created_at")
    @classmethod
    def _check_iso8601(cls, value: Optional[str]) -> Optional[str]:
        if value is None:
            return value
        try:
            datetime.fromisoformat(value.replace("Z", "+00:00").replace("z", "+00:00"))
        except ValueError:
            raise ValueError("must be an ISO 8601 date-time such as 2026-11-02T14:30:00Z") from None
        return value


class RunReport(BaseModel):
    """A whole run report as read from a file (schema version 3; versions 1 and 2 are read unchanged)."""

    model_config = ConfigDict(extra="allow", allow_inf_nan=False)

    schema_version: StrictInt = Field(default=SCHEMA_VERSION, description="Format version; missing means 1.")
    run: RunMeta
    cases: list[Case] = Field(description="Per-probe case scores; may be empty.")
    aggregate_metrics: Optional[dict[str, Any]] = Field(
        default=None, description="Run-level figures as some producer stored them (compared, never trusted)."
    )
    observability: Optional[dict[str, Any]] = Field(
        default=None, description="Observability geometry as some producer stored it (replaced on recompute)."
    )

    @field_serializer("cases", mode="wrap")
    def _every_case(self, cases: Any, handler: Any) -> Any:
        """A run read by columns holds its cases as a table (``reporting.format.table_run``): dumped as a list."""
        return handler(cases if isinstance(cases, list) else list(cases))


def state_problem(
    passed: Any, error: Any, risk: Any, judged_turn: Any, roles: Callable[[], list[Any]], version: int
) -> Optional[tuple[str, str, Any]]:
    """A case is evaluated (passed true or false, with a risk score) or not evaluated (passed null, with an error
    saying why; version 2); a judged turn is an assistant turn of its conversation (version 3, ``roles`` the roles
    of its messages in order). ``(field, message, value)`` of the first rule broken, else None. One definition for
    the reader (over the model) and for import (over the case a tool's file gave, before it is written)."""
    if judged_turn is not None:
        turns = roles()
        if type(judged_turn) is not int or not 0 <= judged_turn < len(turns):  # (a flag is no index)
            return "judged_turn", f"must be the index of a turn of messages (it has {len(turns)})", judged_turn
        if turns[judged_turn] != "assistant":
            return "judged_turn", "must be the index of an assistant turn", judged_turn
    if passed is None:
        if version < 2:
            return (
                "passed",
                "must be true or false (a case not evaluated, passed null with an error, needs schema_version 2)",
                None,
            )
        if not error:
            return "error", "required when passed is null: say why the case was not evaluated", error
        return None
    if error is not None:
        return "error", "only a case not evaluated (passed null) carries an error", error
    if risk is None:
        return "risk_score", "required for an evaluated case (passed true or false)", None
    return None


def evaluation_problem(case: Case, version: int) -> Optional[tuple[str, str, Any]]:
    """``state_problem`` of a case the format's model read."""
    return state_problem(
        case.passed,
        case.error,
        case.risk_score,
        case.judged_turn,
        lambda: [message.role for message in case.messages or []],
        version,
    )


def json_schema() -> dict[str, Any]:
    """The JSON Schema of the run-report format, generated from the models."""
    schema = RunReport.model_json_schema()
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["title"] = f"RunLens run report (schema version {SCHEMA_VERSION})"
    return schema
