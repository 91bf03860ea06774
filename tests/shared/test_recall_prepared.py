"""Block lines prepared when memories are indexed: always redacted, never stale.

Real store file, real engine, the request path's :func:`recall_block`. A memory holding a secret
written straight into the store (no redaction on the way in) is injected redacted from the line
the cache prepared; a change of the detector configuration is honoured by the very next recall
(no stale line); a cold process loads the prepared lines with the owner's snapshot, and one with
another configuration prepares them again and stores them.
"""

from __future__ import annotations

import asyncio
import itertools
import threading
import time
from collections.abc import AsyncIterator, Callable

import httpx
import msgspec
import pytest

from shared.engine import Engine, build_engine
from shared.memory_render import preparer_for
from shared.models import Memory, NewMemory, Scope
from shared.recall_flow import recall_block
from shared.recall_index import snapshot
from shared.recall_index.prepared import Prepared, Preparer
from shared.recall_index.preparing import PREPARE_INLINE, PREPARE_SLICE
from shared.retrieval import retention_of
from shared.sensitive import SensitiveDetector
from shared.settings import Settings, load_settings
from shared.store import Store, recall_rows
from shared.store.memories import KeywordSearch

OWNER = "o_prep"
SCOPE = Scope(owner_id=OWNER)
PLAIN = SensitiveDetector()
CODENAME = SensitiveDetector(custom_patterns=(r"BLUEBIRD-\d+",))


@pytest.fixture
async def parts(tmp_path) -> AsyncIterator[tuple[Store, Settings, httpx.AsyncClient]]:
    # a generous recall budget: a cold load of the slices test's owner on a loaded machine
    # took longer than the default 250 ms, and these tests check what recall returns, not when
    settings = load_settings(
        {},
        db_path=str(tmp_path / "p.db"),
        embedding_source="none",
        recall_freshness_ms=0,
        recall_timeout_ms=30_000,
    )
    store = await Store.open(settings.db_path)
    http = httpx.AsyncClient(timeout=5)
    yield store, settings, http
    await http.aclose()
    await store.close()


async def _seed(store: Store) -> None:
    await store.writes.upsert_many(
        [
            NewMemory(owner_id=OWNER, content="My email is alice@example.com for the newsletter"),
            NewMemory(owner_id=OWNER, content="Project codename BLUEBIRD-7 ships in the spring"),
            NewMemory(owner_id=OWNER, content="Alice adopted a dog called Rex last spring"),
        ]
    )


async def _block(
    store: Store, engine: Engine, settings: Settings, detector: SensitiveDetector, q: str
) -> str:
    found = await recall_block(store, detector, settings, SCOPE, q, time.time(), engine)
    assert found.degraded is None
    return found.block


async def _prepared_engine(store: Store, settings: Settings, http: httpx.AsyncClient) -> Engine:
    """An engine whose owner index is loaded and prepared (background work settled)."""
    engine = build_engine(settings, store, http, retention_of(settings))
    assert engine.keywords is not None
    await _block(store, engine, settings, PLAIN, "spring")
    await engine.keywords.cache.settle()
    return engine


async def test_a_secret_written_without_redaction_is_injected_redacted(parts) -> None:
    store, settings, http = parts
    await _seed(store)  # the store's own write path: no redaction
    engine = await _prepared_engine(store, settings, http)
    assert engine.keywords is not None
    try:
        index = engine.keywords.cache.owners[OWNER]
        fingerprint = preparer_for(True, PLAIN).fingerprint
        assert index.segment.prepared is not None and index.segment.prepared_fp == fingerprint
        block = await _block(store, engine, settings, PLAIN, "email newsletter")
        assert "[email]" in block and "alice@example.com" not in block
        memories = [m for m, _ in await engine.keywords.search(_search("email newsletter"))]
        ready = engine.keywords.prepared(SCOPE, memories, fingerprint)
        assert [p.line for p in ready.values()] == [block.splitlines()[2]]  # from the cache
        other = preparer_for(True, CODENAME).fingerprint
        assert engine.keywords.prepared(SCOPE, memories, other) == {}  # never another config's
        # a memory changed later enters the delta prepared, and redacted too
        await store.writes.upsert(NewMemory(owner_id=OWNER, content="Reach bob@example.org now"))
        block = await _block(store, engine, settings, PLAIN, "reach now")
        assert "[email]" in block and "bob@example.org" not in block
        assert len(index.delta.prepared) == 1
    finally:
        await engine.close()


