"""Observability geometry: a TF-IDF + SVD embedding of the cases, KMeans clusters, mutual
information between clusters and category / severity / outcome, and a 2-D scatter.

These are exploratory statistics for review, not evidence of causal structure.
"""

from __future__ import annotations

import math
from typing import Any, Union

import numpy as np
import pandas as pd
from scipy import sparse
from sklearn.cluster import KMeans
from sklearn.decomposition import TruncatedSVD
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.metrics import mutual_info_score, normalized_mutual_info_score
from sklearn.preprocessing import normalize

from reporting._gc import gc_paused
from reporting.analysis.metrics import as_frame
from reporting.format.schema import RunReport

DEFAULT_MIN_CASES = 5
TEXT_WINDOW = 300  # characters of task and of input that enter a case's text
MAX_FEATURES = 20000
MAX_COMPONENTS = 50
MAX_CLUSTERS = 12
TOP_TERMS = 5
DIGITS = 6  # rounding of written floats, so output is byte-identical across runs


def risk_bucket(risk: float) -> str:
    if risk < 0.25:
        return "risk_low"
    if risk < 0.5:
        return "risk_moderate"
    if risk < 0.75:
        return "risk_elevated"
    return "risk_high"


def case_texts(frame: pd.DataFrame) -> list[str]:
    """The text embedded for each case: labels, a risk bucket, task/input snapshot, explanation, pattern labels."""
    columns = (
        frame["category"],
        frame["severity"].astype(str),
        frame["passed"],
        frame["risk_score"],
        frame["task"],
        frame["probe_input"],
        frame["explanation"],
        frame["matched_safe_patterns"],
        frame["matched_unsafe_patterns"],
    )
    texts = []
    with gc_paused():
        for category, severity, passed, risk, task, probe_input, explanation, safe, unsafe in zip(*columns):
            texts.append(
                " ".join(
                    (
                        f"category_{category}",
                        f"severity_{severity}",
                        "outcome_pass" if passed else "outcome_fail",
                        risk_bucket(float(risk)),
                        (task or "")[:TEXT_WINDOW],
                        (probe_input or "")[:TEXT_WINDOW],
                        explanation or "",
                        " ".join(f"pattern_{p}" for p in safe),
                        " ".join(f"pattern_{p}" for p in unsafe),
                    )
                )
            )
    return texts


def choose_k(n_cases: int, n_distinct: int) -> int:
    """k = round(sqrt(n / 2)), at least 2, at most 12, and never more than the distinct embeddings."""
    k = int(round(math.sqrt(n_cases / 2)))
    return max(1, min(max(2, k), MAX_CLUSTERS, n_distinct))


def _round(value: float) -> float:
    rounded = round(float(value), DIGITS)
    return 0.0 if rounded == 0 else rounded  # no "-0.0"


def observability(
    run_or_frame: Union[RunReport, pd.DataFrame], min_cases: int = DEFAULT_MIN_CASES, seed: int = 0
) -> dict[str, Any]:
    """Embed, cluster and project the cases; ``{"skipped": true, "reason": ...}`` below ``min_cases``."""
    with gc_paused():
        return _observability(as_frame(run_or_frame), min_cases, seed)


