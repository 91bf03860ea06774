"""The learning pipeline (shared/learning.py) and the in-process job runner, called directly.

Real migrated SQLite, a real httpx client and the fake provider (a real HTTP server) as the LLM
extractor's endpoint. Faults are injected into the real database (a failing trigger, a lock held
by another connection), never by mocking project code.
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from typing import Any

import httpx
import pytest
import sqlean
from msgspec.structs import replace

from shared.engine import build_engine
from shared.extraction import EXTRACTION_PROMPT, ExtractedFact
from shared.jobs.context import JobContext
from shared.jobs.handlers import dead_letter, run_with_retries
from shared.jobs.payloads import LEARN, LearnPayload, encode_payload
from shared.learning import LearnResult, is_grounded, learn, sanitise_fact
from shared.models import Memory
from shared.retrieval import retention_of
from shared.runtime import assemble_job_context, in_process_queue
from shared.runtime_settings import RuntimeSettings
from shared.settings import load_settings
from shared.store import Store
from shared.store.connection import on_commit

EMAIL = "jane.doe@example.com"


@pytest.fixture
async def make_jc(tmp_path, upstream):
    made: list[JobContext] = []

    async def make(**overrides: Any) -> JobContext:
        overrides.setdefault("db_path", str(tmp_path / "learn.db"))
        settings = load_settings(
            {}, upstream_base_url=upstream.base_url, upstream_api_key="sk-up", **overrides
        )
        store = await Store.open(settings.db_path)
        http = httpx.AsyncClient(timeout=10)
        no_vectors = replace(settings, embedding_source="none")  # learning only, no embed jobs
        engine = build_engine(no_vectors, store, http, retention_of(settings))
        live = RuntimeSettings(settings, store.settings)
        jc = await assemble_job_context(live, store, http, engine, in_process_queue)
        made.append(jc)
        return jc

    yield make
    for jc in made:
        await jc.queue.close()
        await jc.http.aclose()
        await jc.store.close()


def payload(
    turns: list[str], *, owner: str = "k1", user: str = "", assistant: str = ""
) -> LearnPayload:
    return LearnPayload(
        owner_id=owner,
        user_id=user,
        session_id=None,
        user_turns=turns,
        assistant_text=assistant,
        created_at=time.time(),
        request_id="req-1",
    )


async def facts_of(jc: JobContext, owner: str = "k1") -> list[Memory]:
    items, _ = await jc.store.memories.list(owner_id=owner, limit=1000)
    return [m for m in items if m.category != "turn"]


async def events(jc: JobContext, kind: str) -> list[dict[str, Any]]:
    async with jc.store.writer.execute(
        "SELECT detail FROM memory_events WHERE kind = ? ORDER BY id", (kind,)
    ) as cur:
        return [json.loads(r[0]) for r in await cur.fetchall()]


def llm_reply(message: dict[str, Any], status: int = 200):
    """A fake-provider responder: extraction requests get ``message``, chats get "OK"."""

    def respond(body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        if body["messages"][0].get("content") != EXTRACTION_PROMPT:
            message_out: dict[str, Any] = {"role": "assistant", "content": "OK"}
            return 200, {"choices": [{"index": 0, "message": message_out}]}
        if status != 200:
            return status, {"error": {"message": "llm down", "type": "server_error"}}
        return 200, {"choices": [{"index": 0, "message": {"role": "assistant", **message}}]}

    return respond


LLM = {"extraction": "llm", "llm_extractor_model": "extract-model", "llm_extractor_min_turns": 2}
FACTS_JSON = json.dumps(
    [
        {"content": "User prefers Rust for systems work", "category": "preference"},
        {"content": "User lives in Lisbon", "category": "fact"},
    ]
)
TURNS = ["I like Rust for systems work", "Also, I live in Lisbon these days"]


@pytest.mark.parametrize(
    "message",
    [
        {"content": f"```json\n{FACTS_JSON}\n```"},
        {"content": f"Sure! Here is what I found:\n{FACTS_JSON}\nLet me know if you need more."},
        {"content": "", "reasoning_content": f"Thinking... the facts are {FACTS_JSON}"},
    ],
    ids=["fenced", "prose-wrapped", "reasoning_content"],
)
async def test_llm_extractor_shapes_are_stored(make_jc, upstream, message):
    upstream.responder = llm_reply(message)
    jc = await make_jc(**LLM)
    result = await learn(jc, payload(TURNS, assistant="Noted!"))
    assert result.extractor == "llm" and result.llm_error is None
    assert sorted(m.content for m in await facts_of(jc)) == [
        "User lives in Lisbon",
        "User prefers Rust for systems work",
    ]
    keys = {m.key for m in await facts_of(jc)}
    assert keys == {"preference:like:rust", "identity:location"}  # the regex extractor's keys
    # one call, temperature 0.1, both turns in it, the assistant reply marked as context only
    (call,) = upstream.requests
    assert call["model"] == "extract-model" and call["temperature"] == 0.1
    assert "Rust" in call["messages"][1]["content"] and "Lisbon" in call["messages"][1]["content"]
    assert "context only" in call["messages"][1]["content"]


@pytest.mark.parametrize(
    ("message", "status", "error_part"),
    [
        ({"content": "I found nothing useful {not json at all"}, 200, "no JSON fact list"),
        ({"content": '[{"text_only": 1}]'}, 200, "items invalid"),
        ({"content": ""}, 200, "empty response"),
        ({"content": "[]"}, 503, "HTTP 503"),
    ],
    ids=["invalid-json", "invalid-items", "empty", "http-503"],
)
async def test_llm_failure_is_visible_and_regex_takes_over(
    make_jc, upstream, message, status, error_part
):
    upstream.responder = llm_reply(message, status)
    jc = await make_jc(**LLM)
    result = await learn(jc, payload(["Hello there", "I prefer TypeScript for frontends"]))
    # reported in the job result, counted, recorded as an event: never silently dropped
    assert result.extractor == "regex-fallback"
    assert result.llm_error is not None and error_part in result.llm_error
    assert jc.stats["llm_extraction_failures"] == 1
    (event,) = await events(jc, "extraction_failed")
    assert event["extractor"] == "llm" and error_part in event["error"]
    # the regex extractor still learned the obvious fact
    assert [m.content for m in await facts_of(jc)] == ["User prefers TypeScript for frontends"]


async def test_llm_runs_only_after_min_turns_and_covers_earlier_turns(make_jc, upstream):
    upstream.responder = llm_reply({"content": FACTS_JSON})
    jc = await make_jc(**LLM)
    first = await learn(jc, payload(TURNS[:1]))
    assert first.extractor == "none" and upstream.requests == []
    assert first.captured == 1 and await facts_of(jc) == []
    second = await learn(jc, payload(TURNS))
    assert second.extractor == "llm" and second.turns == 1 and second.facts == 2
    (call,) = upstream.requests  # the earlier turn is included in the first LLM call
    assert TURNS[0] in call["messages"][1]["content"] and TURNS[1] in call["messages"][1]["content"]
    # a replay learns nothing and calls nothing
    again = await learn(jc, payload(TURNS))
    assert again.turns == 0 and again.facts == 0 and len(upstream.requests) == 1


async def test_llm_fact_only_the_assistant_said_is_dropped(make_jc, upstream):
    """For the LLM extractor: a fact grounded only in the assistant reply is not stored."""
    upstream.responder = llm_reply(
        {"content": '[{"content": "User usually recommends Python", "category": "pattern"}]'}
    )
    jc = await make_jc(**LLM)
    result = await learn(
        jc,
        payload(
            ["Hi!", "Which language should I learn first?"],
            assistant="As an AI, I usually recommend Python",
        ),
    )
    assert result.ungrounded_skipped == 1 and result.facts == 0
    assert await facts_of(jc) == []


async def test_llm_sees_redacted_text_and_secret_facts_are_dropped(make_jc, upstream):
    upstream.responder = llm_reply(
        {"content": json.dumps([{"content": f"User's email is {EMAIL}", "category": "fact"}])}
    )
    jc = await make_jc(**LLM)
    result = await learn(jc, payload(["Hi", f"My email is {EMAIL}"]))
    assert result.sensitive_skipped == 1 and await facts_of(jc) == []
    assert EMAIL not in json.dumps(upstream.requests) and "[email]" in json.dumps(upstream.requests)
    items, _ = await jc.store.memories.list(owner_id="k1")
    assert all(EMAIL not in m.content for m in items)


async def test_near_identical_fact_updates_instead_of_inserting(make_jc, upstream):
    jc = await make_jc()
    await learn(jc, payload(["I'll use Postgres for this project"]))
    (before,) = await facts_of(jc)
    restated = [
        {"content": "User has decided to use Postgres for this project", "category": "decision"}
    ]
    upstream.responder = llm_reply({"content": json.dumps(restated)})
    llm_jc = await make_jc(**{**LLM, "llm_extractor_min_turns": 1})
    result = await learn(llm_jc, payload(["We settled it: Postgres for this project."]))
    assert result.deduplicated == 1
    (after,) = await facts_of(jc)
    assert after.id == before.id and after.key == before.key
    assert after.content == "User has decided to use Postgres for this project"
    # another end user of the same owner is a different scope: inserted, not merged
    other = await learn(llm_jc, payload(["Postgres for this project, settled."], user="bob"))
    assert other.deduplicated == 0 and len(await facts_of(jc)) == 2


async def turn_memories(jc: JobContext, owner: str = "k1") -> list[Memory]:
    items, _ = await jc.store.memories.list(owner_id=owner, limit=1000)
    return sorted((m for m in items if m.category == "turn"), key=lambda m: m.created_at)


async def test_one_request_learns_only_the_newest_learn_max_turns(make_jc):
    jc = await make_jc()
    assert jc.settings.learn_max_turns == 8
    turns = [f"I prefer Lang{i} for scripting" for i in range(20)]
    result = await learn(jc, payload(turns))
    assert result.turns == 8 and result.captured == 8 and result.facts == 8
    captured = await turn_memories(jc)
    assert sorted(m.content for m in captured) == sorted(turns[12:])
    assert sorted(m.metadata["turn_index"] for m in captured) == list(range(12, 20))
    assert sorted(m.content for m in await facts_of(jc)) == sorted(
        f"User prefers Lang{i} for scripting" for i in range(12, 20)
    )
    # the cursor covers the whole request: a replay learns nothing, a next turn learns one
    again = await learn(jc, payload(turns))
    assert again == LearnResult()
    more = await learn(jc, payload([*turns, "I prefer Lang20 for scripting"]))
    assert more.turns == 1 and more.captured == 1
    assert len(await turn_memories(jc)) == 9


async def test_an_exchange_commits_its_cursor_and_events_together(make_jc):
    """The cursor and the learned events are one commit that leaves the recall cache fresh:
    only the memories' own upsert marks it stale (a cursor write forced a feed read)."""
    jc = await make_jc()
    stale: list[int] = []
    on_commit(jc.store.writer, lambda: stale.append(1))
    result = await learn(jc, payload(["I prefer Zig for scripting", "My dog is called Rex"]))
    assert result.captured == 2 and result.facts == 2
    assert len(stale) == 1, "only the upsert of the memories marks the recall cache stale"
    totals = await jc.store.events.totals("k1")
    assert totals["capture"] == 2 and totals["extraction"] == 2
    assert await learn(jc, payload(["I prefer Zig for scripting", "My dog is called Rex"])) == (
        LearnResult()
    )  # the cursor was written: a replay learns nothing and records nothing
    assert await jc.store.events.totals("k1") == totals


