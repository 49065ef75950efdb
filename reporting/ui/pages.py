"""Page functions of the dashboard. They draw; every number comes from ``reporting``.

Report text and file names are hostile by nature: they are shown only through st.text, st.code,
st.json, dataframes and widget options, never through Markdown or HTML (element labels such as
an expander's are Markdown, so they carry only our own words and numbers). Tables go through
``table`` so that Streamlit's own CSV download cannot carry a spreadsheet formula. A page that
fails shows an error box naming the run, never a traceback.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from typing import Any

import pandas as pd
import streamlit as st

from reporting.render import figures as charts
from reporting.render.presentation import key_figures, mutual_information_reading
from reporting.render.tables import CASE_TABLE, CATEGORY_TABLE, SEVERITY_TABLE, grouped_rows
from reporting.report.model import Report
from reporting.textsafe import csv_safe_frame, printable
from reporting.ui.state import Context, build_context

CASE_TABLE_CAP = 5000  # rows sent to the browser in the case table
CASE_COLUMNS = [c.key for c in CASE_TABLE]


def context() -> Context:
    return st.session_state["_context"]


def _plot(fig, **kwargs: Any):
    return st.plotly_chart(fig, theme=None, config={"displaylogo": False}, **kwargs)


def table(frame: pd.DataFrame, **kwargs: Any):
    """st.dataframe with OWASP's rule on text cells: Streamlit's CSV download of it cannot start a formula."""
    return st.dataframe(csv_safe_frame(frame), **kwargs)


def guarded(page: Callable[[], None]) -> Callable[[], None]:
    """A page that cannot take the dashboard down: any failure is an error box naming the run, no traceback."""

    @functools.wraps(page)
    def run() -> None:
        try:
            page()
        except Exception as exc:  # noqa: BLE001 - shown to the user as an error box
            ctx = st.session_state.get("_context")
            label = ctx.current[0].label if ctx is not None and ctx.current is not None else "(no run)"
            st.error(
                "RunLens could not draw this page for the selected run. Other runs and pages still work; "
                "pick another run in the sidebar."
            )
            st.text(printable(f"run: {label}\nerror: {type(exc).__name__}: {str(exc)[:300]}"))

    return run


def shown_view() -> Report:
    """The filtered view of the selected run; pages call it only after ``_needs_run`` said a run is ready."""
    view = context().view
    if view is None:
        raise RuntimeError("no run is selected")
    return view


def _needs_run(title: str) -> bool:
    """Draw the page title and the states where there is nothing to show; True when a run is ready."""
    st.title(title)
    ctx = context()
    broken = [(s, d) for s, d in ctx.runs if d.result.problems]
    if broken:
        st.error(
            f"{len(broken)} run report(s) have problems. Each problem is listed below; valid cases are still shown."
        )
        for number, (source, data) in enumerate(broken, start=1):
            result = data.result
            kept = len(result.run.cases) if result.run is not None else 0
            # The file name is shown literally by st.text; the expander's label (Markdown) carries only numbers.
            st.text(printable(source.label))
            with st.expander(
                f"File {number} of {len(broken)}: {len(result.problems)} problem(s), "
                f"{kept} of {result.cases_in_file} case(s) valid"
            ):
                st.code("\n".join(printable(p) for p in result.problems), language=None, wrap_lines=True)
    if ctx.skipped:
        st.caption(f"{len(ctx.skipped)} file(s) of the folder are not runs and were skipped:")
        st.text("\n".join(printable(s) for s in ctx.skipped))
    if not ctx.runs:
        st.info("No run reports found in the runs folder. Upload one in the sidebar.")
        st.text(printable(f"runs folder: {ctx.folder}"))
        return False
    if ctx.view is None:
        st.warning("The selected file could not be read as a run report; see the problems above.")
        return False
    data = ctx.view.data
    if data.run is None:
        return False
    if data.result.cases_left_out:
        st.warning(
            f"{data.result.cases_left_out} case(s) of this file were left out because they are invalid; "
            f"the figures below use the {len(data.frame)} valid case(s)."
        )
    meta = data.run.run
    st.text(
        printable(
            f"Run {meta.run_id}  |  model {meta.model}  |  suite {meta.suite}  |  "
            f"{meta.created_at or 'date unknown'}  |  {len(data.frame):,} case(s)"
        )
    )
    shown = ctx.view
    if shown.filters.active:
        st.text(
            printable(
                f"Showing {shown.shown:,} of {shown.total:,} cases  |  filters: " + "; ".join(shown.filters.describe())
            )
        )
    else:
        st.text(f"Showing {shown.shown:,} of {shown.total:,} cases")
    return True


@guarded
def overview() -> None:
    if not _needs_run("Run overview"):
        return
    view = shown_view()
    if view.data.drift:
        st.warning(
            f"Stored figures differ from the recomputed ones: {len(view.data.drift)} finding(s). "
            "The figures shown here are the recomputed ones."
        )
        with st.expander("Drift between stored and recomputed figures"):
            table(pd.DataFrame([d.as_dict() for d in view.drift]).astype(str), hide_index=True)
    st.subheader("Key figures")
    figures = key_figures(view.metrics)
    for row in range(0, len(figures), 4):
        for column, figure in zip(st.columns(4), figures[row : row + 4]):
            column.metric(figure["label"], figure["text"], help=figure["help"])
            if figure["interval"]:
                column.caption(f"95% CI {figure['interval']}")
    left, right = st.columns(2)
    with left:
        _plot(charts.category_chart(view.metrics), key="overview_categories")
    with right:
        _plot(charts.severity_chart(view.metrics), key="overview_severity")
    st.subheader("Worst cases")
    _worst_cases(view.metrics)
    from reporting.ui.export_button import export_button

    export_button(context())


def _worst_cases(metrics: Mapping[str, Any]) -> None:
    worst = metrics["worst_cases"]
    if not worst:
        st.info("No cases to rank.")
        return
    table(pd.DataFrame(worst), hide_index=True, key=f"worst_{id(metrics)}")


@guarded
def categories() -> None:
    if not _needs_run("Categories"):
        return
    view = shown_view()
    _plot(charts.category_chart(view.metrics), key="categories_bars")
    _plot(charts.category_risk_box(view.frame), key="categories_box")
    st.subheader("By category")
    table(pd.DataFrame(grouped_rows(view.metrics["by_category"], CATEGORY_TABLE, "Category")), hide_index=True)
    st.subheader("Category ranking (mean risk, highest first)")
    table(pd.DataFrame(view.metrics["category_ranking"]), hide_index=True)


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
    obs = ctx.observability()
    if obs.get("skipped"):
        # The reason is RunLens's own sentence (counts only), never report text.
        st.info(f"Observability was skipped: {obs['reason']}. It needs enough cases to embed and cluster.")
        return
    color_by = st.radio("Colour by", list(charts.COLOR_CHOICES), horizontal=True, key="color_by") or "cluster"
    event = _plot(
        charts.cluster_scatter(view.frame, obs, color_by),
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
    if selected:
        st.subheader(f"Selected cases ({len(selected)})")
        chosen = view.frame[view.frame["probe_id"].isin(selected)]
        table(chosen[CASE_COLUMNS], hide_index=True)
    else:
        st.caption("Select points (click, box or lasso) to list those cases here.")


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
    st.subheader("All cases")
    listed = view.frame[CASE_COLUMNS].sort_values(["weighted_risk", "risk_score"], ascending=False)
    if len(listed) > CASE_TABLE_CAP:
        st.caption(
            f"The {CASE_TABLE_CAP:,} highest-risk of {len(listed):,} cases are listed; filter or search to see others."
        )
        listed = listed.head(CASE_TABLE_CAP)
    event = table(listed, hide_index=True, on_select="rerun", selection_mode="single-row", key="case_table")
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
    match = view.frame[view.frame["probe_id"] == picked]
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


def _case_detail(row: pd.Series) -> None:
    st.subheader("Case detail")
    st.text(case_header(row))
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


def _valid_runs() -> list:
    return [(s, d) for s, d in context().runs if d.run is not None and len(d.frame)]


@guarded
def compare() -> None:
    st.title("Compare two runs")
    from reporting.analysis.compare import changed_cases
    from reporting.render.presentation import comparison_reading, fmt_signed_interval
    from reporting.ui.state import comparison_cached

    runs = _valid_runs()
    if len(runs) < 2:
        st.info("Comparing needs at least two valid runs; add one in the sidebar.")
        return
    labels = [s.label for s, _ in runs]
    left, right = st.columns(2)
    base_label = left.selectbox("Base", labels, index=0, key="compare_base")
    candidate_label = right.selectbox("Candidate", labels, index=min(1, len(labels) - 1), key="compare_candidate")
    (bs, bd), (cs, cd) = runs[labels.index(base_label)], runs[labels.index(candidate_label)]
    cmp = comparison_cached(bs.digest, cs.digest, bd, cd)
    for warning in cmp["warnings"]:
        st.warning(warning)
    for line in comparison_reading(cmp):
        st.text(line)
    headline = pd.DataFrame(
        [
            {
                "figure": name.replace("_", " "),
                "base": h["base"],
                "candidate": h["candidate"],
                "change": h["delta"],
                "95% CI of change": fmt_signed_interval(h["ci"]),
                "better when": h["better"],
            }
            for name, h in cmp["headline"].items()
        ]
    )
    table(headline, hide_index=True)
    _plot(charts.category_delta_chart(cmp), key="compare_categories")
    table(pd.DataFrame(cmp["by_category"]), hide_index=True)
    changed = {kind: changed_cases(bd.run, cd.run, cmp[kind]) for kind in ("newly_failing", "newly_passing")}
    for kind, title in (("newly_failing", "Newly failing"), ("newly_passing", "Newly passing")):
        st.subheader(f"{title} ({len(cmp[kind])})")
        if len(changed[kind]):
            table(changed[kind], hide_index=True)
        else:
            st.text("None.")
    if st.button("Prepare the HTML comparison", key="prepare_compare"):
        from reporting.render.html import render_compare_html

        html = render_compare_html(
            cmp, changed["newly_failing"].to_dict("records"), changed["newly_passing"].to_dict("records")
        )
        st.download_button(
            "Download HTML comparison", html, file_name="comparison.html", mime="text/html", key="download_compare"
        )


@guarded
def trend_page() -> None:
    st.title("Trend")
    from reporting.analysis.compare import trend

    runs = _valid_runs()
    if not runs:
        st.info("No valid runs loaded.")
        return
    suites = sorted({d.run.run.suite for _, d in runs})
    suite = st.selectbox("Suite", suites, key="trend_suite")
    data = trend([d.run for _, d in runs], suite=suite)
    for warning in data["warnings"]:
        st.text(warning)
    _plot(charts.trend_chart(data), key="trend_chart")
    table(pd.DataFrame([{k: v for k, v in p.items() if k != "by_category"} for p in data["points"]]), hide_index=True)
    _plot(charts.trend_category_chart(data), key="trend_categories")
    if st.button("Prepare the HTML trend report", key="prepare_trend"):
        from reporting.render.html import render_trend_html

        st.download_button(
            "Download HTML trend report",
            render_trend_html(data),
            file_name="trend.html",
            mime="text/html",
            key="download_trend",
        )


def uploaded_source(upload: Any) -> tuple[str, bytes]:
    """An uploaded file as the rubric readers take it: (label shown in messages, bytes). Never a path."""
    return f"{printable(upload.name)} (uploaded)", upload.getvalue()


def source_name(source: Any) -> str:
    return source[0] if isinstance(source, tuple) else source.name


@guarded
def rubrics_page() -> None:
    st.title("Rubrics")
    from reporting.analysis.contradiction import case_contradictions
    from reporting.format.folders import companions
    from reporting.report.companions import Companions, rubric_results
    from reporting.report.model import RubricResults
    from reporting.rubrics import ANCHORS, DIMENSIONS, flatten_scorecard
    from reporting.ui.state import shipped_examples

    ctx = context()
    found: dict[str, Any] = {"rubric": None, "benchmarks": None, "verdicts": None, "dimensions": None}
    if ctx.current is not None and ctx.current[0].path is not None:
        found = companions(ctx.current[0].path)
        st.text(
            printable(
                "Files found next to the run: " + (", ".join(p.name for p in found.values() if p is not None) or "none")
            )
            + "  (naming: RUN.rubric.yaml, RUN.verdicts.jsonl, RUN.benchmarks.yaml, RUN.dimensions.json)"
        )
    with st.expander("Upload rubric files instead"):
        uploads = {
            "rubric": st.file_uploader("Rubric (YAML)", type=["yaml", "yml"], key="up_rubric"),
            "benchmarks": st.file_uploader("Benchmark definitions (YAML)", type=["yaml", "yml"], key="up_benchmarks"),
            "verdicts": st.file_uploader("Judge verdicts (JSON Lines)", type=["jsonl"], key="up_verdicts"),
            "dimensions": st.file_uploader("Dimension scores (JSON)", type=["json"], key="up_dimensions"),
        }
    for key, upload in uploads.items():
        if upload is not None:
            # Kept in memory as (label, bytes): the name the browser sent is a label for messages, never a path.
            found[key] = uploaded_source(upload)
    left, right = st.columns(2)
    safety = left.checkbox(
        "Safety gate (cap responses that match a safety pattern at 0)", value=True, key="rubric_safety"
    )
    z_norm = right.checkbox("z-normalise each reviewer's scores", value=False, key="rubric_z")
    given = Companions(**found, safety_gate=safety, z_normalize=z_norm)
    rubrics = rubric_results(given) if given.any else RubricResults()
    if rubrics.problems:
        st.error("The rubric files have problems; each is listed below.")
        st.code("\n".join(printable(p) for p in rubrics.problems), language=None, wrap_lines=True)

    st.subheader("Scorecard")
    card = dict(rubrics.scorecard) if rubrics.scorecard is not None else None
    if card is None:
        st.info("No scorecard: add RUN.rubric.yaml and RUN.verdicts.jsonl next to the run, or upload them above.")
    else:
        verdict = "PASS" if card["passed"] else f"FAIL (decided by {card['decided_by']})"
        st.text(
            f"{card['code']} {card['label']}: {card['score']:.3f} against {card['passing_threshold']:.2f} -> {verdict}"
        )
        rows = flatten_scorecard(card)
        for row in rows:
            row["item"] = "    " * row["depth"] + f"{row['code']} {row['label']}"
        table(
            pd.DataFrame(rows)[
                ["item", "kind", "score", "threshold", "weight", "method", "criticality", "n", "result", "decided_by"]
            ],
            hide_index=True,
        )

    st.subheader("Dimension scores")
    dims = dict(rubrics.dimensions) if rubrics.dimensions is not None else None
    if dims is None:
        st.info("No dimension scores: add RUN.dimensions.json next to the run, or upload one above.")
    else:
        st.text(f"Query: {dims['query']}")
        _plot(charts.dimension_heatmap(dims), key="dimension_heatmap")
        ranked = pd.DataFrame(
            [
                {
                    "rank": dims["ranking"].index(r["response"]) + 1 if r["response"] in dims["ranking"] else None,
                    "response": r["response"],
                    "overall": r["overall"],
                    "ceiling applied": r["ceiling_applied"],
                    "safety": "passed"
                    if r["safety"].get("passed") is not False
                    else "FAILED: " + ", ".join(r["safety"]["flagged_patterns"]),
                    "reviews": r["reviews"],
                }
                for r in dims["responses"]
            ]
        ).sort_values("rank")
        table(ranked, hide_index=True)
        st.text("Inter-reviewer spread (mean standard deviation across reviewers):")
        table(
            pd.DataFrame([{"dimension": d, "spread": dims["reviewer_spread"][d]} for d in DIMENSIONS]), hide_index=True
        )
        for note in dims["notes"]:
            st.text(note)
        with st.expander("Scoring anchors (docs/rubrics.md)"):
            for dimension, anchors in ANCHORS.items():
                st.text(dimension + ":\n  " + "\n  ".join(anchors))

    st.subheader("Self-contradiction")
    view = ctx.view
    with_conversation = [] if view is None else case_contradictions(view.frame)
    if with_conversation:
        table(pd.DataFrame(with_conversation), hide_index=True)
    else:
        st.text("No case of this run carries a multi-turn 'conversation' field.")
    examples = shipped_examples()
    correct = sum(1 for e in examples if e["correct"])
    st.text(f"Validation examples shipped with RunLens: {correct} of {len(examples)} classified as expected.")
    table(
        pd.DataFrame(examples)[
            ["id", "type", "result", "expected", "turn1_position", "turn2_position", "acknowledged", "rationale"]
        ],
        hide_index=True,
    )


PAGES = (
    ("overview", "Overview", overview),
    ("categories", "Categories", categories),
    ("severity", "Severity", severity),
    ("failure_modes", "Failure modes", failure_modes),
    ("observability", "Observability", observability),
    ("cases", "Cases", cases),
    ("compare", "Compare", compare),
    ("trend", "Trend", trend_page),
    ("rubrics", "Rubrics", rubrics_page),
)


def run_app() -> None:
    """The router: sidebar and loading first, then the page chosen in the navigation."""
    st.set_page_config(page_title="RunLens", layout="wide")
    try:
        st.session_state["_context"] = build_context()
    except Exception as exc:  # noqa: BLE001 - never a traceback
        from reporting.ui.state import Context, runs_dir

        st.session_state["_context"] = Context(runs_dir(), [], None, None)
        st.error("RunLens could not load the runs; the problem is below.")
        st.text(printable(f"error: {type(exc).__name__}: {str(exc)[:300]}"))
    # Pages are functions, so the app runs the same from a checkout and from an installed wheel.
    navigation = st.navigation(
        [st.Page(page, title=title, url_path=name, default=(name == "overview")) for name, title, page in PAGES]
    )
    try:
        navigation.run()
    except Exception as exc:  # noqa: BLE001 - the last net (Streamlit's rerun and stop are not Exceptions)
        st.error("RunLens could not draw this page. Other pages and runs still work.")
        st.text(printable(f"error: {type(exc).__name__}: {str(exc)[:300]}"))
