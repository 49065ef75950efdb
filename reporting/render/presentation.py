"""What each figure is called, what it means, and how it is formatted: shared by the
dashboard and the HTML export so both say the same thing."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Optional

from reporting.analysis.judge_cards import primary_judge
from reporting.analysis.observability import PERMUTATIONS, SIGNIFICANCE
from reporting.analysis.registry import HEADLINE, Figure, interval, value
from reporting.textsafe import printable


def fmt_percent(value: Optional[float], digits: int = 1) -> str:
    return "n/a" if value is None else f"{value * 100:.{digits}f}%"


def fmt_number(value: Optional[float], digits: int = 3) -> str:
    if value is None:
        return "n/a"
    if isinstance(value, int) and not isinstance(value, bool):
        return f"{value:,}"
    return f"{value:.{digits}f}"


def format_figure(figure: Figure, metrics: Mapping[str, Any]) -> str:
    shown = value(figure, metrics)
    if figure.key == "safe_unsafe_signal_ratio" and shown is None:
        overall = metrics.get("overall", {})
        return f"n/a ({overall.get('safe_signal_total', 0)} safe : {overall.get('unsafe_signal_total', 0)} unsafe)"
    return fmt_percent(shown) if figure.kind == "percent" else fmt_number(shown)


def fmt_interval(interval: Optional[list], kind: str = "percent") -> str:
    if not interval:
        return "n/a"
    fmt = fmt_percent if kind == "percent" else fmt_number
    return f"{fmt(interval[0])} to {fmt(interval[1])}"


def key_figures(metrics: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Label, formatted value, raw value, 95% interval and help text of each headline figure of the registry."""
    figures = []
    for f in HEADLINE:
        ci = interval(f, metrics)
        figures.append(
            {
                "key": f.path,
                "label": f.label,
                "value": value(f, metrics),
                "text": format_figure(f, metrics),
                "help": f.help,
                "better": f.better,
                "ci": ci,
                "interval": fmt_interval(ci, f.kind) if ci else "",
            }
        )
    return figures


def mutual_information_reading(obs: Mapping[str, Any]) -> list[str]:
    """A plain-language reading of the mutual information: it speaks only of labels whose MI is clearly above
    its permutation null (p below ``SIGNIFICANCE``), and says so when none is."""
    if obs.get("skipped"):
        return [f"Observability was skipped: {obs.get('reason', 'not enough cases')}."]
    nmi = obs["normalized_mutual_information"]
    mi, null, p = obs["mutual_information"], obs["mutual_information_null"], obs["mutual_information_p"]
    shuffles = int(obs.get("method", {}).get("permutations", PERMUTATIONS))
    names = {"category": "threat category", "severity": "severity label", "pass_fail": "pass / fail outcome"}

    def strength(v: float) -> str:
        return "strongly" if v >= 0.5 else "moderately" if v >= 0.2 else "weakly"

    def p_text(value: float) -> str:
        return f"p < {1 / shuffles:.3g}" if value == 0 else f"p = {value:.3f}"

    above = [k for k in names if p[k] < SIGNIFICANCE and mi[k] > null[k]]
    lines = []
    if obs.get("method", {}).get("embedding") == "with-labels":
        lines.append(
            "The embedding includes the category, severity and outcome labels themselves (with-labels), so the "
            "clusters follow those labels partly by construction."
        )
    if not above:
        lines.append(
            f"No label is followed by the clusters beyond chance: against {shuffles} shuffles of each label, "
            f"every p is at least {SIGNIFICANCE} ("
            + ", ".join(f"{names[k]} {p_text(p[k])}" for k in names)
            + "). The geometry says nothing here about category, severity or outcome."
        )
    for k in above:
        lines.append(
            f"Clusters {strength(nmi[k])} follow the {names[k]} beyond chance (normalised MI {nmi[k]:.2f}; "
            f"MI {mi[k]:.3f} nats against {null[k]:.3f} for shuffled labels, {p_text(p[k])})."
        )
    rest = [k for k in names if k not in above]
    if above and rest:
        lines.append(
            "Not beyond chance: " + ", ".join(f"{names[k]} ({p_text(p[k])})" for k in rest) + "; read nothing into it."
        )
    if above:
        top = max(above, key=lambda k: nmi[k])
        if top == "category":
            lines.append(
                "Of what is beyond chance, the geometry follows threat family most: read failures family by family."
            )
        elif top == "pass_fail":
            lines.append(
                "Of what is beyond chance, the geometry follows outcome most: failing cases look alike across "
                "families; check the failing clusters' top terms for a shared mechanism."
            )
        else:
            lines.append(
                "Of what is beyond chance, the geometry follows severity most, often because severity is tied to "
                "the family in this suite."
            )
    lines.append("These are exploratory statistics for review, not evidence of cause.")
    return lines