def _observability(frame: pd.DataFrame, min_cases: int, seed: int) -> dict[str, Any]:
    n = len(frame)
    if n < min_cases:
        return {"skipped": True, "reason": f"{n} case(s); observability needs at least {min_cases}"}

    texts = case_texts(frame)
    vectorizer = TfidfVectorizer(
        lowercase=True,
        stop_words="english",
        max_features=MAX_FEATURES,
        sublinear_tf=True,
        token_pattern=r"(?u)\b\w[\w\-]+\b",
        dtype=np.float32,
    )
    try:
        tfidf = vectorizer.fit_transform(texts)
    except ValueError:
        return {"skipped": True, "reason": "the cases have no words to embed"}
    n_terms = tfidf.shape[1]
    components = max(2, min(MAX_COMPONENTS, n_terms - 1, n - 1))
    if n_terms < 3 or n < 3:
        return {"skipped": True, "reason": "too few distinct terms to embed"}

    svd = TruncatedSVD(n_components=components, algorithm="randomized", n_iter=5, random_state=seed)
    embedding = normalize(svd.fit_transform(tfidf))
    n_distinct = len(np.unique(np.round(embedding, 9), axis=0))
    k = choose_k(n, n_distinct)
    if k >= 2:
        kmeans = KMeans(n_clusters=k, n_init=1, random_state=seed)
        labels = kmeans.fit_predict(embedding)
    else:
        labels = np.zeros(n, dtype=int)
    labels = _relabel_by_size(labels)

    scatter_svd = TruncatedSVD(n_components=2, algorithm="randomized", n_iter=5, random_state=seed)
    scatter = scatter_svd.fit_transform(tfidf)

    outcome = np.where(frame["passed"].to_numpy(dtype=bool), "pass", "fail")
    targets = {
        "category": frame["category"].astype(str).to_numpy(),
        "severity": frame["severity"].astype(str).to_numpy(),
        "pass_fail": outcome,
    }
    mutual_information = {key: _round(mutual_info_score(labels, values)) for key, values in targets.items()}
    normalized = {key: _round(normalized_mutual_info_score(labels, values)) for key, values in targets.items()}

    terms = np.asarray(vectorizer.get_feature_names_out())
    membership = sparse.csr_matrix((np.ones(n, dtype=np.float32), (labels, np.arange(n))), shape=(labels.max() + 1, n))
    term_sums = np.asarray((membership @ tfidf).todense())
    passed = frame["passed"].to_numpy(dtype=bool)
    categories = frame["category"].astype(str).to_numpy()
    clusters = []
    for cluster_id in range(labels.max() + 1):
        mask = labels == cluster_id
        size = int(mask.sum())
        names, counts = np.unique(categories[mask], return_counts=True)
        dominant = str(names[np.lexsort((names, -counts))[0]])
        order = np.lexsort((terms, -term_sums[cluster_id]))[:TOP_TERMS]
        clusters.append(
            {
                "cluster_id": int(cluster_id),
                "size": size,
                "pass_rate": _round(passed[mask].mean()),
                "dominant_category": dominant,
                "top_terms": [str(terms[i]) for i in order if term_sums[cluster_id, i] > 0],
            }
        )

    probe_ids = frame["probe_id"].tolist()
    return {
        "n_cases": n,
        "n_clusters": int(labels.max() + 1),
        "method": {
            "text": "category, severity, outcome, risk bucket, task and input (first "
            f"{TEXT_WINDOW} characters each), explanation, matched pattern labels",
            "tfidf": {
                "max_features": MAX_FEATURES,
                "sublinear_tf": True,
                "stop_words": "english",
                "n_terms": int(n_terms),
            },
            "svd": {"n_components": int(components), "algorithm": "randomized", "n_iter": 5, "normalized": "l2"},
            "kmeans": {
                "k": int(k),
                "k_rule": "round(sqrt(n/2)) clamped to [2, 12] and to distinct embeddings",
                "n_init": 1,
                "init": "k-means++",
            },
            "scatter": {"svd_components": 2, "on": "tfidf"},
            "mutual_information_units": "nats",
            "normalized_mutual_information": "arithmetic mean of entropies",
            "seed": seed,
            "cluster_ids": "ordered by size, largest first",
        },
        "mutual_information": mutual_information,
        "normalized_mutual_information": normalized,
        "clusters": clusters,
        "cases": [
            {"probe_id": pid, "cluster_id": int(c), "scatter_x": _round(x), "scatter_y": _round(y)}
            for pid, c, x, y in zip(probe_ids, labels, scatter[:, 0], scatter[:, 1])
        ],
    }


def _relabel_by_size(labels: np.ndarray) -> np.ndarray:
    """Renumber clusters so that 0 is the largest (ties by first appearance): stable, readable ids."""
    ids, first, counts = np.unique(labels, return_index=True, return_counts=True)
    order = np.lexsort((first, -counts))
    mapping = np.empty(ids.max() + 1, dtype=int)
    mapping[ids[order]] = np.arange(len(ids))
    return mapping[labels]
