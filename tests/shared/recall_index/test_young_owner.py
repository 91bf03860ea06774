"""BM25 length normalisation of a young owner: memories written after the owner's index was
first built (from no memories, or a few) are scored against the average length of what the owner
holds, not against a placeholder. With the placeholder (1 term) every such memory was normalised
as ~20x too long, which shrank the context field's share of a score below the relative floor:
a turn found only through its conversation context was never recalled for a new user."""

from __future__ import annotations

from pathlib import Path

from shared.models import NewMemory, Scope
from shared.recall_index import build_keyword_index
from shared.settings import load_settings
from shared.store import Store
from shared.store.memories import KeywordSearch

SCOPE = Scope(owner_id="young")
QUERY = "When is the marketing plan's new date?"
PLAN = "The marketing plan needs a new date."
DECISION = "I decided to move the launch to March."
# as learning stores them: each turn with its neighbours (shared.turn_context)
TURNS = [
    NewMemory(
        owner_id="young",
        content=PLAN,
        category="turn",
        context="Sure, what date?\nI decided to move the launch to March.",
    ),
    NewMemory(
        owner_id="young",
        content=DECISION,
        category="turn",
        context="The marketing plan needs a new date.\nSure, what date?\nOK",
    ),
]


async def _scores(path: str, warm_first: bool) -> dict[str, float]:
    """Scores of the query's hits; ``warm_first``: the owner is indexed before it holds anything."""
    store = await Store.open(path)
    index = build_keyword_index(load_settings({}, db_path=path), store)
    request = KeywordSearch(scope=SCOPE, query=QUERY, limit=10, now=2e9)
    try:
        if warm_first:
            assert await index.search(request) == []  # indexed while empty
        for memory in TURNS:
            await store.writes.upsert(memory)
        return {m.content: score for m, score in await index.search(request)}
    finally:
        await index.close()
        await store.close()


async def test_memories_added_to_an_empty_owner_score_as_when_built_from_rows(
    tmp_path: Path,
) -> None:
    young = await _scores(str(tmp_path / "young.db"), warm_first=True)
    built = await _scores(str(tmp_path / "built.db"), warm_first=False)
    assert set(young) == set(built) == {PLAN, DECISION}
    # the context-only match keeps the share of the best score it has when built from rows
    # (0.46 here), well above the default relative floor of 0.3
    young_share = young[DECISION] / young[PLAN]
    built_share = built[DECISION] / built[PLAN]
    assert built_share > 0.4
    assert abs(young_share - built_share) < 0.05, (young, built)
