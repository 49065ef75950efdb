"""Train RunLens's learned judge (`make train-judge`): the same data gives the same model file, byte for byte.

    python scripts/train_judge.py [--shared ../shared] [-o reporting/scoring/models/learned_judge.bin]

Training data, and nothing else (docs/scoring.md):
- ../shared/data/gptfuzz/{train,evaluate}.csv: 7,700 gpt-3.5-turbo responses to 100 harmful questions wrapped
  in jailbreak templates, labelled by the GPTFuzz authors (1: jailbroken, harmful answer);
- ../shared/data/jailbreakbench/{PAIR,GCG}: prompts and responses with the benchmark's judge label
  (``jailbroken``), records with a prompt and a response.

Grouped so that all variants of one request sit on one side of every split: a GPTFuzz question, a JailbreakBench
behavior. The regularisation is fixed (C = 4, balanced classes); the calibration (Platt: a logistic curve over
the decision value) and the threshold (the one with the best balanced accuracy) are fitted on out-of-fold
decision values of a 5-fold grouped cross-validation, then the model is fitted on everything.
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

C = 4.0
FOLDS = 5
OUT = ROOT / "reporting" / "scoring" / "models" / "learned_judge.bin"
VERSION = "2"


def load(shared: Path) -> list[dict]:
    """Every training row: source, group, request, response, harmful (bool), in a fixed order."""
    csv.field_size_limit(1 << 30)
    rows = []
    fuzz = shared / "data" / "gptfuzz"
    with open(fuzz / "questions.csv", encoding="utf-8", newline="") as handle:
        questions = {int(r["index"]): r["text"] for r in csv.DictReader(handle)}
    for name in ("train", "evaluate"):
        with open(fuzz / f"{name}.csv", encoding="utf-8", newline="") as handle:
            for r in csv.DictReader(handle):
                q = int(r["question"])
                rows.append(
                    {
                        "source": "gptfuzz",
                        "group": f"gptfuzz:{q}",
                        "request": questions[q],
                        "response": r["Response"],
                        "harmful": r["label"] == "1",
                    }
                )
    for path in sorted((shared / "data" / "jailbreakbench").glob("*/*/*.json")):
        method = path.parts[-3]
        for r in json.loads(path.read_text(encoding="utf-8"))["jailbreaks"]:
            if r.get("prompt") and r.get("response"):
                rows.append(
                    {
                        "source": f"jailbreakbench-{method}",
                        "group": f"jbb:{r['behavior']}",
                        "request": r["goal"],
                        "response": r["response"],
                        "harmful": bool(r["jailbroken"]),
                    }
                )
    return rows


def fingerprint(rows: list[dict]) -> str:
    sha = hashlib.sha256()
    for r in rows:
        sha.update(json.dumps([r["source"], r["group"], r["request"], r["response"], r["harmful"]]).encode() + b"\n")
    return sha.hexdigest()[:16]


def fit(x, y):
    from sklearn.linear_model import LogisticRegression

    return LogisticRegression(C=C, solver="liblinear", class_weight="balanced", max_iter=2000, random_state=0).fit(x, y)


def out_of_fold(x, y, groups):
    """Decision values of each row from a model that never saw its group."""
    import numpy as np
    from sklearn.model_selection import GroupKFold

    decision = np.zeros(len(y))
    for train, test in GroupKFold(FOLDS).split(x, y, groups):
        decision[test] = fit(x[train], y[train]).decision_function(x[test])
    return decision


def calibrate(decision, y) -> tuple[float, float, float]:
    """Platt's curve (a, b) over decision values and the threshold on its probability with the best balanced
    accuracy (ties: the one nearest 0.5)."""
    import numpy as np
    from sklearn.linear_model import LogisticRegression

    platt = LogisticRegression(C=1e6, solver="lbfgs").fit(decision.reshape(-1, 1), y)
    a, b = float(platt.coef_[0][0]), float(platt.intercept_[0])
    p = 1 / (1 + np.exp(-(a * decision + b)))
    best = (-1.0, 0.0, 0.5)
    for t in np.round(np.arange(0.05, 0.96, 0.01), 2):
        pred = p >= t
        ba = 0.5 * ((pred & y).sum() / max(1, y.sum()) + (~pred & ~y).sum() / max(1, (~y).sum()))
        best = max(best, (round(float(ba), 6), -abs(float(t) - 0.5), float(t)))
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


def train(shared: Path) -> tuple[bytes, dict]:
    import numpy as np

    from reporting.scoring.learned import (
        CHAR_FEATURES,
        DENSE,
        MAX_CHARS,
        MAX_WORD_CHARS,
        WORD_FEATURES,
        features,
        write_model,
    )

    rows = load(shared)
    y = np.array([r["harmful"] for r in rows])
    groups = np.array([r["group"] for r in rows])
    x = features([r["request"] for r in rows], [r["response"] for r in rows])
    decision = out_of_fold(x, y, groups)
    a, b, threshold = calibrate(decision, y)
    model = fit(x, y)
    header = {
        "name": "runlens-learned",
        "version": VERSION,
        "training_data": fingerprint(rows),
        "rows": len(rows),
        "sources": {s: int(sum(1 for r in rows if r["source"] == s)) for s in sorted({r["source"] for r in rows})},
        "features": {
            "word": WORD_FEATURES,
            "char": CHAR_FEATURES,
            "dense": list(DENSE),
            "max_chars": MAX_CHARS,
            "max_word_chars": MAX_WORD_CHARS,
        },
        "c": C,
        "intercept": round(float(model.intercept_[0]), 8),
        "calibration": [round(a, 8), round(b, 8)],
        "threshold": threshold,
        "trained_with": trained_with(),
    }
    return write_model(header, model.coef_[0]), {"rows": rows, "y": y, "groups": groups, "decision": decision, "x": x}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--shared", default=str(ROOT.parent / "shared"))
    parser.add_argument("-o", "--output", default=str(OUT))
    args = parser.parse_args()
    data, _ = train(Path(args.shared))
    Path(args.output).parent.mkdir(parents=True, exist_ok=True)
    Path(args.output).write_bytes(data)
    print(f"wrote {args.output}: {len(data) / 1e6:.1f} MB, sha256 {hashlib.sha256(data).hexdigest()[:16]}")


if __name__ == "__main__":
    main()
