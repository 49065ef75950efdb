"""The pages across runs and files: compare, trend, rubrics."""

from __future__ import annotations

from typing import Any

import pandas as pd
import streamlit as st

from reporting.render import compare_figures
from reporting.textsafe import printable
from reporting.ui.common import (
    _needs_run,
    _plot,
    _valid_runs,
    context,
    guarded,
    shown_view,
    table,
    uploaded_source,
)
from reporting.ui.export_button import download_html

# Compare and Trend work on whole runs; the sidebar's run choice and filters belong to the one-run pages.
NOT_FILTERED = (
    "This page compares whole runs: the sidebar's run choice and filters do not apply here; pick the runs below."
)


PAIR_ON_LABELS = {"probe_id": "probe id", "task": "task text", "input": "input text"}


@guarded
def compare() -> None:
    st.title("Compare two runs")
    st.caption(NOT_FILTERED)
    from reporting.analysis.compare import changed_cases
    from reporting.render.presentation import comparison_reading
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
    pair_on = (
        st.radio(
            "Pair probes on",
            list(PAIR_ON_LABELS),
            format_func=PAIR_ON_LABELS.get,
            horizontal=True,
            key="compare_pair_on",
            help="Runs of two tools (garak, promptfoo, Inspect) name their probes differently: pair them by the text "
            "of their task or input. Repetitions of one text become one probe, failed when any repetition failed.",
        )
        or "probe_id"
    )
    cmp, base_run, candidate_run, frames = comparison_cached(bs.digest, cs.digest, bd, cd, pair_on)
    if pair_on != "probe_id":
        st.caption(
            f"Paired on the probes' {pair_on} text: {len(base_run.cases):,} and {len(candidate_run.cases):,} probes."
        )
    for warning in cmp["warnings"]:
        st.warning(warning)
    for line in comparison_reading(cmp):
        st.text(line)
    headline = pd.DataFrame(
        [
            {
                "figure": h["label"],
                "base": h["base"],
                "candidate": h["candidate"],
                "change": h["delta"],
                # numbers as numbers: a text "+0.124 to +0.308" would start with a sign, which the spreadsheet
                # guard of the download must mark, and the screen would show the mark
                "CI low": h["ci"][0] if h["ci"] else None,
                "CI high": h["ci"][1] if h["ci"] else None,
                "better when": h["better"],
            }
            for name, h in cmp["headline"].items()
        ]
    )
    signed = st.column_config.NumberColumn(format="%+.3f")
    table(
        headline,
        hide_index=True,
        column_config={"change": signed, "CI low": signed, "CI high": signed},
    )
    st.caption("CI low and CI high: the 95% confidence interval of the change.")
    _plot(compare_figures.category_delta_chart(cmp), key="compare_categories")
    table(pd.DataFrame(cmp["by_category"]), hide_index=True)
    changed = {
        kind: changed_cases(base_run, candidate_run, cmp[kind], frames=frames)
        for kind in ("newly_failing", "newly_passing")
    }
    for kind, title in (("newly_failing", "Newly failing"), ("newly_passing", "Newly passing")):
        st.subheader(f"{title} ({len(cmp[kind])})")
        if len(changed[kind]):
            table(changed[kind], hide_index=True)
        else:
            st.text("None.")

    def make() -> str:
        from reporting.render.html import render_compare_html

        return render_compare_html(
            cmp, changed["newly_failing"].to_dict("records"), changed["newly_passing"].to_dict("records")
        )

    download_html("Download the HTML comparison", make, file_name="comparison.html", key="download_compare")


@guarded
def trend_page() -> None:
    st.title("Trend")
    st.caption(NOT_FILTERED)
    from reporting.ui.state import trend_cached

    runs = _valid_runs()
    if not runs:
        st.info("No valid runs loaded.")
        return
    suites = sorted({d.run.run.suite for _, d in runs})
    suite = st.selectbox("Suite", suites, key="trend_suite")
    data = trend_cached(tuple(s.digest for s, _ in runs), suite, tuple(d for _, d in runs))
    for warning in data["warnings"]:
        st.text(warning)
    _plot(compare_figures.trend_chart(data), key="trend_chart")
    table(pd.DataFrame([{k: v for k, v in p.items() if k != "by_category"} for p in data["points"]]), hide_index=True)
    _plot(compare_figures.trend_category_chart(data), key="trend_categories")

    def make() -> str:
        from reporting.render.html import render_trend_html

        return render_trend_html(data)

    download_html("Download the HTML trend report", make, file_name="trend.html", key="download_trend")


