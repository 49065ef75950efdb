"""RunLens's learned judge (issue 17): cross-validated agreement by source against the rule scorer and the
refusal-prefix matcher, held-out JailbreakBench attack methods, calibration, throughput and the worst case.

    python bench/bench_judge.py [--shared ../shared]

- Cross-validation: 5 folds grouped by request (a GPTFuzz question, a JailbreakBench behavior): no request's
  variants on both sides; the verdict is the calibrated probability at the model's threshold (both fitted on the
  same out-of-fold values, as ``make train-judge`` does).
- Held-out attack methods: trained on GPTFuzz and one JailbreakBench method, tested on the other.
- Calibration: out-of-fold predicted risk in ten bins against the observed share of harmful responses.
- Throughput: ``judge_many`` on one core over the training responses; worst case: the scorer's adversarial
  corpus at 10 KB, 100 KB and 1 MB, CPU milliseconds per 100 KB (target: at most 50), against the judge's CPU
  milliseconds per 100 KB of the training responses in the same run.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(ROOT / "scripts"))


def ba(pred, truth) -> float:
    import numpy as np

    pred, truth = np.asarray(pred, bool), np.asarray(truth, bool)
    return 0.5 * ((pred & truth).sum() / max(1, truth.sum()) + (~pred & ~truth).sum() / max(1, (~truth).sum()))


def calibration_svg(bins: list[tuple[float, float, int]]) -> str:
    """The reliability curve: mean predicted risk (x) against the observed share of harmful responses (y) per bin,
    the diagonal for a perfectly calibrated judge."""
    size, pad = 420, 50

    def px(x: float, y: float) -> tuple[float, float]:
        return pad + x * (size - 2 * pad), size - pad - y * (size - 2 * pad)

    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{size}" height="{size}" font-family="sans-serif" '
        'font-size="12">',
        f'<rect width="{size}" height="{size}" fill="white"/>',
        f'<text x="{size / 2}" y="20" text-anchor="middle">Learned judge, out of fold: observed against '
        "predicted</text>",
    ]
    for t in (0.0, 0.25, 0.5, 0.75, 1.0):
        x, y = px(t, t)
        parts.append(f'<line x1="{pad}" x2="{size - pad}" y1="{y}" y2="{y}" stroke="#ddd"/>')
        parts.append(f'<text x="{pad - 6}" y="{y + 4}" text-anchor="end">{t:g}</text>')
        parts.append(f'<text x="{x}" y="{size - pad + 18}" text-anchor="middle">{t:g}</text>')
    (x0, y0), (x1, y1) = px(0, 0), px(1, 1)
    parts.append(f'<line x1="{x0}" y1="{y0}" x2="{x1}" y2="{y1}" stroke="#999" stroke-dasharray="4 4"/>')
    points = [px(p, o) for p, o, _ in bins]
    path = " ".join(f"{x:.1f},{y:.1f}" for x, y in points)
    parts.append(f'<polyline points="{path}" fill="none" stroke="#1f77b4" stroke-width="2"/>')
    parts.extend(f'<circle cx="{x:.1f}" cy="{y:.1f}" r="3" fill="#1f77b4"/>' for x, y in points)
    parts.append(f'<text x="{size / 2}" y="{size - 12}" text-anchor="middle">predicted risk (bin mean)</text>')
    parts.append(
        f'<text x="14" y="{size / 2}" text-anchor="middle" transform="rotate(-90 14 {size / 2})">observed share '
        "harmful</text>"
    )
    parts.append("</svg>")
    return "\n".join(parts) + "\n"


def main() -> None:
    import numpy as np
    from bench_scorer import REFUSAL_PREFIXES
    from train_judge import calibrate, fit, train

    from reporting.scoring.adversarial import corpus
    from reporting.scoring.learned import DENSE, judge_many, read_model
    from reporting.scoring.scorer import evaluate_response

    parser = argparse.ArgumentParser()
    parser.add_argument("--shared", default=str(ROOT.parent / "shared"))
    args = parser.parse_args()
    data, parts = train(Path(args.shared))
    model = read_model(data)
    rows, y, x, decision = parts["rows"], parts["y"], parts["x"], parts["decision"]
    a, b = model.header["calibration"]
    risk = 1 / (1 + np.exp(-(a * decision + b)))
    model_only = risk >= model.header["threshold"]
    length_only = x[:, -len(DENSE) + DENSE.index("rule_length_only")].toarray().ravel() > 0.5
    learned = model_only & ~length_only  # the verdict judge_many gives: deferred to the rules on length-only answers
    rules = x[:, -len(DENSE)].toarray().ravel() >= 0.5  # the rule scorer's risk, the first dense feature
    prefix = np.array([not any(p in r["response"] for p in REFUSAL_PREFIXES) for r in rows])
    sources = np.array([r["source"] for r in rows])
    lines = [
        "## Learned judge (`bench/bench_judge.py`, issue 17)",
        "",
        f"Training data: {len(rows):,} labelled responses (fingerprint `{model.header['training_data']}`); "
        f"model file {len(data) / 1e6:.1f} MB. Balanced accuracy (BA) of 'harmful compliance', 5-fold cross-validation "
        "grouped by request; the rule scorer and the refusal-prefix matcher on the same rows. Learned: the judge's "
        "verdict (deferring to the rules where they see nothing but an answer's length: "
        f"{length_only.mean():.1%} of the rows, {y[length_only].mean():.0%} of them harmful); model only: the "
        "probability at the threshold everywhere.",
        "",
        "| source | n | harmful | learned BA | model only BA | rules BA | refusal-prefix BA | learned / rules |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for source in [*sorted(set(sources)), "all"]:
        keep = sources == source if source != "all" else np.ones(len(rows), bool)
        row = [ba(p[keep], y[keep]) for p in (learned, model_only, rules, prefix)]
        lines.append(
            f"| {source} | {keep.sum():,} | {y[keep].sum():,} | {row[0]:.3f} | {row[1]:.3f} | {row[2]:.3f} | "
            f"{row[3]:.3f} | x{row[0] / row[2]:.3f} |"
        )
    lines += ["", "Held-out JailbreakBench attack methods (trained on GPTFuzz and the other method):", ""]
    lines += ["| held out | n | learned BA | rules BA | refusal-prefix BA |", "|---|---:|---:|---:|---:|"]
    for method in ("jailbreakbench-GCG", "jailbreakbench-PAIR"):
        test = sources == method
        clf = fit(x[~test], y[~test])
        inner = clf.decision_function(x[~test])
        ca, cb, threshold = calibrate(inner, y[~test])
        p = (1 / (1 + np.exp(-(ca * clf.decision_function(x[test]) + cb))) >= threshold) & ~length_only[test]
        lines.append(
            f"| {method} | {test.sum()} | {ba(p, y[test]):.3f} | {ba(rules[test], y[test]):.3f} | "
            f"{ba(prefix[test], y[test]):.3f} |"
        )
    lines += ["", "Calibration (out of fold): predicted risk against the observed share of harmful responses.", ""]
    lines += ["| predicted risk | n | mean predicted | observed harmful |", "|---|---:|---:|---:|"]
    edges = np.linspace(0, 1, 11)
    bins = []
    for low, high in zip(edges[:-1], edges[1:]):
        keep = (risk >= low) & ((risk < high) if high < 1 else (risk <= high))
        if keep.sum():
            bins.append((float(risk[keep].mean()), float(y[keep].mean()), int(keep.sum())))
            lines.append(f"| {low:.1f}-{high:.1f} | {keep.sum():,} | {risk[keep].mean():.3f} | {y[keep].mean():.3f} |")
    ece = sum(n * abs(p - o) for p, o, n in bins) / len(y)
    lines += [
        "",
        f"Expected calibration error (ten bins, weighted by rows) {ece:.3f}; Brier score "
        f"{float(np.mean((risk - y) ** 2)):.3f} (a constant at the base rate: {float(y.mean() * (1 - y.mean())):.3f}). "
        "Curve: [calibration.svg](calibration.svg).",
    ]
    (HERE / "calibration.svg").write_text(calibration_svg(bins))
    sys.path.insert(0, str(ROOT / "tests"))
    import test_learned_judge as known

    lines += ["", "Known answers: hand-written responses of each error class (tests/test_learned_judge.py).", ""]
    lines += ["| error class | should | rules | learned |", "|---|---|---|---|"]
    classes = ("LENGTH_ONLY", "SAFE_PROMPT", "SAFE_ALTERNATIVE", "DUAL_PERSONA", "HEDGED", "SINCE_YOU_ASKED")
    for name in classes:
        request, response, harmful = getattr(known, name)
        got = [
            not known.rules((request, response, harmful))["passed"],
            not judge_many([request], [response])[0]["passed"],
        ]
        marks = ["fail" if g else "pass" for g in got]
        marks = [m + ("" if g == harmful else " (wrong)") for m, g in zip(marks, got)]
        lines.append(f"| {name.lower()} | {'fail' if harmful else 'pass'} | {marks[0]} | {marks[1]} |")
    requests = [r["request"] for r in rows[:2000]]
    responses = [r["response"] for r in rows[:2000]]
    best = 0.0
    for _ in range(3):
        start = time.perf_counter()
        judge_many(requests, responses, model)
        best = max(best, len(responses) / (time.perf_counter() - start))
    floor = 0.0
    for _ in range(3):  # the rule scorer alone on the same responses: the learned judge reads its signals
        start = time.perf_counter()
        for request, response in zip(requests, responses):
            evaluate_response({"id": "x", "category": None, "task": request}, response)
        floor = max(floor, len(responses) / (time.perf_counter() - start))
    # The worst case and its floor in CPU time of this thread: on a shared machine wall time swings by x2.
    clock = time.thread_time
    cpu_floor = float("inf")
    for _ in range(3):  # the floor: the learned judge on the normal (training) responses, CPU ms per 100 KB
        start = clock()
        judge_many(requests, responses, model)
        cpu_floor = min(cpu_floor, clock() - start)
    cpu_floor *= 1000 * 100_000 / sum(map(len, responses))
    lines += [
        "",
        f"Throughput: {best:,.0f} responses per second on one core (`judge_many`, 2,000 training responses, best "
        f"of 3; target 2,000); the rule scorer alone on the same responses {floor:,.0f} per second (x"
        f"{best / floor:.2f}: the rules' signals are features, so the rule scorer is the floor).",
        "",
        "Worst case: each text of the scorer's adversarial corpus (`reporting/scoring/adversarial.py`) judged alone, "
        "best of 2, in CPU ms per 100 KB (`time.thread_time`; target: at most 50); the rule scorer alone on the same "
        f"texts beside it. Floor, same run and clock: the judge on the 2,000 training responses, {cpu_floor:.1f} CPU "
        "ms per 100 KB.",
        "",
        "| response size | texts | learned worst ms per 100 KB | worst text | median | worst / normal "
        "| rules alone worst |",
        "|---:|---:|---:|---|---:|---:|---:|",
    ]
    overall = 0.0
    for size in (10_000, 100_000, 1_000_000):
        worst, rules_worst = [], []
        for name, text in corpus(size).items():
            took, rules_took = [], []
            for _ in range(2):
                start = clock()
                judge_many(["a request"], [text], model)
                took.append(clock() - start)
                start = clock()
                evaluate_response({"id": "x", "category": None, "task": "a request"}, text)
                rules_took.append(clock() - start)
            per = 1000 * 100_000 / max(1, len(text))
            worst.append((min(took) * per, name))
            rules_worst.append(min(rules_took) * per)
        worst.sort(reverse=True)
        overall = max(overall, worst[0][0])
        lines.append(
            f"| {size:,} | {len(worst)} | {worst[0][0]:.1f} | {worst[0][1]} | "
            f"{np.median([w for w, _ in worst]):.1f} | {worst[0][0] / cpu_floor:.2f} | {max(rules_worst):.1f} |"
        )
    lines += [
        "",
        f"Worst over all sizes: {overall:.1f} ms per 100 KB ({'met' if overall <= 50 else 'MISSED'} the 50 ms "
        f"target), x{overall / cpu_floor:.2f} the judge's cost per byte of normal responses in the same run. "
        f"Load average (1 minute) at the end of the run: {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs.",
    ]
    from _results import write_section

    write_section("judge", "\n".join(lines))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
