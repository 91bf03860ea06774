"""The learn job's payload carries no user turn older than the job needs (real store, real job).

A long conversation whose first turns were learned already: the payload built for its next
request holds the text of the new turns and of their context neighbours only; every older turn
and reply is blank, and learning from it writes exactly what learning from the whole history
writes.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path

import httpx
import msgspec
import pytest

from shared.engine import build_engine
from shared.jobs.context import JobContext
from shared.jobs.payloads import LearnPayload
from shared.learn_payload import kept_from, learn_payload
from shared.learning import learn
from shared.models import Scope
from shared.new_turns import prefix_ids
from shared.retrieval import retention_of
from shared.runtime import assemble_job_context, in_process_queue
from shared.runtime_settings import RuntimeSettings
from shared.settings import load_settings
from shared.store import Store
from shared.turn_context import assistant_replies

SCOPE = Scope(owner_id="k1", user_id="u1")
WINDOW = 8  # the default learn_max_turns
USERS = [f"My note number {i} is about the garden plot MARK{i:02d}X" for i in range(30)]
REPLIES = [f"Understood, note {i} REPLY{i:02d}X" for i in range(30)]

JobContextFactory = Callable[[str], AbstractAsyncContextManager[JobContext]]


def conversation(n: int) -> list[dict[str, str]]:
    """The first ``n`` user turns with the assistant's reply after each but the last."""
    out: list[dict[str, str]] = []
    for i in range(n):
        out.append({"role": "user", "content": USERS[i]})
        if i < n - 1:
            out.append({"role": "assistant", "content": REPLIES[i]})
    return out


def full_payload(n: int) -> LearnPayload:
    """What the gateway sent before minimising: every user turn and reply."""
    return LearnPayload(
        owner_id=SCOPE.owner_id,
        user_id=SCOPE.user_id,
        session_id=None,
        user_turns=USERS[:n],
        replies=assistant_replies(conversation(n)),
        assistant_text=REPLIES[n - 1],
        created_at=time.time(),
        request_id=f"r{n}",
    )


async def minimal_payload(jc: JobContext, n: int) -> LearnPayload:
    return await learn_payload(
        jc.store.cursors,
        SCOPE,
        USERS[:n],
        conversation(n),
        REPLIES[n - 1],
        window=WINDOW,
        created_at=time.time(),
        request_id=f"r{n}",
    )


def marks_in(payload: LearnPayload) -> set[int]:
    """The indices of the user turns and replies whose text is in the encoded payload."""
    blob = msgspec.msgpack.encode(payload)
    return {i for i in range(30) if f"MARK{i:02d}X".encode() in blob} | {
        i
        for i in range(30)
        if f"REPLY{i:02d}X".encode() in blob and i < len(payload.user_turns) - 1
    }


@pytest.fixture
def job_context(tmp_path: Path) -> JobContextFactory:
    @asynccontextmanager
    async def make(name: str) -> AsyncIterator[JobContext]:
        settings = load_settings({}, db_path=str(tmp_path / f"{name}.db"), embedding_source="none")
        store = await Store.open(settings.db_path)
        try:
            async with httpx.AsyncClient(timeout=10) as http:
                engine = build_engine(settings, store, http, retention_of(settings))
                live = RuntimeSettings(settings, store.settings)
                made = await assemble_job_context(live, store, http, engine, in_process_queue)
                try:
                    yield made
                finally:
                    await made.queue.close()
        finally:
            await store.close()

    return make


async def rows(jc: JobContext) -> dict[str, tuple[str, str]]:
    async with jc.store.writer.execute(
        "SELECT key, content, context FROM memories WHERE owner_id = 'k1'"
    ) as cur:
        return {r[0]: (r[1], r[2]) for r in await cur.fetchall()}


def test_kept_from_is_the_window_and_context_before_the_first_new_turn() -> None:
    assert kept_from(total=12, learned=10, window=8) == 7  # new 10..11, context 8..9, reach 7
    assert kept_from(total=30, learned=0, window=8) == 19  # only the window can be learned
    assert kept_from(total=30, learned=10, window=8) == 19  # a cursor behind the window
    assert kept_from(total=3, learned=0, window=8) == 0
    assert kept_from(total=12, learned=12, window=8) == 12  # a replay needs no text


async def test_payload_after_the_cursor_holds_no_older_turn(job_context) -> None:
    async with job_context("min") as jc:
        await learn(jc, full_payload(10))
        payload = await minimal_payload(jc, 12)
    assert payload.kept_from == 7
    assert payload.user_turns[:7] == [""] * 7 and payload.replies[:7] == [""] * 7
    assert marks_in(payload) == set(range(7, 12))
    # the cursor's hashes of the prefixes the job looks up (from first - 1 = 3) and marks
    assert payload.prefixes == [""] * 3 + prefix_ids(USERS[:12])[3:]


async def test_payload_of_a_long_new_chat_holds_only_the_window(job_context) -> None:
    async with job_context("long") as jc:
        payload = await minimal_payload(jc, 30)
    assert marks_in(payload) == set(range(19, 30))


async def test_a_replay_carries_no_text(job_context) -> None:
    async with job_context("replay") as jc:
        await learn(jc, full_payload(5))
        payload = await minimal_payload(jc, 5)
    assert marks_in(payload) == set()
    assert payload.assistant_text == ""


@pytest.mark.parametrize("learned", [0, 10])
async def test_learning_from_the_minimal_payload_writes_what_the_whole_history_writes(
    job_context, learned: int
) -> None:
    async with job_context("whole") as whole, job_context("minimal") as minimal:
        if learned:
            await learn(whole, full_payload(learned))
            await learn(minimal, full_payload(learned))
        await learn(whole, full_payload(12))
        await learn(minimal, await minimal_payload(minimal, 12))
        assert await rows(minimal) == await rows(whole)
        assert await rows(whole)  # something was learned


async def test_an_unreadable_cursor_sends_the_window(job_context) -> None:
    async with job_context("broken") as jc:
        await learn(jc, full_payload(10))
        await jc.store.writer.execute("DROP TABLE learn_cursors")  # a read now fails
        payload = await minimal_payload(jc, 12)
    assert payload.kept_from == 1  # as with no cursor: the window of 8 and its context
    assert marks_in(payload) == set(range(1, 12))
