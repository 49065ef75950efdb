"""Observability geometry: a TF-IDF + SVD embedding of the cases, KMeans clusters, mutual
information between clusters and category / severity / outcome, and a 2-D scatter.

Exploratory statistics for review, not evidence of causal structure. scikit-learn is imported when one is computed.
"""

from __future__ import annotations

import math
from typing import Any, Optional, Union

import numpy as np
import pandas as pd
from scipy import sparse
from threadpoolctl import threadpool_limits

from reporting._gc import gc_paused
from reporting.analysis.metrics import as_frame
from reporting.analysis.mutual_information import PERMUTATIONS, permutation_nulls
from reporting.format.schema import RunReport

DEFAULT_MIN_CASES = 5
TEXT_WINDOW = 300  # characters of task and of input that enter a case's text
MAX_FEATURES = 20000
MAX_COMPONENTS = 50
MAX_CLUSTERS = 12
TOP_TERMS = 5
DIGITS = 6  # rounding of written floats, so output is byte-identical across runs
RESPONSE_WINDOW = 1000  # characters of the response that enter a case's text
SIGNIFICANCE = 0.01  # the plain-language reading speaks only of MI with p below this
# Above this many cases, the geometry is fitted on, and is that of, a stratified sample of SAMPLE_SIZE cases (every
# case assigned with assign_all=True): as many as the dashboard's scatter draws (render/figures.SCATTER_CAP).
SAMPLE_ABOVE = 20_000
SAMPLE_SIZE = 20_000
CHUNK = 20_000  # cases embedded at a time when assigning a large run
EMBEDDINGS = ("content", "with-labels")
DEFAULT_EMBEDDING = "content"
EMBEDDING_TEXT = {
    "content": f"task and input (first {TEXT_WINDOW} characters each), response (first {RESPONSE_WINDOW}), "
    "explanation, matched pattern names",
    "with-labels": "category, severity, outcome and risk-bucket tokens (the design's embedding: the labels the "
    f"mutual information is measured against are part of the text), task and input (first {TEXT_WINDOW} "
    "characters each), explanation, matched pattern names",
}


_BUCKETS = ((0.25, "risk_low"), (0.5, "risk_moderate"), (0.75, "risk_elevated"))  # (below, name); else risk_high


def risk_bucket(risk: float) -> str:
    return next((name for below, name in _BUCKETS if risk < below), "risk_high")


def case_texts(frame: pd.DataFrame, embedding: str = DEFAULT_EMBEDDING) -> list[str]:
    """The text embedded for each case.

    ``content`` (the default): only what the case says (task, input, response, explanation, matched pattern
    names), so that mutual information with category, severity and outcome measures the text, not itself.
    ``with-labels``: the design's embedding, which puts category / severity / outcome / risk-bucket tokens in front.
    """
    if embedding not in EMBEDDINGS:
        raise ValueError(f"unknown embedding {embedding!r}: one of {', '.join(EMBEDDINGS)}")
    labelled = embedding == "with-labels"
    columns = (
        frame["category"],
        frame["severity"].astype(str),
        frame["passed"],
        frame["risk_score"],
        frame["task"],
        frame["probe_input"],
        frame["response"],
        frame["explanation"],
        frame["matched_safe_patterns"],
        frame["matched_unsafe_patterns"],
    )
    texts = []
    with gc_paused():
        for category, severity, passed, risk, task, probe_input, response, explanation, safe, unsafe in zip(*columns):
            content = (
                (task or "")[:TEXT_WINDOW],
                (probe_input or "")[:TEXT_WINDOW],
                "" if labelled else (response or "")[:RESPONSE_WINDOW],
                explanation or "",
                " ".join(f"pattern_{p}" for p in safe),
                " ".join(f"pattern_{p}" for p in unsafe),
            )
            if labelled:
                labels = (
                    f"category_{category}",
                    f"severity_{severity}",
                    "outcome_pass" if passed else "outcome_fail",
                    risk_bucket(float(risk)),
                )
                texts.append(" ".join(labels + content))
            else:
                texts.append(" ".join(content))
    return texts


def choose_k(n_cases: int, n_distinct: int) -> int:
    """k = round(sqrt(n / 2)), at least 2, at most 12, and never more than the distinct embeddings."""
    k = int(round(math.sqrt(n_cases / 2)))
    return max(1, min(max(2, k), MAX_CLUSTERS, n_distinct))


