"""Learning fills the search context of captured turns and facts, updates it when the next turn
arrives, links facts to their turn, and does not capture turns that only ask (real store)."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator

import httpx
import pytest

from shared.engine import build_engine
from shared.jobs.context import JobContext
from shared.jobs.payloads import LearnPayload
from shared.learning import learn, prefix_ids
from shared.retrieval import retention_of
from shared.runtime import assemble_job_context, in_process_queue
from shared.runtime_settings import RuntimeSettings
from shared.settings import load_settings
from shared.slot_terms import with_slot_terms
from shared.store import Store

T1 = "The marketing plan needs a new date."
A1 = "Which date would you like?"
T2 = "I decided to move the launch to March."
A2 = "Noted, March it is."
T3 = "Also my dog is called Rex"


def request(turns: list[str], replies: list[str], answer: str, **kw: object) -> LearnPayload:
    return LearnPayload(
        owner_id="k1",
        user_id=str(kw.get("user", "")),
        session_id=None,
        user_turns=turns,
        replies=replies,
        assistant_text=answer,
        created_at=time.time(),
        request_id="r",
    )


@pytest.fixture
async def jc(tmp_path) -> AsyncIterator[JobContext]:
    settings = load_settings({}, db_path=str(tmp_path / "ctx.db"), embedding_source="none")
    store = await Store.open(settings.db_path)
    async with httpx.AsyncClient(timeout=10) as http:
        engine = build_engine(settings, store, http, retention_of(settings))
        live = RuntimeSettings(settings, store.settings)
        made = await assemble_job_context(live, store, http, engine, in_process_queue)
        yield made
        await made.queue.close()
    await store.close()


async def rows(jc: JobContext) -> dict[str, tuple[str, str, str]]:
    """key → (content, context, metadata json) of owner k1."""
    async with jc.store.writer.execute(
        "SELECT key, content, context, metadata FROM memories WHERE owner_id = 'k1'"
    ) as cur:
        return {r[0]: (r[1], r[2], r[3]) for r in await cur.fetchall()}


async def test_captured_turn_carries_its_neighbours_then_the_next_turn(jc):
    await learn(jc, request([T1], [], A1))
    key1 = "turn:" + prefix_ids([T1])[0]
    assert (await rows(jc))[key1][1] == A1  # nothing before; the answer after

    await learn(jc, request([T1, T2], [A1], A2))
    got = await rows(jc)
    key2 = "turn:" + prefix_ids([T1, T2])[1]
    assert got[key2][0] == T2
    assert got[key2][1] == f"{T1}\n{A1}\n{A2}"  # previous user + assistant turns, the answer
    # the next user turn arrived in a later request: appended to the previous turn's context
    assert got[key1][1] == f"{A1}\n{T2}"
    assert jc.stats.get("context_updated") == 1

    # a replay of the same request changes nothing
    before = await rows(jc)
    await learn(jc, request([T1, T2], [A1], A2))
    assert await rows(jc) == before


async def test_context_update_never_recreates_a_deleted_turn(jc):
    await learn(jc, request([T1], [], A1))
    key1 = "turn:" + prefix_ids([T1])[0]
    assert await jc.store.writes.delete_keys("k1", "", [key1])
    await learn(jc, request([T1, T2], [A1], A2))
    assert key1 not in await rows(jc)


async def test_facts_link_to_their_turn_and_share_its_context(jc):
    await learn(jc, request([T2, T3], ["Great."], "Nice name!"))
    facts = {k: v for k, v in (await rows(jc)).items() if not k.startswith("turn:")}
    assert facts, "the regex extractor finds the dog's name"
    key3 = "turn:" + prefix_ids([T2, T3])[1]
    for key, (_content, context, metadata) in facts.items():
        assert f'"turn_key":"{key3}"' in metadata and '"turn_index":1' in metadata
        # the fact's slot words, then the turn's own words, then its neighbours
        assert context.startswith(with_slot_terms(key, T3)), context
        assert "Nice name!" in context and T2 in context


async def test_questions_and_requests_are_not_captured(jc):
    result = await learn(
        jc, request(["What is my dog called?", "Write a poem about the sea"], [""], "OK")
    )
    assert result.captured == 0 and await rows(jc) == {}
    # still context of the next turn
    await learn(
        jc,
        request(["What is my dog called?", "Write a poem about the sea", T3], ["", "A poem"], ""),
    )
    (only,) = [v for k, v in (await rows(jc)).items() if k.startswith("turn:")]
    assert only[0] == T3 and only[1] == "Write a poem about the sea\nA poem"


async def test_context_is_redacted(jc):
    await learn(jc, request(["my email is jane.doe@example.com", T2], ["ok"], ""))
    for content, context, _meta in (await rows(jc)).values():
        assert "jane.doe@example.com" not in content + context


async def test_user_only_chat_gets_the_full_window_as_turns_arrive(jc):
    # a client that sends no assistant turns (or an empty answer): each later request completes
    # the context of the two turns before its first new one
    turns = ["I bought a red bike.", "It has three gears.", "I ride it to work.", "Rain is bad."]
    for n in range(1, len(turns) + 1):
        await learn(jc, request(turns[:n], [], ""))
    got = await rows(jc)
    ctx = {got[k][0]: got[k][1] for k in got if k.startswith("turn:")}
    assert ctx[turns[0]] == f"{turns[1]}\n{turns[2]}"
    assert ctx[turns[1]] == f"{turns[0]}\n{turns[2]}\n{turns[3]}"
    assert ctx[turns[3]] == f"{turns[1]}\n{turns[2]}"


async def test_a_turn_asking_not_to_be_remembered_is_in_no_context(jc):
    private = "Don't remember this: my locker word is QX7CANARY7XQ"
    await learn(jc, request([private, T2], ["Understood QX7CANARY7XQ"], A2))
    got = await rows(jc)
    assert got and all("QX7CANARY7XQ" not in context for _c, context, _m in got.values())
    assert all("QX7CANARY7XQ" not in content for content, _x, _m in got.values())
