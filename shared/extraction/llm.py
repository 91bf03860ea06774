"""Optional LLM fact extractor: prompt, tolerant JSON parsing, one HTTP call.

See "Learning" in ``docs/ARCHITECTURE.md``.

Models answer the extraction prompt in many shapes: a bare JSON array, ```` ```json ```` fences,
prose around the array, ``{"facts": [...]}``, or the whole answer in ``reasoning_content`` with an
empty ``content`` (reasoning models). :func:`parse_llm_facts` accepts all of them and, when nothing
usable is found, says why in :attr:`ParseResult.error` instead of silently returning no facts (LLMs
wrap JSON in code fences or prose, or answer in ``reasoning_content``). :func:`extract_with_llm`
never raises for HTTP or parsing problems; they come back as ``error`` too.
"""

from __future__ import annotations

import json
import re
from typing import Any

import httpx
import msgspec

from shared.extraction.facts import (
    CATEGORIES,
    CATEGORY_TYPES,
    MAX_CONTENT_CHARS,
    TYPES,
    ExtractedFact,
    key_for_statement,
)

__all__ = [
    "DEFAULT_LLM_CONFIDENCE",
    "EXTRACTION_PROMPT",
    "EXTRACTION_TEMPERATURE",
    "ParseResult",
    "extract_with_llm",
    "parse_llm_facts",
]

#: System prompt sent with every extraction request. Its rules mirror the regex extractor's
#: ("Learning" in ``docs/ARCHITECTURE.md``): only what the user said about themselves, never the
#: assistant's words.
EXTRACTION_PROMPT = """\
You extract durable facts about the USER from one chat turn, for a long-term memory.

Rules:
- Only facts the USER stated about themselves in the user message: preferences and dislikes, \
decisions, habits, identity (name, location, job), pets, family, tools, current projects.
- Never use what the assistant said as a source of facts; the assistant reply is context only.
- Skip questions, hypotheticals ("if I ..."), hedges ("maybe", "I might"), quoted or pasted text \
(code, logs, documents), and anything the user asked not to remember.
- Never include passwords, API keys, tokens, card numbers or similar secrets.
- Write each fact as one short third-person sentence starting with "User", e.g. \
"User prefers TypeScript", "User dislikes Python", "User's name is Alice", \
"User decided to use Postgres for this project", "User always commits before pushing".
- Keep a dislike a dislike: "I don't like X" is "User dislikes X".
- category is one of: preference, decision, pattern, fact, correction, context.

Output ONLY a JSON array, no prose, e.g.
[{"content": "User prefers TypeScript", "category": "preference"}]
Output [] when there is nothing to remember."""

#: Sampling temperature for extraction: near-deterministic output.
EXTRACTION_TEMPERATURE = 0.1
#: Confidence given to an LLM fact that carries no valid ``confidence`` of its own.
DEFAULT_LLM_CONFIDENCE = 0.7

_FENCE_RE = re.compile(r"```[ \t]*(?:json|JSON|javascript)?[ \t]*\n?(.*?)(?:```|\Z)", re.DOTALL)
_OPENERS_RE = re.compile(r"[\[{]")
_MAX_DECODE_ATTEMPTS = 64
_DECODER = json.JSONDecoder()


class ParseResult(msgspec.Struct, frozen=True, kw_only=True):
    """Outcome of an LLM extraction.

    Attributes:
        facts: the valid facts found (may be empty).
        error: ``None`` when a fact list was found (``[]`` is a valid "no facts" answer);
            otherwise a short human-readable reason (no JSON, HTTP status, timeout, …).
    """

    facts: list[ExtractedFact]
    error: str | None = None


def _fact_list(value: Any) -> list[Any] | None:
    """The list of fact items inside a decoded JSON value, or None if it is not a fact list."""
    if isinstance(value, list):
        return value
    if isinstance(value, dict):
        for name in ("facts", "memories", "items", "results"):
            inner = value.get(name)
            if isinstance(inner, list):
                return inner
        if isinstance(value.get("content"), str):
            return [value]
    return None


def _find_list(text: str) -> list[Any] | None:
    """First JSON fact list in ``text``: whole text, then fenced blocks, then embedded JSON."""
    stripped = text.strip()
    if not stripped:
        return None
    try:
        found = _fact_list(json.loads(stripped))
    except ValueError:
        found = None
    if found is not None:
        return found
    for block in _FENCE_RE.findall(stripped):
        try:
            found = _fact_list(json.loads(block.strip()))
        except ValueError:
            found = _find_embedded(block)
        if found is not None:
            return found
    return _find_embedded(stripped)


def _find_embedded(text: str) -> list[Any] | None:
    for attempts, m in enumerate(_OPENERS_RE.finditer(text)):
        if attempts >= _MAX_DECODE_ATTEMPTS:
            break
        try:
            value, _ = _DECODER.raw_decode(text, m.start())
        except ValueError:
            continue
        found = _fact_list(value)
        if found is not None:
            return found
    return None


