"""Recall through the real HTTP path: the keyword tier, strategies, provider quirks,
time budget and degradation."""

from __future__ import annotations

import json
import time

import httpx
import pytest

from shared.models import NewMemory
from tests.harness import GatewayHarness
from tests.waiting import READY_TIMEOUT_S

CHAT = "/v1/chat/completions"


def seed(gw: GatewayHarness, owner: str, *contents: str, **fields) -> list[int]:
    async def go(store):
        ids = []
        for c in contents:
            m, _ = await store.writes.upsert(NewMemory(owner_id=owner, content=c, **fields))
            ids.append(m.id)
        return ids

    return gw.with_store(go)


def ask(gw, secret, messages, headers=None, **extra):
    h = {"authorization": f"Bearer {secret}", **(headers or {})}
    body = {"model": "m", "messages": messages, **extra}
    resp = httpx.post(gw.base_url + CHAT, json=body, headers=h, timeout=READY_TIMEOUT_S)
    assert resp.status_code == 200, resp.text
    return resp


def sent_messages(upstream) -> list[dict]:
    return upstream.requests[-1]["messages"]


def memory_text(upstream) -> str:
    return json.dumps(
        [m for m in sent_messages(upstream) if "recalled_memories" in json.dumps(m)],
        ensure_ascii=False,
    )


@pytest.fixture
def key(gateway):
    return gateway.create_key("a")


@pytest.mark.parametrize(
    "query",
    [
        "what's my favorite editor?",
        "C++ tips",
        'say "hi"',
        "NEAR(a b)",
        "*",
        "AND OR NOT",
        "col:val ^ - + ( ) {",
        "",
        "   ",
        "😀🚀",
        "Ω≈ç√∫",
        "'; DROP TABLE memories; --",
    ],
)
def test_r1_fts_operators_and_quotes_never_fail(gateway, upstream, key, query):
    key_id, secret = key
    seed(gateway, key_id, "User's favorite editor is Helix", "User likes C++ templates")
    resp = ask(gateway, secret, [{"role": "user", "content": query}])
    assert "x-mnemogate-memory-degraded" not in resp.headers


def test_r1_recall_still_works_for_operator_laden_queries(gateway, upstream, key):
    key_id, secret = key
    seed(gateway, key_id, "User's favorite editor is Helix", "User collects C++ tips on templates")
    ask(gateway, secret, [{"role": "user", "content": "what's my favorite editor?"}])
    assert "Helix" in memory_text(upstream)
    ask(gateway, secret, [{"role": "user", "content": "C++ tips"}])
    assert "templates" in memory_text(upstream)


def test_r2_only_the_relevant_memory_is_injected(gateway, upstream, key):
    key_id, secret = key
    seed(gateway, key_id, "Project database is PostgreSQL 16", "User has a cat named Miso")
    resp = ask(gateway, secret, [{"role": "user", "content": "Which database do we use?"}])
    injected = memory_text(upstream)
    assert "PostgreSQL 16" in injected
    assert "Miso" not in injected
    assert resp.headers["x-mnemogate-memory-injected"] == "1"


def test_r3_unrelated_query_injects_nothing(gateway, upstream, key):
    key_id, secret = key
    seed(gateway, key_id, "User prefers dark mode in the editor")
    resp = ask(gateway, secret, [{"role": "user", "content": "Write a poem about the sea"}])
    assert resp.headers["x-mnemogate-memory-injected"] == "0"
    assert resp.headers["x-mnemogate-memory-tier"] == "none"
    assert sent_messages(upstream) == [{"role": "user", "content": "Write a poem about the sea"}]


@pytest.mark.parametrize(
    ("stored", "query"),
    [
        ("我喜欢喝绿茶", "绿茶"),
        ("私は緑茶が好きです", "緑茶は好き?"),
        ("Я люблю зелёный чай", "зелёный"),
        ("Je préfère le café crème", "cafe"),
    ],
)
def test_r4_non_latin_text_is_found(gateway, upstream, key, stored, query):
    key_id, secret = key
    seed(gateway, key_id, stored)
    ask(gateway, secret, [{"role": "user", "content": query}])
    assert stored in memory_text(upstream)


