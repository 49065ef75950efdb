"""A two-factor learned judge against the shipped linear one (issue 26: a better model class), left one source out.

    python bench/bench_judge_factored.py [--shared ../shared] [--sources gptfuzz,jailbreakbench,...]
                                          [--variants "linear (shipped),response only,..."]

The shipped judge is one logistic regression over every feature (``train_judge.fit``). The two-factor model reads
the label as "a harmful request" and "an answer that complies": P(harmful) = s(a) * s(b), ``a`` a linear function
of the request's features (its words and word pairs, whether it is empty, whether it sounds dangerous), ``b`` of the
response's (its words, pairs, character n-grams and every dense feature); both fitted together by L-BFGS on the
weighted log-loss, an L2 penalty of 1/C on each factor's weights (C as the shipped judge's). The idea: answers to
harmless requests, answered in full, no longer teach the response's factor that compliance is safe. "Response
only" is the shipped model without the request's words and pairs (every dense feature kept). The ensemble averages
the shipped and two-factor decision values (the two-factor model's is the logit of its probability).

Each variant is measured as ``make train-judge`` measures the shipped judge for its cards: for each source left
out, a model trained on every other source, Platt's curve and the threshold from a 2-fold grouped
cross-validation of those sources only, the rules' evidence deciding as the shipped judge (``learned.ruled``), the
left-out source judged once. Balanced accuracy; the share judged right for a one-class source. The sources never
trained on (``EVALUATION_ONLY``: SafeDecoding's refusals, CoCoNot's harmless requests that sound sensitive) are
judged by models trained on every source, the same way. About 4.5 minutes a source on two cores (the two-factor fits
take most of it; without them, under a minute).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(ROOT / "scripts"))

from bench_judge import ba  # noqa: E402
from judge_data import EVALUATION_ONLY  # noqa: E402

DEFAULT_SOURCES = (
    "gptfuzz",
    "jailbreakbench",
    "jbb_judge_comparison",
    "openai_rbr_gold",
    "vicuna_blog_eval",
    "llmbar",
    "gpteacher",
    *EVALUATION_ONLY,
)
# Each variant's decision value: its models' decision values, each times its share.
VARIANTS = {
    "linear (shipped)": (("linear", 1.0),),
    "response only": (("response only", 1.0),),
    "two-factor": (("two-factor", 1.0),),
    "ensemble": (("linear", 0.5), ("two-factor", 0.5)),
}


def _log_sigmoid(z):
    import numpy as np

    return -np.logaddexp(0.0, -z)


class TwoFactor:
    """P(harmful) = s(a) s(b): ``a`` over the request's columns, ``b`` over the response's (``columns``)."""

    def __init__(self, columns: tuple, c: float) -> None:
        self.columns, self.c = columns, c

    def fit(self, x, y, w) -> TwoFactor:
        import numpy as np
        from scipy.optimize import minimize

        parts = [x[:, cols].tocsr() for cols in self.columns]
        dims = [p.shape[1] for p in parts]
        label, cw = y.astype(float), self.c * w

        def objective(theta):
            z, at = [], 0
            for part, d in zip(parts, dims):
                z.append(part @ theta[at : at + d] + theta[at + d])
                at += d + 1
            la, lb = _log_sigmoid(z[0]), _log_sigmoid(z[1])
            log_p = np.minimum(la + lb, -1e-12)
            log_q = np.log(-np.expm1(log_p))  # log(1 - P)
            value = float(cw @ -(label * log_p + (1 - label) * log_q))
            toward = -label + (1 - label) * np.exp(log_p - log_q)  # d loss / d log P
            grad, at = np.empty_like(theta), 0
            for part, d, lz in zip(parts, dims, (la, lb)):
                g = cw * toward * -np.expm1(lz)  # d log s(z) / dz = 1 - s(z)
                v = theta[at : at + d]
                grad[at : at + d] = part.T @ g + v
                grad[at + d] = float(g.sum())
                value += 0.5 * float(v @ v)
                at += d + 1
            return value, grad

        theta = np.zeros(sum(d + 1 for d in dims))
        theta[dims[0]] = 2.0  # the request's factor starts near "a harmful request"
        self.theta = minimize(objective, theta, jac=True, method="L-BFGS-B", options={"maxiter": 500}).x
        self.dims = dims
        return self

    def decision_function(self, x):
        """The logit of the probability."""
        import numpy as np

        z, at = [], 0
        for cols, d in zip(self.columns, self.dims):
            z.append(x[:, cols] @ self.theta[at : at + d] + self.theta[at + d])
            at += d + 1
        log_p = np.minimum(_log_sigmoid(z[0]) + _log_sigmoid(z[1]), -1e-12)
        return log_p - np.log(-np.expm1(log_p))


class Columns:
    """A model of ``x``'s given columns alone."""

    def __init__(self, columns, fit) -> None:
        self.columns, self._fit = columns, fit

    def fit(self, x, y, w) -> Columns:
        self.model = self._fit(x[:, self.columns], y, w)
        return self

    def decision_function(self, x):
        return self.model.decision_function(x[:, self.columns])


