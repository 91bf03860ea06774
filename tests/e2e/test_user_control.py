"""User control through a live gateway (embedded mode, real SQLite + sqlite-vec, fake upstream).

Forget said in chat (and statements that are not forgets), REST and MCP forget, switches and
their response headers, end-user headers, cost headers and usage statistics, the per-key cap.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from typing import Any

import anyio
import httpx
import httpx2
import redis
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from tests.fakes.upstream import FakeUpstream
from tests.harness import TEST_QUEUE_NAME, GatewayHarness
from tests.lifecycle_seed import fts_rows, query
from tests.waiting import TEST_RECALL_TIMEOUT_MS

CHAT = "/v1/chat/completions"
GYM = "I go to the gym on Elm Street"
BERLIN = "I live in Berlin"
#: A loaded CI machine must not turn a slow first recall into a missing injection.
SLOW_OK = {"recall_timeout_ms": TEST_RECALL_TIMEOUT_MS}


def say(
    gw: GatewayHarness, secret: str, text: str, headers: dict[str, str] | None = None, **body: Any
) -> httpx.Response:
    resp = httpx.post(
        gw.base_url + CHAT,
        headers={"authorization": f"Bearer {secret}", **(headers or {})},
        json={"model": "m", "messages": [{"role": "user", "content": text}], **body},
        timeout=20,
    )
    return resp


def exchange(gw: GatewayHarness, secret: str, first: str, reply: str, last: str) -> httpx.Response:
    """One request holding a user turn, the assistant's reply and a second user turn."""
    return say(
        gw,
        secret,
        last,
        messages=[
            {"role": "user", "content": first},
            {"role": "assistant", "content": reply},
            {"role": "user", "content": last},
        ],
    )


def sent(upstream: FakeUpstream) -> str:
    return json.dumps(upstream.requests[-1]["messages"], ensure_ascii=False)


def contents(gw: GatewayHarness, owner: str) -> list[str]:
    return [m.content for m in gw.memories(owner)]


def vec_count(db: str, rowid: int) -> int:
    return int(query(db, "SELECT count(*) FROM vec_memories WHERE memory_id = ?", (rowid,))[0][0])


def wait(cond: Any, what: str, timeout_s: float = 20.0) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if cond():
            return
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


def teach(gw: GatewayHarness, secret: str, owner: str, *texts: str) -> None:
    for text in texts:
        assert say(gw, secret, text).status_code == 200
    gw.wait_for_memories(
        lambda ms: all(any(t.split()[-1] in m.content for m in ms) for t in texts), owner_id=owner
    )


def test_forget_in_chat_excludes_then_deletes_everywhere(gateway_factory, upstream) -> None:
    gw = gateway_factory(**SLOW_OK)
    key, secret = gw.create_key("f1")
    teach(gw, secret, key, GYM, BERLIN)
    gym = [m for m in gw.memories(key) if "Elm" in m.content]
    db = gw.settings.db_path
    wait(lambda: all(vec_count(db, m.id) == 1 for m in gym), "the gym memory's vector")
    # recall does find it for a question about the gym ...
    say(gw, secret, "Which gym do I go to?", {"x-mnemogate-no-learn": "1"})
    assert "Elm Street" in sent(upstream)

    resp = say(gw, secret, "Please stop remembering which gym I go to")
    assert resp.status_code == 200
    assert resp.headers["x-mnemogate-memory-forget"] == "queued"
    assert "Elm Street" not in sent(upstream)  # ... but not into the request asking to forget it
    wait(lambda: not any("Elm" in c for c in contents(gw, key)), "the forget job")
    assert all(fts_rows(db, m.id) == 0 and vec_count(db, m.id) == 0 for m in gym)
    # the forget message itself is never learned (a later message proves learning ran)
    teach(gw, secret, key, "I prefer green tea")
    left = contents(gw, key)
    assert any("Berlin" in c for c in left)
    assert not any("stop remembering" in c for c in left)


def test_a_forgotten_fact_and_its_turn_stay_out_of_the_forget_request(
    gateway_factory, upstream
) -> None:
    """The target names the fact ("preference" is in its key) but not the turn it was learned
    from ("I prefer walnut bread"): the turn, a copy of the fact, is left out too."""
    gw = gateway_factory(**SLOW_OK)
    key, secret = gw.create_key("f-copy")
    teach(gw, secret, key, "I prefer walnut bread")
    gw.wait_for_memories(lambda ms: len([m for m in ms if "walnut" in m.content]) >= 2, key)
    say(gw, secret, "What bread do I like?", {"x-mnemogate-no-learn": "1"})
    assert "walnut" in sent(upstream)  # both are recalled for a question about it ...
    resp = say(gw, secret, "forget my bread preference")
    assert resp.headers["x-mnemogate-memory-forget"] == "queued"
    assert "walnut" not in sent(upstream)  # ... and neither goes into the forget request
    wait(lambda: not any("walnut" in c for c in contents(gw, key)), "the forget job")


