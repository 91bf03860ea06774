"""New user turns of a request: which ones a learn job considers (pure functions).

The learning cursor (:mod:`shared.store.cursors`) is content-addressed: :func:`prefix_ids` names
every prefix of the conversation's user turns, so a replayed or regenerated request finds its
turns already learned and writes nothing twice. :func:`learnable_turns` applies the per-request
window and drops turns that carry nothing to learn.
"""

from __future__ import annotations

import hashlib

from shared.control_chars import strip_control_chars
from shared.extraction import is_do_not_remember
from shared.forget_intent import detect_forget

#: Characters of one user turn considered (longer turns are cut; pastes beyond are not facts).
MAX_TURN_CHARS = 8000


def prefix_ids(user_turns: list[str]) -> list[str]:
    """Chained hashes: element ``i`` identifies user turns ``0..i`` (24 hex chars of sha256)."""
    out: list[str] = []
    digest = b""
    for text in user_turns:
        digest = hashlib.sha256(digest + b"\x1f" + text.encode("utf-8", "replace")).digest()
        out.append(digest.hex()[:24])
    return out


def clean_turn(text: str) -> str:
    """A user turn as learned and stored.

    :func:`strip_control_chars`, stripped, at most :data:`MAX_TURN_CHARS` characters.
    """
    # cut before cleaning: a huge turn costs O(MAX_TURN_CHARS) (request CPU bounds)
    return strip_control_chars(text.lstrip()[:MAX_TURN_CHARS]).strip()[:MAX_TURN_CHARS]


def turn_as_written(text: str) -> str:
    r"""The part of a user turn that :func:`clean_turn` keeps, its control characters still in.

    What the regex extractor reads (:func:`shared.fact_candidates.regex_facts`): it reads them
    as the spaces :func:`clean_turn` makes of them, but sees that "Sa\x00m" is no name where
    the cleaned "Sa m" would read as "Sa". Pure.
    """
    return text.lstrip()[:MAX_TURN_CHARS]


def has_word_character(text: str) -> bool:
    r"""True when ``text`` holds at least one letter or digit of any script (``str.isalnum``).

    A turn without one (``"*"``, ``"-"``, ``"'"``, ``"\u200b"``, ``"\x00"``) carries nothing
    worth remembering. Pure; never raises.
    """
    return any(ch.isalnum() for ch in text)


def is_private_turn(text: str) -> bool:
    """True when ``text`` asks not to be remembered or to forget something.

    Such a turn is never learned and never appears in another turn's search context. Pure.
    """
    return is_do_not_remember(text) or detect_forget(text) is not None


def learnable_turns(user_turns: list[str], start: int, max_turns: int) -> list[tuple[int, str]]:
    """The turns of ``user_turns[start:]`` to learn, as ``(index, cleaned text)``, oldest first.

    Only the newest ``max_turns`` (>= 1) indices from ``start`` on are considered; of those, a
    turn is dropped when its cleaned text (:func:`clean_turn`: control characters other than
    newline and tab become spaces, stripped, cut to :data:`MAX_TURN_CHARS`) is empty, has no
    letter or digit (:func:`has_word_character`), asks not to be remembered or to forget something
    (:func:`shared.forget_intent.detect_forget`), or repeats
    a newer turn of the window verbatim (the newest occurrence is kept). Pure; never raises.
    """
    first = max(start, len(user_turns) - max(1, max_turns), 0)
    seen: set[str] = set()
    kept: list[tuple[int, str]] = []
    for index in range(len(user_turns) - 1, first - 1, -1):
        text = clean_turn(user_turns[index])
        if not text or text in seen or not has_word_character(text):
            continue
        seen.add(text)
        if not is_private_turn(text):
            kept.append((index, text))
    kept.reverse()
    return kept
