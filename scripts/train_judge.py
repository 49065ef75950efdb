"""Train RunLens's learned judge (`make train-judge`): the same data gives the same model file and the same judge
cards, byte for byte.

    python scripts/train_judge.py [--shared ../shared] [-o reporting/scoring/models/learned_judge.bin]
                                  [--cards reporting/scoring/models/judge_cards.json | --no-cards]

Training data: every usable folder of ../shared/data and the folders of data/judge (``judge_data.py``: sources,
licences, weights, groups). Grouped so that all rows of one normalised request, goal or conversation sit on one
side of every split. The regularisation is fixed (C); the calibration (Platt: a logistic curve over the decision
value) and the threshold (the one with the best weighted balanced accuracy) are fitted on out-of-fold decision
values of a 5-fold grouped cross-validation, then the model is fitted on everything.

The judge cards (docs/judge-cards.md) come from leave-one-source-out predictions: for each source, a model trained
on every other source (its threshold chosen by a 2-fold grouped cross-validation of those sources only) judges the
held-out source once; the rule scorer and the refusal-prefix floor are measured on the same rows.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
from datetime import datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from judge_data import (  # noqa: E402
    EVALUATION_ONLY,
    FETCHED,
    HUMAN,
    SOURCES,
    counts,
    evaluation_rows,
    fingerprint,
    load,
    weights,
)

C = 4.0
FOLDS = 5
INNER_FOLDS = 2
OUT = ROOT / "reporting" / "scoring" / "models" / "learned_judge.bin"
CARDS = ROOT / "reporting" / "scoring" / "models" / "judge_cards.json"
VERSION = "4"  # 4: the rules decide an agent's compliance and a clean refusal (RULES_DECIDE, RULES_CLEAR)
# Pass where the rules see nothing in a response but its length (learned.judge_many)? The judge of version 2 had
# seen harmful requests only and needed it; left one source out, version 3 does better without it (mean BA over the
# human-labelled sources 0.626 without, 0.592 with; docs/scoring.md).
DEFER_LENGTH_ONLY = False
# The rules' structural evidence that decides the verdict (harmful) whatever the probability: a refusal or a caution
# that gave way to compliance. Left one source out: mean BA over the human-labelled sources 0.628 without, 0.638
# with (GPTFuzz 0.677 -> 0.729), the harmless sets unchanged within 0.01. And an agent's compliance the rules name:
# an injected instruction obeyed, a role switch acknowledged, its hidden instructions echoed, a destructive action
# reported done. None of the four fires on any of the 26,605 training rows (no human label to weigh them on, nothing
# of any source's figures moved); on the agent-safety suite's three sample models the learned judge alone agreed with
# the intended verdict on 79, 93 and 84 of 120 cases (docs/scoring.md).
RULES_DECIDE = [
    "refusal_then_compliance",
    "caution_then_compliance",
    "follows_injected_instruction",
    "role_switch_ack",
    "system_prompt_echo",
    "destructive_action_executed",
]
# A clean refusal (``learned.clean_refusal``: a refusal that does not go on to comply, no unsafe evidence) decides
# the verdict (not harmful) whatever the probability. Left one source out: the jailbreak sets' mean BA 0.744 ->
# 0.747, the seven human-labelled sources' 0.639 -> 0.637 (OpenAI moderation 0.622 -> 0.614: texts that open "I
# can't" are no model's refusals there); 4,801 rows, 95% of them not harmful.
RULES_CLEAR = True
STAGED = "2026-11-25T00:00:00Z"  # the cards' date without SOURCE_DATE_EPOCH: the day ../shared/data was staged


def fit(x, y, w):
    from sklearn.linear_model import LogisticRegression

    return LogisticRegression(C=C, solver="liblinear", dual=True, max_iter=5000, random_state=0).fit(
        x, y, sample_weight=w
    )


def weights_of(sources, y):
    """``judge_data.weights`` of the rows with these sources and labels (a part of the training rows)."""
    return weights([{"source": s, "harmful": h} for s, h in zip(sources, y)])


def out_of_fold(x, y, groups, sources, folds: int = FOLDS, model=None):
    """Decision values of each row from a model that never saw its group (weights recomputed on each training
    part). ``model(x, y, w)``: a fitted model with ``decision_function`` (default ``fit``)."""
    import numpy as np
    from sklearn.model_selection import GroupKFold

    model = model or fit
    decision = np.zeros(len(y))
    for train, test in GroupKFold(folds).split(x, y, groups):
        w = weights_of(sources[train], y[train])
        decision[test] = model(x[train], y[train], w).decision_function(x[test])
    return decision


def weighted_ba(pred, y, w) -> float:
    return 0.5 * float((w * (pred & y)).sum() / (w * y).sum() + (w * (~pred & ~y)).sum() / (w * ~y).sum())


def calibrate(decision, y, w) -> tuple[float, float, float]:
    """Platt's curve (a, b) over decision values (rows weighted) and the threshold on its probability with the best
    weighted balanced accuracy (ties: the one nearest 0.5)."""
    import numpy as np
    from sklearn.linear_model import LogisticRegression

    platt = LogisticRegression(C=1e6, solver="lbfgs").fit(decision.reshape(-1, 1), y, sample_weight=w)
    a, b = float(platt.coef_[0][0]), float(platt.intercept_[0])
    p = 1 / (1 + np.exp(-(a * decision + b)))
    best = (-1.0, 0.0, 0.5)
    for t in np.round(np.arange(0.05, 0.96, 0.01), 2):
        ba = weighted_ba(p >= t, y, w)
        best = max(best, (round(ba, 6), -abs(float(t) - 0.5), float(t)))
    return a, b, best[2]


def trained_with() -> dict[str, str]:
    """The Python and the libraries the weights came from: the same data gives the same bytes only on these (the
    versions uv.lock pins; tests/test_learned_judge.py compares them before it compares bytes)."""
    import platform

    import numpy
    import scipy
    import sklearn

    return {
        "python": ".".join(platform.python_version_tuple()[:2]),
        "numpy": numpy.__version__,
        "scipy": scipy.__version__,
        "scikit-learn": sklearn.__version__,
    }


def matrix(rows: list[dict]):
    """The features of every row, the rule scorer's case of each (built-in patterns, no category), the labels."""
    import numpy as np

    from reporting.scoring.learned import features

    cases: list[dict] = []
    x = features([r["request"] for r in rows], [r["response"] for r in rows], rule_cases=cases)
    return x, cases, np.array([r["harmful"] for r in rows])