async def test_features_carried_by_the_search_are_the_look_up_by_rowid(parts) -> None:
    """A hit's features read by its position equal :meth:`KeywordIndex.prepared` of it.

    Segment hits and a delta hit (a memory added after the load), under the current
    fingerprint; never another configuration's.
    """
    store, settings, http = parts
    await _seed(store)
    engine = await _prepared_engine(store, settings, http)
    keywords = engine.keywords
    assert keywords is not None
    try:
        added, _ = await store.writes.upsert(
            NewMemory(owner_id=OWNER, content="Alice adopted a cat called Tom last spring")
        )
        await _block(store, engine, settings, PLAIN, "spring")  # applies the write to the delta
        assert added.id in keywords.cache.owners[OWNER].delta.memories
        fingerprint = preparer_for(True, PLAIN).fingerprint
        request = KeywordSearch(
            scope=SCOPE, query="spring alice codename", limit=5, now=time.time()
        )
        rows = await keywords.search_prepared(request, fingerprint)
        assert len(rows) == 4 and added.id in {m.id for m, _, _ in rows}
        looked_up = keywords.prepared(SCOPE, [m for m, _, _ in rows], fingerprint)
        assert {m.id: p for m, _, p in rows if p is not None} == looked_up
        assert len(looked_up) == 4
        other = preparer_for(True, CODENAME).fingerprint
        assert all(p is None for _, _, p in await keywords.search_prepared(request, other))
        assert [(m, s) for m, s, _ in rows] == await keywords.search(request)
    finally:
        await engine.close()


def _search(q: str) -> KeywordSearch:
    return KeywordSearch(scope=SCOPE, query=q, limit=5, now=time.time())


async def test_a_detector_change_never_injects_a_stale_line(parts) -> None:
    store, settings, http = parts
    await _seed(store)
    engine = await _prepared_engine(store, settings, http)
    try:
        assert "BLUEBIRD-7" in await _block(store, engine, settings, PLAIN, "codename ships")
        # the configuration changes: the very next recall redacts the codename
        block = await _block(store, engine, settings, CODENAME, "codename ships")
        assert "BLUEBIRD" not in block and "[secret]" in block
        off = msgspec.structs.replace(settings, sensitive_filter=False)
        block = await _block(store, engine, off, CODENAME, "email newsletter")
        assert "alice@example.com" in block  # the filter is off: shown as stored, not stale
        assert engine.keywords is not None
        await engine.keywords.cache.settle()
        block = await _block(store, engine, settings, CODENAME, "codename ships")
        assert "BLUEBIRD" not in block and "[secret]" in block
    finally:
        await engine.close()


async def test_a_cold_load_brings_the_prepared_lines_or_prepares_them_again(parts) -> None:
    store, settings, http = parts
    await _seed(store)
    warm = await _prepared_engine(store, settings, http)
    expected = await _block(store, warm, settings, PLAIN, "spring")
    await warm.close()
    cold = build_engine(settings, store, http, retention_of(settings))
    assert cold.keywords is not None
    try:
        assert await _block(store, cold, settings, PLAIN, "spring") == expected
        index = cold.keywords.cache.owners[OWNER]
        assert index.from_snapshot and index.segment.prepared is not None
        assert index.segment.prepared_fp == preparer_for(True, PLAIN).fingerprint
        # another configuration: the snapshot's lines are not used, but prepared again
        block = await _block(store, cold, settings, CODENAME, "codename ships")
        assert "BLUEBIRD" not in block
        await cold.keywords.cache.settle()
        index = cold.keywords.cache.owners[OWNER]
        assert index.segment.prepared_fp == preparer_for(True, CODENAME).fingerprint
        stored = await recall_rows.load_snapshot(store.reader, OWNER)  # stored again with them
        assert stored is not None
        data = snapshot.decode(stored[2])
        assert data is not None and data.prepared is not None
        assert data.prepared_fp == preparer_for(True, CODENAME).fingerprint
    finally:
        await cold.close()


