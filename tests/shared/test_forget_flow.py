"""The forget flow and its race with learning, on a real migrated SQLite store: what a forget
deletes (named memories, derived copies, summaries; every SQLite tier), what it leaves, its
event, and that learning queued before a forget never writes the forgotten content again."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from typing import Any

import httpx
import msgspec
import pytest

from shared.engine import build_engine
from shared.forget import forget
from shared.forget_guard import purge_forgotten
from shared.forget_terms import hash_stems, target_stems
from shared.jobs.context import JobContext
from shared.jobs.handlers import run_with_retries
from shared.jobs.payloads import FORGET, ForgetPayload, LearnPayload, encode_payload
from shared.learning import learn
from shared.models import NewMemory
from shared.retrieval import retention_of
from shared.runtime import assemble_job_context, in_process_queue
from shared.runtime_settings import RuntimeSettings
from shared.settings import load_settings
from shared.store import Store
from tests.lifecycle_seed import fts_rows

OWNER = "key_forget"


@pytest.fixture
async def jc(tmp_path) -> AsyncIterator[JobContext]:
    settings = load_settings({}, db_path=str(tmp_path / "forget.db"), embedding_source="none")
    store = await Store.open(settings.db_path)
    http = httpx.AsyncClient(timeout=5)
    engine = build_engine(settings, store, http, retention_of(settings))
    live = RuntimeSettings(settings, store.settings)
    ctx = await assemble_job_context(live, store, http, engine, in_process_queue)
    yield ctx
    await ctx.queue.close()
    await http.aclose()
    await store.close()


async def put(jc: JobContext, content: str, **kw: Any) -> int:
    memory, _ = await jc.store.writes.upsert(NewMemory(owner_id=OWNER, content=content, **kw))
    return memory.id


async def contents(jc: JobContext, owner: str = OWNER) -> list[str]:
    items, _ = await jc.store.memories.list(owner_id=owner, limit=1000)
    return sorted(m.content for m in items)


async def run_forget(jc: JobContext, target: str, now: float, **kw: Any) -> Any:
    return await forget(
        jc.store,
        owner_id=OWNER,
        user_id=kw.pop("user_id", ""),
        stems=target_stems(target),
        now=now,
        source="test",
        max_matches=10,
        **kw,
    )


async def test_named_memories_and_derived_copies_go_unrelated_ones_stay(jc: JobContext) -> None:
    origin = {"request_id": "r1"}
    fact = await put(jc, "User works at Acme", key="fact:works_at", metadata=origin)
    turn = await put(
        jc,
        "Acme hired me last spring as a baker",
        category="turn",
        type="episodic",
        key="turn:1",
        metadata=origin,
    )
    same_request_other = await put(
        jc, "I also like jazz", category="turn", type="episodic", key="turn:2", metadata=origin
    )
    turn_public = (await jc.store.memories.get_many([turn]))[turn].public_id
    summary = await put(
        jc,
        "Summary: hired last spring",
        category="summary",
        metadata={"summary": {"source_ids": [turn_public]}},
    )
    other = await put(jc, "User lives in Berlin", key="identity:location")
    other_user = await put(jc, "User works at Initech", key="fact:works_at", user_id="bob")
    db = jc.store.path
    assert fts_rows(db, fact) == 1

    seen: list[list[int]] = []

    async def on_deleted(ids: list[int]) -> None:
        seen.append(ids)

    outcome = await run_forget(jc, "where I work", time.time(), on_deleted=on_deleted)
    assert outcome.reason == "ok"
    gone = {fact, turn, summary}
    assert set(outcome.rowids) == gone and seen == [sorted(gone)]
    assert {d.via for d in outcome.deleted} == {"match", "derived"}
    left = set(await jc.store.memories.get_many([*gone, same_request_other, other, other_user]))
    assert left == {same_request_other, other, other_user}  # other end user untouched
    assert all(fts_rows(db, i) == 0 for i in gone)
    async with jc.store.writer.execute(
        "SELECT count, detail FROM memory_events WHERE kind = 'forget'"
    ) as cur:
        rows = list(await cur.fetchall())
    assert len(rows) == 1 and rows[0][0] == 3
    detail = msgspec.json.decode(rows[0][1])
    assert set(detail["keys"]) >= {"fact:works_at", "turn:1"} and len(detail["ids"]) == 3
    assert "Acme" not in rows[0][1] and "hired" not in rows[0][1]  # ids and keys, no text


async def test_restating_a_learned_sentence_forgets_it_and_its_fact(jc: JobContext) -> None:
    # the fact learned from the turn holds 2 of the target's 3 words; being a copy of the named
    # turn (same learn request), it is deleted with it, not a rival that makes it ambiguous
    origin = {"request_id": "r7"}
    turn = await put(
        jc, "My dog is called Rex", category="turn", type="episodic", key="turn:7", metadata=origin
    )
    fact = await put(jc, "User has a dog named Rex", key="fact:pet", metadata=origin)
    other = await put(jc, "I walk the dog every morning", metadata={"request_id": "r8"})
    outcome = await run_forget(jc, "that my dog is called Rex", time.time())
    assert outcome.reason == "ok" and set(outcome.rowids) == {turn, fact}
    assert set(await jc.store.memories.get_many([turn, fact, other])) == {other}


async def test_an_address_is_forgotten_by_its_street_word(jc: JobContext) -> None:
    await put(jc, "I live at 42 Baker Street in London", category="turn")
    await put(jc, "My sister lives in Oslo", category="turn")
    await put(jc, "I pay too much for gas", category="turn")
    done = await run_forget(jc, "my address", time.time())
    assert done.reason == "ok" and len(done.deleted) == 1
    assert await contents(jc) == ["I pay too much for gas", "My sister lives in Oslo"]


async def test_unclear_forgets_delete_nothing(jc: JobContext) -> None:
    await put(jc, "User's old phone number is 555", key="fact:old_phone_number")
    await put(jc, "User's phone is an old Nokia", key="fact:phone")
    before = await contents(jc)
    now = time.time()
    assert (await run_forget(jc, "my old phone number", now)).reason == "ambiguous"
    assert (await run_forget(jc, "my diet", now)).reason == "no_match"
    dry = await run_forget(jc, "my old Nokia", now, dry_run=True)
    assert dry.reason == "ok" and dry.dry_run and len(dry.deleted) == 1
    assert await contents(jc) == before
    # an ambiguous forget withdrew its tombstone; a no-match one keeps it
    assert len(await jc.store.forget.tombstones_since(OWNER, "", 0)) == 1


def learn_payload(text: str, at: float, request_id: str) -> LearnPayload:
    return LearnPayload(
        owner_id=OWNER,
        user_id="",
        session_id=request_id,
        user_turns=[text],
        created_at=at,
        request_id=request_id,
    )


async def test_learning_queued_before_a_forget_never_resurrects(jc: JobContext) -> None:
    taught_at = time.time()
    forgot_at = taught_at + 1
    # the forget job runs first (the worker drained the queue out of order) ...
    data = encode_payload(
        ForgetPayload(
            owner_id=OWNER,
            user_id="",
            stems=list(target_stems("which gym I go to")),
            requested_at=forgot_at,
            request_id="f",
        )
    )
    result = await run_with_retries(jc, FORGET, data)
    assert result == {"reason": "no_match", "deleted": []}
    # ... then the learn job of the earlier request: the gym turn is not written, Berlin is
    await learn(jc, learn_payload("I go to the gym on Elm Street", taught_at, "t1"))
    await learn(jc, learn_payload("I live in Berlin", taught_at, "t2"))
    stored = await contents(jc)
    assert not any("Elm" in c for c in stored)
    assert any("Berlin" in c for c in stored)
    # a request made after the forget learns the content again: the user said it anew
    await learn(jc, learn_payload("Now I go to the gym on Elm Street", forgot_at + 1, "t3"))
    assert any("Elm" in c for c in await contents(jc))


async def test_a_learn_committed_while_forgetting_is_purged(jc: JobContext) -> None:
    """The post-commit check: the tombstone appears after the learn job's first check."""
    taught_at = time.time()
    written = await jc.store.writes.upsert_many(
        [NewMemory(owner_id=OWNER, content="I go to the gym on Elm Street", key="turn:x")],
        now=taught_at,
    )
    hashes = hash_stems(target_stems("which gym I go to"))
    await jc.store.forget.add_tombstone(OWNER, "", hashes, taught_at + 1)

    purged = await purge_forgotten(
        jc.store, OWNER, "", taught_at, [m for m, _ in written], time.time()
    )
    assert purged == [written[0][0].id]
    assert await contents(jc) == []


