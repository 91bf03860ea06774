"""Tests for the LLM extractor: tolerant parsing and the HTTP call against a real fake server."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from shared.extraction import (
    EXTRACTION_PROMPT,
    ExtractedFact,
    ParseResult,
    extract_with_llm,
    parse_llm_facts,
)
from tests.fakes.upstream import FakeUpstream

ARRAY = (
    '[{"content": "User prefers TypeScript", "category": "preference"},'
    ' {"content": "User dislikes Python", "category": "preference"}]'
)
EXPECTED = [
    ("User prefers TypeScript", "preference", "semantic", "preference:like:typescript"),
    ("User dislikes Python", "preference", "semantic", "preference:dislike:python"),
]


def shape(result: ParseResult) -> list[tuple[str, str, str, str]]:
    return [(f.content, f.category, f.type, f.key) for f in result.facts]


# ---- parse_llm_facts --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("content", "reasoning"),
    [
        (ARRAY, None),
        (f"```json\n{ARRAY}\n```", None),
        (f"```\n{ARRAY}\n```", None),
        (f"Sure! Here are the facts:\n{ARRAY}\nLet me know if you need more.", None),
        (f'{{"facts": {ARRAY}}}', None),
        (f'Result: {{"facts": {ARRAY}}} done', None),
        ("", ARRAY),
        (None, f"The user states two things. Output:\n```json\n{ARRAY}\n```"),
        ("I could not decide.", f"thinking... {ARRAY}"),
        (f"```json\n{ARRAY}", None),  # unterminated fence
    ],
)
def test_parse_tolerates_common_shapes(content: str | None, reasoning: str | None) -> None:
    result = parse_llm_facts(content, reasoning)
    assert result.error is None
    assert shape(result) == EXPECTED


def test_parse_empty_array_is_valid_no_facts() -> None:
    assert parse_llm_facts("[]") == ParseResult(facts=[], error=None)
    assert parse_llm_facts("```json\n[]\n```") == ParseResult(facts=[], error=None)


def test_content_wins_over_reasoning() -> None:
    result = parse_llm_facts('[{"content": "User lives in Berlin", "category": "fact"}]', ARRAY)
    assert shape(result) == [("User lives in Berlin", "fact", "factual", "identity:location")]


@pytest.mark.parametrize(
    ("content", "reasoning", "error_part"),
    [
        (None, None, "empty response"),
        ("   ", "", "empty response"),
        ("I found no facts worth remembering.", None, "no JSON fact list found in content"),
        ('[{"content": "User likes X", "category": ', None, "no JSON fact list"),
        ("{'content': 'single quotes'}", "nothing here", "content or reasoning_content"),
        ('{"answer": 42}', None, "no JSON fact list"),
        ('[{"content": 5}, {"category": "fact"}, 7]', None, "all 3 items invalid"),
    ],
)
def test_parse_failures_are_reported(
    content: str | None, reasoning: str | None, error_part: str
) -> None:
    result = parse_llm_facts(content, reasoning)
    assert result.facts == []
    assert result.error is not None and error_part in result.error


def test_items_are_validated_and_normalised() -> None:
    items = [
        {"content": "User's name is Alice", "category": "FACT"},
        {"content": "User uses Vim", "category": "nonsense"},
        {"content": "x" * 501, "category": "fact"},
        {"content": "", "category": "fact"},
        {"content": "Does the user like Go?", "category": "preference"},
        {"content": "User always commits before pushing", "category": "pattern",
         "confidence": 3},
        {"content": "User is working on   mnemogate", "category": "context", "type": "semantic",
         "confidence": 0.4},
        "User lives in Berlin",
    ]  # fmt: skip
    result = parse_llm_facts(json.dumps(items))
    assert result.error is None
    assert [(f.content, f.category, f.type, f.key, f.confidence) for f in result.facts] == [
        ("User's name is Alice", "fact", "factual", "identity:name", 0.7),
        ("User uses Vim", "fact", "factual", "tool:vim", 0.7),
        ("User always commits before pushing", "pattern", "procedural",
         "pattern:always:commit-before-pushing", 1.0),
        ("User is working on mnemogate", "context", "semantic", "context:working-on:mnemogate",
         0.4),
        ("User lives in Berlin", "fact", "factual", "identity:location", 0.7),
    ]  # fmt: skip
    assert all(isinstance(f, ExtractedFact) for f in result.facts)


def test_non_latin_llm_facts_get_distinct_keys() -> None:
    result = parse_llm_facts(
        json.dumps(
            [
                {"content": "User prefers 咖啡和茶", "category": "preference"},
                {"content": "User prefers 绿茶饮料", "category": "preference"},
            ]
        )
    )
    assert len({f.key for f in result.facts}) == 2


# ---- extract_with_llm against a real HTTP server ----------------------------------------------


@pytest.fixture(scope="module")
def upstream() -> Iterator[FakeUpstream]:
    server = FakeUpstream().start()
    yield server
    server.stop()


@pytest.fixture
def fake(upstream: FakeUpstream) -> Iterator[FakeUpstream]:
    upstream.reset()
    yield upstream
    upstream.reset()


def completion(content: str | None, reasoning: str | None = None) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if reasoning is not None:
        message["reasoning_content"] = reasoning
    return {
        "id": "chatcmpl-x",
        "object": "chat.completion",
        "created": 0,
        "model": "m",
        "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
    }


async def call(fake: FakeUpstream, *, timeout_s: float = 5.0) -> ParseResult:
    async with httpx.AsyncClient() as client:
        return await extract_with_llm(
            client,
            base_url=fake.base_url,
            api_key="sk-test",
            model="extractor-model",
            user_text="I prefer TypeScript. I don't like Python.",
            context_text="As an AI, I usually recommend Python.",
            timeout_s=timeout_s,
        )


@pytest.mark.parametrize(
    "reply",
    [
        completion(f"```json\n{ARRAY}\n```"),
        completion(f"Here you go:\n{ARRAY}\nHope that helps."),
        completion("", ARRAY),
        completion(None, f"Reasoning... final answer {ARRAY}"),
    ],
)
async def test_extract_with_llm_parses_reply(fake: FakeUpstream, reply: dict[str, Any]) -> None:
    fake.responder = lambda body: (200, reply)
    result = await call(fake)
    assert result.error is None
    assert shape(result) == EXPECTED


async def test_extract_with_llm_sends_prompt_and_context(fake: FakeUpstream) -> None:
    fake.responder = lambda body: (200, completion("[]"))
    result = await call(fake)
    assert result == ParseResult(facts=[], error=None)
    [body] = fake.requests
    assert body["model"] == "extractor-model"
    assert body["temperature"] == 0.1
    assert body["messages"][0] == {"role": "system", "content": EXTRACTION_PROMPT}
    user = body["messages"][1]
    assert user["role"] == "user"
    assert "I prefer TypeScript. I don't like Python." in user["content"]
    assert "context only" in user["content"] and "recommend Python" in user["content"]
    assert fake.headers[0]["authorization"] == "Bearer sk-test"


def test_prompt_states_the_rules() -> None:
    assert "USER" in EXTRACTION_PROMPT and "assistant" in EXTRACTION_PROMPT
    assert "questions" in EXTRACTION_PROMPT.lower()
    assert "JSON array" in EXTRACTION_PROMPT


async def test_invalid_json_reply_reports_error(fake: FakeUpstream) -> None:
    fake.responder = lambda body: (200, completion("[{content: User likes X}]"))
    result = await call(fake)
    assert result.facts == []
    assert result.error is not None and "no JSON fact list" in result.error


async def test_malformed_completion_reports_error(fake: FakeUpstream) -> None:
    fake.responder = lambda body: (200, {"choices": []})
    result = await call(fake)
    assert result.facts == []
    assert result.error is not None and "malformed chat completion" in result.error


async def test_http_500_reports_error(fake: FakeUpstream) -> None:
    fake.fail_status = 500
    result = await call(fake)
    assert result.facts == []
    assert result.error is not None and "HTTP 500" in result.error


async def test_timeout_reports_error(fake: FakeUpstream) -> None:
    fake.delay_s = 1.0
    result = await call(fake, timeout_s=0.2)
    assert result.facts == []
    assert result.error is not None and "timeout" in result.error


async def test_connection_refused_reports_error() -> None:
    async with httpx.AsyncClient() as client:
        result = await extract_with_llm(
            client,
            base_url="http://127.0.0.1:9/v1",
            api_key=None,
            model="m",
            user_text="I prefer Go",
            context_text=None,
            timeout_s=2.0,
        )
    assert result.facts == []
    assert result.error is not None and "transport error" in result.error
