"""The learned judge's words and character n-grams (docs/scoring.md) as hashed columns and l2-normalised counts:
the response's words and word pairs (scikit-learn's analyzer: lowercased runs of two or more word characters,
English stop words out, then neighbouring pairs; MurmurHash3 columns), its character 3- and 4-grams (FNV-1a over
code points), the request's words and word pairs. Computed a batch at a time: per response only a split of its text;
the lookups, hashing and counting over the whole batch."""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from itertools import chain, filterfalse, repeat
from typing import Any

WORD_FEATURES = 2**18
CHAR_FEATURES = 2**18
REQUEST_FEATURES = 2**16
MAX_CHARS = 1000  # of a response read for character n-grams
MAX_WORD_CHARS = 32_000  # of a response read for words (the longest training response has 22,704; the rules read all)
MAX_REQUEST_CHARS = 4000  # of a request read for words: its last characters (where a conversation's last turn is)
# All windows are taken after padding (runs of more than 64 blank or invisible characters) is made one space.
_NOT_WORD = bytes(c if chr(c).isalnum() or c == 95 else 32 for c in range(128)) + b" " * 128  # ASCII \w kept

_TOKEN = re.compile(r"\w\w+")  # the runs scikit-learn's default token pattern (?u)\b\w\w+\b finds, faster


@functools.lru_cache(maxsize=1)
def _stop_words() -> frozenset:
    from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS

    return frozenset(ENGLISH_STOP_WORDS)


@functools.lru_cache(maxsize=1)
def _not_read() -> frozenset:
    """The stop words and every word of one ASCII word character (lowercased): what the ASCII split leaves out."""
    return _stop_words() | {chr(c) for c in range(128) if chr(c).isalnum() or c == 95} - set(
        "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
    )


def tokens_of(text: str) -> list[str]:
    """The words of ``text`` the model reads, in order: lowercased runs of two or more word characters, English
    stop words (scikit-learn's list) out; what scikit-learn's word analyzer reads before it adds word pairs. ASCII
    text is split on its non-word bytes (the same runs as the regular expression, in half the time)."""
    low = text.lower()
    if low.isascii():
        return list(filterfalse(_not_read().__contains__, low.encode("ascii").translate(_NOT_WORD).decode().split()))
    return list(filterfalse(_stop_words().__contains__, _TOKEN.findall(low)))


def response_tokens(response: str) -> list[str]:
    """The words of a response the model reads: its first MAX_WORD_CHARS characters once padding is made one space
    (``signals.collapse_padding``, so that padding cannot push the answer out)."""
    from reporting.scoring.signals import collapse_padding

    return tokens_of(collapse_padding(response)[:MAX_WORD_CHARS])


def _response_tokens(text: str) -> list[str]:
    """``response_tokens`` of a response whose padding is collapsed already."""
    return tokens_of(text[:MAX_WORD_CHARS])


def request_tokens(request: str) -> list[str]:
    """The words of a request the model reads: its last MAX_REQUEST_CHARS characters once padding is made one
    space."""
    from reporting.scoring.signals import collapse_padding

    return tokens_of(collapse_padding(request)[-MAX_REQUEST_CHARS:])


def _terms(tokens: list[str]) -> list[str]:
    return tokens + [f"{a} {b}" for a, b in zip(tokens, tokens[1:])]


def terms_of(response: str) -> list[str]:
    """The words and word pairs of a response the model reads, in order (the words, then the pairs of neighbouring
    words: scikit-learn's analyzer with ngram_range (1, 2) and English stop words)."""
    return _terms(response_tokens(response))


def request_terms(request: str) -> list[str]:
    """The words and word pairs of a request the model reads."""
    return _terms(request_tokens(request))


_COLUMNS: dict[str, int] = {}  # term -> hashed column, kept between calls (bounded: cleared when full)
_PAIRS: dict[tuple[str, str], int] = {}  # (word, word) -> the column of the pair "word word", the same way
_COLUMNS_MAX = 500_000
_LONGEST_CACHED = 64  # a response of one giant word cannot fill the memory through the caches


def _column(term: str) -> int:
    from sklearn.utils import murmurhash3_32

    return int(murmurhash3_32(term, positive=True)) % WORD_FEATURES


def term_columns(terms: list[str], width: int = WORD_FEATURES) -> list[int]:
    """Each term's column: MurmurHash3 (unsigned, seed 0) of its UTF-8 bytes modulo ``width`` (the cache holds
    the hash modulo WORD_FEATURES, a multiple of every other width)."""
    cache = _COLUMNS
    if len(cache) > _COLUMNS_MAX:
        cache.clear()
    columns = []
    for term in terms:
        column = cache.get(term)
        if column is None:
            column = _column(term)
            if len(term) <= _LONGEST_CACHED:
                cache[term] = column
        columns.append(column % width)
    return columns


def _looked_up(cache: dict[Any, int], keys: list[Any], term: Callable[[Any], str]):
    """The cached column of each key (a word, or a pair of words), the term ``term(key)`` hashed where missing."""
    import numpy as np

    cols = np.fromiter(map(cache.get, keys, repeat(-1)), dtype=np.int64, count=len(keys))
    for i in np.flatnonzero(cols < 0).tolist():
        key = keys[i]
        column = cache.get(key)
        if column is None:
            text = term(key)
            column = _column(text)
            if len(text) <= _LONGEST_CACHED:
                cache[key] = column
        cols[i] = column
    return cols


