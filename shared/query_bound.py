"""Bounding the recall query before any per-token work (request CPU bound).

Recall cost grows with the query: keyword-term extraction walks every token, embedding models
tokenize the whole text. A chat request may carry megabytes in its newest user message (a pasted
log), so the recall query is cut to a fixed size in O(limit) time BEFORE recall sees it; the
request itself is forwarded upstream unchanged. See docs/ARCHITECTURE.md, "Request CPU bounds".

The cut keeps both ends of a long text (the first and the last half of the budget): in a long
paste the question is usually at one end ("here is my log: …, why does it fail?").
"""

from __future__ import annotations

__all__ = ["DEFAULT_QUERY_MAX_BYTES", "DEFAULT_QUERY_MAX_TERMS", "bound_query"]

DEFAULT_QUERY_MAX_BYTES = 4096
"""Default cap on the recall query's UTF-8 size in bytes (4 KiB ≈ 700 English words)."""

DEFAULT_QUERY_MAX_TERMS = 256
"""Default cap on the recall query's whitespace-separated words."""

_JOIN = "\n"


def _utf8_prefix(text: str, max_bytes: int) -> str:
    """The longest prefix of ``text`` whose UTF-8 encoding has at most ``max_bytes`` bytes."""
    data = text.encode("utf-8")
    return data[:max_bytes].decode("utf-8", errors="ignore") if len(data) > max_bytes else text


def _utf8_suffix(text: str, max_bytes: int) -> str:
    """The longest suffix of ``text`` whose UTF-8 encoding has at most ``max_bytes`` bytes."""
    data = text.encode("utf-8")
    return data[-max_bytes:].decode("utf-8", errors="ignore") if len(data) > max_bytes else text


def _cut_bytes(text: str, max_bytes: int) -> str:
    # A character is 1..4 UTF-8 bytes: only slices of at most max_bytes characters are ever
    # encoded, so the work is O(max_bytes) whatever the input size.
    if len(text) * 4 <= max_bytes:
        return text
    if len(text) <= max_bytes and len(text.encode("utf-8")) <= max_bytes:
        return text
    half = max_bytes // 2
    if half < len(_JOIN) + 1:  # too small to keep both ends
        return _utf8_prefix(text[:max_bytes], max_bytes)
    head = _utf8_prefix(text[:half], half)
    rest = max_bytes - len(head.encode("utf-8")) - len(_JOIN)
    if rest <= 0:
        return head
    # head and tail cannot overlap: together they hold fewer bytes than the text
    return head + _JOIN + _utf8_suffix(text[-rest:], rest)


def _cut_terms(text: str, max_terms: int) -> str:
    words = text.split(None, max_terms)
    if len(words) <= max_terms:
        return text
    # split(maxsplit) keeps the rest of the text in its last item: take the tail words from the
    # whole (already byte-bounded) text instead.
    tail_n = max_terms // 2
    head_n = max_terms - tail_n
    head = words[:head_n]
    tail = text.rsplit(None, tail_n)[-tail_n:] if tail_n else []
    return " ".join(head + tail)


def bound_query(text: str, max_bytes: int, max_terms: int) -> str:
    """``text`` cut to at most ``max_bytes`` UTF-8 bytes and ``max_terms`` words.

    Pure and O(``max_bytes``) in time and memory whatever ``len(text)`` is (only slices of the
    input are examined). A text within both limits is returned unchanged (the same object).
    Over a limit, the first and last halves are kept and joined by a newline (bytes) or a space
    (words); a UTF-8 sequence is never split.

    Args:
        text: the recall query (newest user message text), any length.
        max_bytes: byte budget, >= 1.
        max_terms: word budget (whitespace-separated), >= 1.

    Returns:
        The bounded query: ``len(result.encode()) <= max_bytes`` and
        ``len(result.split()) <= max_terms``.

    Raises:
        ValueError: ``max_bytes`` or ``max_terms`` below 1.
    """
    if max_bytes < 1 or max_terms < 1:
        raise ValueError("max_bytes and max_terms must be >= 1")
    return _cut_terms(_cut_bytes(text, max_bytes), max_terms)
