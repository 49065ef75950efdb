"""Probes asked more than once (garak generations, Inspect epochs, promptfoo repeats): per-probe figures over the
cases that share a ``probe_group`` (a case without one is its own probe). Only evaluated cases count.

- ``any_failed``: probes where at least one repetition failed, with its share of probes and Wilson interval;
- ``share_failed_mean``: the mean over probes of the share of its repetitions that failed;
- ``hit_at_k``: for each k up to the most repetitions a probe got, the chance that at least one of k
  repetitions drawn (without replacement) from a probe's n fails, ``1 - C(n-c, k) / C(n, k)`` for a probe with c
  failures (the unbiased pass@k estimator of Chen et al. 2021, which garak reports as hit@k), averaged over the
  probes with at least k repetitions (``probes``).
"""

from __future__ import annotations

from typing import Any, Optional

import numpy as np
import pandas as pd

from reporting.analysis.grouping import first_rows, repetition_keys
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


def _keys(frame: pd.DataFrame) -> pd.Series:
    """Each case's repetition key as text (``grouping.repetition_keys``)."""
    return repetition_keys(frame["probe_id"], frame["probe_group"] if "probe_group" in frame else None)


def _counts(frame: pd.DataFrame, judge: Optional[str] = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per probe, in order of first appearance: the row where it first appears, repetitions judged and failed."""
    if frame.empty:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    if judge is None:
        judged = np.ones(len(frame), dtype=np.int64)
        failed = (~frame["passed"].to_numpy(dtype=bool)).astype(np.int64)
    else:
        verdicts: list[Optional[bool]] = []
        for found in frame["verdicts"] if "verdicts" in frame else [None] * len(frame):
            verdict = (found or {}).get(judge)
            if verdict is None:
                verdicts.append(None)
            else:
                verdicts.append(verdict.passed if hasattr(verdict, "passed") else verdict.get("passed"))
        judged = np.array([v is not None for v in verdicts], dtype=np.int64)
        failed = np.array([v is False for v in verdicts], dtype=np.int64)
    # the frame's integer keys (cases_frame) where it has them: no strings hashed on each filtered view
    keys = frame["probe_key"].to_numpy(dtype=np.int64) if "probe_key" in frame else _keys(frame).to_numpy(dtype=object)
    codes, _ = pd.factorize(keys, sort=False)
    first = first_rows(codes)
    n = np.bincount(codes, weights=judged, minlength=len(first)).astype(np.int64)
    c = np.bincount(codes, weights=failed, minlength=len(first)).astype(np.int64)
    return first, n, c


def probe_counts(frame: pd.DataFrame, judge: Optional[str] = None) -> list[tuple[str, int, int]]:
    """(probe, repetitions judged, failed) per probe, in order of first appearance. ``judge`` counts that judge's
    verdicts instead of the primary one (garak's per-detector figures)."""
    first, n, c = _counts(frame, judge)
    keys = _keys(frame.iloc[first]).tolist()
    return [(str(k), int(a), int(b)) for k, a, b in zip(keys, n, c)]


def repetition_figures(frame: pd.DataFrame, judge: Optional[str] = None) -> dict[str, Any]:
    _, n, c = _counts(frame, judge)
    keep = n > 0
    n, c = n[keep], c[keep]
    total = int(len(n))
    any_failed = int((c > 0).sum())
    most = int(n.max()) if total else 0
    # Probes share few distinct (repetitions, failures) pairs: hit@k is computed once per pair, weighted by count.
    pairs: Any = np.zeros((0, 2), dtype=np.int64)
    weights: Any = np.zeros(0, dtype=np.int64)
    if total and (most + 1) ** 2 <= 1 << 22:
        # (n, c) as one integer n * width + c counted in one pass: the same pairs, in the same (n, c) order, as a
        # row-wise np.unique, without sorting a million rows.
        width = most + 1
        counted = np.bincount(n.astype(np.int64) * width + c.astype(np.int64))
        codes = np.flatnonzero(counted)
        pairs, weights = np.stack([codes // width, codes % width], axis=1), counted[codes]
    elif total:
        pairs, weights = np.unique(np.stack([n, c], axis=1), axis=0, return_counts=True)
    hits: dict[str, dict[str, Any]] = {}
    for k in range(1, min(most, MAX_K) + 1):
        eligible = [(int(a), int(b), int(w)) for (a, b), w in zip(pairs, weights) if a >= k]
        probes = sum(w for _, _, w in eligible)
        hits[str(k)] = {"score": sum(hit_at_k(a, b, k) * w for a, b, w in eligible) / probes, "probes": probes}
    return {
        "probes": total,
        "repeated_probes": int((n > 1).sum()),
        "most_repetitions": most,
        "any_failed": any_failed,
        "any_failed_rate": None if total == 0 else any_failed / total,
        "any_failed_rate_ci": wilson(any_failed, total),
        "share_failed_mean": None if total == 0 else float((c / n).mean()),
        "hit_at_k": hits,
    }
