"""Table-driven tests for shared.ranking: RRF, floor, token estimate, ordering, budget walk."""

from __future__ import annotations

import math

import pytest

from shared.errors import ConfigurationError
from shared.ranking import (
    DEFAULT_MAX_TOKENS,
    MAX_MAX_TOKENS,
    MEMORY_OVERHEAD_TOKENS,
    Candidate,
    ScoredMemory,
    apply_relevance_floor,
    bm25_to_relevance,
    budget_walk,
    clamp_max_tokens,
    content_key,
    drop_duplicate_content,
    estimate_tokens,
    fuse_candidates,
    memory_tokens,
    order_candidates,
    rrf_fuse,
)

# --- estimate_tokens ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", 0),
        ("a", 1),
        ("abcd", 1),
        ("abcde", 2),
        ("User prefers dark mode in the editor", 9),  # 36 bytes / 4
        ("绿茶", 2),  # 1 token per CJK character
        ("我喜欢喝绿茶", 6),
        ("чай", 2),  # 6 bytes / 3
        ("🙂", 2),  # 4 bytes / 3 → ceil 1.33
        ("a绿", 2),  # ceil(1/4 + 3/3)
        ("\ud800", 1),  # lone surrogate does not raise
    ],
)
def test_estimate_tokens(text: str, expected: int) -> None:
    assert estimate_tokens(text) == expected


def test_estimate_does_not_undercount_cjk() -> None:
    text = "我喜欢喝绿茶" * 50
    assert estimate_tokens(text) >= len(text)


def test_memory_tokens_adds_overhead() -> None:
    assert memory_tokens("abcd") == 1 + MEMORY_OVERHEAD_TOKENS


# --- clamp_max_tokens ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (None, DEFAULT_MAX_TOKENS),
        ("abc", DEFAULT_MAX_TOKENS),
        (float("nan"), DEFAULT_MAX_TOKENS),
        (True, DEFAULT_MAX_TOKENS),
        (-5, 0),
        (0, 0),
        (1500, 1500),
        ("1200", 1200),
        (1500.9, 1500),
        (8000, 8000),
        (9000, MAX_MAX_TOKENS),
        (float("inf"), MAX_MAX_TOKENS),
        (float("-inf"), 0),
    ],
)
def test_clamp_max_tokens(value: int | float | str | None, expected: int) -> None:
    assert clamp_max_tokens(value) == expected


# --- rrf_fuse -----------------------------------------------------------------------------------


def test_rrf_single_leg_hand_computed() -> None:
    assert rrf_fuse([([7, 3, 9], 1.0)], k=60) == [(7, 1 / 61), (3, 1 / 62), (9, 1 / 63)]


def test_rrf_two_legs_weighted_hand_computed() -> None:
    # keyword: 1, 2, 3 (w=2); vector: 3, 4 (w=1); k=10
    fused = dict(rrf_fuse([([1, 2, 3], 2.0), ([3, 4], 1.0)], k=10))
    assert fused[1] == pytest.approx(2 / 11)
    assert fused[2] == pytest.approx(2 / 12)
    assert fused[3] == pytest.approx(2 / 13 + 1 / 11)
    assert fused[4] == pytest.approx(1 / 12)
    order = [i for i, _ in rrf_fuse([([1, 2, 3], 2.0), ([3, 4], 1.0)], k=10)]
    assert order == [3, 1, 2, 4]  # 0.2448, 0.1818, 0.1667, 0.0833


def test_rrf_weights_change_winner() -> None:
    legs_equal = [([1, 2], 1.0), ([2, 1], 1.0)]
    legs_kw = [([1, 2], 2.0), ([2, 1], 1.0)]
    legs_vec = [([1, 2], 1.0), ([2, 1], 2.0)]
    assert [i for i, _ in rrf_fuse(legs_kw, k=10)] == [1, 2]
    assert [i for i, _ in rrf_fuse(legs_vec, k=10)] == [2, 1]
    # equal weights: exact tie, same best rank (1) → smaller id first
    assert [i for i, _ in rrf_fuse(legs_equal, k=10)] == [1, 2]


def test_rrf_tie_break_best_rank_then_id() -> None:
    # 8: 1/11 and 9: 1/11 tie with the same best rank (1) → smaller id first; 5: 2/12 > 1/11.
    legs = [([8, 5], 1.0), ([9, 5], 1.0)]
    assert [i for i, _ in rrf_fuse(legs, k=10)] == [5, 8, 9]
    legs = [([9, 5], 1.0), ([8, 5], 1.0)]
    assert [i for i, _ in rrf_fuse(legs, k=10)] == [5, 8, 9]
    # Tie with different best ranks: a at rank 1 (w=1) vs b at rank 2 with w = 12/11.
    tie = rrf_fuse([([1], 1.0), ([0, 2], 12 / 11)], k=10)
    scores = dict(tie)
    assert scores[1] == pytest.approx(scores[2])
    ids = [i for i, _ in tie]
    assert ids.index(1) < ids.index(2)


