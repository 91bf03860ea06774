"""The one-pass steps of keyword recall answer exactly like the step-by-step functions.

``screen_keyword_hits`` = ``drop_echoes`` then ``rescore_keyword_hits``, with and without
prepared features; ``select_within_budget`` = order, ``drop_duplicate_content``, cap,
``budget_walk``; ``order_candidates`` sorts NaN as -inf (the worst).
"""

from __future__ import annotations

import math

from hypothesis import given, settings
from hypothesis import strategies as st

from shared.echo import drop_echoes
from shared.keyword_rescore import _query_tokens, rescore_keyword_hits, screen_keyword_hits
from shared.memory_render import MemoryPreparer
from shared.models import Scope
from shared.ranking import (
    Candidate,
    budget_walk,
    drop_duplicate_content,
    memory_tokens,
    order_candidates,
)
from shared.recall_assist import injection_order
from shared.recall_index.analysis import query_tokens
from shared.retrieval import select_within_budget
from shared.settings import load_settings
from tests.records import memory_record

WORDS = [
    "what", "is", "my", "dog", "called", "I", "live", "in", "Berlin", "do", "you", "have",
    "pet", "rex", "please", "tell", "me", "that's", "nice", "café", "Straße", "stay", "confident",
]  # fmt: skip
PIECES = ["?", ".", "!", " ", ", ", "\n", "？", "  ", "DOG"]

texts = st.lists(st.sampled_from(WORDS + PIECES), max_size=20).map(" ".join)
scores = st.floats(min_value=0.0, max_value=50.0)


def _hits(contents: list[str], raw: list[float]) -> list[Candidate]:
    ordered = sorted(raw, reverse=True)
    return [Candidate(memory_id=i + 1, score=s, rank=i + 1) for i, s in enumerate(ordered)]


@settings(max_examples=300, deadline=None)
@given(
    st.lists(texts, min_size=1, max_size=12),
    st.data(),
    texts,
    texts,
    st.sampled_from([0.5, 0.2, 1.0]),
    st.booleans(),
)
def test_screening_is_drop_echoes_then_rescore(
    contents, data, query, echo_of, factor, with_prepared
) -> None:
    raw = data.draw(st.lists(scores, min_size=len(contents), max_size=len(contents)))
    hits = _hits(contents, raw)
    memories = {i + 1: memory_record(rowid=i + 1, content=t) for i, t in enumerate(contents)}
    prepare = MemoryPreparer(None)
    ready = {i: prepare(m) for i, m in memories.items()} if with_prepared else {}
    s = load_settings({}, recall_question_factor=factor)
    scope = Scope(owner_id="o")
    content = {i: m.content for i, m in memories.items()}
    kept = drop_echoes(echo_of, hits, content, lambda c: c.memory_id, ready)
    expected = rescore_keyword_hits(None, scope, query, kept, content, s, ready)
    assert screen_keyword_hits(None, scope, query, echo_of, hits, memories, s, ready) == expected


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.tuples(texts, scores, st.floats(0.0, 1.0), st.integers(0, 3)), max_size=15),
    st.integers(-10, 300),
    st.integers(0, 6),
)
def test_selection_is_order_dedupe_cap_then_budget(rows, max_tokens, max_memories) -> None:
    memories = {
        i + 1: memory_record(rowid=i + 1, content=t, relevance=r, updated_at=float(u))
        for i, (t, _, r, u) in enumerate(rows)
    }
    candidates = [Candidate(memory_id=i + 1, score=s) for i, (_, s, _, _) in enumerate(rows)]
    order = injection_order(candidates, memories)
    ranked = drop_duplicate_content([memories[i] for i in order], lambda m: m.content)
    if max_memories > 0:
        ranked = ranked[:max_memories]
    expected = budget_walk(ranked, lambda m: memory_tokens(m.content), max_tokens)
    chosen = select_within_budget(
        candidates, memories, max_tokens=max_tokens, max_memories=max_memories
    )
    assert chosen == expected


def test_order_counts_nan_as_minus_inf_and_breaks_ties_by_relevance_recency_and_id() -> None:
    nan = math.nan
    items = [
        (1, nan, 0.5, 10.0),
        (2, 1.0, 0.5, 10.0),
        (3, 1.0, 0.9, 10.0),
        (4, 1.0, 0.9, 20.0),
        (5, 1.0, nan, 30.0),
        (6, 1.0, 0.9, 20.0),
        (7, 2.0, 0.1, nan),
        (8, -math.inf, 0.0, 0.0),
        (9, math.inf, 0.0, 0.0),
    ]
    # NaN counts as -inf: item 1 ties with 8 on score and wins on relevance
    assert order_candidates(items) == [9, 7, 4, 6, 3, 2, 5, 1, 8]


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.from_regex(r"[a-z]{2,7}", fullmatch=True), max_size=60),
    st.sampled_from([1, 5, 31, 32, 33, 40, 256]),
)
def test_the_rescore_asks_for_the_same_query_tokens_under_any_cap(words, cap) -> None:
    query = " ".join(words)
    assert _query_tokens(query, cap) == query_tokens(query, cap)