async def test_many_changes_at_once_are_rendered_by_recall_and_still_redacted(parts) -> None:
    store, settings, http = parts
    await _seed(store)
    engine = await _prepared_engine(store, settings, http)
    assert engine.keywords is not None
    try:
        many = PREPARE_INLINE + 8  # more than a feed read prepares on the event loop
        await store.writes.upsert_many(
            [
                NewMemory(owner_id=OWNER, content=f"Invoice {i} goes to carol{i}@example.net")
                for i in range(many)
            ]
        )
        block = await _block(store, engine, settings, PLAIN, "invoice goes")
        index = engine.keywords.cache.owners[OWNER]
        assert len(index.delta) == many and index.delta.prepared == {}
        assert "[email]" in block and "@example.net" not in block
    finally:
        await engine.close()


class _Observed:
    """The real preparer, recording on which thread and after how many loop turns it ran."""

    def __init__(self, inner: Preparer, turns: Callable[[], int]) -> None:
        self.inner, self.turns = inner, turns
        self.calls: list[tuple[int, int]] = []

    @property
    def fingerprint(self) -> str:
        return self.inner.fingerprint

    def __call__(self, memory: Memory, /) -> Prepared:
        self.calls.append((threading.get_ident(), self.turns()))
        return self.inner(memory)


async def test_preparing_a_loaded_owner_lets_requests_run_between_slices(parts) -> None:
    # a worker thread holding the GIL made every request on that core wait for it (15-30 ms per
    # request while a 10,000-memory owner was prepared); preparing runs on the loop in slices of
    # PREPARE_SLICE memories instead, and another task gets a turn between any two slices
    store, settings, http = parts
    n = 20 * PREPARE_SLICE
    await store.writes.upsert_many(
        [
            NewMemory(owner_id=OWNER, content=f"Note {i}: the spring fair needs {i} chairs")
            for i in range(n)
        ]
    )
    engine = build_engine(settings, store, http, retention_of(settings))
    assert engine.keywords is not None
    turns = 0
    done = False

    async def other_request() -> None:
        nonlocal turns
        while not done:
            turns += 1
            await asyncio.sleep(0)

    observed = _Observed(preparer_for(settings.sensitive_filter, PLAIN), lambda: turns)
    engine.keywords.cache.prepare = observed  # recall_block keeps it: the same fingerprint
    spinner = asyncio.ensure_future(other_request())
    try:
        await _block(store, engine, settings, PLAIN, "spring fair chairs")  # loads, then prepares
        await engine.keywords.cache.settle()
        done = True
        await spinner
        index = engine.keywords.cache.owners[OWNER]
        assert index.segment.prepared is not None and len(index.segment.prepared) == n
        assert len(observed.calls) >= n
        assert {thread for thread, _ in observed.calls} == {threading.get_ident()}
        seen = [t for _, t in observed.calls]
        longest = max(len(list(run)) for _, run in itertools.groupby(seen))
        assert longest <= PREPARE_SLICE  # never more than one slice without a turn for others
    finally:
        done = True
        await engine.close()


async def test_a_snapshot_keeps_every_prepared_feature(parts) -> None:
    store, settings, http = parts
    await _seed(store)
    warm = await _prepared_engine(store, settings, http)
    await warm.close()
    cold = build_engine(settings, store, http, retention_of(settings))
    assert cold.keywords is not None
    try:
        await _block(store, cold, settings, PLAIN, "spring")
        index = cold.keywords.cache.owners[OWNER]
        segment = index.segment
        assert index.from_snapshot and segment.prepared is not None
        prepare = preparer_for(True, PLAIN)
        for pos in range(len(segment.memories)):
            held = segment.prepared[pos]
            assert held is not None and held == prepare(segment.memories[pos])
            assert held.words_len >= 0
    finally:
        await cold.close()


def test_a_prepared_record_of_the_older_layout_decodes_as_not_having_the_new_features() -> None:
    old = msgspec.msgpack.encode(["- line", ["dog"], None, []])  # four fields, before words_len
    decoded = msgspec.msgpack.Decoder(Prepared).decode(old)
    assert decoded == Prepared("- line", ("dog",), None, ())
    assert decoded.words_len == -1 and decoded.cue_terms is None