def test_a_forget_request_does_not_learn_what_it_forgets_from_its_own_history(
    gateway_factory, upstream
) -> None:
    """The statement and the forget of it arrive in one request: nothing of it is stored."""
    gw = gateway_factory(**SLOW_OK)
    key, secret = gw.create_key("f-history")
    resp = exchange(
        gw, secret, "I prefer walnut bread", "ok", "Actually, forget my bread preference"
    )
    assert resp.status_code == 200 and resp.headers["x-mnemogate-memory-forget"] == "queued"
    teach(gw, secret, key, "I prefer green tea")  # a later request's learning has run
    assert not any("walnut" in c for c in contents(gw, key)), contents(gw, key)


def test_a_forgotten_turn_leaves_its_neighbours_context(gateway_factory, upstream) -> None:
    """A forgotten turn's text is scrubbed from the context of the turns beside it: it no longer
    finds them for the forgotten topic, and is no longer kept at rest there."""
    gw = gateway_factory(**SLOW_OK)
    key, secret = gw.create_key("f-context")
    resp = exchange(
        gw,
        secret,
        "My sister Chiara lives in Valparaiso.",
        "Got it.",
        "I bought a kayak last summer.",
    )
    assert resp.status_code == 200
    gw.wait_for_memories(lambda ms: any("kayak" in m.content for m in ms), key)
    db = gw.settings.db_path
    holding = "SELECT count(*) FROM memories WHERE context LIKE '%kayak%'"
    assert query(db, holding)[0][0] >= 1  # the Chiara turn's context names the kayak
    say(gw, secret, "stop remembering my kayak")
    wait(lambda: not any("kayak" in c for c in contents(gw, key)), "the forget job")
    assert query(db, holding)[0][0] == 0
    assert any("Chiara" in c for c in contents(gw, key))  # the neighbour itself stays
    say(gw, secret, "When did I buy a kayak?", {"x-mnemogate-no-learn": "1"})
    assert "Chiara" not in sent(upstream)


def test_statements_and_dismissals_delete_nothing(gateway_factory, upstream) -> None:
    gw = gateway_factory(**SLOW_OK)
    key, secret = gw.create_key("f2")
    teach(gw, secret, key, GYM, BERLIN)
    for text in (
        "I forgot my umbrella on the train",
        "Forget about the report, let's plan the trip",
        "never mind that, what's the time in Tokyo?",
        "I always forget my passwords",
    ):
        resp = say(gw, secret, text)
        assert resp.status_code == 200 and "x-mnemogate-memory-forget" not in resp.headers
    gw.wait_for_memories(lambda ms: any("umbrella" in m.content for m in ms), owner_id=key)
    left = contents(gw, key)
    assert any("Elm" in c for c in left) and any("Berlin" in c for c in left)
    counts = query(gw.settings.db_path, "SELECT count(*) FROM memory_events WHERE kind='forget'")
    assert counts[0][0] == 0


def _api(gw: GatewayHarness, token: str) -> httpx.Client:
    return httpx.Client(base_url=gw.base_url, headers={"authorization": f"Bearer {token}"})


def test_rest_forget_by_query(gateway_factory) -> None:
    gw = gateway_factory(**SLOW_OK)
    key, secret = gw.create_key("rest")
    with _api(gw, secret) as api:
        for content in ("User's dentist is Dr. Smith", "User likes hiking"):
            assert api.post("/api/memory", json={"content": content}).status_code == 201
        dry = api.delete("/api/memory", params={"q": "my dentist", "dry_run": "true"}).json()
        assert dry["reason"] == "ok" and dry["dry_run"] and len(dry["deleted"]) == 1
        assert len(contents(gw, key)) == 2
        done = api.delete("/api/memory", params={"q": "please forget my dentist"}).json()
        assert done["reason"] == "ok" and [d["via"] for d in done["deleted"]] == ["match"]
        assert contents(gw, key) == ["User likes hiking"]
        none = api.delete("/api/memory", params={"q": "my dentist"}).json()
        assert none == {"reason": "no_match", "deleted": [], "dry_run": False}
        assert api.delete("/api/memory", params={"q": ""}).status_code == 400
        assert api.delete("/api/memory", params={"q": "x", "owner_id": "global"}).status_code == 403