async def test_the_forget_message_itself_is_not_learned(jc: JobContext) -> None:
    await learn(jc, learn_payload("Please stop remembering which gym I go to", time.time(), "q"))
    assert await contents(jc) == []


async def test_forgetting_my_name_keeps_the_names_of_my_people_and_pets(jc: JobContext) -> None:
    now = time.time()
    for text, key in [
        ("User's name is Dana", "identity:name"),
        ("User has a dog named Biscuit", "pet:dog:biscuit"),
        ("User's sister is named Lea", "family:sister:lea"),
        ("My sister's name is Lea", "turn:2"),
        ("My name is Dana", "turn:1"),
    ]:
        await put(jc, text, key=key)
    outcome = await run_forget(jc, "Please forget my name", now)
    assert outcome.reason == "ok"
    assert await contents(jc) == sorted(
        ["User has a dog named Biscuit", "User's sister is named Lea", "My sister's name is Lea"]
    )
    # the tombstone of "my name" does not stop the next dog's name from being learned
    await learn(jc, learn_payload("My cat is named Felix", now + 1, "t9"))
    assert any("Felix" in c for c in await contents(jc))
    # the sister's name is forgotten when asked for
    again = await run_forget(jc, "forget my sister's name", now + 2)
    assert again.reason == "ok"
    left = await contents(jc)
    assert "User has a dog named Biscuit" in left and not any("Lea" in c for c in left)
