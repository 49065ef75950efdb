"""Mutual information between two labelings of the cases (clusters and category, severity or outcome), with a
permutation null: the observability geometry's measure of how far clusters follow the labels."""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np

PERMUTATIONS = 200  # label shuffles behind each mutual information's null and p-value


def _codes(values: np.ndarray) -> tuple[np.ndarray, int]:
    uniques, codes = np.unique(values, return_inverse=True)
    return codes.astype(np.int64), len(uniques)


def _mutual_information(a: np.ndarray, na: int, b: np.ndarray, nb: int) -> float:
    """MI in nats of two integer-coded labelings, from their contingency table (same as sklearn's)."""
    n = len(a)
    table = np.bincount(a * nb + b, minlength=na * nb).reshape(na, nb).astype(np.float64)
    rows, cols = table.sum(axis=1), table.sum(axis=0)
    nz = table > 0
    joint = table[nz]
    outer = np.outer(rows, cols)[nz]
    return float(np.sum(joint / n * (np.log(joint) + math.log(n) - np.log(outer))))


def permutation_nulls(
    clusters: np.ndarray, targets: Mapping[str, np.ndarray], permutations: int = PERMUTATIONS, seed: int = 0
) -> dict[str, tuple[float, float, float]]:
    """For each label: (observed MI, mean MI over ``permutations`` shuffles, share of shuffles at or above the
    observed MI). Each shuffle permutes the cluster assignment (keeping cluster sizes and label counts), which
    breaks any tie between clusters and labels; one shuffle serves every label."""
    a, na = _codes(clusters)
    coded = {key: _codes(values) for key, values in targets.items()}
    observed = {key: _mutual_information(a, na, b, nb) for key, (b, nb) in coded.items()}
    rng = np.random.default_rng(seed)
    draws: dict[str, list[float]] = {key: [] for key in coded}
    for _ in range(permutations):
        shuffled = rng.permutation(a)
        for key, (b, nb) in coded.items():
            draws[key].append(_mutual_information(shuffled, na, b, nb))
    result = {}
    for key, values in draws.items():
        null = np.asarray(values)
        at_or_above = int(np.sum(null >= observed[key] - 1e-12))
        result[key] = (observed[key], float(null.mean()), at_or_above / permutations)
    return result
