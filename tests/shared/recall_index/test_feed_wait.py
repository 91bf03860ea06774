"""A change-feed read that outlasts the recall budget: answer from a recent cache, or degrade.

The cache answers when it holds every commit of this process and its last completed feed read
started less than a second ago; otherwise the request goes on without memory.
"""

from __future__ import annotations

from shared.models import NewMemory
from shared.recall_flow import STALE_OK_S, _feed_waited


async def test_a_slow_feed_read_is_not_waited_for_when_the_cache_is_recent(stored):
    store, keywords = stored
    await store.writes.upsert(NewMemory(owner_id="o", content="I drink green tea"))
    assert not keywords.fresh_within(STALE_OK_S)  # this process's commit is not seen yet
    assert await _feed_waited(keywords, 5.0)
    assert keywords.fresh_within(STALE_OK_S)
    async with keywords.cache.lock:  # a feed read in progress that outlasts the budget
        keywords.cache.stale = True
        assert await _feed_waited(keywords, 0.01)
        keywords.cache.polled_at -= STALE_OK_S
        assert not await _feed_waited(keywords, 0.01)  # the last read is too old


async def test_an_unseen_commit_of_this_process_is_always_waited_for(stored):
    store, keywords = stored
    assert await _feed_waited(keywords, 5.0)
    await store.writes.upsert(NewMemory(owner_id="o", content="I moved to Porto"))
    async with keywords.cache.lock:
        assert not await _feed_waited(keywords, 0.01)
    assert await _feed_waited(keywords, 5.0)
    assert keywords.fresh_within(STALE_OK_S)