def _item_fact(item: Any) -> ExtractedFact | None:
    if isinstance(item, str):
        item = {"content": item}
    if not isinstance(item, dict):
        return None
    content = item.get("content", item.get("fact", item.get("text")))
    if not isinstance(content, str):
        return None
    content = " ".join(content.split())
    if not 1 <= len(content) <= MAX_CONTENT_CHARS or content.endswith(("?", "？")):
        return None
    category = item.get("category")
    if not isinstance(category, str) or category.lower() not in CATEGORIES:
        category = "fact"
    category = category.lower()
    type_ = item.get("type")
    if not isinstance(type_, str) or type_.lower() not in TYPES:
        type_ = CATEGORY_TYPES[category]
    confidence = item.get("confidence")
    if isinstance(confidence, bool) or not isinstance(confidence, int | float):
        confidence = DEFAULT_LLM_CONFIDENCE
    confidence = min(1.0, max(0.0, float(confidence)))
    return ExtractedFact(
        content=content,
        category=category,
        type=type_.lower(),
        key=key_for_statement(category, content),
        confidence=confidence,
    )


def parse_llm_facts(content: str | None, reasoning_content: str | None = None) -> ParseResult:
    """Parse an extraction answer into facts, tolerating the shapes models actually produce.

    Looks in ``content`` first, then in ``reasoning_content`` when ``content`` is empty or holds
    no fact list. Accepts a JSON array of ``{"content", "category"[, "type", "confidence"]}``
    objects (or plain strings), ``{"facts": [...]}``, code fences and surrounding prose. Items
    with non-string or out-of-range content (1..:data:`MAX_CONTENT_CHARS` characters) or ending
    in a question mark are dropped; an unknown category becomes ``fact``; keys come from
    :func:`~shared.extraction.facts.key_for_statement`. Duplicate keys keep the last item.

    Returns ``ParseResult(facts, error=None)`` when a list was found (``[]`` is valid), else
    ``error`` explains why: nothing in either field, no JSON list found, or every item invalid.
    Never raises.
    """
    sources = [(name, text) for name, text in (("content", content),
               ("reasoning_content", reasoning_content)) if text and text.strip()]  # fmt: skip
    if not sources:
        return ParseResult(facts=[], error="empty response: no content and no reasoning_content")
    for _name, text in sources:
        items = _find_list(text)
        if items is None:
            continue
        facts: dict[str, ExtractedFact] = {}
        for item in items:
            fact = _item_fact(item)
            if fact is not None:
                facts.pop(fact.key, None)
                facts[fact.key] = fact
        if items and not facts:
            return ParseResult(
                facts=[], error=f"all {len(items)} items invalid (need string 'content')"
            )
        return ParseResult(facts=list(facts.values()))
    names = " or ".join(name for name, _ in sources)
    snippet = " ".join(sources[0][1].split())[:120]
    return ParseResult(facts=[], error=f"no JSON fact list found in {names}: {snippet!r}")


def _user_message(user_text: str, context_text: str | None) -> str:
    parts = []
    if context_text:
        parts.append(
            "Previous assistant reply (context only, never a source of facts):\n"
            f"<assistant>\n{context_text}\n</assistant>\n"
        )
    parts.append(f"User message:\n<user>\n{user_text}\n</user>")
    return "\n".join(parts)


async def extract_with_llm(
    client: httpx.AsyncClient,
    *,
    base_url: str,
    api_key: str | None,
    model: str,
    user_text: str,
    context_text: str | None,
    timeout_s: float,
) -> ParseResult:
    """Ask an OpenAI-compatible model for the user's facts and parse the answer.

    POSTs ``{base_url}/chat/completions`` with :data:`EXTRACTION_PROMPT` as the system message,
    the user text (and ``context_text``, the assistant's reply, marked as context only) as the
    user message, ``temperature`` :data:`EXTRACTION_TEMPERATURE`, and ``Authorization: Bearer``
    when ``api_key`` is given. ``timeout_s`` (seconds, > 0) bounds the whole request.

    Returns :func:`parse_llm_facts` of ``choices[0].message.content`` / ``reasoning_content``.
    Never raises for transport problems: timeouts, connection errors, non-2xx statuses and
    malformed response bodies come back as ``ParseResult(facts=[], error=...)``.
    """
    url = base_url.rstrip("/") + "/chat/completions"
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    body = {
        "model": model,
        "temperature": EXTRACTION_TEMPERATURE,
        "messages": [
            {"role": "system", "content": EXTRACTION_PROMPT},
            {"role": "user", "content": _user_message(user_text, context_text)},
        ],
    }
    try:
        response = await client.post(url, json=body, headers=headers, timeout=timeout_s)
    except httpx.TimeoutException:
        return ParseResult(facts=[], error=f"timeout after {timeout_s:g}s calling {url}")
    except httpx.HTTPError as exc:
        return ParseResult(facts=[], error=f"transport error calling {url}: {exc!r}")
    if not response.is_success:
        text = " ".join(response.text.split())[:200]
        return ParseResult(facts=[], error=f"HTTP {response.status_code} from {url}: {text}")
    try:
        payload = response.json()
        message = payload["choices"][0]["message"]
    except (ValueError, KeyError, IndexError, TypeError) as exc:
        return ParseResult(facts=[], error=f"malformed chat completion from {url}: {exc!r}")
    if not isinstance(message, dict):
        return ParseResult(facts=[], error=f"malformed chat completion from {url}: no message")
    content = message.get("content")
    reasoning = message.get("reasoning_content") or message.get("reasoning")
    return parse_llm_facts(
        content if isinstance(content, str) else None,
        reasoning if isinstance(reasoning, str) else None,
    )
