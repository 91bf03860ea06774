"""Hits that match a query only through their search context, after the hits they rode on went.

Every captured turn and learned fact is indexed with its neighbouring turns as a lower-weighted
field (docs/ARCHITECTURE.md, "Learning"), so a memory can match a query through a neighbour's
words alone. That is the point of the field when the neighbour named what the memory leaves
implicit ("What did I decide about it?"). It misleads when the neighbour itself matched and was
then dropped as someone else's memory (:mod:`shared.personal_subjects`): told seven facts in one
chat, "What is my brother called?" matches "My sister is called Anna" directly, which is dropped,
and every turn beside it through its context ("called"), which would then be injected in its
place. A hit that holds none of the query's words itself is therefore dropped when hits holding
them were screened out and none is left.

It also misleads beside a learned fact that answers the query itself: told the same seven facts,
"Where do I live?" finds "User lives in Munich", and "My dog is called Rex" (with the fact learned
from it) through its context, which holds "I live in Munich". A fact is a whole statement
extracted from what the user said, so the turns and facts that match only through their
neighbours add nothing to it and are dropped (:func:`without_fact_riders`). Pure.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import TypeVar

from shared.recall_index.analysis import analyse, query_tokens

__all__ = ["without_fact_riders", "without_riders"]

T = TypeVar("T")


def without_riders(
    query: str, before: Sequence[T], after: Sequence[T], content_of: Callable[[T], str]
) -> list[T]:
    """``after`` (the hits left of ``before`` by a screen), minus the context-only riders.

    ``before``/``after``: hits of one leg before and after a screen (``after`` a subsequence of
    ``before``, any order); ``content_of``: a hit's own words (its text, and a fact's slot
    words, :mod:`shared.slot_terms`: they are the fact's, not a neighbour's). When a dropped
    hit's own words hold a term of ``query`` and no kept hit's do, the kept hits (all matching
    through their context) are dropped too; otherwise ``after`` unchanged. Terms as the index
    analyses them (:func:`shared.recall_index.analysis.query_tokens`,
    :func:`~shared.recall_index.analysis.analyse`); texts are analysed only when the screen
    dropped something.
    """
    if len(after) == len(before) or not after:
        return list(after)
    terms = frozenset(query_tokens(query))
    if not terms:
        return list(after)

    def holds(hit: T) -> bool:
        return not terms.isdisjoint(_own_terms(content_of(hit)))

    if any(holds(h) for h in after):
        return list(after)
    kept = {id(h) for h in after}
    if any(holds(h) for h in before if id(h) not in kept):
        return []
    return list(after)


def without_fact_riders(
    query: str,
    hits: Sequence[T],
    content_of: Callable[[T], str],
    is_fact: Callable[[T], bool],
) -> list[T]:
    """``hits`` without the context-only ones when a learned fact answers ``query`` itself.

    ``hits``: one leg's hits, any order (kept); ``content_of``: a hit's own words (as in
    :func:`without_riders`); ``is_fact``: whether a hit is a fact learned from a conversation
    (extracted, not a captured turn or an API write). When a fact's own words hold a term of
    ``query``, the hits whose own words hold none (they match only through their neighbouring
    turns) are dropped; otherwise ``hits`` unchanged. Texts are analysed only when a fact is
    among the hits (memoised per text).
    """
    if len(hits) <= 1 or not any(is_fact(h) for h in hits):  # the common case: no fact
        return list(hits)
    terms = frozenset(query_tokens(query))
    if not terms:
        return list(hits)
    if all(terms.isdisjoint(_own_terms(content_of(h))) for h in hits if is_fact(h)):
        return list(hits)
    return [h for h in hits if not terms.isdisjoint(_own_terms(content_of(h)))]


#: Longest text whose terms :func:`_own_terms` memoises (a memory's content and slot words).
_MEMO_CHARS = 2048


def _own_terms(text: str) -> frozenset[str]:
    """The index terms of ``text`` (memoised for texts of at most :data:`_MEMO_CHARS`)."""
    if len(text) > _MEMO_CHARS:
        return frozenset(analyse(text))
    return _memo_terms(text)


@functools.lru_cache(maxsize=4096)
def _memo_terms(text: str) -> frozenset[str]:
    return frozenset(analyse(text))