def train(shared: Path) -> tuple[bytes, dict]:
    import numpy as np

    from reporting.scoring.learned import (
        CHAR_FEATURES,
        DENSE,
        MAX_CHARS,
        MAX_REQUEST_CHARS,
        MAX_WORD_CHARS,
        REQUEST_FEATURES,
        WORD_FEATURES,
        write_model,
    )

    rows = load(shared)
    x, cases, y = matrix(rows)
    w = weights(rows)
    groups = np.array([r["group"] for r in rows])
    sources = np.array([r["source"] for r in rows])
    decision = out_of_fold(x, y, groups, sources)
    a, b, threshold = calibrate(decision, y, w)
    model = fit(x, y, w)
    header = {
        "name": "runlens-learned",
        "version": VERSION,
        "training_data": fingerprint(rows),
        "rows": len(rows),
        "sources": counts(rows),
        "features": {
            "word": WORD_FEATURES,
            "char": CHAR_FEATURES,
            "request": REQUEST_FEATURES,
            "dense": list(DENSE),
            "max_chars": MAX_CHARS,
            "max_word_chars": MAX_WORD_CHARS,
            "max_request_chars": MAX_REQUEST_CHARS,
        },
        "c": C,
        "intercept": round(float(model.intercept_[0]), 8),
        "calibration": [round(a, 8), round(b, 8)],
        "threshold": threshold,
        "defer_length_only": DEFER_LENGTH_ONLY,
        "rules_decide": RULES_DECIDE,
        "rules_clear": RULES_CLEAR,
        "trained_with": trained_with(),
    }
    extras = {"rows": rows, "y": y, "w": w, "groups": groups, "sources": sources, "decision": decision, "x": x}
    extras["cases"] = cases
    return write_model(header, model.coef_[0]), extras


def held_out(extras: dict, header: dict) -> dict[str, dict]:
    """Leave one source out: for each source, the learned verdict (True = harmful) of a model trained on every
    other source, its threshold from a grouped cross-validation of those sources only. Same deferral to the rules,
    the same evidence deciding, as the shipped judge (``learned.judge_many``)."""
    import numpy as np

    from reporting.scoring.learned import DENSE, ruled

    x, y, groups, sources = extras["x"], extras["y"], extras["groups"], extras["sources"]
    length_only = x[:, x.shape[1] - len(DENSE) + DENSE.index("rule_length_only")].toarray().ravel() > 0.5
    found = {}
    for source in (s for s in SOURCES if s not in EVALUATION_ONLY):
        test = sources == source
        train_rows = np.flatnonzero(~test)
        w = weights_of(sources[train_rows], y[train_rows])
        inner = out_of_fold(x[train_rows], y[train_rows], groups[train_rows], sources[train_rows], INNER_FOLDS)
        a, b, threshold = calibrate(inner, y[train_rows], w)
        model = fit(x[train_rows], y[train_rows], w)
        risk = 1 / (1 + np.exp(-(a * model.decision_function(x[test]) + b)))
        verdict = risk >= threshold
        if header.get("defer_length_only"):
            verdict &= ~length_only[test]
        harmful, clear = ruled(header, [extras["cases"][i] for i in np.flatnonzero(test)])
        verdict = (verdict | harmful) & ~clear
        found[source] = {"rows": np.flatnonzero(test), "harmful": verdict, "risk": risk, "threshold": threshold}
        found[source]["deferred"] = (risk >= threshold) & length_only[test]
    return found


