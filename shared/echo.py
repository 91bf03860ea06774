"""Echoes: turns that only ask, and memories that merely repeat the query (pure functions).

A question is the best keyword match for itself. A captured "What is my dog called?" outranks the
later "My dog is called Rex" when the question is asked again, sets the relative relevance floor,
and the answer is not injected. Two rules prevent that (docs/ARCHITECTURE.md, "Recall"):

* learning does not capture a turn that is only a question or a request to the assistant
  (:func:`shared.question_form.is_question_or_request`); facts are still extracted from it (the
  extractor drops question sentences itself) and it still serves as context of its neighbours;
* recall drops a memory that is an echo of the query (:func:`is_echo`) before the relative floor
  is computed, so an echo is never injected and never sets the floor (:func:`drop_echoes`);
* a memory whose match with the query lies only in its question sentences (it asked about the
  thing, "That's nice! What pet do you have?") is ranked at a fraction of its keyword score, and
  one whose match lies partly in them at a fraction in proportion (:func:`demote_questions`),
  also before the floor.
"""

from __future__ import annotations

import functools
import re
import unicodedata
from collections.abc import Callable, Collection, Mapping, Sequence
from typing import TypeVar

import msgspec

from shared.fts_query import query_terms
from shared.question_form import SENTENCE_RE, is_question_or_request, is_question_sentence
from shared.ranking import Candidate
from shared.recall_index.analysis import analyse
from shared.recall_index.prepared import Prepared

T = TypeVar("T")

#: Share of a question memory's search terms found in the query that makes it an echo.
QUESTION_ECHO_CONTAINMENT = 0.5
#: Terms compared per text (a pasted document is never an echo of a short query).
MAX_ECHO_TERMS = 256
#: Memory texts whose question terms are kept per process (an LRU keyed by the text itself, so an
#: edited memory is a new entry; a statement keeps an empty set). Sized like the block-line cache
#: of :mod:`shared.recall_flow`.
ECHO_CACHE_SIZE = 16_384
#: Longest memory text (characters) checked by :func:`asks_only`; a longer one is never asks-only
#: (it bounds the per-recall cost: at most ``recall_top_k`` texts of this size are analysed).
MAX_ASKS_CHARS = 2000

_WORD_RE = re.compile(r"\w+")


def _normalised(text: str) -> str:
    """Case-folded NFKC words of ``text`` (letters and digits only), space-joined.

    ASCII text skips the normalisation (NFKC leaves ASCII unchanged and ``casefold`` equals
    ``lower`` on it).
    """
    folded = text.lower() if text.isascii() else unicodedata.normalize("NFKC", text).casefold()
    return " ".join(_WORD_RE.findall(folded))


def normalised_words(text: str) -> str:
    """The words of ``text`` as :func:`is_echo` compares them with a query's; pure.

    Case-folded NFKC words (letters and digits only), space-joined: ``"What's up, Rex?"`` →
    ``"what s up rex"``.
    """
    return _normalised(text)


def asked_terms(content: str) -> frozenset[str]:
    """The search terms of a question or request, else an empty set.

    Terms of ``content`` (:func:`shared.fts_query.query_terms`, at most :data:`MAX_ECHO_TERMS`)
    when it is a question or request (:func:`is_question_or_request`). Pure.
    """
    if not is_question_or_request(content):
        return frozenset()
    return frozenset(query_terms(content, MAX_ECHO_TERMS))


#: :func:`asked_terms`, memoised per text (recalled texts repeat).
_asked_terms = functools.lru_cache(maxsize=ECHO_CACHE_SIZE)(asked_terms)


