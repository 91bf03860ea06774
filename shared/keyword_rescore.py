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

import msgspec

from shared.echo import _Query, demote_questions, question_share, question_share_of
from shared.fts_query import DEFAULT_MAX_TERMS, query_terms
from shared.models import Memory, Scope
from shared.ranking import Candidate
from shared.recall_index import KeywordIndex
from shared.recall_index.analysis import query_tokens
from shared.recall_index.prepared import Prepared
from shared.settings import Settings

__all__ = ["rescore_keyword_hits", "screen_keyword_hits"]


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


def screen_keyword_hits(
    index: KeywordIndex | None,
    scope: Scope,
    query: str,
    echo_of: str,
    hits: Sequence[Candidate],
    memories: Mapping[int, Memory],
    settings: Settings,
    prepared: Mapping[int, Prepared] | None = None,
) -> list[Candidate]:
    """``hits`` without echoes of ``echo_of``, rescored by the question factor, best first.

    The same answer as :func:`shared.echo.drop_echoes` followed by :func:`rescore_keyword_hits`
    (the echo rules of :mod:`shared.echo`, then the demotion of matches in question sentences),
    in one pass over the hits reading each text from its record instead of a rowid → text map.

    Args:
        index: as in :func:`rescore_keyword_hits` (None: every term weighs 1.0).
        scope: the caller's scope.
        query: the recall query (the rescore's terms).
        echo_of: the text echoes are compared with (the newest user message's text).
        hits: keyword candidates, ``score`` ≥ 0, best first.
        memories: the hits' records by rowid; a hit without one counts as an empty text.
        settings: ``recall_question_factor``, ``recall_query_max_terms``.
        prepared: features prepared when the memories were indexed, by rowid; the others are
            analysed here.

    Pure apart from the read of the index's cached statistics (no I/O).
    """
    echo = _Query(echo_of)
    ready = prepared or {}
    words_len = len(echo.words)
    kept: list[tuple[Candidate, str, Prepared | None]] = []
    asking = False
    for c in hits:
        p = ready.get(c.memory_id)
        if p is None:
            m = memories.get(c.memory_id)
            text = "" if m is None else m.content
            if echo.echoed_by(text):
                continue
            asking = asking or "?" in text or "？" in text
        else:
            # only a question, or a text of the query's length, can be an echo
            # (:meth:`_Query.echoed_by`); only one with question sentences can be demoted
            text = ""
            if p.asked or p.words_len == words_len or p.words_len < 0:
                m = memories.get(c.memory_id)
                text = "" if m is None else m.content
                if echo.echoed_by(text, p.asked, p.words_len):
                    continue
            asking = asking or p.q_terms is not None
        kept.append((c, text, p))
    if settings.recall_question_factor >= 1.0 or not asking:
        return [c for c, _, _ in kept]
    return _demoted(index, scope, query, kept, settings)


def _demoted(
    index: KeywordIndex | None,
    scope: Scope,
    query: str,
    kept: list[tuple[Candidate, str, Prepared | None]],
    settings: Settings,
) -> list[Candidate]:
    """``(hit, text, features)`` as :func:`shared.echo.demote_questions` rescores the hits.

    The owner's IDF is read only when a hit may be demoted: one analysed here, or one whose
    prepared question sentences hold a query term (every other share is 0).
    """
    terms = _query_tokens(query, settings.recall_query_max_terms)
    if not terms:
        return [c for c, _, _ in kept]
    wanted = frozenset(terms)
    asking = [
        i
        for i, (_, _, p) in enumerate(kept)
        if p is None or (p.q_terms is not None and not wanted.isdisjoint(p.q_terms))
    ]
    out = [c for c, _, _ in kept]
    if not asking:  # no score changes: the hits stay best first
        return out
    weights = index.term_weights(scope, terms) if index is not None else {}
    w = {t: weights.get(t, 1.0) for t in terms}
    factor = settings.recall_question_factor
    for i in asking:
        c, text, p = kept[i]
        if p is None:
            share = question_share(w, text)
        else:
            share = question_share_of(w, (p.q_terms or (), p.s_terms))
        if share > 0.0:
            out[i] = msgspec.structs.replace(c, score=c.score * (1.0 - (1.0 - factor) * share))
    out.sort(key=_descending_score)
    return out


def _query_tokens(query: str, max_terms: int) -> list[str]:
    """:func:`query_tokens` of ``query`` under ``max_terms``.

    Asked under the default cap (the keyword search's own, memoised call) when the query has no
    more terms than that: the terms, so the tokens, are then the same.
    """
    if max_terms > DEFAULT_MAX_TERMS >= len(query_terms(query, DEFAULT_MAX_TERMS + 1)):
        return query_tokens(query)
    return query_tokens(query, max_terms)


def _descending_score(c: Candidate) -> float:
    return -c.score
