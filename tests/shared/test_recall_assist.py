"""Optional recall helpers against real HTTP fakes: the rerank endpoint (common rerank API) and
the query rewrite through an OpenAI-compatible provider; both fall back on every failure."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from shared.query_rewrite import REWRITE_ERROR, REWRITE_TIMEOUT, search_text
from shared.recall_assist import RecallAssist, history_of, reranked_ids, search_query
from shared.rerank import RERANK_ERROR, RERANK_TIMEOUT, parse_rerank, reranked_order
from shared.sensitive_patterns import build_detector
from shared.settings import load_providers, load_settings
from tests.fakes.rerank import FakeReranker
from tests.waiting import TEST_RECALL_TIMEOUT_MS

DOCS = {
    1: "User likes hiking in the Alps",
    2: "My dog is called Rex",
    3: "The launch moved to March",
    4: "Contact me at jane.doe@example.com about the dog",
}


@pytest.fixture
async def assist(reranker, upstream) -> AsyncIterator[RecallAssist]:
    reranker.reset()
    settings = load_settings({}, upstream_base_url=upstream.base_url)
    async with httpx.AsyncClient() as http:
        yield RecallAssist(
            http=http, providers=load_providers(settings, {}), detector=build_detector("")
        )


def rerank_settings(reranker: FakeReranker, **kw: Any):
    kw.setdefault("recall_timeout_ms", TEST_RECALL_TIMEOUT_MS)
    return load_settings(
        {}, rerank_url=reranker.url, rerank_model="rr-1", rerank_api_key="rk", **kw
    )


def test_parse_and_order_are_pure_and_strict():
    assert parse_rerank({"results": [{"index": 1, "relevance_score": 0.9}]}, 2) == {1: 0.9}
    assert parse_rerank({"data": [{"index": 0, "relevance_score": 1}]}, 1) == {0: 1.0}  # Voyage
    assert parse_rerank([{"index": 0, "score": 0.5}], 1) == {0: 0.5}  # TEI
    for bad in ({"results": [{"index": 5, "relevance_score": 1}]}, {"x": 1}, [{"index": True}]):
        assert parse_rerank(bad, 2) is None
    assert reranked_order([10, 20, 30, 40], {2: 0.9, 0: 0.1, 1: 0.9}) == [20, 30, 10, 40]


async def test_rerank_reorders_the_top_candidates(assist, reranker):
    settings = rerank_settings(reranker, rerank_candidates=3)
    order, degraded = await reranked_ids(assist, settings, "dog called Rex", [1, 3, 2, 4], DOCS)
    assert degraded is None
    assert order == [2, 1, 3, 4]  # 2 scored best among the top 3; 4 was not sent
    (body,) = reranker.requests
    assert body["model"] == "rr-1" and body["query"] == "dog called Rex" and body["top_n"] == 3
    assert body["documents"] == [DOCS[1], DOCS[3], DOCS[2]]
    assert reranker.headers[0]["authorization"] == "Bearer rk"


async def test_rerank_never_sees_sensitive_text(assist, reranker):
    await reranked_ids(assist, rerank_settings(reranker), "dog", [4, 2], DOCS)
    assert "jane.doe@example.com" not in str(reranker.requests[0])


@pytest.mark.parametrize(
    ("fault", "reason"),
    [("delay", RERANK_TIMEOUT), ("status", RERANK_ERROR), ("malformed", RERANK_ERROR)],
)
async def test_rerank_failure_keeps_the_fused_order(assist, reranker, fault, reason):
    if fault == "delay":
        reranker.delay_s = 3.0
    elif fault == "status":
        reranker.fail_status = 503
    else:
        reranker.malformed = True
    # a timeout the delayed answer always misses; room for a loaded machine otherwise
    settings = rerank_settings(reranker, rerank_timeout_ms=100 if fault == "delay" else 5000)
    order, degraded = await reranked_ids(assist, settings, "dog called Rex", [1, 3, 2], DOCS)
    assert order == [1, 3, 2] and degraded == reason


async def test_rerank_off_or_unreachable(assist, reranker):
    off = load_settings({})
    assert await reranked_ids(assist, off, "q", [1, 2], DOCS) == ([1, 2], None)
    assert not reranker.requests
    dead = load_settings({}, rerank_url="http://127.0.0.1:9/v1/rerank")
    assert await reranked_ids(assist, dead, "q", [1, 2], DOCS) == ([1, 2], RERANK_ERROR)


MESSAGES = [
    {"role": "user", "content": "The marketing plan needs a new date."},
    {"role": "assistant", "content": "Which date?"},
    {"role": "user", "content": "What did I decide about it?"},
]


def rewrite_settings(**kw: Any):
    return load_settings(
        {},
        query_rewrite_provider="default",
        query_rewrite_model="rw-1",
        recall_timeout_ms=TEST_RECALL_TIMEOUT_MS,
        **kw,
    )


async def test_rewrite_adds_a_standalone_query(assist, upstream):
    upstream.reply_text = '"decision about the marketing plan date"\nextra line'
    text, degraded = await search_query(
        assist, rewrite_settings(), MESSAGES, "What did I decide about it?"
    )
    assert degraded is None
    assert text == "What did I decide about it?\ndecision about the marketing plan date"
    (body,) = upstream.requests
    assert body["model"] == "rw-1" and body["temperature"] == 0
    prompt = body["messages"][1]["content"]
    assert "marketing plan" in prompt and "Which date?" in prompt


@pytest.mark.parametrize("fault", ["timeout", "status", "empty"])
async def test_rewrite_failure_searches_the_original(assist, upstream, fault):
    if fault == "timeout":
        upstream.delay_s = 3.0
    elif fault == "status":
        upstream.fail_status = 500
    else:
        upstream.reply_text = "   "
    settings = rewrite_settings(query_rewrite_timeout_ms=100 if fault == "timeout" else 5000)
    text, degraded = await search_query(assist, settings, MESSAGES, "What about it?")
    assert text == "What about it?"
    assert degraded == (REWRITE_TIMEOUT if fault == "timeout" else REWRITE_ERROR)


async def test_rewrite_off_sends_nothing(assist, upstream):
    assert await search_query(assist, load_settings({}), MESSAGES, "q") == ("q", None)
    assert not upstream.requests


def test_history_and_search_text_are_pure():
    assert history_of(MESSAGES) == [
        ("user", "The marketing plan needs a new date."),
        ("assistant", "Which date?"),
    ]
    assert search_text("What about it?", "what about it?") == "What about it?"
    assert search_text("q", "") == "q"


def test_helper_timeouts_must_fit_the_recall_budget():
    from shared.errors import ConfigurationError

    with pytest.raises(ConfigurationError):
        load_settings({}, rerank_url="http://x/rerank", rerank_timeout_ms=250)
    with pytest.raises(ConfigurationError):
        load_settings({}, query_rewrite_provider="default")  # no model
    load_settings({}, rerank_url="http://x/rerank", rerank_timeout_ms=200)