async def test_learn_max_turns_setting_and_llm_extractor_are_capped(make_jc, upstream):
    upstream.responder = llm_reply({"content": "[]"})
    jc = await make_jc(**LLM, learn_max_turns=3)
    turns = [f"Turn number {i} about Rust" for i in range(30)]
    result = await learn(jc, payload(turns))
    assert result.extractor == "llm" and result.turns == 3 and result.captured == 3
    (call,) = upstream.requests  # the LLM sees the same newest 3 turns, nothing older
    sent = call["messages"][1]["content"]
    assert all(f"Turn number {i} " in sent for i in (27, 28, 29))
    assert "Turn number 26 " not in sent and "Turn number 0 " not in sent


async def test_identical_turns_of_one_request_are_captured_once(make_jc):
    jc = await make_jc()
    result = await learn(jc, payload(["x"] * 50_000))
    assert result.captured == 1
    (turn,) = await turn_memories(jc)
    assert turn.content == "x" and turn.metadata["turn_index"] == 49_999  # the newest
    assert await learn(jc, payload(["x"] * 50_000)) == LearnResult()
    twice = ["I prefer Zig", "that sounds right", "I prefer Zig", "that sounds right"]
    mixed = await learn(jc, payload(twice, owner="k2"))
    assert mixed.captured == 2 and mixed.facts == 1
    assert sorted(m.content for m in await turn_memories(jc, "k2")) == twice[:2]