def factor_columns():
    """The request's columns (its word block, ``request_empty``, ``request_danger``) and the response's (its words,
    character n-grams and every dense feature), in the learned judge's layout."""
    import numpy as np

    from reporting.scoring.learned import CHAR_FEATURES, DENSE, REQUEST_FEATURES, WORD_FEATURES

    start = WORD_FEATURES + CHAR_FEATURES
    dense = start + 2 * REQUEST_FEATURES
    asked = [dense + DENSE.index("request_empty"), dense + DENSE.index("request_danger")]
    request = np.r_[np.arange(start, dense), asked]
    response = np.r_[np.arange(0, start), np.arange(dense, dense + len(DENSE))]
    return request, response


def left_out(shared: Path, names: list[str], variants: list[str]) -> dict[str, dict[str, float]]:
    import numpy as np
    from judge_data import evaluation_rows, load
    from train_judge import INNER_FOLDS, C, calibrate, fit, matrix, out_of_fold, weights_of

    from reporting.scoring.learned import ruled, shipped_model

    rows = load(shared)
    kept = len(rows)
    rows += evaluation_rows()  # judged, never trained on
    x, cases, y = matrix(rows)
    x = x.tocsr()
    groups = np.array([r["group"] for r in rows])
    sources = np.array([r["source"] for r in rows])
    trained = np.arange(len(rows)) < kept
    decides, clears = ruled(shipped_model().header, cases)
    columns = factor_columns()

    models = {
        "linear": fit,
        "response only": lambda xs, ys, ws: Columns(columns[1], fit).fit(xs, ys, ws),
        "two-factor": lambda xs, ys, ws: TwoFactor(columns, C).fit(xs, ys, ws),
    }
    wanted = sorted({m for v in variants for m, _ in VARIANTS[v]}, key=list(models).index)

    found: dict[str, dict[str, float]] = {}
    for source in names:
        began = time.time()
        test = np.flatnonzero(sources == source)
        train = np.flatnonzero((sources != source) & trained)
        parts = (x[train], y[train], groups[train], sources[train], INNER_FOLDS)
        inner = {m: out_of_fold(*parts, model=models[m]) for m in wanted}
        w = weights_of(sources[train], y[train])
        outer = {m: models[m](x[train], y[train], w).decision_function(x[test]) for m in wanted}
        found[source] = {}
        for variant in variants:
            calibrated = sum(share * inner[m] for m, share in VARIANTS[variant])
            slope, bias, threshold = calibrate(calibrated, y[train], w)
            decision = sum(share * outer[m] for m, share in VARIANTS[variant])
            risk = 1 / (1 + np.exp(-(slope * decision + bias)))
            verdict = ((risk >= threshold) | decides[test]) & ~clears[test]
            found[source][variant] = ba(verdict, y[test])
        cells = ", ".join(f"{v} {found[source][v]:.3f}" for v in variants)
        print(f"{source}: {cells} ({time.time() - began:.0f} s)", flush=True)
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shared", type=Path, default=ROOT.parent / "shared")
    parser.add_argument("--sources", default=",".join(DEFAULT_SOURCES))
    parser.add_argument("--variants", default=",".join(VARIANTS), help="of: " + ", ".join(VARIANTS))
    args = parser.parse_args()
    names = [s for s in args.sources.split(",") if s]
    variants = [v for v in args.variants.split(",") if v]
    if unknown := [v for v in variants if v not in VARIANTS]:
        parser.error(f"unknown variants: {', '.join(unknown)}")
    found = left_out(args.shared, names, variants)
    print("\n| left out | " + " | ".join(variants) + " |\n|---|" + "---:|" * len(variants))
    for source in names:
        print(f"| {source} | " + " | ".join(f"{found[source][v]:.3f}" for v in variants) + " |")
    jailbreak = [s for s in ("gptfuzz", "jailbreakbench", "jbb_judge_comparison") if s in found]
    if jailbreak:
        means = [sum(found[s][v] for s in jailbreak) / len(jailbreak) for v in variants]
        print(f"| mean of {', '.join(jailbreak)} | " + " | ".join(f"{m:.3f}" for m in means) + " |")


if __name__ == "__main__":
    main()
