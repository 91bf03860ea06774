"""Invisible format characters inside words (pasted text), and the words they cut (pure).

Text copied from web pages, PDFs and word processors carries invisible characters inside words:
soft hyphens where a line could break, zero width spaces, joiners. SQLite FTS5's unicode61
tokenizer (and the in-memory index, which cuts text the same way) splits a word at each of them,
so :mod:`shared.fts_query` also indexes and searches such a word whole.
"""

from __future__ import annotations

import re

__all__ = ["INVISIBLE_JOINERS", "joined_words"]

INVISIBLE_JOINERS = "\u00ad\u200b\u200c\u200d\u2060\ufeff"
"""Invisible format characters found inside words of pasted text: soft hyphen (U+00AD), zero
width space, non-joiner and joiner (U+200B-U+200D), word joiner (U+2060) and zero width no-break
space (U+FEFF). unicode61 splits a word at each of them (they are not letters), so ``Ber\u00adlin``
would index as ``Ber`` and ``lin`` and never match ``Berlin``."""
_DROP_JOINERS = dict.fromkeys(map(ord, INVISIBLE_JOINERS))
_JOINED_WORD = re.compile(rf"[^\W_]+(?:[{INVISIBLE_JOINERS}]+[^\W_]+)+")
"""A word cut by :data:`INVISIBLE_JOINERS` (its pieces are runs of ``\\w`` but ``_``)."""


def joined_words(text: str) -> list[str]:
    """The words of ``text`` cut by :data:`INVISIBLE_JOINERS`, with those characters removed.

    ``"Ber\u00adlin and Mün\u200bchen"`` → ``["Berlin", "München"]``; ``[]`` for text without
    them (every ASCII text). Pure.
    """
    if text.isascii() or not any(c in text for c in INVISIBLE_JOINERS):
        return []
    return [m.group().translate(_DROP_JOINERS) for m in _JOINED_WORD.finditer(text)]