async def test_turns_without_a_letter_or_digit_are_not_captured(make_jc):
    jc = await make_jc()
    junk = ["\x00", "\u200b", "\ufeff", "*", "-", "'", "\u200b\ufeff*-'", "?!", "\U0001f600"]
    result = await learn(jc, payload(junk))
    assert result.captured == 0 and await turn_memories(jc) == []
    assert await learn(jc, payload(junk)) == LearnResult()  # the cursor moved all the same
    kept = await learn(jc, payload(["*", "3", "ß", "日本"], owner="k2"))
    assert kept.captured == 3
    assert sorted(m.content for m in await turn_memories(jc, "k2")) == sorted(["3", "ß", "日本"])


async def test_a_name_cut_by_a_control_character_is_not_learned(make_jc):
    """The stored turn reads "Sa m", from which "Sa" would be read: the regex extractor reads
    the turn as written, so it sees the NUL and learns no name (the turn's other fact stays)."""
    jc = await make_jc()
    texts = ["My name is Sa\x00m and I live in Berlin", "Call me \u2728Ana\u2728"]
    result = await learn(jc, payload(texts))
    assert (result.facts, result.captured) == (2, 2)
    assert sorted((m.key, m.content) for m in await facts_of(jc)) == [
        ("identity:location", "User lives in Berlin"),
        ("identity:nickname", "User likes to be called Ana"),
    ]
    assert sorted(m.content for m in await turn_memories(jc)) == [
        "Call me \u2728Ana\u2728",
        "My name is Sa m and I live in Berlin",
    ]


