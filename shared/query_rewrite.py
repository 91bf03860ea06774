"""Optional LLM query rewrite: a standalone search query for a follow-up message.

Off by default (``query_rewrite_provider`` empty). When on, recall first asks the configured
OpenAI-compatible provider (one chat completion, temperature 0, at most
:data:`MAX_REWRITE_TOKENS` tokens) to restate the newest user message as a standalone search
query, using up to :data:`MAX_HISTORY_TURNS` earlier turns of the request to resolve pronouns
("What did I decide about it?" → "decision about the launch date"). The search then runs on the
original message followed by the rewrite (:func:`search_text`), so no term of the user's own
words is lost; echo detection still compares with the original. Any failure (timeout, transport
error, HTTP status, empty or malformed answer) searches with the original message alone and
reports a reason for ``x-mnemogate-memory-degraded``. The conversation sent is redacted of
sensitive spans by the caller when the sensitive filter is on.
"""

from __future__ import annotations

from collections.abc import Sequence

import httpx
import msgspec

#: Degradation reasons (``x-mnemogate-memory-degraded``).
REWRITE_TIMEOUT = "rewrite_timeout"
REWRITE_ERROR = "rewrite_error"
#: Earlier turns of the request shown to the model (the newest user message comes on top).
MAX_HISTORY_TURNS = 4
#: Characters kept of each turn sent, and of the rewrite used.
MAX_TURN_CHARS = 500
#: ``max_tokens`` of the rewrite completion (a search query, not an answer).
MAX_REWRITE_TOKENS = 48

REWRITE_PROMPT = (
    "Rewrite the user's last message as one standalone search query over notes about the user. "
    "Resolve pronouns and references from the conversation, keep names, dates and key terms, "
    "add no facts and no explanation. Answer with the query only."
)


class RewriteResult(msgspec.Struct, frozen=True):
    """The rewritten query (``""`` on failure) and the degradation reason, if any."""

    query: str
    error: str | None = None
    detail: str = ""


def rewrite_messages(history: Sequence[tuple[str, str]], newest: str) -> list[dict[str, str]]:
    """The chat messages of a rewrite request.

    ``history`` holds ``(role, text)`` turns before ``newest``, oldest first (only the last
    :data:`MAX_HISTORY_TURNS` are used). Pure.
    """
    lines = [
        f"{role}: {' '.join(text.split())[:MAX_TURN_CHARS]}"
        for role, text in history[-MAX_HISTORY_TURNS:]
        if text.strip()
    ]
    conversation = "\n".join(lines) or "(none)"
    last = " ".join(newest.split())[:MAX_TURN_CHARS]
    return [
        {"role": "system", "content": REWRITE_PROMPT},
        {"role": "user", "content": f"Conversation:\n{conversation}\n\nLast message:\n{last}"},
    ]


def search_text(original: str, rewritten: str) -> str:
    """The text recall searches with: the original message, then the rewrite if it differs."""
    rewritten = " ".join(rewritten.split())[:MAX_TURN_CHARS]
    if not rewritten or rewritten.casefold() == " ".join(original.split()).casefold():
        return original
    return f"{original}\n{rewritten}"


async def rewrite_query(
    http: httpx.AsyncClient,
    *,
    base_url: str,
    api_key: str,
    model: str,
    history: Sequence[tuple[str, str]],
    newest: str,
    timeout_s: float,
) -> RewriteResult:
    """Ask ``{base_url}/chat/completions`` for a standalone query; never raises.

    ``timeout_s`` (> 0) bounds the whole request. Returns ``query`` = the first line of the
    answer's content, stripped of quotes; failures come back as ``error``.
    """
    body = {
        "model": model,
        "temperature": 0,
        "max_tokens": MAX_REWRITE_TOKENS,
        "messages": rewrite_messages(history, newest),
    }
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    url = base_url.rstrip("/") + "/chat/completions"
    try:
        response = await http.post(url, json=body, headers=headers, timeout=timeout_s)
    except httpx.TimeoutException:
        return RewriteResult("", REWRITE_TIMEOUT, f"timeout after {timeout_s}s")
    except httpx.HTTPError as exc:
        return RewriteResult("", REWRITE_ERROR, f"transport error: {exc!r}")
    if not response.is_success:
        return RewriteResult("", REWRITE_ERROR, f"HTTP {response.status_code}")
    try:
        content = response.json()["choices"][0]["message"]["content"]
    except (ValueError, KeyError, IndexError, TypeError):
        content = None
    if not isinstance(content, str) or not content.strip():
        return RewriteResult("", REWRITE_ERROR, "empty or malformed answer")
    first = content.strip().splitlines()[0].strip().strip("\"'`").strip()
    return RewriteResult(first[:MAX_TURN_CHARS]) if first else RewriteResult("", REWRITE_ERROR)
