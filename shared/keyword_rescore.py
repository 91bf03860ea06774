"""Rescoring of keyword hits before the relative floor: matches in question sentences.

``recall_question_factor`` (:func:`shared.echo.demote_questions`): after echoes are dropped and
before the relative floor is computed (docs/ARCHITECTURE.md, "Recall and ranking"), a keyword
hit whose query words sit in its question sentences is demoted in proportion to the owner's IDF
weight of those words. Chosen on LoCoMo and checked on its turn text without the ``[date]
speaker:`` prefix (README, "Recall quality"). The other factor, for when-queries, applies to the
fused score (:func:`shared.time_cues.boost_time_cues`, called by :mod:`shared.retrieval`).

Cost: a few set operations per candidate (its sentence features were prepared when it was
indexed, else analysed once per process and text).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from shared.echo import demote_questions
from shared.models import Scope
from shared.ranking import Candidate
from shared.recall_index import KeywordIndex
from shared.recall_index.analysis import query_tokens
from shared.recall_index.prepared import Prepared
from shared.settings import Settings

__all__ = ["rescore_keyword_hits"]


def rescore_keyword_hits(
    index: KeywordIndex | None,
    scope: Scope,
    query: str,
    hits: Sequence[Candidate],
    content_of: Mapping[int, str],
    settings: Settings,
    prepared: Mapping[int, Prepared] | None = None,
) -> list[Candidate]:
    """``hits`` (keyword leg, best first) rescored by the question factor, best first.

    Args:
        index: the in-memory keyword index (its IDF weighs the query terms); None (the FTS5
            tier) weighs every term 1.0.
        scope: the caller's scope (whose statistics the IDF comes from).
        query: the recall query.
        hits: keyword candidates, ``score`` ≥ 0, echoes already dropped.
        content_of: memory text by rowid.
        settings: ``recall_question_factor`` (0..1, 1 = off), ``recall_query_max_terms``.
        prepared: features prepared when the memories were indexed, by rowid
            (:meth:`shared.recall_index.KeywordIndex.prepared`); the others are analysed here.

    Pure apart from the read of the index's cached statistics (no I/O).
    """
    kept = list(hits)
    # a text without a question mark has no question sentence: nothing to demote
    texts = [content_of.get(c.memory_id, "") for c in kept]
    asking = any("?" in t or "？" in t for t in texts)
    if settings.recall_question_factor < 1.0 and asking:
        terms = query_tokens(query, settings.recall_query_max_terms)
        weights = index.term_weights(scope, terms) if index is not None else None
        factor = settings.recall_question_factor
        kept = demote_questions(terms, kept, content_of, factor, prepared, weights)
    return kept