def test_sanitise_and_grounding_rules():
    fact = ExtractedFact(
        content="User\u200b  prefers\nTea", category="nope", type="nope", key="k", confidence=1
    )
    clean = sanitise_fact(fact)
    assert clean is not None
    assert (clean.content, clean.category, clean.type) == ("User prefers Tea", "fact", "factual")
    # format characters are deleted, not turned into spaces: a word split by one stays one word
    hidden = replace(fact, content="User's na\u200bme is Bo\u00adb \u202eok\u202c \ufeff!")
    assert (clean2 := sanitise_fact(hidden)) is not None
    assert clean2.content == "User's name is Bob ok !"
    assert sanitise_fact(replace(fact, content="a\u2028b\x00c")).content == "a b c"  # type: ignore[union-attr]
    assert sanitise_fact(replace(fact, content="Does User like tea?")) is None
    assert sanitise_fact(replace(fact, content=" ")) is None
    assert is_grounded("User prefers 绿茶", "我喜欢喝绿茶")
    assert not is_grounded("User usually recommends Python", "Which language should I learn?")


# ---- retries, backoff, dead letters (in-process runner) ---------------------------------------


def fail_inserts_until(db_path: str, deadline: float) -> None:
    """Install a trigger that makes every memory insert fail until unix time ``deadline``."""
    conn = sqlean.connect(db_path, isolation_level=None)
    conn.execute(
        "CREATE TRIGGER test_fail_inserts BEFORE INSERT ON memories "
        f"WHEN (julianday('now') - 2440587.5) * 86400.0 < {deadline} "
        "BEGIN SELECT RAISE(ABORT, 'injected store failure'); END"
    )
    conn.close()


def drop_fault(db_path: str) -> None:
    conn = sqlean.connect(db_path, isolation_level=None)
    conn.execute("DROP TRIGGER IF EXISTS test_fail_inserts")
    conn.close()


async def test_transient_store_error_is_retried_with_backoff(make_jc, tmp_path):
    jc = await make_jc(job_max_tries=5)
    fail_inserts_until(jc.settings.db_path, time.time() + 0.8)
    started = time.monotonic()
    result = await run_with_retries(jc, LEARN, encode_payload(payload(["I prefer Zig"])))
    elapsed = time.monotonic() - started
    assert result is not None and result["facts"] == 1
    # tries at ~0 s, ~0.5 s (fails), ~1.5 s (succeeds): backoff 0.5 s then 1 s
    assert jc.stats["job_retries:learn"] == 2 and elapsed >= 1.4
    assert [m.content for m in await facts_of(jc)] == ["User prefers Zig"]
    assert "dead_letters" not in jc.stats