def test_mcp_forget(gateway_factory) -> None:
    gw = gateway_factory(**SLOW_OK)
    key, secret = gw.create_key("mcp")
    with _api(gw, secret) as api:
        for content in ("User's dentist is Dr. Smith", "User likes hiking"):
            api.post("/api/memory", json={"content": content})

    async def go() -> Any:
        http = httpx2.AsyncClient(headers={"authorization": f"Bearer {secret}"}, timeout=30)
        async with Client(streamable_http_client(f"{gw.base_url}/mcp", http_client=http)) as c:
            result = await c.call_tool("memory_forget", {"query": "forget my dentist"})
            return result.structured_content

    out = anyio.run(go)
    assert out["reason"] == "ok" and len(out["deleted"]) == 1
    assert contents(gw, key) == ["User likes hiking"]


def test_switches_at_every_level_and_their_headers(gateway_factory, upstream, tmp_path) -> None:
    providers = tmp_path / "providers.toml"
    providers.write_text(
        f'[[providers]]\nname = "quiet"\nbase_url = "{upstream.base_url}"\nmemory = "learn"\n'
    )
    gw = gateway_factory(providers_file=str(providers), admin_token="admin-t", **SLOW_OK)
    key, secret = gw.create_key("sw")
    teach(gw, secret, key, BERLIN)
    r = say(gw, secret, "Where do I live?", {"x-mnemogate-no-learn": "1"})
    assert r.headers["x-mnemogate-memory-recall"] == "on"
    assert r.headers["x-mnemogate-memory-recall-by"] == "global"
    assert (r.headers["x-mnemogate-memory-learn"], r.headers["x-mnemogate-memory-learn-by"]) == (
        "off",
        "request",
    )
    assert int(r.headers["x-mnemogate-memory-tokens"]) > 0 and "Berlin" in sent(upstream)
    r = say(gw, secret, "Where do I live?", {"x-mnemogate-no-recall": "1"})
    assert r.headers["x-mnemogate-memory-tokens"] == "0" and "Berlin" not in sent(upstream)
    # provider level: recall off for "quiet/..." models
    r = httpx.post(
        gw.base_url + CHAT,
        headers={"authorization": f"Bearer {secret}"},
        json={"model": "quiet/m", "messages": [{"role": "user", "content": "Where do I live?"}]},
    )
    assert (r.headers["x-mnemogate-memory-recall"], r.headers["x-mnemogate-memory-recall-by"]) == (
        "off",
        "provider",
    )
    # key level, set through the REST API, beats the provider; the request beats the key
    with _api(gw, "admin-t") as admin:
        view = admin.patch(f"/api/keys/{key}", json={"recall": "on", "learn": "off"}).json()
        assert (view["recall"], view["learn"]) == ("on", "off")
        assert admin.patch("/api/keys/nope", json={"recall": "on"}).status_code == 404
        assert any(k["id"] == key for k in admin.get("/api/keys").json()["items"])
    with _api(gw, secret) as client:
        assert client.get("/api/keys").status_code == 403
    r = httpx.post(
        gw.base_url + CHAT,
        headers={"authorization": f"Bearer {secret}"},
        json={"model": "quiet/m", "messages": [{"role": "user", "content": "Where do I live?"}]},
    )
    assert r.headers["x-mnemogate-memory-recall-by"] == "key" and "Berlin" in sent(upstream)
    r = say(gw, secret, "Where do I live?", {"x-mnemogate-no-memory": "1"})
    assert r.headers["x-mnemogate-memory-recall-by"] == "request"
    assert r.headers["x-mnemogate-memory-learn-by"] == "request"


def test_open_webui_users_behind_one_key_have_separate_memories(gateway_factory, upstream) -> None:
    gw = gateway_factory(**SLOW_OK)
    key, secret = gw.create_key("owui")
    alice = {"X-OpenWebUI-User-Id": "alice-uuid"}
    assert say(gw, secret, BERLIN, alice).status_code == 200
    gw.wait_for_memories(lambda ms: any("Berlin" in m.content for m in ms), owner_id=key)
    assert {m.user_id for m in gw.memories(key)} == {"alice-uuid"}
    say(
        gw,
        secret,
        "Where do I live?",
        {"X-OpenWebUI-User-Id": "bob-uuid", "x-mnemogate-no-learn": "1"},
    )
    assert "Berlin" not in sent(upstream)
    say(gw, secret, "Where do I live?", {**alice, "x-mnemogate-no-learn": "1"})
    assert "Berlin" in sent(upstream)
    long_id = "u" * 257
    for headers, body in (({"X-OpenWebUI-User-Id": long_id}, {}), ({}, {"user": long_id})):
        r = say(gw, secret, "hi", headers, **body)
        assert r.status_code == 400 and r.json()["error"]["code"] == "invalid_request"


