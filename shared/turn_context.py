"""Conversation context of a captured turn: the text of the turns around it (pure functions).

A captured user turn is stored with the neighbouring turns of its conversation in the
``memories.context`` column (migration 0006). That text is a second, lower-weighted search field:
it lets "What did I decide about it?" find the turn where "it" was named. It is never injected;
the memory's own text is (docs/ARCHITECTURE.md, "Data model").

The window is the previous :data:`BEFORE` and the next :data:`AFTER` turns of the same
conversation, whoever spoke them (the user or the assistant). In a chat the previous two turns of
a user turn are the previous user turn and the assistant's answer to it, and the next two are the
assistant's answer and the next user turn, which arrives in a later request (the learning job
then recomputes the context of the turn before its first new one). The window (2 before, 2 after)
and its figures on LoCoMo are in the README, "Recall quality".
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from shared.formats.base import text_of_parts
from shared.injection import strip_memory_block

#: Turns before the captured one that make up its context.
BEFORE = 2
#: Turns after the captured one that make up its context.
AFTER = 2
#: User turns back that the :data:`BEFORE` texts of a user turn's context reach (each earlier
#: user turn contributes its own text and the assistant's reply to it).
REACH = (BEFORE + 1) // 2
#: Text part types of a message (as :func:`shared.injection.all_user_texts` reads them).
_TEXT_KINDS = ("text", "input_text")
#: Characters kept of each neighbouring turn (a pasted document is context, not a search field).
MAX_NEIGHBOUR_CHARS = 1000


def neighbour_context(
    texts: Sequence[str],
    index: int,
    *,
    before: int = BEFORE,
    after: int = AFTER,
    max_chars: int = MAX_NEIGHBOUR_CHARS,
) -> str:
    """The context of ``texts[index]``: its neighbours in ``texts``, joined with newlines.

    Args:
        texts: the turns of one conversation (or one session), oldest first, any speaker;
            empty and whitespace-only turns are skipped without using a slot of the window.
        index: position of the captured turn in ``texts`` (0-based).
        before: neighbouring turns before ``index`` (>= 0).
        after: neighbouring turns after ``index`` (>= 0).
        max_chars: characters kept of each neighbour (its whitespace collapsed first).

    Returns:
        The previous ``before`` then the next ``after`` non-empty turns, oldest first, one per
        line; ``""`` when there are none or ``index`` is out of range. Pure; never raises.
    """
    if not 0 <= index < len(texts):
        return ""
    previous: list[str] = []
    for i in range(index - 1, -1, -1):
        if len(previous) >= before:
            break
        text = _clip(texts[i], max_chars)
        if text:
            previous.append(text)
    following: list[str] = []
    for i in range(index + 1, len(texts)):
        if len(following) >= after:
            break
        text = _clip(texts[i], max_chars)
        if text:
            following.append(text)
    return "\n".join([*reversed(previous), *following])


def _clip(text: str, max_chars: int) -> str:
    """``text`` with whitespace collapsed, cut to ``max_chars`` characters."""
    return " ".join(text.split())[:max_chars]


def without_turns(context: str, turns: Sequence[str], max_chars: int = MAX_NEIGHBOUR_CHARS) -> str:
    """``context`` without the lines that hold one of ``turns``.

    Lines as :func:`neighbour_context` wrote them (whitespace collapsed, cut to ``max_chars``).
    What a delete leaves of its neighbours' context: the deleted turn's words must not keep
    finding (and so injecting) them. Lines kept in order; pure; never raises.
    """
    return without_lines(context, turn_lines(turns, max_chars), max_chars)


def turn_lines(turns: Sequence[str], max_chars: int = MAX_NEIGHBOUR_CHARS) -> frozenset[str]:
    """The context lines ``turns`` became in :func:`neighbour_context` (empty ones left out)."""
    return frozenset(line for t in turns if (line := _clip(t, max_chars)))


#: Shortest deleted turn (characters, whitespace collapsed) whose quotation in another context
#: line removes that line too: a short one ("ok", "thanks") is quoted by chance.
MIN_QUOTED_CHARS = 16


def _folded(text: str) -> str:
    return " ".join(text.split()).casefold()


def without_lines(context: str, gone: frozenset[str], max_chars: int = MAX_NEIGHBOUR_CHARS) -> str:
    """``context`` without its lines in ``gone`` (:func:`turn_lines`); order kept; pure.

    A line quoting one of ``gone`` whole (an assistant reply that repeated the deleted turn, or
    the memory block holding it; case and whitespace aside, at least :data:`MIN_QUOTED_CHARS`
    characters) goes too: its words would keep finding the memory for what was deleted.
    """
    if not context or not gone:
        return context
    quoted = [f for g in gone if len(f := _folded(g)) >= MIN_QUOTED_CHARS]

    def kept(line: str) -> bool:
        if _clip(line, max_chars) in gone:
            return False
        return not quoted or not any(q in _folded(line) for q in quoted)

    return "\n".join(line for line in context.split("\n") if kept(line))


def chat_sequence(
    user_turns: Sequence[str], replies: Sequence[str], final_reply: str = ""
) -> tuple[list[str], list[int]]:
    """Interleave a request's user turns with the assistant replies into one conversation.

    Args:
        user_turns: the request's user messages, oldest first.
        replies: ``replies[i]`` is the assistant text between user turn ``i`` and ``i + 1`` of the
            request (``""`` or absent when there was none; extra entries are ignored).
        final_reply: the upstream's answer to the last user turn (``""`` if unknown).

    Returns:
        ``(texts, positions)``: the conversation, oldest first, and for each user turn ``i`` its
        position in ``texts``; pass both to :func:`neighbour_context`. Pure; never raises.
    """
    texts: list[str] = []
    positions: list[int] = []
    last = len(user_turns) - 1
    for i, turn in enumerate(user_turns):
        positions.append(len(texts))
        texts.append(turn)
        reply = final_reply if i == last else (replies[i] if i < len(replies) else "")
        if reply.strip():
            texts.append(reply)
    return texts, positions


def assistant_replies(
    messages: Sequence[Any], max_chars: int = MAX_NEIGHBOUR_CHARS, keep_last: int | None = None
) -> list[str]:
    """The assistant text that follows each user message kept by ``all_user_texts``.

    ``all_user_texts`` is :func:`shared.injection.all_user_texts`.

    ``replies[i]`` joins (newline) the assistant messages between kept user turn ``i`` and the
    next kept one, each cut to ``max_chars`` characters; ``""`` when there is none. The list has
    one entry per kept user turn (the last one is ``""``: its answer is the upstream's reply).
    Learning uses it only as search context of captured turns (:mod:`shared.turn_context`).
    ``keep_last`` (>= 0): only the last ``keep_last`` entries keep their text, older ones are
    ``""`` (a learn job needs the replies around the turns it learns, which bounds the job
    payload of a long chat). Never raises.
    """
    replies: list[str] = []
    for msg in messages:
        if not isinstance(msg, dict):
            continue
        role = msg.get("role")
        if role == "user":
            if strip_memory_block(text_of_parts(msg.get("content"), _TEXT_KINDS)).strip():
                replies.append("")
        elif role == "assistant" and replies:
            text = text_of_parts(msg.get("content"), _TEXT_KINDS)[:max_chars]
            if text.strip():
                replies[-1] = f"{replies[-1]}\n{text}" if replies[-1] else text
    if keep_last is not None:
        cut = max(0, len(replies) - keep_last)
        replies[:cut] = [""] * cut
    return replies