async def test_exhausted_retries_leave_a_dead_letter(make_jc, caplog):
    jc = await make_jc(job_max_tries=2)
    fail_inserts_until(jc.settings.db_path, time.time() + 3600)
    data = encode_payload(payload(["I prefer Odin"], owner="k9"))
    with caplog.at_level("ERROR", logger="mnemogate.jobs"):
        assert await run_with_retries(jc, LEARN, data) is None
    assert jc.stats["dead_letters"] == 1 and jc.stats["job_retries:learn"] == 1
    assert any("dead letter: job learn" in r.getMessage() for r in caplog.records)
    (letter,) = await events(jc, "dead_letter")
    assert letter["tries"] == 2 and not letter["permanent"]
    assert "injected store failure" in letter["error"]
    assert (await jc.store.events.totals("k9"))["dead_letter"] == 1  # visible to the owner
    # ids, counts and a hash are kept, never the user's text (neither hex nor plain)
    assert letter["payload_sha256"] == hashlib.sha256(data).hexdigest()
    assert letter["owner_id"] == "k9" and letter["turns"] == 1 and "payload_hex" not in letter
    logged = " ".join(r.getMessage() for r in caplog.records)
    for text in (json.dumps(letter), logged):
        assert "Odin" not in text and data.hex() not in text and "4f64696e" not in text
    # the cursor did not move: the conversation's next request (same turns) learns it
    drop_fault(jc.settings.db_path)
    again = await run_with_retries(jc, LEARN, data)
    assert again is not None and [m.content for m in await facts_of(jc, "k9")] == [
        "User prefers Odin"
    ]


async def test_dead_letter_error_messages_are_redacted(make_jc, caplog):
    jc = await make_jc()
    data = encode_payload(payload(["my email is jane.doe@example.com"], owner="k3"))
    with caplog.at_level("ERROR", logger="mnemogate.jobs"):
        await dead_letter(jc, LEARN, data, "ValueError: bad row jane.doe@example.com", tries=1)
    (letter,) = await events(jc, "dead_letter")
    assert letter["error"] == "ValueError: bad row [email]"
    logged = " ".join(r.getMessage() for r in caplog.records)
    assert "jane.doe" not in json.dumps(letter) and "jane.doe" not in logged


async def test_permanent_failure_is_dead_lettered_at_once(make_jc):
    jc = await make_jc()
    assert await run_with_retries(jc, LEARN, b"\x93not-a-payload") is None
    (letter,) = await events(jc, "dead_letter")
    assert letter["permanent"] and letter["tries"] == 1
    assert "job_retries:learn" not in jc.stats


async def test_slow_job_times_out_and_is_retried_then_dead_lettered(make_jc, upstream):
    upstream.responder = llm_reply({"content": "[]"})
    upstream.delay_s = 0.6
    jc = await make_jc(**{**LLM, "llm_extractor_min_turns": 1}, job_timeout_s=0.2, job_max_tries=2)
    assert await run_with_retries(jc, LEARN, encode_payload(payload(["I prefer Nim"]))) is None
    (letter,) = await events(jc, "dead_letter")
    assert "timed out after 0.2s" in letter["error"] and letter["tries"] == 2


async def test_briefly_locked_database_is_waited_for_not_failed(make_jc):
    """A writer holding ``BEGIN EXCLUSIVE`` for 1 s: the store's busy timeout (10 s) absorbs it."""
    jc = await make_jc()
    locker = sqlean.connect(jc.settings.db_path, isolation_level=None, check_same_thread=False)
    locker.execute("BEGIN EXCLUSIVE")
    release = threading.Timer(1.0, lambda: locker.execute("COMMIT"))
    release.start()
    started = time.monotonic()
    result = await run_with_retries(jc, LEARN, encode_payload(payload(["I prefer Gleam"])))
    release.join()
    locker.close()
    assert result is not None and result["facts"] == 1
    assert time.monotonic() - started >= 0.9 and "job_retries:learn" not in jc.stats


def test_learn_result_keeps_memory_ids_for_embedding():
    assert "memory_ids" in LearnResult.__struct_fields__