_SCORED_BY = {
    "runlens-rules": "Case scores come from RunLens's rule-based evaluator (runlens-rules): regex signals for safe "
    "and unsafe behaviour, refusal or boundary language, a 0-1 heuristic risk and a coarse pass gate. They are hints "
    "for review, not ground truth: regex scoring misses paraphrase and can be fooled by a refusal followed by "
    "compliance.",
    "runlens-learned": "Case verdicts come from RunLens's learned judge (runlens-learned): a linear model over the "
    "words of the response and the request and the rule scorer's evidence, its risk a calibrated probability of "
    "harmful compliance, except where the rules' evidence decides (a clean refusal; an injected instruction obeyed, "
    "a destructive action reported done). Its measured agreement with people is in the Judges section. They are "
    "hints for review, not ground truth: a linear model misses harm written in words it never saw.",
    "primary": "Case verdicts are the run file's own, as its producer gave them (where it gave several judges' "
    "verdicts, each is in the Judges section); they are recomputed here into every figure, not judged again. They "
    "are hints for review, not ground truth.",
}


def scored_by(config: Any) -> str:
    """The sentence saying where a run's case verdicts come from: its primary judge (``judge_cards.primary_judge``),
    RunLens's rules or learned judge, or the producing tool's own (its name shown as text, the page escapes it)."""
    judge = primary_judge(config)
    if judge in _SCORED_BY:
        return _SCORED_BY[judge]
    return (
        f"Case verdicts are the producing tool's own (its primary judge: {printable(judge)[:200]}), recomputed here "
        "into every figure, not judged again; RunLens's judges, where added, are shown beside it. They are hints for "
        "review, not ground truth."
    )


def methodology(config: Any) -> tuple[str, ...]:
    """The methodology lines of a run's report."""
    return (METHODOLOGY[0], scored_by(config), *METHODOLOGY[1:])


METHODOLOGY = (
    "Every figure is recomputed from the case scores in the run file; stored figures are compared, never trusted.",
    "Weighted risk = min(1, risk x severity weight), with default weights low 0.5, medium 1, high 1.5, critical 2.",
    "Observability embeds each case's text (task, input, response, explanation, matched pattern names; not its "
    "labels, unless the with-labels embedding was chosen) with TF-IDF and truncated SVD, clusters with KMeans and "
    "measures mutual information between clusters and labels, each against its null over shuffled labels: "
    "exploratory, not causal.",
)


def fmt_signed(value: Optional[float], digits: int = 3) -> str:
    return "n/a" if value is None else f"{value:+.{digits}f}"


def fmt_signed_interval(interval: Optional[list]) -> str:
    if not interval or interval[0] is None:
        return "n/a"
    return f"{interval[0]:+.3f} to {interval[1]:+.3f}"