def test_rrf_duplicate_in_leg_counts_once_and_empty_legs() -> None:
    assert rrf_fuse([([4, 4, 5], 1.0)], k=1) == [(4, 1 / 2), (5, 1 / 4)]
    assert rrf_fuse([], k=10) == []
    assert rrf_fuse([([], 1.0), ([], 2.0)], k=10) == []


def test_rrf_zero_weight_leg_contributes_nothing() -> None:
    assert rrf_fuse([([1], 0.0), ([2], 1.0)], k=10) == [(2, 1 / 11), (1, 0.0)]


@pytest.mark.parametrize(
    ("legs", "k"),
    [
        ([([1], 1.0)], 0.0),
        ([([1], 1.0)], -1.0),
        ([([1], 1.0)], math.inf),
        ([([1], -1.0)], 10.0),
        ([([1], math.nan)], 10.0),
    ],
)
def test_rrf_invalid_config(legs: list[tuple[list[int], float]], k: float) -> None:
    with pytest.raises(ConfigurationError):
        rrf_fuse(legs, k)


def test_fuse_candidates_carries_leg_details() -> None:
    keyword = [Candidate(1, 5.0), Candidate(2, 3.0)]
    vector = [Candidate(2, 0.9), Candidate(3, 0.5)]
    fused = fuse_candidates(keyword, vector, k=10, keyword_weight=2, vector_weight=1)
    assert fused[0] == ScoredMemory(
        memory_id=2,
        score=2 / 12 + 1 / 11,
        keyword_rank=2,
        vector_rank=1,
        keyword_score=3.0,
        vector_score=0.9,
    )
    by_id = {m.memory_id: m for m in fused}
    assert by_id[1].vector_rank is None and by_id[1].keyword_rank == 1
    assert by_id[3].keyword_score is None and by_id[3].vector_score == 0.5
    assert [m.memory_id for m in fused] == [2, 1, 3]


def test_hybrid_default_never_below_keyword_leg_for_keyword_top_hit() -> None:
    # With defaults (k=10, 2:1) the keyword leg's top hit stays first unless the vector leg
    # also ranks the other document high.
    keyword = [Candidate(1, 9.0), Candidate(2, 1.0)]
    vector = [Candidate(2, 0.8), Candidate(3, 0.7), Candidate(1, 0.1)]
    assert fuse_candidates(keyword, vector)[0].memory_id == 1


# --- relevance floor ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("bm25", "expected"),
    [(-3.5, 3.5), (-1e-6, 1e-6), (0.0, 0.0), (2.0, 0.0), (math.nan, 0.0)],
)
def test_bm25_to_relevance(bm25: float, expected: float) -> None:
    assert bm25_to_relevance(bm25) == expected


@pytest.mark.parametrize(
    ("scores", "kwargs", "kept"),
    [
        ([10.0, 5.0, 3.0, 2.9], {}, [0, 1, 2]),  # 0.3 × 10 = 3.0 kept, 2.9 dropped
        ([10.0, 5.0, 3.0, 2.9], {"relative_floor": 0.0}, [0, 1, 2, 3]),
        ([10.0, 5.0, 3.0, 2.9], {"relative_floor": 0.6}, [0]),
        ([1e-6, 9e-7, 2e-7], {}, [0, 1]),  # tiny FTS5 scores on a small corpus still work
        ([0.9, 0.35, 0.2], {"absolute_floor": 0.3, "relative_floor": 0.0}, [0, 1]),
        ([0.2, 0.1], {"absolute_floor": 0.3}, []),  # unrelated vector hits → empty
        ([0.0, 0.0], {}, [0, 1]),
        ([], {}, []),
        ([5.0, math.nan, math.inf], {}, [0]),
    ],
)
def test_relevance_floor_scores(
    scores: list[float], kwargs: dict[str, float], kept: list[int]
) -> None:
    cands = [Candidate(i, s, rank=i + 1) for i, s in enumerate(scores)]
    got = apply_relevance_floor(
        cands,
        relative_floor=kwargs.get("relative_floor", 0.3),
        absolute_floor=kwargs.get("absolute_floor"),
    )
    assert [c.memory_id for c in got] == kept


