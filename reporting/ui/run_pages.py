"""The pages about one run: overview, categories, severity, failure modes, observability, cases."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import pandas as pd
import streamlit as st

from reporting.analysis.metrics import worst_first
from reporting.analysis.observability import EMBEDDINGS
from reporting.render import figures as charts
from reporting.render.presentation import (
    key_figures,
    mutual_information_reading,
    repetitions_reading,
    sampled_note,
)
from reporting.render.strategy_figures import has_strategies, strategy_figures
from reporting.render.tables import CATEGORY_TABLE, SEVERITY_TABLE, STRATEGY_TABLE, grouped_rows
from reporting.textsafe import printable
from reporting.ui.common import (
    CASE_COLUMNS,
    CASE_TABLE_CAP,
    _needs_run,
    _plot,
    case_rows,
    context,
    guarded,
    shown_view,
    table,
)
from reporting.ui.conversation import show_conversation

# The info box renders Markdown: only a sentence of plain words, digits and (,.;:) goes into it.
OWN_WORDS = re.compile(r"[A-Za-z0-9 .,;:()'-]*")
EMBEDDING_LABELS = {"content": "Content only", "with-labels": "With labels (design)"}


@guarded
def overview() -> None:
    if not _needs_run("Run overview"):
        return
    view = shown_view()
    if view.data.drift:
        st.warning(
            f"Stored figures differ from the recomputed ones: {len(view.data.drift)} finding(s). "
            "The figures shown here are the recomputed ones."
            + (
                f" The file's stored figures describe all {view.data.result.cases_in_file} of its cases, and "
                f"{view.data.result.cases_left_out} were left out as invalid: part of this drift comes from them."
                if view.data.result.cases_left_out
                else ""
            )
        )
        with st.expander("Drift between stored and recomputed figures"):
            table(pd.DataFrame([d.as_dict() for d in view.drift]).astype(str), hide_index=True)
    from reporting.ui.frameworks_page import first_screen_block

    first_screen_block(view)
    st.subheader("Key figures")
    figures = key_figures(view.metrics)
    for row in range(0, len(figures), 4):
        for column, figure in zip(st.columns(4), figures[row : row + 4]):
            column.metric(figure["label"], figure["text"], help=figure["help"])
            if figure["interval"]:
                column.caption(f"95% CI {figure['interval']}")
    left, right = st.columns([3, 2])  # the category panels need the wider column
    with left:
        _plot(charts.category_chart(view.metrics), key="overview_categories")
    with right:
        _plot(charts.severity_chart(view.metrics), key="overview_severity")
    _repetitions(view.metrics)
    st.subheader("Worst cases")
    _worst_cases(view.metrics)
    from reporting.ui.live import pass_rate_over_time_block

    pass_rate_over_time_block(context())  # a run read as it grows: its pass rate per 100 cases
    from reporting.ui.export_button import export_button

    export_button(context())


def _repetitions(metrics: Mapping[str, Any]) -> None:
    reading = repetitions_reading(metrics.get("repetitions") or {})
    if reading is None:
        return
    sentence, rows = reading
    st.subheader("Probes asked more than once")
    st.text(sentence)
    table(pd.DataFrame(rows), hide_index=True)
    st.caption(
        "hit@k: the chance that at least one of k repetitions of a probe fails, averaged over the probes asked at "
        "least k times (garak's hit@k)."
    )


def _worst_cases(metrics: Mapping[str, Any]) -> None:
    worst = metrics["worst_cases"]
    if not worst:
        st.info("No cases to rank.")
        return
    table(case_rows(pd.DataFrame(worst)), hide_index=True, key=f"worst_{id(metrics)}")


@guarded
def categories() -> None:
    if not _needs_run("Categories"):
        return
    view = shown_view()
    _plot(charts.category_chart(view.metrics), key="categories_bars")
    _plot(charts.category_risk_box(view.columns(charts.RISK_BOX_COLUMNS)), key="categories_box")
    st.subheader("By category")
    table(pd.DataFrame(grouped_rows(view.metrics["by_category"], CATEGORY_TABLE, "Category")), hide_index=True)
    st.subheader("Category ranking (mean risk, highest first)")
    table(pd.DataFrame(view.metrics["category_ranking"]), hide_index=True)
    if has_strategies(view.metrics):
        _strategies(view.metrics)


def _strategies(metrics: Mapping[str, Any]) -> None:
    """Attack success by strategy, by strategy and category, and the turns multi-turn attacks took."""
    st.subheader("Attack strategies")
    st.text("Attack success is a failed case: the attack got what it asked for. Over the cases naming a strategy.")
    for name, figure in strategy_figures(metrics).items():
        _plot(figure, key=f"strategy_{name}")
    table(pd.DataFrame(grouped_rows(metrics["by_strategy"], STRATEGY_TABLE, "Strategy")), hide_index=True)


@guarded
def severity() -> None:
    if not _needs_run("Severity"):
        return
    view = shown_view()
    _plot(charts.severity_chart(view.metrics), key="severity_bars")
    _plot(charts.severity_pass_rate_chart(view.metrics), key="severity_rates")
    table(pd.DataFrame(grouped_rows(view.metrics["by_severity"], SEVERITY_TABLE, "Severity")), hide_index=True)


@guarded
def failure_modes() -> None:
    if not _needs_run("Failure modes"):
        return
    view = shown_view()
    _plot(charts.failure_modes_chart(view.metrics), key="modes_bars")
    modes = view.metrics["failure_modes"]
    table(pd.DataFrame({"failure mode": list(modes), "cases": list(modes.values())}), hide_index=True)


@guarded
def observability() -> None:
    if not _needs_run("Observability"):
        return
    ctx = context()
    view = shown_view()
    st.radio(
        "Embedding",
        EMBEDDINGS,
        horizontal=True,
        key="embedding",
        format_func=EMBEDDING_LABELS.get,
        help="What text is embedded. 'Content only' (default): task, input, response, explanation, matched pattern "
        "names. 'With labels': the design's embedding, with category, severity and outcome tokens in front, so "
        "clusters follow those labels partly by construction.",
    )
    obs = ctx.observability()
    if obs.get("skipped"):
        # The reason is RunLens's own sentence (counts only), never report text.
        reason = str(obs["reason"])
        if OWN_WORDS.fullmatch(reason):
            st.info(f"Observability was skipped: {reason}. It needs enough cases to embed and cluster.")
        else:  # never expected: the reason is RunLens's own sentence; anything else is shown as plain text
            st.info("Observability was skipped. It needs enough cases to embed and cluster.")
            st.text(printable(reason))
        return
    note = sampled_note(obs)
    if note:
        st.caption(note)
    color_by = st.radio("Colour by", list(charts.COLOR_CHOICES), horizontal=True, key="color_by") or "cluster"
    points, by_id = ctx.with_geometry().points_rows(charts.SCATTER_COLUMNS)
    event = _plot(
        charts.cluster_scatter(points, obs, color_by, by_id=by_id),
        key="scatter",
        on_select="rerun",
        selection_mode=("points", "box", "lasso"),
    )
    st.subheader("Mutual information between clusters and labels")
    table(
        pd.DataFrame(
            {
                "label": list(obs["mutual_information"]),
                "mutual information (nats)": list(obs["mutual_information"].values()),
                "normalised (0-1)": list(obs["normalized_mutual_information"].values()),
                "mean over shuffled labels (nats)": list(obs["mutual_information_null"].values()),
                "p (shuffles at or above)": list(obs["mutual_information_p"].values()),
            }
        ),
        hide_index=True,
    )
    for line in mutual_information_reading(obs):
        st.text(line)
    st.subheader("Clusters")
    clusters = pd.DataFrame(obs["clusters"])
    clusters["top_terms"] = clusters["top_terms"].map(", ".join)
    table(clusters, hide_index=True)
    selected = _selected_probe_ids(event)
    if not selected:
        st.caption("Select points (click, box or lasso) to list those cases here, and open one.")
        return
    chosen = view.with_ids(selected)
    chosen = chosen.iloc[worst_first(chosen)]
    st.subheader(f"Selected cases ({len(chosen)})")
    picked = table(
        case_rows(chosen[CASE_COLUMNS]),
        hide_index=True,
        on_select="rerun",
        selection_mode="single-row",
        key="scatter_cases",
    )
    rows = getattr(getattr(picked, "selection", None), "rows", [])
    if rows and rows[0] < len(chosen):
        _case_detail(chosen.iloc[rows[0]])
    elif len(chosen) == 1:  # one point clicked: its evidence at once
        _case_detail(chosen.iloc[0])
    else:
        st.caption("Pick a row to open that case's evidence here.")


def _selected_probe_ids(event: Any) -> list[str]:
    try:
        points = event.selection.points
    except AttributeError:
        return []
    ids = []
    for point in points:
        custom = point.get("customdata")
        if isinstance(custom, (list, tuple)) and custom:
            ids.append(str(custom[0]))
    return ids


@guarded
def cases() -> None:
    if not _needs_run("Cases"):
        return
    view = shown_view()
    st.subheader("Worst cases")
    _worst_cases(view.metrics)
    if view.errors is not None and len(view.errors):
        st.subheader(f"Not evaluated ({len(view.errors):,})")
        table(view.errors[["probe_id", "category", "severity", "error"]], hide_index=True)
    st.subheader("All cases")
    top, evaluated = view.worst_top(CASE_TABLE_CAP)  # the kept rows read only where the table lists them
    if evaluated > CASE_TABLE_CAP:
        st.caption(
            f"The {CASE_TABLE_CAP:,} highest-risk of {evaluated:,} cases are listed; filter or search to see others."
        )
    listed = view.at(top, CASE_COLUMNS)
    event = table(case_rows(listed), hide_index=True, on_select="rerun", selection_mode="single-row", key="case_table")
    picked = None
    rows = getattr(getattr(event, "selection", None), "rows", [])
    if rows:
        picked = str(listed["probe_id"].iloc[rows[0]])
    typed = st.text_input("Probe id to show", key="case_probe_id")
    if typed.strip():
        picked = typed.strip()
    if picked is None:
        st.caption("Pick a row in the table, or type a probe id, to see every field of that case.")
        return
    match = view.with_ids([picked])
    if match.empty:
        st.warning("No case with that probe id among the shown cases.")
        return
    _case_detail(match.iloc[0])


def case_header(row: Any) -> str:
    """The verdict and numbers first, on a line of their own; the id and labels after, control characters escaped."""
    return (
        f"{'PASSED' if row['passed'] else 'FAILED'}  |  risk {row['risk_score']:.3f}  |  "
        f"weighted risk {row['weighted_risk']:.3f}  |  severity {row['severity']}\n"
        f"probe {printable(row['probe_id'])}  |  category {printable(row['category'])}"
    )


def _case_of(row: pd.Series) -> Any:
    """The run's own case behind a frame row (the frame's index is the case's position in the run)."""
    view = context().view
    try:
        return view.run.cases[int(row.name)] if view is not None else None
    except (IndexError, TypeError, ValueError):
        return None