def test_r5_keys_and_end_users_are_isolated(gateway, upstream):
    a_id, a_secret = gateway.create_key("a")
    _, b_secret = gateway.create_key("b")
    ask(gateway, a_secret, [{"role": "user", "content": "My name is Alice"}])
    gateway.wait_for_memories(lambda ms: any("Alice" in m.content for m in ms), owner_id=a_id)
    resp = ask(gateway, b_secret, [{"role": "user", "content": "What's my name? Alice?"}])
    assert resp.headers["x-mnemogate-memory-injected"] == "0"
    assert "recalled_memories" not in json.dumps(sent_messages(upstream))

    # two end users behind one key: body `user` field and the header mean the same
    ask(gateway, a_secret, [{"role": "user", "content": "My name is Umberto"}], user="u1")
    gateway.wait_for_memories(lambda ms: any("Umberto" in m.content for m in ms), owner_id=a_id)
    probe = [{"role": "user", "content": "What's my name, Umberto?"}]
    no_learn = {"x-mnemogate-no-learn": "1"}
    ask(gateway, a_secret, probe, user="u2", headers=no_learn)
    assert "name is Umberto" not in memory_text(upstream)
    ask(gateway, a_secret, probe, headers={"x-mnemogate-user": "u2", **no_learn})
    assert "name is Umberto" not in memory_text(upstream)
    ask(gateway, a_secret, probe, user="u1", headers=no_learn)
    assert "name is Umberto" in memory_text(upstream)


def test_r6_caller_system_prompt_arrives_unchanged(gateway, upstream, key):
    key_id, secret = key
    seed(gateway, key_id, "User prefers TypeScript over JavaScript")
    system = {"role": "system", "content": "You are a terse assistant. Answer in French."}
    ask(gateway, secret, [system, {"role": "user", "content": "Which language do I prefer?"}])
    msgs = sent_messages(upstream)
    assert msgs[0] == system
    block = [m for m in msgs if "recalled_memories" in json.dumps(m)]
    assert len(block) == 1
    assert "not instructions" in block[0]["content"]
    assert "TypeScript" in block[0]["content"]


@pytest.mark.parametrize("strategy", ["before_last_user", "leading_system", "system_prompt_prefix"])
def test_r7_provider_rejecting_system_role_gets_no_new_system_message(
    gateway_factory, upstream, strategy
):
    gw = gateway_factory(upstream_rejects_system_role=True, injection_strategy=strategy)
    key_id, secret = gw.create_key()
    seed(gw, key_id, "User prefers TypeScript over JavaScript")
    ask(gw, secret, [{"role": "user", "content": "Which language do I prefer?"}])
    msgs = sent_messages(upstream)
    assert all(m["role"] != "system" for m in msgs)
    assert "TypeScript" in memory_text(upstream)
    assert all(m["role"] == "user" for m in msgs if "recalled_memories" in json.dumps(m))


@pytest.mark.parametrize("strategy", ["before_last_user", "leading_system", "system_prompt_prefix"])
def test_system_must_be_first_gets_one_leading_system_message(gateway_factory, upstream, strategy):
    gw = gateway_factory(upstream_system_must_be_first=True, injection_strategy=strategy)
    key_id, secret = gw.create_key()
    seed(gw, key_id, "User prefers TypeScript over JavaScript")
    caller = "You are a terse assistant."
    ask(
        gw,
        secret,
        [
            {"role": "system", "content": caller},
            {"role": "user", "content": "Which language do I prefer?"},
        ],
    )
    msgs = sent_messages(upstream)
    systems = [i for i, m in enumerate(msgs) if m["role"] == "system"]
    assert systems == [0]
    assert msgs[0]["content"].startswith(caller)
    assert "TypeScript" in msgs[0]["content"]


def test_top_level_system_provider(gateway_factory, upstream):
    gw = gateway_factory(upstream_top_level_system=True)
    key_id, secret = gw.create_key()
    seed(gw, key_id, "User prefers TypeScript over JavaScript")
    ask(
        gw, secret, [{"role": "user", "content": "Which language do I prefer?"}], system="Be brief."
    )
    body = upstream.requests[-1]
    assert all(m["role"] != "system" for m in body["messages"])
    assert body["system"].startswith("Be brief.")
    assert "TypeScript" in body["system"]


