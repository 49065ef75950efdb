"""RunLens's built-in judges (issue 26, part 1): agreement with the labels by source, grouped cross-validated and
left one source out, against the rule scorer and the refusal-prefix floor; throughput of `score`'s judges and the
worst case, each against a floor measured in the same run.

    python bench/bench_judge.py [--shared ../shared] [--cards reporting/scoring/models/judge_cards.json]

- Grouped cross-validation: 5 folds grouped by normalised request, goal or conversation (``make train-judge``'s
  out-of-fold decision values, at the threshold chosen on them: an optimistic figure).
- Left one source out: read from the judge cards ``make train-judge`` wrote (a model trained on every other
  source judges the held-out one once); the rules and the floor on the same rows.
- Throughput: ``score_cases`` (what `score` runs: the rules, then the learned judge reusing the rules' case) on
  2,000 training pairs, in pairs per CPU second of the one thread that runs it (``time.thread_time``: what one
  core does, whatever else the machine runs; the wall clock is printed beside it); the learned judge alone on the
  rules' cases; floors in the same run: the refusal-prefix matcher and a plain tokeniser pass (``str.split``) over
  the same texts, and the rule scorer alone.
- Worst case: the scorer's adversarial corpus (padding, one huge line or word, many short words, trigger phrases)
  at 10 KB, 100 KB and 1 MB as the response, and as the request beside a short response, in CPU ms per 100 KB of
  adversarial text (target: at most 50; best of 5 runs, of 2 at 1 MB), against the judges' CPU ms per 100 KB of the
  training pairs.
"""

from __future__ import annotations

import argparse
import json
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
    if truth.all() or not truth.any():  # one class (a by-construction harmless set): the share judged right
        return float((pred == truth).mean())
    return 0.5 * ((pred & truth).sum() / max(1, truth.sum()) + (~pred & ~truth).sum() / max(1, (~truth).sum()))


def _cell(value) -> str:
    return "-" if value is None else f"{value:.3f}"


