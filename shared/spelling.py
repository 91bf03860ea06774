"""British "-our" spellings read as American ones, so either spelling finds the other.

"colour" → "color", "favourite" → "favorite", "flavoured" → "flavored"; also the stems of those
words ("favourit" → "favorit"). Only in words of at least :data:`MIN_LETTERS` letters: "four",
"hour", "your" and "tour" stay apart from "for", "hor", "yor" and "tor". Used where words are
compared across spellings: the forget matcher (:mod:`shared.forget_terms`) and the rules of
someone else's memory (:mod:`shared.personal_subjects`). Pure.
"""

from __future__ import annotations

import re

__all__ = ["MIN_LETTERS", "american"]

MIN_LETTERS = 6
"""Shortest word whose "-our" is folded."""

_OUR_RE = re.compile(r"(?<=\w\w)our(?=(?:s|ed|ing|ites?|its?|able?|abl|ful)?$)", re.IGNORECASE)


def american(word: str) -> str:
    """``word`` (one word, any case) with a final British "-our" (and its suffixes) as "-or"."""
    return _OUR_RE.sub("or", word) if len(word) >= MIN_LETTERS else word