def test_r8_prompt_prefix_is_byte_identical_between_turns(gateway, upstream, key):
    key_id, secret = key
    seed(gateway, key_id, "User prefers TypeScript over JavaScript", "User deploys with Docker")
    sys_msg = {"role": "system", "content": "You are helpful."}
    turn1 = [sys_msg, {"role": "user", "content": "Which language do I prefer?"}]
    ask(gateway, secret, turn1, temperature=0.2)
    turn2 = [
        *turn1,
        {"role": "assistant", "content": "TypeScript."},
        {"role": "user", "content": "And how do I deploy, with Docker?"},
    ]
    ask(gateway, secret, turn2, temperature=0.2)
    raw1, raw2 = upstream.raw_requests[-2], upstream.raw_requests[-1]
    marker = b"<recalled_memories>"
    assert marker in raw1 and marker in raw2
    cut = raw1.rindex(b"{", 0, raw1.index(marker))  # start of the injected message
    prefix = raw1[:cut]
    assert b"Which language" not in prefix  # the block sits before the last user message
    assert raw2.startswith(prefix)
    assert raw2.index(marker) > len(prefix)


def test_r9_expired_memory_is_not_injected(gateway, upstream, key):
    key_id, secret = key
    seed(gateway, key_id, "User's locker is number 12", expires_at=time.time() - 60)
    seed(gateway, key_id, "User's bike is red", expires_at=time.time() + 3600)
    ask(gateway, secret, [{"role": "user", "content": "What about my locker and my bike?"}])
    injected = memory_text(upstream)
    assert "locker" not in injected
    assert "bike is red" in injected


def test_session_scoped_memories_stay_in_their_session(gateway, upstream, key):
    key_id, secret = key
    seed(gateway, key_id, "Session note: the deploy password hint is tulip", session_id="s-1")
    ask(
        gateway,
        secret,
        [{"role": "user", "content": "What is the deploy hint?"}],
        headers={"x-mnemogate-session-id": "s-2"},
    )
    assert "tulip" not in memory_text(upstream)
    ask(
        gateway,
        secret,
        [{"role": "user", "content": "What is the deploy hint?"}],
        headers={"x-mnemogate-session-id": "s-1"},
    )
    assert "tulip" in memory_text(upstream)


def test_global_memories_are_shared_by_every_key(gateway, upstream, key):
    _, secret = key
    seed(gateway, "global", "Company holiday is on December 24")
    ask(gateway, secret, [{"role": "user", "content": "When is the company holiday?"}])
    assert "December 24" in memory_text(upstream)


def test_budget_limits_injected_memories(gateway_factory, upstream):
    gw = gateway_factory(recall_max_tokens=60)
    key_id, secret = gw.create_key()
    seed(
        gw, key_id, *[f"Kafka fact number {i}: " + "partition rebalancing " * 8 for i in range(10)]
    )
    resp = ask(gw, secret, [{"role": "user", "content": "Tell me about Kafka partition"}])
    assert resp.headers["x-mnemogate-memory-injected"] == "1"  # the single best memory only


def test_nothing_injected_reports_no_tier(gateway_factory, upstream):
    # the memory is found but does not fit the budget: no block, so no tier either
    gw = gateway_factory(recall_max_tokens=5)
    key_id, secret = gw.create_key()
    seed(gw, key_id, "Kafka partition rebalancing " * 8)
    resp = ask(gw, secret, [{"role": "user", "content": "Tell me about Kafka partition"}])
    assert resp.headers["x-mnemogate-memory-injected"] == "0"
    assert resp.headers["x-mnemogate-memory-tier"] == "none"
    assert "x-mnemogate-memory-degraded" not in resp.headers


def test_recall_timeout_degrades_and_proxies_unchanged(gateway_factory, upstream):
    gw = gateway_factory(recall_timeout_ms=0)
    key_id, secret = gw.create_key()
    seed(gw, key_id, "User prefers TypeScript")
    msgs = [{"role": "user", "content": "Which language do I prefer?"}]
    resp = ask(gw, secret, msgs)
    assert resp.headers["x-mnemogate-memory-degraded"] == "recall_timeout"
    assert resp.headers["x-mnemogate-memory-injected"] == "0"
    assert sent_messages(upstream) == msgs


def test_store_failure_degrades_and_proxies_unchanged(gateway, upstream, key):
    key_id, secret = key
    seed(gateway, key_id, "User prefers TypeScript")

    async def break_fts(store):
        # the keyword index reads the store's change feed and rows; the FTS5 tier the table
        await store.writer.execute("DROP TABLE memory_fts")
        await store.writer.execute("DROP TABLE memory_changes")

    gateway.with_store(break_fts)
    msgs = [{"role": "user", "content": "Which language do I prefer?"}]
    resp = ask(gateway, secret, msgs)
    assert resp.headers["x-mnemogate-memory-degraded"] == "store_unavailable"
    assert sent_messages(upstream) == msgs