def _round(value: float) -> float:
    rounded = round(float(value), DIGITS)
    return 0.0 if rounded == 0 else rounded  # no "-0.0"


def observability(
    run_or_frame: Union[RunReport, pd.DataFrame],
    min_cases: int = DEFAULT_MIN_CASES,
    seed: int = 0,
    embedding: str = DEFAULT_EMBEDDING,
    sample_above: Optional[int] = None,
    sample_size: Optional[int] = None,
    assign_all: bool = False,
) -> dict[str, Any]:
    """Embed, cluster and project the cases; ``{"skipped": true, "reason": ...}`` below ``min_cases``. Above
    ``sample_above`` cases the model (TF-IDF, SVD, KMeans, the scatter's SVD) is fitted on a stratified sample of
    ``sample_size``, and the geometry (clusters, mutual information, points) is the sample's; ``sampled`` says so.
    With ``assign_all`` every case is then assigned a cluster and a point by the fitted model, a chunk at a time (1M
    cases: a minute more, for points a sample of 20,000 draws). BLAS on one thread: the same points on any machine."""
    with gc_paused(), threadpool_limits(limits=1, user_api="blas"):
        frame = as_frame(run_or_frame)
        if len(frame) > (SAMPLE_ABOVE if sample_above is None else sample_above):
            size = SAMPLE_SIZE if sample_size is None else sample_size
            if assign_all:
                return _sampled_observability(frame, min_cases, seed, embedding, size)
            return _sample_geometry(frame, min_cases, seed, embedding, size)
        return _observability(frame, min_cases, seed, embedding)


