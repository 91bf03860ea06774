"""Text analysis of the in-memory keyword index: the same terms SQLite FTS5 would index.

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

import re
import unicodedata

import Stemmer

from shared.fts_query import DEFAULT_MAX_TERMS, index_text, query_terms

__all__ = ["analyse", "analyse_context", "query_tokens"]

_TOKEN = re.compile(r"[^\W_]+")
_STEMMER = Stemmer.Stemmer("porter")
_STEM_MIN_LEN = 3


def _strip_diacritics(text: str) -> str:
    """NFKD, then drop combining marks (``unicode61 remove_diacritics 2``'s effect on Latin)."""
    decomposed = unicodedata.normalize("NFKD", text)
    return "".join(ch for ch in decomposed if not unicodedata.combining(ch))


def _stem_all(tokens: list[str]) -> list[str]:
    stems: list[str] = _STEMMER.stemWords(tokens)
    return [
        s if t.isascii() and len(t) >= _STEM_MIN_LEN else t
        for t, s in zip(tokens, stems, strict=True)
    ]


def analyse(text: str) -> list[str]:
    """Index terms of ``text`` in order, with repeats (their count is the term frequency).

    ``"Running to the Café"`` → ``["run", "to", "the", "cafe"]``. Stop words are kept (as in
    FTS5; BM25's IDF weighs them down). Pure; never raises.
    """
    if not text.isascii():
        text = _strip_diacritics(text)
    tokens = _TOKEN.findall(text.lower())
    return _stem_all(tokens) if tokens else []


def analyse_context(context: str) -> list[str]:
    """Index terms of a memory's ``context`` field: :func:`analyse` of the same text FTS5 would
    hold for it (``index_text``: the text plus the bigrams of its CJK/Thai runs)."""
    if not context:
        return []
    return analyse(context if context.isascii() else index_text(context, None))


def query_tokens(query: str, max_terms: int = DEFAULT_MAX_TERMS) -> list[str]:
    """Distinct index terms of a user query, in first-occurrence order.

    :func:`shared.fts_query.query_terms` picks the terms (stop words and 1-letter words dropped,
    CJK bigrams, at most ``max_terms``); each is then analysed like indexed text (a term that
    FTS5 would re-tokenise into several tokens gives several terms). ``[]`` when nothing is left.
    """
    out: list[str] = []
    seen: set[str] = set()
    for term in query_terms(query, max_terms):
        for token in analyse(term):
            if token not in seen:
                seen.add(token)
                out.append(token)
    return out