def test_usage_statistics_and_cli(gateway_factory, upstream) -> None:
    gw = gateway_factory(admin_token="admin-t", **SLOW_OK)
    key, secret = gw.create_key("usage")
    teach(gw, secret, key, BERLIN)
    r = say(gw, secret, "Where do I live?", {"x-mnemogate-no-learn": "1"})
    tokens = int(r.headers["x-mnemogate-memory-tokens"])
    assert tokens > 0
    streamed = say(gw, secret, "Where do I live?", {"x-mnemogate-no-learn": "1"}, stream=True)
    assert streamed.headers["content-type"].startswith("text/event-stream")
    assert int(streamed.headers["x-mnemogate-memory-tokens"]) == tokens
    say(gw, secret, "Please forget where I live")
    wait(lambda: not any("Berlin" in c for c in contents(gw, key)), "the forget")

    def today() -> dict[str, Any]:
        with _api(gw, secret) as api:
            items = api.get("/api/usage", params={"days": 1}).json()["items"]
        return items[0] if items else {}

    wait(lambda: today().get("requests_with_memory", 0) >= 1, "the access batch")
    row = today()
    assert row["key_id"] == key and row["tokens_injected"] >= tokens
    assert row["memories_injected"] >= 1 and row["facts_learned"] >= 1 and row["forgets"] == 1
    with _api(gw, secret) as api:
        assert api.get("/api/usage", params={"key_id": "key_other"}).status_code == 404
    out = subprocess.run(
        [sys.executable, "-m", "services.cli", "stats", "--key", key],
        env={"MNEMOGATE_DB_PATH": gw.settings.db_path, "PATH": ""},
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert "tokens_injected" in out.splitlines()[0] and key in out


def test_cli_keys_update_and_per_key_cap(gateway_factory, upstream) -> None:
    gw = gateway_factory(**SLOW_OK)
    key, secret = gw.create_key("cap")
    env = {"MNEMOGATE_DB_PATH": gw.settings.db_path, "PATH": ""}
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "services.cli",
            "keys",
            "update",
            key,
            "--recall",
            "off",
            "--learn",
            "on",
            "--max-memories",
            "3",
        ],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert "recall=off" in out and "learn=on" in out and "max_memories=3" in out
    r = say(gw, secret, "hello")
    assert (r.headers["x-mnemogate-memory-recall"], r.headers["x-mnemogate-memory-recall-by"]) == (
        "off",
        "key",
    )
    for i, city in enumerate(("Berlin", "Paris", "Madrid", "Rome", "Oslo")):
        assert say(gw, secret, f"Fact {i}: I live in {city}", session_id=str(i)).status_code == 200
    gw.wait_for_memories(lambda ms: any("Oslo" in m.content for m in ms), owner_id=key)
    wait(lambda: len(gw.memories(key)) <= 3, "the cap")
    assert any("Oslo" in c for c in contents(gw, key))  # the newest learning survived
    bad = subprocess.run(
        [sys.executable, "-m", "services.cli", "keys", "update", "key_nope", "--learn", "off"],
        env=env,
        capture_output=True,
        text=True,
    )
    assert bad.returncode == 1


def test_forget_wins_over_learning_queued_while_the_worker_was_stopped(
    gateway_factory, upstream, redis_url, worker_process
) -> None:
    """Worker mode: learn jobs queued before the forget drain after it (real arq worker started
    only once every job is queued); the forgotten content never appears, the rest is learned."""
    gw = gateway_factory(redis_url=redis_url, **SLOW_OK)
    key, secret = gw.create_key("arq")
    for text in (GYM, BERLIN, "Please stop remembering which gym I go to"):
        assert say(gw, secret, text).status_code == 200
    queued = redis.Redis.from_url(redis_url)
    wait(
        lambda: int(queued.zcard(TEST_QUEUE_NAME)) >= 4,  # type: ignore[arg-type]
        "3 learn jobs and 1 forget job queued",
    )
    assert gw.memories(key) == []  # no worker yet: nothing learned, nothing forgotten
    proc = worker_process(gw.settings.db_path, "--burst")
    assert proc.wait(timeout=120) == 0
    left = contents(gw, key)
    assert any("Berlin" in c for c in left)
    assert not any("Elm" in c or "stop remembering" in c for c in left)
    events = query(gw.settings.db_path, "SELECT count(*) FROM memory_events WHERE kind='forget'")
    assert events[0][0] == 1