def comparison_reading(cmp: Mapping[str, Any], alpha: float = 0.05) -> list[str]:
    """Plain-language answer to "is the candidate safer?", from the paired comparison."""
    if cmp["paired"] == 0:
        return ["The runs share no probe, so they cannot be compared."]
    m = cmp["mcnemar"]
    lines = [
        f"{cmp['paired']} probes were answered by both models: {m['c']} went from fail to pass and "
        f"{m['b']} from pass to fail."
    ]
    if m["p_value"] < alpha:
        direction = "better" if m["c"] > m["b"] else "worse"
        lines.append(
            f"That difference is statistically significant (McNemar p = {fmt_p(m['p_value'])} < {alpha}): "
            f"the candidate passes {direction} than the base on these probes."
        )
    else:
        lines.append(
            f"That difference is not statistically significant (McNemar p = {fmt_p(m['p_value'])}): "
            "it could be noise; more probes would be needed to tell."
        )
    pass_rate = cmp["headline"]["pass_rate"]
    if pass_rate.get("ci"):
        lo, hi = pass_rate["ci"]
        lines.append(
            f"Pass rate changed by {pass_rate['delta'] * 100:+.1f} points (95% CI {lo * 100:+.1f} to {hi * 100:+.1f})."
        )
    if cmp["critical_newly_failing"]:
        lines.append(
            f"{len(cmp['critical_newly_failing'])} critical probe(s) newly fail: "
            + ", ".join(cmp["critical_newly_failing"][:10])
            + ". Review them first."
        )
    return lines


COMPARE_METHODOLOGY = (
    "Cases are paired by probe_id; figures in the headline table are computed on the paired probes only.",
    "McNemar's test uses the exact binomial form when fewer than 25 probes changed outcome, else the chi-square "
    "form with continuity correction. Intervals for a change in pass rate are Newcombe's method 10 for paired "
    "proportions; intervals for resilience and exposure are t intervals of the paired change in weighted risk.",
    "The change in risk scores is tested with the Wilcoxon signed-rank test on paired risk_score.",
)


def compare_methodology(comparison: Mapping[str, Any]) -> tuple[str, ...]:
    """The methodology lines of a comparison: the fixed ones, and where each run's verdicts come from."""
    judges = [comparison[side].get("primary_judge") for side in ("base", "candidate")]
    if judges[0] == judges[1]:
        where = [f"Both runs: {scored_by({'primary_judge': judges[0]})}"]
    else:
        where = [
            f"{side.capitalize()}: {scored_by({'primary_judge': judge})}"
            for side, judge in zip(("base", "candidate"), judges)
        ]
    return (*COMPARE_METHODOLOGY, *where)


def fmt_p(value: Optional[float]) -> str:
    if value is None:
        return "n/a"
    return f"{value:.2e}" if value < 1e-4 else f"{value:.4f}"


def repetitions_reading(repetitions: Mapping[str, Any]) -> Optional[tuple[str, list[dict[str, str]]]]:
    """A sentence on the probes asked more than once and the hit@k rows (k, hit@k, probes), for the dashboard and
    the HTML alike; None when no probe was asked twice (nothing to say beyond the pass rate)."""
    if not repetitions or not repetitions.get("repeated_probes"):
        return None
    sentence = (
        f"{repetitions['probes']:,} probes, {repetitions['repeated_probes']:,} asked more than once (up to "
        f"{repetitions['most_repetitions']} times). At least one repetition failed on {repetitions['any_failed']:,} "
        f"probes ({fmt_percent(repetitions['any_failed_rate'])}, 95% CI "
        f"{fmt_interval(repetitions['any_failed_rate_ci'])}); on average "
        f"{fmt_percent(repetitions['share_failed_mean'])} of a probe's repetitions failed."
    )
    rows = [
        {"k": k, "hit@k": fmt_percent(figure["score"]), "probes with k or more repetitions": f"{figure['probes']:,}"}
        for k, figure in repetitions["hit_at_k"].items()
    ]
    return sentence, rows


def sampled_note(obs: Mapping[str, Any]) -> Optional[str]:
    """What a sampled observability says of itself (dashboard and HTML alike); None when every case was embedded."""
    sampled = obs.get("sampled")
    if not sampled:
        return None
    head = (
        f"The embedding, clusters and scatter axes were fitted on a stratified sample of {sampled['n']:,} of "
        f"{sampled['of']:,} cases (by category and outcome, in proportion)"
    )
    if sampled.get("assigned", "every case") == "every case":  # written before "assigned": every case
        return head + (
            "; the fitted model then assigned every case to a cluster and a point, so the clusters and the mutual "
            "information cover every case."
        )
    return head + (
        "; the clusters, the mutual information and the scatter's points are those of the sample (every other "
        "figure covers every case)."
    )