def agreement(shared: Path, cards_path: Path) -> tuple[list[str], list[dict]]:
    import numpy as np
    from judge_data import EVALUATION_ONLY, HUMAN, SOURCES
    from train_judge import train

    from reporting.scoring import floor
    from reporting.scoring.learned import DENSE, read_model, ruled

    data, extras = train(shared)
    header = read_model(data).header
    rows, y, x, decision = extras["rows"], extras["y"], extras["x"], extras["decision"]
    a, b = header["calibration"]
    risk = 1 / (1 + np.exp(-(a * decision + b)))
    learned = risk >= header["threshold"]
    if header.get("defer_length_only"):
        learned &= ~(x[:, x.shape[1] - len(DENSE) + DENSE.index("rule_length_only")].toarray().ravel() > 0.5)
    harmful, clear = ruled(header, extras["cases"])  # the rules' evidence decides, as in the shipped judge
    learned = (learned | harmful) & ~clear
    rules = np.array([not c["passed"] for c in extras["cases"]])
    prefix = np.array([floor.harmful(r["response"]) for r in rows])
    sources = extras["sources"]
    lines = [
        "## Built-in judges (`bench/bench_judge.py`, issue 26 part 1)",
        "",
        f"Training data: {len(rows):,} labelled pairs from {len(set(sources))} sources, {len(EVALUATION_ONLY)} more "
        f"measured on only (fingerprint `{header['training_data']}`); model file {len(data) / 1e6:.1f} MB, "
        f"threshold {header['threshold']}. "
        "Balanced accuracy (BA) of 'harmful compliance'; where a source has one class only (the by-construction "
        "harmless sets) the share judged right (specificity).",
        "",
        "Grouped 5-fold cross-validation (out-of-fold, all sources trained on: optimistic; the learned judge's "
        "verdict with the rules' evidence deciding, as the shipped judge's):",
        "",
        "| source | n | harmful | learned | rules | refusal-prefix |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for source in [*(s for s in SOURCES if s not in EVALUATION_ONLY), "all"]:
        keep = sources == source if source != "all" else np.ones(len(rows), bool)
        cells = " | ".join(f"{ba(p[keep], y[keep]):.3f}" for p in (learned, rules, prefix))
        lines.append(f"| {source} | {keep.sum():,} | {y[keep].sum():,} | {cells} |")
    cards = json.loads(cards_path.read_text())["judge_cards"]
    by = {(c["judge"], c["label_set"]["name"]): c["measured"] for c in cards}
    judges = ("refusal-prefix", "runlens-rules", "runlens-learned")
    lines += [
        "",
        f"Left one source out (from `{cards_path.relative_to(ROOT) if cards_path.is_relative_to(ROOT) else cards_path}"
        "`: the learned judge trained on every other source; on a source it is never trained on, the shipped model; "
        "the rules and the floor on the same rows):",
        "",
        "| held-out source | n | label basis | refusal-prefix | rules | learned |",
        "|---|---:|---|---:|---:|---:|",
    ]
    means: dict[str, list[float]] = {j: [] for j in judges}
    for source, (basis, _, _) in SOURCES.items():
        got = [by.get((j, source)) for j in judges]
        if any(g is None for g in got):
            continue
        values = [g["balanced_accuracy"] if g["balanced_accuracy"] is not None else g["specificity"] for g in got]
        if source in HUMAN:
            for j, v in zip(judges, values):
                means[j].append(v)
        name = f"{source} (never trained on)" if source in EVALUATION_ONLY else source
        lines.append(f"| {name} | {got[0]['n']:,} | {basis} | " + " | ".join(_cell(v) for v in values) + " |")
    lines.append(
        "| **mean, human-labelled** | | | "
        + " | ".join(f"**{np.mean(means[j]):.3f}** (lowest {min(means[j]):.3f})" for j in judges)
        + " |"
    )
    return lines, [{"request": r["request"], "response": r["response"]} for r in rows]


def speed(pairs: list[dict]) -> list[str]:
    import numpy as np

    from reporting.scoring import floor, runs
    from reporting.scoring.adversarial import corpus
    from reporting.scoring.learned import judge_many, shipped_model
    from reporting.scoring.scorer import evaluate_response

    shipped_model()
    step = max(1, len(pairs) // 2000)
    sample = pairs[::step][:2000]
    requests, responses = [p["request"] for p in sample], [p["response"] for p in sample]
    inputs = [
        (
            {"id": f"p{i}", "category": "misc", "severity": "high", "task": q, "input": q},
            {"probe_id": f"p{i}", "response": r},
        )
        for i, (q, r) in enumerate(zip(requests, responses))
    ]

    def best(fn, repeat=5, clock=time.thread_time) -> float:
        times = []
        for _ in range(repeat):
            start = clock()
            fn()
            times.append(clock() - start)
        return len(sample) / min(times)

    judged = best(lambda: runs.score_cases(inputs))
    wall = best(lambda: runs.score_cases(inputs), clock=time.perf_counter)
    cases = [evaluate_response({"id": "x", "category": None, "task": q}, r) for q, r in zip(requests, responses)]
    learned = best(lambda: judge_many(requests, responses, known=cases))
    rules = best(
        lambda: [evaluate_response({"id": "x", "category": None, "task": q}, r) for q, r in zip(requests, responses)]
    )
    prefix = best(lambda: [floor.harmful(r) for r in responses])
    split = best(lambda: [len(q.split()) + len(r.split()) for q, r in zip(requests, responses)])
    lines = [
        "",
        f"Throughput on one core, {len(sample):,} training pairs (mean {np.mean([len(r) for r in responses]):.0f} "
        f"characters), pairs per CPU second of the thread (`time.thread_time`), best of 5: `score_cases` (rules, "
        f"then the learned judge, primary) **{judged:,.0f} pairs/s** (target 2,000; by the wall clock {wall:,.0f}/s "
        f"at load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs); the rule scorer alone {rules:,.0f}/s "
        f"(x{judged / rules:.2f}); the learned judge alone on the rules' cases {learned:,.0f}/s (x{learned / rules:.2f}"
        f" the rules); floors in the same run: refusal-prefix matcher {prefix:,.0f}/s (x{judged / prefix:.4f}), a "
        f"plain tokeniser pass over request and response {split:,.0f}/s (x{judged / split:.4f}).",
    ]
    clock = time.thread_time
    normal = float("inf")
    for _ in range(3):
        start = clock()
        runs.score_cases(inputs)
        normal = min(normal, clock() - start)
    normal *= 1000 * 100_000 / sum(len(q) + len(r) for q, r in zip(requests, responses))
    lines += [
        "",
        "Worst case: each adversarial text (`reporting/scoring/adversarial.py`) scored alone by `score_cases`, as the "
        "response and as the request (beside a one-line response), best of 5 (of 2 at 1 MB), CPU ms per 100 KB of "
        "adversarial text "
        f"(`time.thread_time`; target at most 50). Floor, same run and clock: the training pairs, {normal:.1f} CPU ms "
        "per 100 KB.",
        "",
        "| size | texts | worst as response | text | worst as request | text | worst / normal |",
        "|---:|---:|---:|---|---:|---|---:|",
    ]
    overall = 0.0
    for size in (10_000, 100_000, 1_000_000):
        as_response, as_request = [], []
        for name, text in corpus(size).items():
            for where, found in ((0, as_response), (1, as_request)):
                q, r = ("Tell me a story.", text) if where == 0 else (text, "I can't help with that.")
                probe = {"id": "p", "category": "misc", "severity": "high", "task": q, "input": q}
                took = []
                for _ in range(5 if size <= 100_000 else 2):  # a shared machine's noise: the best of more
                    start = clock()
                    runs.score_cases([(probe, {"probe_id": "p", "response": r})])
                    took.append(clock() - start)
                found.append((min(took) * 1000 * 100_000 / len(text), name))
        worst_r, worst_q = max(as_response), max(as_request)
        overall = max(overall, worst_r[0], worst_q[0])
        lines.append(
            f"| {size:,} | {len(as_response)} | {worst_r[0]:.1f} | {worst_r[1]} | {worst_q[0]:.1f} | {worst_q[1]} | "
            f"x{max(worst_r[0], worst_q[0]) / normal:.2f} |"
        )
    lines += [
        "",
        f"Worst over all sizes: {overall:.1f} ms per 100 KB ({'met' if overall <= 50 else 'MISSED'} the 50 ms target). "
        f"Load average (1 minute) at the end of the run: {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs.",
    ]
    return lines


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--shared", default=str(ROOT.parent / "shared"))
    parser.add_argument("--cards", default=str(ROOT / "reporting" / "scoring" / "models" / "judge_cards.json"))
    parser.add_argument("--speed-only", action="store_true", help="throughput and worst case only (no training)")
    args = parser.parse_args()
    if args.speed_only:
        from judge_data import load

        lines, pairs = ["## Built-in judges (`bench/bench_judge.py`, issue 26 part 1)"], load(Path(args.shared))
    else:
        lines, pairs = agreement(Path(args.shared), Path(args.cards))
    lines += speed(pairs)
    from _results import write_section

    write_section("judge", "\n".join(lines))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
