"""End to end through the official ``openai`` client: a real gateway on 127.0.0.1, a fake
upstream that is a real HTTP server, real SQLite, and (second variant) real Redis + arq worker."""

from __future__ import annotations

import json
from typing import Any

import httpx
import openai
import pytest

from tests.fakes.upstream import FakeUpstream
from tests.harness import GatewayHarness

TEACH = "My name is Alice and I live in Berlin"
ASK = "Where do I live, and what is my name?"


def client_for(gw: GatewayHarness, secret: str) -> openai.OpenAI:
    return openai.OpenAI(base_url=gw.base_url + "/v1", api_key=secret, max_retries=0)


def chat(
    client: openai.OpenAI, text: str, *, stream: bool, session: str, user: str | None = None
) -> str:
    extra = {"x-mnemogate-session-id": session}
    kwargs: dict[str, Any] = {"user": user} if user else {}
    if stream:
        chunks = client.chat.completions.create(
            model="fake-model",
            messages=[{"role": "user", "content": text}],
            stream=True,
            extra_headers=extra,
            **kwargs,
        )
        return "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    resp = client.chat.completions.create(
        model="fake-model",
        messages=[{"role": "user", "content": text}],
        extra_headers=extra,
        **kwargs,
    )
    return resp.choices[0].message.content or ""


def upstream_text(body: dict) -> str:
    return json.dumps(body["messages"], ensure_ascii=False)


def teach_and_recall(gw: GatewayHarness, upstream: FakeUpstream, *, stream: bool) -> None:
    key_id, secret = gw.create_key("alice-app")
    client = client_for(gw, secret)
    upstream.reply_text = "Nice to meet you, Alice from Berlin"
    assert chat(client, TEACH, stream=stream, session="s1") == upstream.reply_text
    memories = gw.wait_for_memories(
        lambda ms: (
            any("Berlin" in m.content and m.category != "turn" for m in ms)
            and any("Alice" in m.content and m.category != "turn" for m in ms)
        ),
        owner_id=key_id,
    )
    assert all(m.owner_id == key_id for m in memories)
    assert not any("Nice to meet you" in m.content for m in memories)  # assistant text not stored

    upstream.requests.clear()
    chat(client, ASK, stream=stream, session="s2")
    sent = upstream_text(upstream.requests[-1])
    assert "Berlin" in sent and "Alice" in sent
    # the user's own message reached the upstream unchanged, as the last message
    assert upstream.requests[-1]["messages"][-1] == {"role": "user", "content": ASK}


@pytest.mark.parametrize("stream", [False, True], ids=["json", "sse"])
def test_embedded_mode_learns_then_recalls(gateway_factory, upstream, stream):
    gw = gateway_factory()
    teach_and_recall(gw, upstream, stream=stream)


@pytest.mark.parametrize("stream", [False, True], ids=["json", "sse"])
def test_worker_mode_learns_then_recalls(
    gateway_factory, upstream, redis_url, worker_process, tmp_path, stream
):
    db = str(tmp_path / "worker-mode.db")
    gw = gateway_factory(db_path=db, redis_url=redis_url)
    gw.with_store(lambda store: _noop())  # migrate (serve does not migrate in worker mode)
    worker_process(db)
    teach_and_recall(gw, upstream, stream=stream)


async def _noop() -> None:
    return None


def test_headers_report_injection(gateway, upstream):
    key_id, secret = gateway.create_key()
    client = client_for(gateway, secret)
    chat(client, TEACH, stream=False, session="a")
    # embedded too: the vector leg answers only once the memory has its vector
    gateway.wait_for_memories(
        lambda ms: any("Alice" in m.content and not m.needs_reindex for m in ms), owner_id=key_id
    )
    resp = httpx.post(
        gateway.base_url + "/v1/chat/completions",
        headers={"authorization": f"Bearer {secret}"},
        json={"model": "fake-model", "messages": [{"role": "user", "content": "What is my name?"}]},
    )
    assert resp.status_code == 200
    assert int(resp.headers["x-mnemogate-memory-injected"]) >= 1
    assert resp.headers["x-mnemogate-memory-tier"] == "hybrid"  # default strategy
    # memory activity never appears in the assistant content
    assert resp.json()["choices"][0]["message"]["content"] == "OK"


def test_no_memory_header_skips_recall_and_learning(gateway, upstream):
    key_id, secret = gateway.create_key()
    client = client_for(gateway, secret)
    chat(client, TEACH, stream=False, session="a")
    gateway.wait_for_memories(lambda ms: any("Alice" in m.content for m in ms), owner_id=key_id)
    before = len(gateway.memories(key_id))
    for header in ("x-mnemogate-no-memory", "x-omniroute-no-memory"):
        upstream.requests.clear()
        resp = httpx.post(
            gateway.base_url + "/v1/chat/completions",
            headers={"authorization": f"Bearer {secret}", header: "true"},
            json={
                "model": "fake-model",
                "messages": [{"role": "user", "content": "What is my name? I love sailing."}],
            },
        )
        assert resp.status_code == 200
        assert resp.headers["x-mnemogate-memory-injected"] == "0"
        assert "Alice" not in upstream_text(upstream.requests[-1])
    # a later learning request proves the queue ran; the opted-out ones left nothing
    chat(client, "I prefer TypeScript", stream=False, session="b")
    items = gateway.wait_for_memories(
        lambda ms: any("TypeScript" in m.content for m in ms), owner_id=key_id
    )
    assert not any("sailing" in m.content for m in items)
    assert len(items) > before