def token_columns(tokens: list[list[str]]):
    """The columns (modulo WORD_FEATURES) of every row's words, then of its word pairs, as four arrays: the words'
    rows and columns (rows in order, each row's words in order) and the pairs' rows and columns. The same columns
    as ``term_columns(terms_of(...))``, looked up a whole batch at a time (a miss is hashed and cached)."""
    import numpy as np

    for cache in (_COLUMNS, _PAIRS):
        if len(cache) > _COLUMNS_MAX:
            cache.clear()
    n = len(tokens)
    lengths = np.fromiter(map(len, tokens), dtype=np.int64, count=n)
    words = list(chain.from_iterable(tokens))
    pairs = list(chain.from_iterable(zip(t, t[1:]) for t in tokens))
    found = [_looked_up(_COLUMNS, words, str), _looked_up(_PAIRS, pairs, " ".join)]
    rows = np.arange(n, dtype=np.int64)
    return np.repeat(rows, lengths), found[0], np.repeat(rows, np.maximum(lengths - 1, 0)), found[1]


_MULTIPLIER = 0x100000001B3  # FNV-1a's 64-bit prime, over code points instead of bytes
_SEEDS = {3: 0xCBF29CE484222325, 4: 0x84222325CBF29CE4}


def char_columns(responses: list[str], collapsed: bool = False):
    """Every character 3-gram and 4-gram of each response (its first MAX_CHARS characters once padding is made one
    space, lowercased, runs of white space made one space, a space added at each end) as (row, column) arrays: a
    64-bit FNV-1a hash over the code points, mixed, modulo CHAR_FEATURES. Computed for all responses at once in
    numpy. ``collapsed``: the responses' padding is collapsed already."""
    import numpy as np

    from reporting.scoring.signals import collapse_padding

    texts = responses if collapsed else [collapse_padding(r) for r in responses]
    docs = [" " + " ".join(t[:MAX_CHARS].lower().split()) + " " for t in texts]
    lengths = np.fromiter(map(len, docs), dtype=np.int64, count=len(docs))
    codes = np.frombuffer("".join(docs).encode("utf-32-le"), dtype="<u4").astype(np.uint64)
    ends = np.cumsum(lengths)
    doc_of = np.repeat(np.arange(len(docs), dtype=np.int64), lengths)
    rows, cols = [], []
    prime = np.uint64(_MULTIPLIER)
    for n, seed in _SEEDS.items():
        m = len(codes) - n + 1
        if m <= 0:
            continue
        h = np.full(m, seed, dtype=np.uint64)
        for k in range(n):
            h = (h ^ codes[k : k + m]) * prime  # wraps modulo 2**64
        h ^= h >> np.uint64(29)
        h *= np.uint64(0xBF58476D1CE4E5B9)
        h ^= h >> np.uint64(32)
        valid = np.arange(n, m + n, dtype=np.int64) <= ends[doc_of[:m]]  # the n-gram ends inside its response
        rows.append(doc_of[:m][valid])
        cols.append((h[valid] & np.uint64(CHAR_FEATURES - 1)).astype(np.int64))  # modulo CHAR_FEATURES, 2**18
    if not rows:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    return np.concatenate(rows), np.concatenate(cols)


_CHUNKED = 100_000  # keys from which count_arrays sorts them in groups of rows


def count_arrays(rows, cols, n_rows: int, n_cols: int):
    """Counts of (row, column) pairs, each row scaled to unit length (l2), as the arrays of a CSR matrix (indptr,
    indices, data) in canonical order. One sort of the pairs' keys (numpy's stable sort, on 32-bit keys where they
    fit: twice as fast as np.unique's) gives that order."""
    import numpy as np

    if n_rows * n_cols <= 2**32:
        keys = np.asarray(rows, dtype=np.uint32) * np.uint32(n_cols) + np.asarray(cols, dtype=np.uint32)
    else:
        keys = np.asarray(rows, dtype=np.int64) * n_cols + np.asarray(cols, dtype=np.int64)
    if len(keys) > _CHUNKED and n_rows < 2**20:
        # Many keys: grouped by 16 rows first (a radix sort of 16-bit group numbers), then each group sorted alone,
        # in the cache: a third faster than one sort of them all, the same order.
        group = np.asarray(rows, dtype=np.int64) >> 4
        keys = keys[np.argsort(group.astype(np.uint16), kind="stable")]
        bounds = np.concatenate([[0], np.cumsum(np.bincount(group))])
        for start, end in zip(bounds[:-1].tolist(), bounds[1:].tolist()):
            keys[start:end].sort()
    else:
        keys.sort(kind="stable")
    first = np.ones(len(keys), dtype=bool)
    np.not_equal(keys[1:], keys[:-1], out=first[1:])
    starts = np.flatnonzero(first)
    counts = np.diff(np.append(starts, len(keys)))
    keys = keys[starts].astype(np.int64)
    row_of = keys // n_cols
    data = counts.astype(np.float64)
    data /= np.sqrt(np.bincount(row_of, weights=data**2, minlength=n_rows))[row_of]
    indptr = np.concatenate([[0], np.cumsum(np.bincount(row_of, minlength=n_rows))])
    return indptr, keys - row_of * n_cols, data


def _counts(rows, cols, n_rows: int, n_cols: int):
    """``count_arrays`` as a CSR matrix (scipy sorts nothing)."""
    from scipy.sparse import csr_matrix

    indptr, indices, data = count_arrays(rows, cols, n_rows, n_cols)
    x = csr_matrix((data, indices, indptr), shape=(n_rows, n_cols))
    x.has_canonical_format = True
    return x