def stratified_sample(frame: pd.DataFrame, size: int, seed: int = 0) -> np.ndarray:
    """Positions of a sample of ``size`` cases drawn within each (category, outcome) stratum in proportion to its
    share of the run (at least one case of every stratum), seeded; sorted. Reads ``category`` and ``passed`` only;
    the strata are taken in the order of their names (the category, then "p" or "f": one name a stratum, as the last
    character is the outcome), each case's stratum a number, not a string."""
    n = len(frame)
    category, names = pd.factorize(frame["category"].to_numpy(dtype=object))
    pair = category.astype(np.int64) * 2 + frame["passed"].to_numpy(dtype=bool)
    present = np.unique(pair)
    strata = [str(names[p // 2]) + ("p" if p % 2 else "f") for p in present.tolist()]
    rng = np.random.default_rng(seed)
    chosen = []
    for at in sorted(range(len(strata)), key=strata.__getitem__):
        members = np.flatnonzero(pair == present[at])
        take = max(1, int(round(size * len(members) / n)))
        chosen.append(rng.choice(members, size=min(take, len(members)), replace=False))
    return np.sort(np.concatenate(chosen))


def sample_geometry(
    strata: pd.DataFrame,
    rows_at: Any,
    min_cases: int = DEFAULT_MIN_CASES,
    seed: int = 0,
    embedding: str = DEFAULT_EMBEDDING,
    sample_size: Optional[int] = None,
) -> dict[str, Any]:
    """The geometry of a stratified sample of cases known by their ``category`` and ``passed`` columns (``strata``)
    and their rows at positions (``rows_at``): the frame of every case is never needed (a filter of ten million)."""
    with gc_paused(), threadpool_limits(limits=1, user_api="blas"):
        sample = stratified_sample(strata, SAMPLE_SIZE if sample_size is None else sample_size, seed)
        fitted = _observability(rows_at(sample), min_cases, seed, embedding)
        if fitted.get("skipped"):
            return fitted
        return {**fitted, "sampled": _sampled(len(sample), len(strata), seed, every_case=False)}


def _sample_geometry(
    frame: pd.DataFrame, min_cases: int, seed: int, embedding: str, sample_size: int
) -> dict[str, Any]:
    """The geometry of a stratified sample: its clusters, mutual information and points (``cases``: the sample's
    cases only, in the run's order)."""
    return sample_geometry(frame, lambda at: frame.iloc[at], min_cases, seed, embedding, sample_size)


def _sampled(n: int, of: int, seed: int, every_case: bool) -> dict[str, Any]:
    """What the output says of a sampled geometry."""
    reach = (
        "the model fitted on the sample assigns every case to a cluster and a point"
        if every_case
        else "the clusters, mutual information and points are the sample's"
    )
    return {
        "n": int(n),
        "of": int(of),
        "method": "stratified by category and outcome in proportion to their shares (at least one case of each "
        f"stratum), seed {seed}; {reach}",
        "assigned": "every case" if every_case else "sample",
    }


def _sampled_observability(
    frame: pd.DataFrame, min_cases: int, seed: int, embedding: str, sample_size: int
) -> dict[str, Any]:
    """Fit on a stratified sample, then assign and project every case through the fitted model in chunks."""
    from sklearn.preprocessing import normalize

    n = len(frame)
    sample = stratified_sample(frame, sample_size, seed)
    fitted = _observability(frame.iloc[sample], min_cases, seed, embedding, keep_models=True)
    if fitted.get("skipped"):
        return fitted
    vectorizer, svd, kmeans, scatter_svd, relabel = fitted.pop("_models")
    labels = np.empty(n, dtype=int)
    scatter = np.empty((n, 2), dtype=np.float64)
    term_sums = np.zeros((fitted["n_clusters"], len(vectorizer.vocabulary_)), dtype=np.float64)
    for start in range(0, n, CHUNK):
        part = frame.iloc[start : start + CHUNK]
        tfidf = vectorizer.transform(case_texts(part, embedding))
        vectors = normalize(svd.transform(tfidf))
        chunk_labels = relabel[kmeans.predict(vectors)] if kmeans is not None else np.zeros(len(part), dtype=int)
        labels[start : start + len(part)] = chunk_labels
        scatter[start : start + len(part)] = scatter_svd.transform(tfidf)
        membership = sparse.csr_matrix(
            (np.ones(len(part), dtype=np.float32), (chunk_labels, np.arange(len(part)))),
            shape=(fitted["n_clusters"], len(part)),
        )
        term_sums += np.asarray((membership @ tfidf).todense())
    result = _summaries(frame, labels, scatter, term_sums, np.asarray(vectorizer.get_feature_names_out()), seed)
    return {
        **_ordered({**result, "method": fitted["method"]}),
        "sampled": _sampled(len(sample), n, seed, every_case=True),
    }


def _observability(
    frame: pd.DataFrame, min_cases: int, seed: int, embedding: str, keep_models: bool = False
) -> dict[str, Any]:
    from sklearn.cluster import KMeans
    from sklearn.decomposition import TruncatedSVD
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.preprocessing import normalize

    n = len(frame)
    if n < min_cases:
        return {"skipped": True, "reason": f"{n} case(s); observability needs at least {min_cases}"}

    texts = case_texts(frame, embedding)
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
    vectors = normalize(svd.fit_transform(tfidf))
    n_distinct = len(np.unique(np.round(vectors, 9), axis=0))
    k = choose_k(n, n_distinct)
    kmeans = None
    if k >= 2:
        kmeans = KMeans(n_clusters=k, n_init=1, random_state=seed)
        raw = kmeans.fit_predict(vectors)
    else:
        raw = np.zeros(n, dtype=int)
    labels = _relabel_by_size(raw)

    scatter_svd = TruncatedSVD(n_components=2, algorithm="randomized", n_iter=5, random_state=seed)
    scatter = scatter_svd.fit_transform(tfidf)
    terms = np.asarray(vectorizer.get_feature_names_out())
    membership = sparse.csr_matrix((np.ones(n, dtype=np.float32), (labels, np.arange(n))), shape=(labels.max() + 1, n))
    term_sums = np.asarray((membership @ tfidf).todense())
    result = _summaries(frame, labels, scatter, term_sums, terms, seed)
    result["method"] = {
        "embedding": embedding,
        "text": EMBEDDING_TEXT[embedding],
        "tfidf": {"max_features": MAX_FEATURES, "sublinear_tf": True, "stop_words": "english", "n_terms": int(n_terms)},
        "svd": {"n_components": int(components), "algorithm": "randomized", "n_iter": 5, "normalized": "l2"},
        "kmeans": {
            "k": int(k),
            "k_rule": "round(sqrt(n/2)) clamped to [2, 12] and to distinct embeddings",
            "n_init": 1,
            "init": "k-means++",
        },
        "scatter": {"svd_components": 2, "on": "tfidf"},
        "mutual_information_units": "nats",
        "mutual_information_null": f"mean MI over {PERMUTATIONS} shuffles of each label (seeded), "
        "p = share of shuffles at or above the observed MI",
        "permutations": PERMUTATIONS,
        "normalized_mutual_information": "arithmetic mean of entropies",
        "seed": seed,
        "cluster_ids": "ordered by size, largest first",
    }
    result = _ordered(result)
    if keep_models:
        relabel = np.zeros(int(raw.max()) + 1, dtype=int)
        relabel[raw] = labels  # raw KMeans label -> the size-ordered id
        result["_models"] = (vectorizer, svd, kmeans, scatter_svd, relabel)
    return result


def _summaries(
    frame: pd.DataFrame, labels: np.ndarray, scatter: np.ndarray, term_sums: np.ndarray, terms: np.ndarray, seed: int
) -> dict[str, Any]:
    """Mutual information with its nulls, the cluster table and every case's cluster and point."""
    from sklearn.metrics import mutual_info_score, normalized_mutual_info_score

    n = len(frame)

    outcome = np.where(frame["passed"].to_numpy(dtype=bool), "pass", "fail")
    # Integer codes in the order of the sorted names (as np.unique gives them): the same contingency tables as
    # the names, counted without comparing a million strings.
    coded = {
        "category": pd.factorize(frame["category"].astype(str).to_numpy(), sort=True),
        "severity": pd.factorize(frame["severity"].astype(str).to_numpy(), sort=True),
        "pass_fail": pd.factorize(outcome, sort=True),
    }
    targets = {key: codes for key, (codes, _) in coded.items()}
    mutual_information = {key: _round(mutual_info_score(labels, values)) for key, values in targets.items()}
    nulls = permutation_nulls(labels, targets, seed=seed)
    normalized = {key: _round(normalized_mutual_info_score(labels, values)) for key, values in targets.items()}

    passed = frame["passed"].to_numpy(dtype=bool)
    category_codes, category_names = coded["category"]
    clusters = []
    for cluster_id in range(labels.max() + 1):
        mask = labels == cluster_id
        size = int(mask.sum())
        if size == 0:
            continue
        counts = np.bincount(category_codes[mask], minlength=len(category_names))
        dominant = str(category_names[int(np.argmax(counts))])  # the most cases; ties: the first name
        order = np.lexsort((terms, -term_sums[cluster_id]))[:TOP_TERMS]
        clusters.append(
            {
                "cluster_id": int(cluster_id),
                "size": size,
                "pass_rate": _round(int(passed[mask].sum()) / size),
                "dominant_category": dominant,
                "top_terms": [str(terms[i]) for i in order if term_sums[cluster_id, i] > 0],
            }
        )

    probe_ids = frame["probe_id"].tolist()
    return {
        "n_cases": n,
        "n_clusters": int(labels.max() + 1),
        "mutual_information": mutual_information,
        "mutual_information_null": {key: _round(null) for key, (_, null, _) in nulls.items()},
        "mutual_information_p": {key: _round(p) for key, (_, _, p) in nulls.items()},
        "normalized_mutual_information": normalized,
        "clusters": clusters,
        "cases": [
            {"probe_id": pid, "cluster_id": int(c), "scatter_x": _round(x), "scatter_y": _round(y)}
            for pid, c, x, y in zip(probe_ids, labels, scatter[:, 0], scatter[:, 1])
        ],
    }


def _ordered(result: dict[str, Any]) -> dict[str, Any]:
    """The keys in their documented order: counts, method, then the figures."""
    head = ("n_cases", "n_clusters", "method")
    return {**{k: result[k] for k in head}, **{k: v for k, v in result.items() if k not in head}}


def _relabel_by_size(labels: np.ndarray) -> np.ndarray:
    """Renumber clusters so that 0 is the largest (ties by first appearance): stable, readable ids."""
    ids, first, counts = np.unique(labels, return_index=True, return_counts=True)
    order = np.lexsort((first, -counts))
    mapping = np.empty(ids.max() + 1, dtype=int)
    mapping[ids[order]] = np.arange(len(ids))
    return mapping[labels]