def test_relevance_floor_requires_matched_terms() -> None:
    cands = [
        Candidate(1, 5.0, matched_terms=2),
        Candidate(2, 4.0, matched_terms=0),
        Candidate(3, 4.0, matched_terms=None),
        Candidate(4, 4.0, matched_terms=1),
    ]
    assert [c.memory_id for c in apply_relevance_floor(cands)] == [1, 3, 4]
    assert [c.memory_id for c in apply_relevance_floor(cands, min_matched_terms=2)] == [1, 3]


@pytest.mark.parametrize("floor", [-0.1, 1.1, math.nan])
def test_relevance_floor_invalid(floor: float) -> None:
    with pytest.raises(ConfigurationError):
        apply_relevance_floor([Candidate(1, 1.0)], relative_floor=floor)


# --- ordering -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("items", "expected"),
    [
        ([(1, 0.5, 0.1, 10.0), (2, 0.9, 0.1, 10.0)], [2, 1]),  # score desc
        ([(1, 0.5, 0.2, 10.0), (2, 0.5, 0.8, 10.0)], [2, 1]),  # then relevance desc
        ([(1, 0.5, 0.5, 10.0), (2, 0.5, 0.5, 20.0)], [2, 1]),  # then most recent
        ([(3, 0.5, 0.5, 10.0), (2, 0.5, 0.5, 10.0)], [2, 3]),  # then smaller id
        ([(1, math.nan, 1.0, 1.0), (2, 0.0, 0.0, 0.0)], [2, 1]),  # NaN sorts last
        ([], []),
    ],
)
def test_order_candidates(
    items: list[tuple[int, float, float, float]], expected: list[int]
) -> None:
    assert order_candidates(items) == expected


# --- duplicate content ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Who is my doctor, do I take insulin?", "who is my doctor, do i take insulin?"),
        ("  Who is my\n\tdoctor?  ", "who is my doctor?"),
        ("a\u00a0b\u2028c", "a b c"),  # non-ASCII whitespace collapses too
        ("Straße", "strasse"),  # casefold, not lower
        ("", ""),
        ("Next.js!", "next.js!"),  # punctuation kept
    ],
)
def test_content_key(text: str, expected: str) -> None:
    assert content_key(text) == expected


@pytest.mark.parametrize(
    ("texts", "expected"),
    [
        (
            ["Who is my doctor, do I take insulin?", "who is my  doctor, do I take INSULIN? "],
            [0],
        ),
        (["a", "b", "A", " b ", "c"], [0, 1, 4]),  # first (best-ranked) occurrence wins
        (["Strasse", "STRASSE", "Straße"], [0]),
        (["prefers Postgres 16", "prefers Postgres 15"], [0, 1]),  # different texts stay
        (["Next.js", "Nextjs"], [0, 1]),  # only whitespace and case are ignored
        ([], []),
    ],
)
def test_drop_duplicate_content(texts: list[str], expected: list[int]) -> None:
    items = list(range(len(texts)))
    assert drop_duplicate_content(items, texts.__getitem__) == expected


# --- budget walk --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("costs", "budget", "expected"),
    [
        ([10, 20, 30], 100, [0, 1, 2]),
        ([10, 20, 30], 60, [0, 1, 2]),  # exactly fits
        ([10, 20, 30], 59, [0, 1]),
        ([10, 50, 5], 30, [0, 2]),  # skip-and-continue: smaller later item still fits
        ([500, 10, 10], 100, [1, 2]),  # an item over the whole budget is never taken
        ([10, 500, 10], 100, [0, 2]),  # oversized non-best is skipped
        ([10, 20], 0, []),  # 0 = inject nothing
        ([10, 20], -5, []),
        ([], 100, []),
        ([0, 0, 0], 1, [0, 1, 2]),
        ([5, -3, 5], 10, [0, 1, 2]),  # negative cost counts as 0
    ],
)
def test_budget_walk(costs: list[int], budget: int, expected: list[int]) -> None:
    items = list(range(len(costs)))
    assert budget_walk(items, lambda i: costs[i], budget) == expected


def test_budget_walk_never_exceeds_the_budget() -> None:
    import random

    rng = random.Random(7)
    for _ in range(500):
        costs = [rng.randint(0, 60) for _ in range(rng.randint(0, 12))]
        budget = rng.randint(0, 120)
        taken = budget_walk(list(range(len(costs))), costs.__getitem__, budget)
        total = sum(costs[i] for i in taken)
        assert total <= budget
        assert taken == sorted(taken)


def test_budget_walk_with_memory_tokens() -> None:
    contents = ["short", "x" * 400, "another short one"]
    taken = budget_walk(contents, memory_tokens, 40)
    assert taken == ["short", "another short one"]