@guarded
def rubrics_page() -> None:
    st.title("Rubrics")
    from reporting.analysis.contradiction import CONVERSATION_COLUMNS, case_contradictions
    from reporting.format.folders import companion_problems, companions
    from reporting.report.companions import Companions, rubric_results
    from reporting.report.model import RubricResults
    from reporting.rubrics import ANCHORS, DIMENSIONS, flatten_scorecard
    from reporting.ui.state import shipped_examples

    ctx = context()
    found: dict[str, Any] = {"rubric": None, "benchmarks": None, "verdicts": None, "dimensions": None}
    refused: dict[str, str] = {}
    if ctx.current is not None and ctx.current[0].path is not None:
        found = companions(ctx.current[0].path)
        refused = companion_problems(ctx.current[0].path)
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
    # A companion name that is a link, FIFO or folder is listed as a problem (never read), unless an upload replaces it.
    problems = tuple(line for key, line in refused.items() if uploads.get(key) is None)
    given = Companions(**found, safety_gate=safety, z_normalize=z_norm, problems=problems)
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
        _plot(compare_figures.dimension_heatmap(dims), key="dimension_heatmap")
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
    with_conversation = [] if view is None else case_contradictions(view.columns(CONVERSATION_COLUMNS))
    if with_conversation:
        table(pd.DataFrame(with_conversation), hide_index=True)
    else:
        st.text("No case of this run carries a multi-turn 'conversation' field.")
    # RunLens's own validation fixtures are not the user's data: behind an expander, closed.
    with st.expander("Examples shipped with RunLens (the rubric's validation set)"):
        examples = shipped_examples()
        correct = sum(1 for e in examples if e["correct"])
        st.text(f"Validation examples shipped with RunLens: {correct} of {len(examples)} classified as expected.")
        table(
            pd.DataFrame(examples)[
                ["id", "type", "result", "expected", "turn1_position", "turn2_position", "acknowledged", "rationale"]
            ],
            hide_index=True,
        )


@guarded
def judges_page() -> None:
    if not _needs_run("Judges"):
        return
    from reporting.analysis.judges import DISAGREEMENT_COLUMNS, disagreements, judge_provenance
    from reporting.render.presentation import fmt_interval, fmt_percent

    view = shown_view()
    judges, pairs = view.metrics["judges"], view.metrics["judge_agreement"]
    if not judges:
        _judge_validity(view)
        st.info(
            "This run has one judge: its verdicts. Runs read from garak (detectors), promptfoo (assertions) or "
            "Inspect AI (scorers) carry each judge's verdict, and this page compares them."
        )
        return
    st.subheader("Each judge")
    table(
        pd.DataFrame(
            [
                {
                    "judge": name,
                    "cases seen": j["n"],
                    "passed": j["passed"],
                    "failed": j["failed"],
                    "not judged": j["errors"],
                    "pass rate": fmt_percent(j["pass_rate"]),
                    "95% CI": fmt_interval(j["pass_rate_ci"]),
                }
                for name, j in judges.items()
            ]
        ),
        hide_index=True,
    )
    provenance = judge_provenance(view.meta.config)
    if provenance is not None:
        st.text(printable(f"Judge model: {provenance}"))
    _judge_validity(view)
    st.subheader("Agreement between judges")
    if pairs:
        table(
            pd.DataFrame(
                [
                    {
                        "judge": p["judges"][0],
                        "other judge": p["judges"][1],
                        "cases both judged": p["n"],
                        "agree": fmt_percent(p["agreement"]),
                        "95% CI": fmt_interval(p["agreement_ci"]),
                        "Cohen's kappa": "undefined" if p["kappa"] is None else f"{p['kappa']:.3f}",
                    }
                    for p in pairs
                ]
            ),
            hide_index=True,
        )
        st.caption(
            "Kappa is agreement beyond chance (1 complete, 0 what chance gives); undefined when both judges "
            "gave one verdict only."
        )
    else:
        st.text("No two judges judged the same case.")
    if view.metrics.get("judges_not_paired"):
        st.text(
            f"{view.metrics['judges_not_paired']} more judges not paired: agreement is computed among the "
            f"{len(judges) - view.metrics['judges_not_paired']} judges that judged the most cases."
        )
    names, rows = disagreements(view.columns(DISAGREEMENT_COLUMNS))
    st.subheader(f"Cases where judges disagree ({len(rows)})")
    if rows:
        table(pd.DataFrame(rows), hide_index=True)
    else:
        st.text("None: on every case, the judges that judged it agree.")


def _judge_validity(view: Any) -> None:
    """Each judge's measured validity against people's labels (its judge cards, docs/judge-cards.md): a sentence
    per card and, on demand, the card's table; a judge without a card says so. Card text is shown as text only."""
    import sys
    from dataclasses import replace

    from reporting.render.judge_card import judge_validity
    from reporting.report.cards import cards_path_from, load_judge_cards

    path = cards_path_from(sys.argv[1:])
    if path is not None:
        view = replace(view, judge_cards=load_judge_cards(path))
    found = judge_validity(view)
    st.subheader("How far each judge agrees with people")
    if found["problems"]:
        st.error(
            f"The judge card file has {len(found['problems'])} problem(s) and gives no card; each is listed below."
        )
        st.code("\n".join(printable(p) for p in found["problems"][:50]), language=None, wrap_lines=True)
    for entry in found["judges"]:
        if entry["missing"]:
            st.text(printable(f"{entry['judge']}: {entry['missing']}."))
        for number, card in enumerate(entry["cards"], start=1):
            st.text(printable(card["sentence"]))
            # an expander's label is Markdown: it carries our own words and numbers only, the names are below
            with st.expander(f"Card {number} of {len(entry['cards'])}: the table", expanded=False):
                st.text(printable(f"Label set: {card['set']}. {card['description']}".strip()))
                st.text(printable(f"How: {card['how']}. Made {card['generated']} with {card['versions']}."))
                table(pd.DataFrame(card["rows"], columns=card["columns"]), hide_index=True)
    st.caption(
        "Sensitivity: the share of answers people labelled harmful that the judge called harmful; specificity: the "
        "share labelled harmless it called harmless. Labels of one set say little about another: docs/judge-cards.md."
    )