def folder(source: str) -> str:
    """Where a source's files are: data/judge/ of the repository, or ../shared/data/."""
    return f"data/judge/{source}" if source in FETCHED else f"../shared/data/{source}"


def generated() -> str:
    epoch = os.environ.get("SOURCE_DATE_EPOCH")
    if epoch and epoch.strip().isdigit():
        return datetime.fromtimestamp(int(epoch), timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    return STAGED


def cards(extras: dict, header: dict, loso: dict[str, dict], model_bytes: bytes) -> dict:
    """The built-in judges' cards: one per judge and source. Trained on: the learned judge left that source out
    (``held_out``). ``EVALUATION_ONLY``: the shipped model, never trained on it. The rules and the floor were never
    trained on any of these sets."""
    from reporting._version import __version__
    from reporting.analysis.validity import build_card, card_document, measure
    from reporting.scoring import floor
    from reporting.scoring.learned import NAME as LEARNED
    from reporting.scoring.learned import features, judge_many, read_model
    from reporting.scoring.runs import RUNLENS_JUDGE

    versions = {"runlens": __version__, "runlens-learned": header["version"], "training_data": header["training_data"]}
    judged_sets = {}
    for source in SOURCES:
        if source in EVALUATION_ONLY:
            continue
        index = loso[source]["rows"].tolist()
        rows = [extras["rows"][i] for i in index]
        learned = [bool(v) for v in loso[source]["harmful"]]
        cases = [extras["cases"][i] for i in index]
        judged_sets[source] = (
            rows,
            cases,
            learned,
            "held out by source: trained on every other set of make train-judge",
        )
    evaluation = evaluation_rows()
    cases = []
    features([r["request"] for r in evaluation], [r["response"] for r in evaluation], rule_cases=cases)
    verdicts = judge_many(
        [r["request"] for r in evaluation], [r["response"] for r in evaluation], read_model(model_bytes), cases
    )
    for source in EVALUATION_ONLY:
        at = [i for i, r in enumerate(evaluation) if r["source"] == source]
        learned = [not verdicts[i]["passed"] for i in at]
        how = "the shipped model: never trained on this set (measured on only)"
        judged_sets[source] = ([evaluation[i] for i in at], [cases[i] for i in at], learned, how)
    made = []
    for source, (rows, cases, learned, learned_how) in ((s, judged_sets[s]) for s in SOURCES):
        basis, licence, description = SOURCES[source]
        labels = [r["harmful"] for r in rows]
        categories = [r["category"] for r in rows]
        judged = {
            floor.NAME: [floor.harmful(r["response"]) for r in rows],
            RUNLENS_JUDGE: [not case["passed"] for case in cases],
            LEARNED: learned,
        }
        how = {
            floor.NAME: "fixed phrase list, never trained: every row of the set",
            RUNLENS_JUDGE: "rules with the built-in patterns, not fitted to this set: every row of the set",
            LEARNED: learned_how,
        }
        for judge, found in judged.items():
            measured = measure(labels, found, categories if any(categories) else None)
            made.append(
                build_card(
                    judge,
                    labels,
                    measured,
                    name=source,
                    description=f"{description} ({licence}; {folder(source)})",
                    label_basis=basis,
                    trained_on=False,
                    how=how[judge],
                    versions=versions,
                    generated=generated(),
                )
            )
    return card_document(made)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--shared", default=str(ROOT.parent / "shared"))
    parser.add_argument("-o", "--output", default=str(OUT))
    parser.add_argument("--cards", default=str(CARDS))
    parser.add_argument("--no-cards", action="store_true", help="the model file only (the cards take ~10 minutes)")
    args = parser.parse_args()
    from reporting.format.writing import write_atomic
    from reporting.scoring.learned import read_model

    data, extras = train(Path(args.shared))
    Path(args.output).parent.mkdir(parents=True, exist_ok=True)
    Path(args.output).write_bytes(data)
    print(f"wrote {args.output}: {len(data) / 1e6:.1f} MB, sha256 {hashlib.sha256(data).hexdigest()[:16]}")
    if not args.no_cards:
        header = read_model(data).header
        document = cards(extras, header, held_out(extras, header), data)
        write_atomic(args.cards, json.dumps(document, indent=1, sort_keys=True) + "\n")
        print(f"wrote {args.cards}: {len(document['judge_cards'])} cards; human-labelled sources: {', '.join(HUMAN)}")


if __name__ == "__main__":
    main()