class _Query:
    """The query side of :func:`is_echo`, computed once for every memory compared with it."""

    __slots__ = ("_terms", "edges", "query", "words")

    def __init__(self, query: str) -> None:
        self.query = query
        self.words = _normalised(query)
        words = self.words.split(" ")
        self.edges = (words[0], words[-1])
        self._terms: frozenset[str] | None = None

    def same_words(self, content: str) -> bool:
        """Whether ``content`` has exactly the query's words (:func:`_normalised`).

        ASCII text is first checked cheaply: its words are at most as long as itself and hold
        the query's first and last word (no normalisation when either fails).
        """
        if not self.words:
            return False
        if not content.isascii():
            return _normalised(content) == self.words
        if len(content) < len(self.words):
            return False
        lowered = content.lower()
        if self.edges[0] not in lowered or self.edges[1] not in lowered:
            return False
        return " ".join(_WORD_RE.findall(lowered)) == self.words

    def echoed_by(
        self, content: str, asked: Collection[str] | None = None, words_len: int = -1
    ) -> bool:
        """:func:`is_echo` of ``content`` against this query.

        ``asked``: :func:`asked_terms` of ``content`` when already known (distinct terms);
        ``words_len``: the length of its :func:`normalised_words` when known (−1: not known),
        which spares the comparison of words that cannot be the query's.
        """
        if (words_len < 0 or words_len == len(self.words)) and self.same_words(content):
            return True
        terms = _asked_terms(content) if asked is None else asked
        if not terms:
            return False
        if self._terms is None:
            self._terms = frozenset(query_terms(self.query, MAX_ECHO_TERMS))
        shared = sum(1 for t in terms if t in self._terms)
        return shared >= QUESTION_ECHO_CONTAINMENT * len(terms)


def is_echo(query: str, content: str) -> bool:
    """True when the memory text ``content`` is the query ``query`` itself or a near copy of it.

    An echo is (a) the same words as the query (case, punctuation and spacing ignored), or (b) a
    question or request (:func:`is_question_or_request`) at least
    :data:`QUESTION_ECHO_CONTAINMENT` of whose search terms (:func:`shared.fts_query.query_terms`)
    occur in the query: a stored question carries no answer, so its only effect on a similar query
    would be to take a place and set the floor. A statement that shares its terms with a question
    ("I live in Berlin" for "Do I live in Berlin?") is the answer, never an echo. Pure (the
    features of ``content`` are memoised per text).
    """
    return _Query(query).echoed_by(content)


def drop_echoes(
    query: str,
    candidates: Sequence[T],
    content_of: Mapping[int, str],
    id_of: Callable[[T], int],
    prepared: Mapping[int, Prepared] | None = None,
) -> list[T]:
    """``candidates`` without the echoes of ``query`` (:func:`is_echo`); keeps order.

    Args:
        query: the recall query (the newest user message's text).
        candidates: hits of one retrieval leg, any type.
        content_of: memory text by rowid; a candidate whose id is absent is kept.
        id_of: the rowid of a candidate.
        prepared: features prepared when the memory was indexed
            (:class:`shared.recall_index.prepared.Prepared`), by rowid; a memory without them
            is analysed here.

    Call it before the relative floor is computed, so an echo never sets the floor. Pure; the
    query is analysed once per call and each memory text without prepared features once per
    process.
    """
    q = _Query(query)
    ready = prepared or {}
    kept = []
    for c in candidates:
        i = id_of(c)
        p = ready.get(i)
        text = content_of.get(i, "")
        if not (q.echoed_by(text) if p is None else q.echoed_by(text, p.asked, p.words_len)):
            kept.append(c)
    return kept


def question_features(content: str) -> tuple[frozenset[str], frozenset[str]] | None:
    """What :func:`question_share` needs of ``content``: ``(question terms, statement terms)``.

    The index terms of its question sentences and of its other sentences; None when the text can
    never ask (longer than :data:`MAX_ASKS_CHARS`, or no ``?``/``？``). A memory prepared when
    indexed carries them (:func:`question_share_of` answers from them). Pure.
    """
    if len(content) > MAX_ASKS_CHARS or ("?" not in content and "？" not in content):
        return None
    asked: set[str] = set()
    stated: set[str] = set()
    for terms, is_question in sentence_terms(content):
        (asked if is_question else stated).update(terms)
    return frozenset(asked), frozenset(stated)


def question_share_of(
    weights: Mapping[str, float], features: tuple[Collection[str], Collection[str]] | None
) -> float:
    """:func:`question_share` from a text's :func:`question_features` (same answer, no analysis).

    One pass over ``weights`` (the query's few terms), testing each against the question and
    statement terms of ``features``.
    """
    if features is None:
        return 0.0
    asked, stated = features
    held = total = 0.0
    for term, weight in weights.items():
        if term in asked:
            w = weight if weight > 0.0 else 0.0
            total += w
            if term not in stated:
                held += w
        elif term in stated:
            total += weight if weight > 0.0 else 0.0
    if held <= 0.0 or total <= 0.0:
        return 0.0
    return held / total


