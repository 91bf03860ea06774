"""Hits that match a query only through their search context, after the hits they rode on went.

Every captured turn and learned fact is indexed with its neighbouring turns as a lower-weighted
field (docs/ARCHITECTURE.md, "Learning"), so a memory can match a query through a neighbour's
words alone. That is the point of the field when the neighbour named what the memory leaves
implicit ("What did I decide about it?"). It misleads when the neighbour itself matched and was
then dropped as someone else's memory (:mod:`shared.personal_subjects`): told seven facts in one
chat, "What is my brother called?" matches "My sister is called Anna" directly, which is dropped,
and every turn beside it through its context ("called"), which would then be injected in its
place. A hit that holds none of the query's words itself is therefore dropped when hits holding
them were screened out and none is left. Pure.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TypeVar

from shared.recall_index.analysis import analyse, query_tokens

__all__ = ["without_riders"]

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
        return not terms.isdisjoint(analyse(content_of(hit)))

    if any(holds(h) for h in after):
        return list(after)
    kept = {id(h) for h in after}
    if any(holds(h) for h in before if id(h) not in kept):
        return []
    return list(after)
