"""Optional recall helpers through a real gateway: a rerank endpoint (fake, common rerank API on
127.0.0.1) reorders the fused candidates and a failure falls back to the fused order with the
degraded header; an LLM query rewrite through the configured provider resolves a follow-up and a
failure searches the original message."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from shared.models import NewMemory
from shared.query_rewrite import REWRITE_PROMPT
from shared.store import Store
from tests.e2e.test_recall_echo_cases import injected_block, send, user
from tests.fakes.rerank import FakeReranker
from tests.fakes.upstream import FakeUpstream
from tests.harness import GatewayHarness
from tests.waiting import TEST_RECALL_TIMEOUT_MS

MEMORIES = [
    "User keeps a dog at home",
    "User walks the dog called Rex every morning in the park",
    "User's cat sleeps on the dog bed",
]


@pytest.fixture
def reranker() -> Iterator[FakeReranker]:
    server = FakeReranker().start()
    yield server
    server.stop()


def seed(gw: GatewayHarness, owner: str, texts: list[str]) -> None:
    async def go(store: Store) -> None:
        await store.writes.upsert_many([NewMemory(owner_id=owner, content=t) for t in texts])

    gw.with_store(go)


def block_lines(upstream: FakeUpstream) -> list[str]:
    return [line for line in injected_block(upstream).splitlines() if line.startswith("- ")]


def ask(gw: GatewayHarness, secret: str, messages: list[dict[str, str]]) -> httpx.Response:
    return send(gw, secret, messages, session="q")


def test_rerank_orders_the_injected_memories(gateway_factory, upstream, reranker):
    gw = gateway_factory(
        retrieval_strategy="exact",
        rerank_url=reranker.url,
        rerank_model="rr",
        recall_timeout_ms=TEST_RECALL_TIMEOUT_MS,
        rerank_timeout_ms=8000,
    )
    key_id, secret = gw.create_key()
    seed(gw, key_id, MEMORIES)
    resp = ask(gw, secret, [user("Tell me about the dog")])
    assert "x-mnemogate-memory-degraded" not in resp.headers
    fused = block_lines(upstream)
    assert len(fused) == 3

    # a reranker preferring the longest text, then the shortest: the block follows it each time
    for sign in (1.0, -1.0):
        reranker.score = lambda _query, document, s=sign: s * len(document)
        upstream.requests.clear()
        ask(gw, secret, [user("Tell me about the dog")])
        body = reranker.requests[-1]
        assert body["query"] == "Tell me about the dog" and len(body["documents"]) == 3
        lines = block_lines(upstream)
        assert lines == sorted(fused, key=lambda line: -sign * len(line))


@pytest.mark.parametrize("fault", ["slow", "down"])
def test_rerank_failure_keeps_the_fused_order(gateway_factory, upstream, reranker, fault):
    gw = gateway_factory(
        retrieval_strategy="exact",
        rerank_url=reranker.url,
        recall_timeout_ms=TEST_RECALL_TIMEOUT_MS,
        # a timeout the slow reranker always misses; room for a loaded machine otherwise
        rerank_timeout_ms=300 if fault == "slow" else 8000,
    )
    if fault == "slow":
        reranker.delay_s = 5.0
    else:
        reranker.fail_status = 500
    key_id, secret = gw.create_key()
    seed(gw, key_id, MEMORIES)
    resp = ask(gw, secret, [user("Tell me about the dog")])
    expected = "rerank_timeout" if fault == "slow" else "rerank_error"
    assert resp.headers["x-mnemogate-memory-degraded"] == expected
    assert int(resp.headers["x-mnemogate-memory-injected"]) >= 1
    assert any("Rex" in line for line in block_lines(upstream))


FOLLOW_UP = [
    user("Let's talk about the product launch."),
    {"role": "assistant", "content": "Sure, what about it?"},
    user("When is it?"),
]


def rewriting(rewrite: str | None, status: int = 200) -> Any:
    """A fake-provider responder: rewrite requests get ``rewrite`` (or ``status``), chats "OK"."""

    def respond(body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        if body["messages"][0].get("content") == REWRITE_PROMPT:
            if status != 200:
                return status, {"error": {"message": "down", "type": "server_error"}}
            message = {"role": "assistant", "content": rewrite}
        else:
            message = {"role": "assistant", "content": "OK"}
        return 200, {"choices": [{"index": 0, "message": message, "finish_reason": "stop"}]}

    return respond


def rewrite_gateway(gateway_factory: Any) -> GatewayHarness:
    return gateway_factory(
        retrieval_strategy="exact",
        query_rewrite_provider="default",
        query_rewrite_model="rw",
        recall_timeout_ms=TEST_RECALL_TIMEOUT_MS,
        query_rewrite_timeout_ms=8000,
    )


def test_rewrite_resolves_a_follow_up(gateway_factory, upstream):
    gw = rewrite_gateway(gateway_factory)
    key_id, secret = gw.create_key()
    seed(gw, key_id, ["The product launch moved to March", "User likes tea"])
    upstream.responder = rewriting("product launch date")
    resp = ask(gw, secret, FOLLOW_UP)
    assert "x-mnemogate-memory-degraded" not in resp.headers
    rewrite_call = next(b for b in upstream.requests if b["model"] == "rw")
    assert "Let's talk about the product launch." in rewrite_call["messages"][1]["content"]
    assert any("launch moved to March" in line for line in block_lines(upstream))
    assert not any("tea" in line for line in block_lines(upstream))


def test_rewrite_failure_searches_the_original(gateway_factory, upstream):
    gw = rewrite_gateway(gateway_factory)
    key_id, secret = gw.create_key()
    seed(gw, key_id, ["The product launch moved to March"])
    upstream.responder = rewriting(None, status=500)
    resp = ask(gw, secret, [user("When is the launch?")])
    assert resp.headers["x-mnemogate-memory-degraded"] == "rewrite_error"
    assert any("launch moved to March" in line for line in block_lines(upstream))
