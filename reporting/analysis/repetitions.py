"""Probes asked more than once (garak generations, Inspect epochs, promptfoo repeats): per-probe figures over the
cases that share a ``probe_group`` (a case without one is its own probe). Only evaluated cases count.

Each probe's repetitions and failures are counted by the engine (``reporting.analysis.engine.REPETITIONS``, one
query over the case table's ``probe_key``); the figures here are derived from those counts:

- ``any_failed``: probes where at least one repetition failed, with its share of probes and Wilson interval;
- ``share_failed_mean``: the mean over probes of the share of its repetitions that failed;
- ``hit_at_k``: for each k up to the most repetitions a probe got, the chance that at least one of k
  repetitions drawn (without replacement) from a probe's n fails, ``1 - C(n-c, k) / C(n, k)`` for a probe with c
  failures (the unbiased pass@k estimator of Chen et al. 2021, which garak reports as hit@k), averaged over the
  probes with at least k repetitions (``probes``).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from reporting.analysis.stats import wilson

MAX_K = 10  # hit@k is given for k = 1 .. min(most repetitions, MAX_K)


def hit_at_k(n: int, c: int, k: int) -> float:
    """The chance that k of a probe's n repetitions, drawn without replacement, include one of its c failures."""
    if not 1 <= k <= n or not 0 <= c <= n:
        raise ValueError(f"need 1 <= k <= n and 0 <= c <= n (n={n}, c={c}, k={k})")
    if n - c < k:
        return 1.0
    none_failed = 1.0  # C(n-c, k) / C(n, k) as a product, free of large binomials
    for i in range(n - c + 1, n + 1):
        none_failed *= 1.0 - k / i
    return 1.0 - none_failed


def repetition_figures(repetitions: Any, failures: Any, probes: Any = None) -> dict[str, Any]:
    """The figures of probes with ``repetitions`` evaluated and ``failures`` failed each, in order of first
    appearance (``Session.repetitions``). ``probes``: how many probes each (repetitions, failures) stands for
    (``Session.repetition_counts``; one each when not given): the same figures as of those probes one by one."""
    n = np.asarray(repetitions, dtype=np.int64)
    c = np.asarray(failures, dtype=np.int64)
    w = None if probes is None else np.asarray(probes, dtype=np.int64)
    if len(n) and (int(n.min()) <= 0 or (w is not None and int(w.min()) <= 0)):  # (a copy only where one is dropped)
        keep = (n > 0) if w is None else (n > 0) & (w > 0)
        n, c, w = n[keep], c[keep], None if w is None else w[keep]
    total = int(len(n)) if w is None else int(w.sum())
    any_failed = int((c > 0).sum()) if w is None else int(w[c > 0].sum())
    most = int(n.max()) if total else 0
    # Probes share few distinct (repetitions, failures) pairs: hit@k is computed once per pair, weighted by count.
    pairs: Any = np.zeros((0, 2), dtype=np.int64)
    weights: Any = np.zeros(0, dtype=np.int64)
    if total and (most + 1) ** 2 <= 1 << 22:
        # (n, c) as one integer n * width + c counted in one pass: the same pairs, in the same (n, c) order, as a
        # row-wise np.unique, without sorting a million rows.
        width = most + 1
        counted = np.bincount(n * width + c) if w is None else np.bincount(n * width + c, weights=w).astype(np.int64)
        codes = np.flatnonzero(counted)
        pairs, weights = np.stack([codes // width, codes % width], axis=1), counted[codes]
    elif total:
        pairs, inverse = np.unique(np.stack([n, c], axis=1), axis=0, return_inverse=True)
        weights = np.bincount(inverse.ravel(), weights=w, minlength=len(pairs)).astype(np.int64)
    hits: dict[str, dict[str, Any]] = {}
    for k in range(1, min(most, MAX_K) + 1):
        eligible = [(int(a), int(b), int(w)) for (a, b), w in zip(pairs, weights) if a >= k]
        probes = sum(w for _, _, w in eligible)
        hits[str(k)] = {"score": sum(hit_at_k(a, b, k) * w for a, b, w in eligible) / probes, "probes": probes}
    return {
        "probes": total,
        "repeated_probes": int((n > 1).sum()) if w is None else int(w[n > 1].sum()),
        "most_repetitions": most,
        "any_failed": any_failed,
        "any_failed_rate": None if total == 0 else any_failed / total,
        "any_failed_rate_ci": wilson(any_failed, total),
        "share_failed_mean": None if total == 0 else _mean_share(c, n, w, total),
        "hit_at_k": hits,
    }


def _mean_share(c: Any, n: Any, w: Any, total: int) -> float:
    """The mean over probes of the share of repetitions failed; of counted probes (``w``), their exact sum over
    their number (where every probe is asked once, the failed probes over the probes: what the mean of one share
    a probe gives, to the bit)."""
    if w is None:
        return float((c / n).mean())
    return math.fsum((w * (c / n)).tolist()) / total
