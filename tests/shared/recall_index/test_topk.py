"""Property: the pruned top-k returns exactly the exhaustive scorer's answer.

Random segments (documents drawn from a skewed vocabulary so some terms are common and some rare,
repeated documents so scores tie), random queries, limits, BM25 parameters, visibility masks and
``need``: :func:`pruned_top` must return the same positions, in the same order, with bit-identical
scores as :func:`dense_top` (every posting of every term, sorted by score then position), and
both must equal a plain per-document Python reference (same float operations, same order).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from shared.recall_index.builder import build_segment
from shared.recall_index.segment import Bm25Params
from shared.recall_index.topk import dense_top, numpy_dense_top, pruned_top
from shared.store.recall_rows import IndexedRow
from tests.records import memory_record

WORDS = [f"w{i}" for i in range(40)]


def _docs(seed: int, n: int) -> list[IndexedRow]:
    rng = np.random.default_rng(seed)
    zipf = 1.0 / np.arange(1, len(WORDS) + 1)
    p = zipf / zipf.sum()
    texts: list[str] = []
    for _ in range(n):
        if texts and rng.random() < 0.2:
            texts.append(texts[int(rng.integers(len(texts)))])  # exact repeats: tied scores
            continue
        words = rng.choice(WORDS, size=int(rng.integers(1, 15)), p=p)
        texts.append(" ".join(words))
    ctx = [" ".join(rng.choice(WORDS, size=int(rng.integers(0, 4)))) for _ in range(n)]
    return [
        IndexedRow(memory_record(i + 1, type="factual", category="fact"), texts[i], ctx[i])
        for i in range(n)
    ]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    seed=st.integers(0, 10_000),
    n=st.integers(1, 400),
    query=st.lists(st.sampled_from(WORDS), min_size=1, max_size=6, unique=True),
    limit=st.sampled_from([0, 1, 3, 10, 50]),
    k1=st.sampled_from([0.9, 1.2]),
    b=st.sampled_from([0.3, 0.75]),
    context_weight=st.sampled_from([0.0, 0.5]),
    hidden=st.floats(0.0, 0.9),
    need_all=st.booleans(),
)
def test_pruned_equals_exhaustive(
    seed, n, query, limit, k1, b, context_weight, hidden, need_all
) -> None:
    docs = _docs(seed, n)
    seg = build_segment(docs, Bm25Params(k1=k1, b=b, context_weight=context_weight))
    rng = np.random.default_rng(seed + 1)
    shown = rng.random(n) >= hidden
    weights = {t: math.log(1 + n / (1 + seg.df(t))) for t in query}
    need = len(query) if need_all else 1

    def visible(idx: np.ndarray) -> np.ndarray:
        return shown[idx]

    dense_idx, dense_scores = dense_top(seg, weights, visible, limit, need)
    idx, scores = pruned_top(seg, weights, visible, limit, need, dense_docs=0)
    assert idx.tolist() == dense_idx.tolist()
    assert scores.tolist() == dense_scores.tolist()
    reference = _reference(seg, weights, shown, need)
    expected = reference if limit == 0 else reference[:limit]
    assert list(zip(idx.tolist(), scores.tolist(), strict=True)) == expected


def _reference(seg, weights, shown, need) -> list[tuple[int, float]]:
    """Per-document Python scoring over the postings, sorted by (-score, position)."""
    score: dict[int, float] = {}
    count: dict[int, int] = {}
    for term, idf in weights.items():
        docs, w = seg.postings(term)
        for d, x in zip(docs.tolist(), (idf * w).tolist(), strict=True):
            score[d] = score.get(d, 0.0) + x
            count[d] = count.get(d, 0) + 1
    hits = [(d, s) for d, s in score.items() if shown[d] and count[d] >= need]
    return sorted(hits, key=lambda h: (-h[1], h[0]))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    seed=st.integers(0, 10_000),
    n=st.integers(1, 600),
    query=st.lists(st.sampled_from(WORDS), min_size=1, max_size=8, unique=True),
    limit=st.sampled_from([0, 1, 2, 5, 20, 80]),
    hidden=st.sampled_from([0.0, 0.3, 0.8, 0.97, 1.0]),
    need_all=st.booleans(),
)
def test_compiled_scan_equals_numpy(seed, n, query, limit, hidden, need_all) -> None:
    """The compiled scan and the numpy scorer: same positions, order and bit-identical scores.

    Mostly hidden documents drive the scan past its first round (fewer than ``limit`` visible
    among the best ``PROBE x limit``) into the full ranking of every match.
    """
    seg = build_segment(_docs(seed, n), Bm25Params(k1=1.2, b=0.75, context_weight=0.5))
    shown = np.random.default_rng(seed + 2).random(n) >= hidden
    weights = {t: math.log(1 + n / (1 + seg.df(t))) for t in query}
    need = len(query) if need_all else 1

    def visible(idx: np.ndarray) -> np.ndarray:
        return shown[idx]

    idx, scores = dense_top(seg, weights, visible, limit, need)
    ref_idx, ref_scores = numpy_dense_top(seg, weights, visible, limit, need)
    assert idx.tolist() == ref_idx.tolist()
    assert scores.tolist() == ref_scores.tolist()
    acc, count, _ = seg.borrow_scan()
    assert not acc.any() and not count.any()  # the scratch is clean for the next query


def test_compiled_scan_rejects_bad_buffers() -> None:
    """Out-of-range positions and wrong item sizes raise ValueError; the scratch stays zeroed.

    Skipped when the kernel was not built (``test_kernels.py`` fails then).
    """
    _bm25scan = pytest.importorskip("shared.recall_index._bm25scan")

    acc, count, touched = np.zeros(4), np.zeros(4, np.uint8), np.empty(4, np.int32)
    idx, scores = np.empty(2, np.intp), np.empty(2)
    docs = [np.array([0, 1, 7], np.int32)]
    w = [np.ones(3, np.float32)]
    idfs = np.ones(1, np.float32)
    with pytest.raises(ValueError, match="outside"):
        _bm25scan.scan(docs, w, idfs, 1, acc, count, touched, idx, scores)
    assert not acc.any() and not count.any()
    with pytest.raises(ValueError, match="item size"):
        _bm25scan.scan([np.array([0], np.int64)], w, idfs, 1, acc, count, touched, idx, scores)
    with pytest.raises(ValueError, match="differ in length"):
        _bm25scan.scan([np.array([0], np.int32)], w, idfs, 1, acc, count, touched, idx, scores)
    with pytest.raises(ValueError, match="need"):
        _bm25scan.scan(docs, w, idfs, 0, acc, count, touched, idx, scores)
    got = _bm25scan.scan(
        [np.array([2, 3], np.int32)],
        [np.array([1, 2], np.float32)],
        idfs,
        1,
        acc,
        count,
        touched,
        idx,
        scores,
    )
    assert got == (2, 2) and idx.tolist() == [3, 2] and scores.tolist() == [2.0, 1.0]
