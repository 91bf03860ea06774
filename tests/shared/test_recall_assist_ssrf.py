"""The recall helpers' calls go through the connect-time SSRF guard (shared.outbound_guard).

The reranker (``rerank_url``) and the query-rewrite provider are configured URLs like the
embedding endpoint: a name that resolves to a metadata or link-local address is refused when the
helper connects, and the helper degrades (fused order / original query) without sending a byte
there. The runtime's client, the one the gateway hands to the helpers, is the guarded one.
Real servers on 127.0.0.1; a DNS stand-in (this machine has no DNS) maps names to addresses.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from urllib.parse import urlsplit

import httpx
import msgspec
import pytest

from shared.outbound_guard import Resolve, guarded_http_client
from shared.query_rewrite import REWRITE_ERROR
from shared.recall_assist import RecallAssist, assist_for, reranked_ids, search_query
from shared.rerank import RERANK_ERROR
from shared.runtime import in_process_queue, open_runtime
from shared.sensitive_patterns import build_detector
from shared.settings import Settings, load_providers, load_settings
from tests.fakes.rerank import FakeReranker
from tests.fakes.upstream import FakeUpstream

DOCS = {1: "User likes hiking in the Alps", 2: "My dog is called Rex"}
DNS = {"helper.test": ["127.0.0.1"], "rebind.test": ["169.254.169.254"]}
MESSAGES = [{"role": "user", "content": "What did I decide about it?"}]


def resolve_from(table: dict[str, list[str]]) -> Resolve:
    async def resolve(host: str, port: int) -> list[str]:
        if host not in table:
            raise OSError(f"unknown host {host}")
        return table[host]

    return resolve


def port_of(url: str) -> int:
    port = urlsplit(url).port
    assert port is not None
    return port


@pytest.fixture
async def guarded_http() -> AsyncIterator[httpx.AsyncClient]:
    async with guarded_http_client(timeout=httpx.Timeout(10.0), resolve=resolve_from(DNS)) as http:
        yield http


def assist_with(http: httpx.AsyncClient, settings: Settings) -> RecallAssist:
    assist = assist_for(settings, http, load_providers(settings, {}), build_detector(""))
    assert assist is not None
    return assist


@pytest.mark.parametrize(("host", "allowed"), [("helper.test", True), ("rebind.test", False)])
async def test_rerank_connects_only_to_vetted_addresses(
    guarded_http: httpx.AsyncClient, reranker: FakeReranker, host: str, allowed: bool
) -> None:
    reranker.reset()
    url = f"http://{host}:{port_of(reranker.url)}/v1/rerank"
    settings = load_settings({}, rerank_url=url, rerank_model="rr", recall_timeout_ms=10_000)
    order, degraded = await reranked_ids(
        assist_with(guarded_http, settings), settings, "dog", [1, 2], DOCS
    )
    if allowed:
        assert degraded is None and order == [2, 1] and len(reranker.requests) == 1
    else:
        assert degraded == RERANK_ERROR and order == [1, 2] and not reranker.requests


@pytest.mark.parametrize(("host", "allowed"), [("helper.test", True), ("rebind.test", False)])
async def test_query_rewrite_connects_only_to_vetted_addresses(
    guarded_http: httpx.AsyncClient, upstream: FakeUpstream, host: str, allowed: bool
) -> None:
    upstream.reply_text = "the marketing plan decision"
    base = f"http://{host}:{port_of(upstream.base_url)}/v1"
    settings = load_settings(
        {},
        upstream_base_url=base,
        query_rewrite_provider="default",
        query_rewrite_model="rw",
        recall_timeout_ms=10_000,
    )
    query = MESSAGES[-1]["content"]
    text, degraded = await search_query(
        assist_with(guarded_http, settings), settings, MESSAGES, query
    )
    if allowed:
        assert degraded is None and "marketing plan" in text and upstream.requests
    else:
        assert degraded == REWRITE_ERROR and text == query and not upstream.requests


async def test_the_runtime_client_given_to_the_helpers_is_guarded(
    tmp_path: Path, reranker: FakeReranker
) -> None:
    reranker.reset()
    # a literal link-local address: refused by the guard before any connection is tried
    settings = load_settings(
        {},
        db_path=str(tmp_path / "rt.db"),
        embedding_source="none",
        rerank_url="http://169.254.169.254/v1/rerank",
        recall_timeout_ms=10_000,
    )
    runtime = await open_runtime(settings, in_process_queue)
    try:
        with pytest.raises(httpx.ConnectError, match="refused"):
            await runtime.jobs.http.post(settings.rerank_url, content=b"{}")
        assist = assist_with(runtime.jobs.http, settings)
        order, degraded = await reranked_ids(assist, settings, "dog", [1, 2], DOCS)
        assert degraded == RERANK_ERROR and order == [1, 2]
        # the same client reaches an allowed reranker
        allowed = msgspec.structs.replace(settings, rerank_url=reranker.url)
        order, degraded = await reranked_ids(assist, allowed, "dog", [1, 2], DOCS)
        assert degraded is None and order == [2, 1]
    finally:
        await runtime.close()