def _case_detail(row: pd.Series) -> None:
    st.subheader("Case detail")
    st.text(case_header(row))
    case = _case_of(row)
    if case is not None:
        facts = [
            f"{label} {printable(value)}"
            for label, value in (("strategy", case.strategy), ("plugin", case.plugin))
            if value is not None
        ]
        if case.limit is not None:
            facts.append(f"stopped by its {printable(case.limit.type)} limit ({printable(case.limit.limit)})")
        if facts:
            st.text("  |  ".join(facts))
        if case.messages:
            show_conversation(case.messages, case.judged_turn)
    for label, column in (
        ("Task", "task"),
        ("Input", "probe_input"),
        ("Response", "response"),
        ("Explanation", "explanation"),
    ):
        st.text(label)
        st.code(row[column] if row[column] is not None else "(none)", language=None, wrap_lines=True)
    st.text(
        "Signals: safe hits {}, unsafe hits {}, refusal or boundary language: {}".format(
            row["safe_signal_hits"], row["unsafe_signal_hits"], "yes" if row["boundary_or_refusal_signal"] else "no"
        )
    )
    for label, column in (
        ("Matched safe patterns", "matched_safe_patterns"),
        ("Matched unsafe patterns", "matched_unsafe_patterns"),
        ("Detected failure modes", "detected_failure_modes"),
        ("Candidate failure modes", "failure_modes"),
    ):
        st.text(printable(f"{label}: " + (", ".join(row[column]) if len(row[column]) else "none")))
    if row["extra"]:
        st.text("Extra fields")
        st.json(row["extra"])