def sentence_terms(content: str) -> tuple[tuple[frozenset[str], bool], ...]:
    """Per sentence of ``content``: its index terms and whether it is a question.

    Sentences split as in :func:`is_question_or_request`; terms by
    :func:`shared.recall_index.analysis.analyse`. Pure.
    """
    out = []
    for match in SENTENCE_RE.finditer(content):
        sentence = match.group().strip()
        if sentence:
            out.append((frozenset(analyse(sentence)), is_question_sentence(sentence)))
    return tuple(out)


#: :func:`question_features`, memoised per text (recalled texts repeat; a memory the index
#: prepared carries them already).
_features = functools.lru_cache(maxsize=ECHO_CACHE_SIZE)(question_features)


def question_share(weights: Mapping[str, float], content: str) -> float:
    """Share of the query's weight in ``content`` held only by its question sentences (0..1).

    Args:
        weights: the query's index terms (:func:`shared.recall_index.analysis.query_tokens`)
            with a weight each (the owner's BM25 IDF; 1.0 each when unknown; negatives count 0).
        content: a memory's text.

    Returns:
        ``Σ w(t) over the query terms found in content only in question sentences`` divided by
        ``Σ w(t) over the query terms found in content at all``; 0.0 when content holds none of
        them, has no ``?``/``？``, or is longer than :data:`MAX_ASKS_CHARS`. A question
        sentence is one :func:`is_question_or_request` would count as a question (ends in ``?``
        with no first-person clause). "That's so nice! What pet do you have?" for "What pet do I
        have?" → 1.0 (it asked, it holds no answer); "I feel low on confidence. Any tips on how
        you stay confident?" for "How does she stay confident?" → the weight of ``stay`` over
        that of ``stay`` and ``confid``. Pure; never raises.
    """
    return question_share_of(weights, _features(content))


def asks_only(terms: Collection[str], content: str) -> bool:
    """True when every query term that ``content`` holds occurs only in its question sentences.

    Args:
        terms: the query's index terms (:func:`shared.recall_index.analysis.query_tokens`).
        content: a memory's text.

    A memory that only *asked* about what the query names ("That's nice! What pet do you
    have?" for "What pet do I have?") holds no answer to it, however well it matches: its
    :func:`question_share` with equal weights is 1. A text with no ``?``/``？`` is never
    asks-only, nor is one holding none of ``terms``, nor one longer than
    :data:`MAX_ASKS_CHARS`. Pure; never raises.
    """
    return question_share(dict.fromkeys(terms, 1.0), content) >= 1.0


def demote_questions(
    terms: Collection[str],
    candidates: Sequence[Candidate],
    content_of: Mapping[int, str],
    factor: float,
    prepared: Mapping[int, Prepared] | None = None,
    weights: Mapping[str, float] | None = None,
) -> list[Candidate]:
    """``candidates`` with each score times ``1 − (1 − factor) · question_share``.

    Args:
        terms: the query's index terms.
        candidates: keyword hits, best first, ``score`` ≥ 0.
        content_of: memory text by rowid; a candidate whose id is absent is left alone.
        factor: multiplier in 0..1 for a memory whose query words are all in its question
            sentences (1 leaves every score alone; chosen on LoCoMo, see the README, "Recall
            quality").
        prepared: features prepared when the memory was indexed, by rowid (as in
            :func:`drop_echoes`); a memory without them is analysed here.
        weights: term → weight of :func:`question_share` (the owner's BM25 IDF); a term
            absent from it (or ``weights`` None) weighs 1.0.

    A memory that asked about part of what the query names and stated the rest ("I'm low on
    confidence. Any tips on how you stay confident?") is demoted in proportion to the weight of
    what it only asked about (:func:`question_share`); a memory that only asked
    (:func:`asks_only`) counts ``factor`` of its score, a statement its full score.

    Returns:
        The candidates re-sorted by score (stable: equal scores keep their order). Call it before
        the relative floor, so a question never sets the floor at its full score. Pure.
    """
    if factor >= 1.0 or not terms:
        return list(candidates)
    w = {t: (weights.get(t, 1.0) if weights is not None else 1.0) for t in terms}
    ready = prepared or {}
    out = []
    for c in candidates:
        p = ready.get(c.memory_id)
        if p is None:
            share = question_share(w, content_of.get(c.memory_id, ""))
        else:
            share = question_share_of(w, None if p.q_terms is None else (p.q_terms, p.s_terms))
        scale = 1.0 - (1.0 - factor) * share
        out.append(msgspec.structs.replace(c, score=c.score * scale) if share > 0.0 else c)
    out.sort(key=lambda c: -c.score)
    return out
