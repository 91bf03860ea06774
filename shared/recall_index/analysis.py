r"""Text analysis of the in-memory keyword index: the same terms SQLite FTS5 would index.

The FTS5 table is tokenised with ``porter unicode61 remove_diacritics 2``; the in-memory index
must cut and stem text the same way, or queries would stop matching what the store indexes:

* ``unicode61``: a token is a maximal run of letters and digits (``[^\\W_]``), case-folded, with
  diacritics removed (NFKD, combining marks dropped: ``café`` → ``cafe``).
* ``porter``: M. F. Porter's 1980 suffix-stripping algorithm ("An algorithm for suffix
  stripping", Program 14(3)), applied to ASCII tokens of 3+ characters. PyStemmer's ``porter``
  algorithm is the Snowball project's implementation of that same original algorithm (not
  Porter2/"english"), in C: ~1 µs per word, with its own cache of recent words.
* CJK/Thai text: the stored ``search_text`` already carries the character bigrams of
  :func:`shared.fts_query.index_text`, and queries go through :func:`shared.fts_query.query_terms`,
  which makes the same bigrams, so the two sides meet exactly as in FTS5.
"""

from __future__ import annotations

import functools
import itertools
import re
import unicodedata
from collections.abc import Iterable, Sequence

import Stemmer

from shared.fts_query import DEFAULT_MAX_TERMS, MEMO_CHARS, index_text, query_terms

__all__ = ["analyse", "analyse_context", "analyse_many", "context_text", "query_tokens"]

_TOKEN = re.compile(r"[^\W_]+")
_STEMMER = Stemmer.Stemmer("porter")
_STEM_MIN_LEN = 3


_STEMS: dict[str, str] = {}
"""Token → index term, shared by every load (bounded by :data:`_STEMS_MAX`)."""
_STEMS_MAX = 500_000


_MARKS = re.compile("[\u0300-\u036f\u1ab0-\u1aff\u1dc0-\u1dff\u20d0-\u20ff\ufe20-\ufe2f]")
"""The combining diacritical mark blocks (what ``remove_diacritics`` strips from Latin text)."""


def _strip_diacritics(text: str) -> str:
    """NFKD, then drop combining diacritical marks (``unicode61 remove_diacritics 2`` on Latin)."""
    return _MARKS.sub("", unicodedata.normalize("NFKD", text))


def _stem_map(tokens: Iterable[str]) -> dict[str, str]:
    """The index term of every distinct token (stemming each distinct token once, in C).

    The map returned holds every token of ``tokens`` (when the shared map would outgrow
    :data:`_STEMS_MAX` it is restarted with this call's tokens, which may alone exceed it).
    """
    distinct = set(tokens)
    new = [t for t in distinct if t not in _STEMS]
    if new:
        if len(_STEMS) + len(new) > _STEMS_MAX:
            _STEMS.clear()
            new = list(distinct)
        stems: list[str] = _STEMMER.stemWords(new)
        for t, s in zip(new, stems, strict=True):
            _STEMS[t] = s if t.isascii() and len(t) >= _STEM_MIN_LEN else t
    return _STEMS


def _tokens(text: str) -> list[str]:
    if not text.isascii():
        text = _strip_diacritics(text)
    found: list[str] = _TOKEN.findall(text.lower())
    return found


def analyse_many(texts: Sequence[str]) -> tuple[list[str], list[int]]:
    """Index terms of many texts at once: ``(terms of all texts concatenated, count per text)``.

    The per-token work runs in C (``re.findall``, ``set``, ``map``); Python only loops per text
    and per distinct token. Same terms as :func:`analyse`.
    """
    per_text = [_tokens(t) for t in texts]
    flat = list(itertools.chain.from_iterable(per_text))
    stems = _stem_map(flat)
    return list(map(stems.__getitem__, flat)), list(map(len, per_text))


def analyse(text: str) -> list[str]:
    """Index terms of ``text`` in order, with repeats (their count is the term frequency).

    ``"Running to the Café"`` → ``["run", "to", "the", "cafe"]``. Stop words are kept (as in
    FTS5; BM25's IDF weighs them down). Pure; never raises.
    """
    tokens = _tokens(text)
    stems = _stem_map(tokens)
    return [stems[t] for t in tokens]


def context_text(context: str) -> str:
    """The text indexed for a memory's ``context`` field.

    The text indexed for a memory's ``context`` field: what FTS5 would hold for it
    (``index_text``: the text plus the bigrams of its CJK/Thai runs).
    """
    if not context or context.isascii():
        return context
    return index_text(context, None)


def analyse_context(context: str) -> list[str]:
    """Index terms of a memory's ``context`` field (:func:`analyse` of :func:`context_text`)."""
    return analyse(context_text(context)) if context else []


def query_tokens(query: str, max_terms: int = DEFAULT_MAX_TERMS) -> list[str]:
    """Distinct index terms of a user query, in first-occurrence order.

    :func:`shared.fts_query.query_terms` picks the terms (stop words and 1-letter words dropped,
    CJK bigrams, at most ``max_terms``); each is then analysed like indexed text (a term that
    FTS5 would re-tokenise into several tokens gives several terms). ``[]`` when nothing is left.
    Memoised per query (one request asks several times, with different ``max_terms``: the
    search, the question factor, the when factor) and per query term (words repeat across
    queries).
    """
    if max_terms <= 0:
        return []
    if len(query) > MEMO_CHARS or max_terms > MEMO_CHARS:
        return list(_memo_long_query_tokens(query, max_terms))
    groups, every = _memo_query_tokens(query)
    if max_terms >= len(groups):
        return list(every)
    return list(_distinct(groups[:max_terms]))


@functools.lru_cache(maxsize=256)
def _memo_query_tokens(query: str) -> tuple[tuple[tuple[str, ...], ...], tuple[str, ...]]:
    """``(index terms of each query term, distinct index terms of them all)`` of ``query``.

    The query terms are those of :func:`shared.fts_query.query_terms` under its own cap
    (:data:`shared.fts_query.MEMO_CHARS`), so any smaller ``max_terms`` takes a prefix of them.
    """
    groups = tuple(_analyse_word(term) for term in query_terms(query, MEMO_CHARS))
    return groups, _distinct(groups)


@functools.lru_cache(maxsize=16)
def _memo_long_query_tokens(query: str, max_terms: int) -> tuple[str, ...]:
    """:func:`query_tokens` of a query longer than :data:`shared.fts_query.MEMO_CHARS`."""
    return _distinct(_analyse_word(term) for term in query_terms(query, max_terms))


def _distinct(groups: Iterable[tuple[str, ...]]) -> tuple[str, ...]:
    """The terms of ``groups`` in first-occurrence order, each once."""
    return tuple(dict.fromkeys(itertools.chain.from_iterable(groups)))


def _analyse_word(term: str) -> tuple[str, ...]:
    """:func:`analyse` of one query term, memoised for terms of at most :data:`_WORD_MEMO_CHARS`."""
    if len(term) > _WORD_MEMO_CHARS:
        return tuple(analyse(term))
    return _memo_analyse_word(term)


_WORD_MEMO_CHARS = 64
"""Longest query term whose analysis is memoised (so the memo stays at a few MB)."""


@functools.lru_cache(maxsize=16_384)
def _memo_analyse_word(term: str) -> tuple[str, ...]:
    return tuple(analyse(term))
