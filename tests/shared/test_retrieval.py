"""Keyword leg of recall against a real store (the document-frequency stop list), and the pure
selection step :func:`shared.retrieval.select_within_budget`."""

from __future__ import annotations

import time

import pytest

from shared.models import Memory, NewMemory, Scope
from shared.ranking import Candidate, memory_tokens
from shared.retrieval import keyword_candidates, select_within_budget
from shared.store import Store
from shared.store.memories import KeywordSearch
from shared.vector_leg import keyword_supported
from tests.records import memory_record


@pytest.fixture
async def store(tmp_path):
    s = await Store.open(str(tmp_path / "r.db"))
    items = [NewMemory(owner_id="o", content=f"common filler text number {i}") for i in range(60)]
    items += [
        NewMemory(owner_id="o", content="common thing about zeppelins"),
        NewMemory(owner_id="o", content="common filler about gliders"),
    ]
    await s.writes.upsert_many(items)
    yield s
    await s.close()


async def search(store, query, common_df):
    cands, mems = await keyword_candidates(
        store.memories,
        KeywordSearch(
            scope=Scope(owner_id="o"), query=query, limit=100, now=time.time(), common_df=common_df
        ),
    )
    return [mems[c.memory_id].content for c in cands]


async def test_common_terms_are_dropped_when_rarer_ones_exist(store):
    full = await search(store, "common zeppelins", common_df=0)
    assert len(full) == 62  # "common" matches everything
    pruned = await search(store, "common zeppelins", common_df=50)
    assert pruned == ["common thing about zeppelins"]


async def test_all_common_terms_are_and_ed(store):
    results = await search(store, "common filler", common_df=50)
    assert len(results) == 61  # only memories with both terms, not the zeppelin one
    assert "common thing about zeppelins" not in results


async def test_single_term_queries_are_never_pruned(store):
    assert len(await search(store, "common", common_df=50)) == 62


# --- select_within_budget (pure) ----------------------------------------------------------------

DOCTOR = "Who is my doctor, do I take insulin?"


def select(scored: list[tuple[Memory, float]], *, max_tokens: int, max_memories: int) -> list[int]:
    candidates = [Candidate(memory_id=m.id, score=score) for m, score in scored]
    chosen = select_within_budget(
        candidates,
        {m.id: m for m, _ in scored},
        max_tokens=max_tokens,
        max_memories=max_memories,
    )
    return [m.id for m in chosen]


def test_same_text_owner_wide_and_end_user_copy_is_selected_once():
    owner_wide = memory_record(1, DOCTOR)
    own_copy = memory_record(2, "who is my  doctor, do I take INSULIN?\n", user_id="u2")
    assert select([(own_copy, 0.9), (owner_wide, 0.5)], max_tokens=2000, max_memories=10) == [2]
    assert select([(owner_wide, 0.9), (own_copy, 0.5)], max_tokens=2000, max_memories=10) == [1]


def test_dropped_duplicate_takes_no_cap_slot():
    first, copy, other = (
        memory_record(1, DOCTOR),
        memory_record(2, DOCTOR, user_id="u2"),
        memory_record(3, "Dr. Ames, yes"),
    )
    scored = [(first, 0.9), (copy, 0.8), (other, 0.7)]
    assert select(scored, max_tokens=2000, max_memories=2) == [1, 3]


def test_dropped_duplicate_uses_no_budget():
    first, copy = memory_record(1, DOCTOR), memory_record(2, DOCTOR, user_id="u2")
    other = memory_record(3, "Your doctor is Dr. Ames and you take insulin every morning")
    # room for the first and the (bigger) other one; taking the copy would leave no room
    budget = memory_tokens(first.content) + memory_tokens(other.content)
    assert memory_tokens(other.content) > memory_tokens(copy.content)
    scored = [(first, 0.9), (copy, 0.8), (other, 0.7)]
    assert select(scored, max_tokens=budget, max_memories=10) == [1, 3]


def test_vector_hits_without_keyword_support_need_the_margin() -> None:
    keyword = [Candidate(memory_id=1, score=5.0, rank=1)]
    vector = [
        Candidate(memory_id=1, score=0.52, rank=1),  # found by keywords too: kept at the floor
        Candidate(memory_id=2, score=0.75, rank=2),  # vector only, above floor + margin: kept
        Candidate(memory_id=3, score=0.6, rank=3),  # vector only, a loose match: dropped
    ]
    kept = keyword_supported(vector, keyword, floor=0.5, margin=0.2)
    assert [c.memory_id for c in kept] == [1, 2]
    assert keyword_supported(vector, keyword, floor=0.5, margin=0.0) == vector