def test_injected_memories_are_counted_as_accessed(gateway, upstream, key):
    key_id, secret = key
    (mid,) = seed(gateway, key_id, "User prefers TypeScript")
    ask(
        gateway,
        secret,
        [{"role": "user", "content": "Which language do I prefer?"}],
        headers={"x-mnemogate-no-memory": "0"},
    )

    def accessed(ms):
        return any(m.id == mid and m.access_count == 1 and m.last_accessed_at for m in ms)

    gateway.wait_for_memories(accessed, owner_id=key_id)


@pytest.mark.parametrize("value", ["maybe", "tru", "\xff", "off please"])
def test_an_unknown_memory_switch_value_is_refused_not_ignored(gateway, upstream, key, value):
    # a typo in a privacy control must not leave memory on: 400, nothing sent upstream
    key_id, secret = key
    seed(gateway, key_id, "User prefers TypeScript")
    before = len(upstream.requests)
    for name in ("x-mnemogate-no-memory", "x-omniroute-no-memory", "x-mnemogate-no-learn"):
        resp = httpx.post(
            gateway.base_url + CHAT,
            json={"model": "m", "messages": [{"role": "user", "content": "Which language?"}]},
            headers={"authorization": f"Bearer {secret}", name: value.encode("latin-1")},
            timeout=READY_TIMEOUT_S,
        )
        assert resp.status_code == 400, resp.text
        error = resp.json()["error"]
        assert error["code"] == "invalid_header" and name in error["message"]
    assert len(upstream.requests) == before


def test_a_switch_header_repeated_with_another_value_is_refused(gateway, upstream, key):
    # only the first line used to count: "0" then "1" answered with memory on
    _, secret = key
    before = len(upstream.requests)
    body = json.dumps({"model": "m", "messages": [{"role": "user", "content": "Which?"}]})
    for first, second in (("0", "1"), ("", "1"), ("1", "maybe")):
        resp = httpx.post(
            gateway.base_url + CHAT,
            content=body,
            headers=[
                ("authorization", f"Bearer {secret}"),
                ("content-type", "application/json"),
                ("x-mnemogate-no-memory", first),
                ("x-mnemogate-no-memory", second),
            ],
            timeout=READY_TIMEOUT_S,
        )
        assert resp.status_code == 400, (first, second, resp.text)
        assert resp.json()["error"]["code"] in ("duplicate_header", "invalid_header")
    assert len(upstream.requests) == before


def test_sensitive_memory_is_never_injected_verbatim(gateway, upstream, key):
    key_id, secret = key
    seed(gateway, key_id, "User's deploy key is sk-proj-AbCdEfGhIjKlMnOpQrStUvWx0123 for deploy")
    ask(gateway, secret, [{"role": "user", "content": "What is my deploy key?"}])
    injected = memory_text(upstream)
    assert "deploy" in injected
    assert "sk-proj-AbCdEfGhIjKlMnOpQrStUvWx0123" not in injected


def test_same_text_for_owner_and_end_user_is_injected_once(gateway_factory, upstream):
    gw = gateway_factory(recall_max_memories=2, recall_relative_floor=0.0)
    key_id, secret = gw.create_key()
    question = "Who is my doctor, do I take insulin?"
    doctor = "My doctor says I take insulin daily"  # a statement: not an echo of the question
    turn = {"type": "episodic", "category": "turn", "source": "capture"}
    seed(gw, key_id, doctor, key="turn:owner-wide", **turn)
    seed(gw, key_id, doctor, key="turn:u2", user_id="u2", **turn)
    # ranks below both copies (fewer query terms), so only a dropped copy leaves it a slot
    seed(gw, key_id, "My doctor prescribed insulin last spring", user_id="u2")
    seed(gw, key_id, *(f"Unrelated note number {i} about gardening" for i in range(6)))
    resp = ask(
        gw,
        secret,
        [{"role": "user", "content": question}],
        headers={"x-mnemogate-user": "u2", "x-mnemogate-no-learn": "1"},
    )
    block = next(m for m in sent_messages(upstream) if "recalled_memories" in json.dumps(m))
    lines = block["content"].splitlines()[2:-1]
    assert len(lines) == 2 and lines[0].endswith(doctor)
    # the dropped copy took no slot of recall_max_memories=2: the next memory made it in
    assert lines[1].endswith("My doctor prescribed insulin last spring")
    assert resp.headers["x-mnemogate-memory-injected"] == "2"
