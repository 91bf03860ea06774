"""Echoes: turns that only ask, and memories that merely repeat the query (pure functions).

A question is the best keyword match for itself. A captured "What is my dog called?" outranks the
later "My dog is called Rex" when the question is asked again, sets the relative relevance floor,
and the answer is not injected. Two rules prevent that (docs/ARCHITECTURE.md, "Recall"):

* learning does not capture a turn that is only a question or a request to the assistant
  (:func:`is_question_or_request`); facts are still extracted from it (the extractor drops
  question sentences itself) and it still serves as context of its neighbours;
* recall drops a memory that is an echo of the query (:func:`is_echo`) before the relative floor
  is computed, so an echo is never injected and never sets the floor (:func:`drop_echoes`);
* a memory whose match with the query lies only in its question sentences (it asked about the
  thing, "That's nice! What pet do you have?") is ranked at a fraction of its keyword score
  (:func:`demote_questions`), also before the floor.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Collection, Mapping, Sequence
from typing import TypeVar

import msgspec

from shared.fts_query import query_terms
from shared.ranking import Candidate
from shared.recall_index.analysis import analyse

T = TypeVar("T")

#: Share of a question memory's search terms found in the query that makes it an echo.
QUESTION_ECHO_CONTAINMENT = 0.5
#: Terms compared per text (a pasted document is never an echo of a short query).
MAX_ECHO_TERMS = 256
#: Longest memory text (characters) checked by :func:`asks_only`; a longer one is never asks-only
#: (it bounds the per-recall cost: at most ``recall_top_k`` texts of this size are analysed).
MAX_ASKS_CHARS = 2000

_SENTENCE_RE = re.compile(r"[^.!?。！？\n]+[.!?。！？]*[\"')\]]*")
_QUESTION_END_RE = re.compile(r"[?？][\s\"')\]]*$")
# A clause in which the user states something about themselves ("I moved to Berlin, any tips?").
_FIRST_PERSON_CLAUSE_RE = re.compile(
    r"(?:^|[,;:]\s*|\b(?:and|but|so|because)\s+)(?:I|I'm|Im|I've|I'll|I'd|my|we|we're|we've|our)\b",
    re.IGNORECASE,
)
# A request addressed to the assistant: polite forms and common imperative verbs, at the start.
_REQUEST_RE = re.compile(
    r"^\W*(?:please\b|(?:can|could|would|will)\s+you\b|help\s+me\b|let\s+me\s+know\b|"
    r"(?:tell|show|give|send|teach|remind)\s+me\b|"
    r"(?:write|explain|summari[sz]e|translate|list|describe|generate|create|draft|rewrite|"
    r"refactor|debug|fix|compare|suggest|recommend|find|calculate|convert|review|outline|define|"
    r"brainstorm|compose|proofread|paraphrase|continue|elaborate|implement|solve)\b)",
    re.IGNORECASE,
)

# Greetings and thanks around a question or request ("Hi! Can you ...? Thanks.") state nothing.
_PLEASANTRY_RE = re.compile(
    r"^\W*(?:hi|hello|hey|thanks|thank\s+you|thx|cheers|ok|okay|great|cool|sure)\b\W*(?:\w+\W*)?$",
    re.IGNORECASE,
)


def _sentences(text: str) -> list[str]:
    """Non-empty sentences of ``text`` (split after ``. ! ? 。！？`` and at newlines)."""
    return [s.strip() for s in _SENTENCE_RE.findall(text) if s.strip()]


def _is_question_sentence(sentence: str) -> bool:
    """A sentence that ends in ``?`` and states nothing about the user in a clause of its own."""
    if not _QUESTION_END_RE.search(sentence):
        return False
    return not _FIRST_PERSON_CLAUSE_RE.search(sentence)


def is_question_or_request(text: str) -> bool:
    """True when every sentence of ``text`` is a question or a request to the assistant.

    A question sentence ends in ``?``/``？`` with no clause of its own starting with a first-person
    word ("What is my dog called?" is one; "I moved to Berlin, any tips?" is not). A request starts
    with a polite form or an imperative verb addressed to the assistant ("Please ...", "Can you
    ...", "Tell me ...", "Write ...", "Explain ..."). Greetings and thanks of at most two words
    ("Hi!", "Thanks a lot.") are ignored; a text with any other sentence (a statement) is
    not. English rules: another language's question without ``?`` counts as a statement (it is
    captured, as before). Empty text → False. Pure; never raises.
    """
    sentences = [s for s in _sentences(text) if not _PLEASANTRY_RE.match(s)]
    if not sentences:
        return False
    return all(_is_question_sentence(s) or _REQUEST_RE.search(s) for s in sentences)


def _normalised(text: str) -> str:
    """Case-folded NFKC words of ``text`` (letters and digits only), space-joined."""
    folded = unicodedata.normalize("NFKC", text).casefold()
    return " ".join(re.findall(r"\w+", folded))


def is_echo(query: str, content: str) -> bool:
    """True when the memory text ``content`` is the query ``query`` itself or a near copy of it.

    An echo is (a) the same words as the query (case, punctuation and spacing ignored), or (b) a
    question or request (:func:`is_question_or_request`) at least
    :data:`QUESTION_ECHO_CONTAINMENT` of whose search terms (:func:`shared.fts_query.query_terms`)
    occur in the query: a stored question carries no answer, so its only effect on a similar query
    would be to take a place and set the floor. A statement that shares its terms with a question
    ("I live in Berlin" for "Do I live in Berlin?") is the answer, never an echo. Pure.
    """
    q = _normalised(query)
    if q and q == _normalised(content):
        return True
    if not is_question_or_request(content):
        return False
    terms = set(query_terms(content, MAX_ECHO_TERMS))
    if not terms:
        return False
    shared = terms.intersection(query_terms(query, MAX_ECHO_TERMS))
    return len(shared) >= QUESTION_ECHO_CONTAINMENT * len(terms)


def drop_echoes(
    query: str,
    candidates: Sequence[T],
    content_of: Mapping[int, str],
    id_of: Callable[[T], int],
) -> list[T]:
    """``candidates`` without the echoes of ``query`` (:func:`is_echo`); keeps order.

    Args:
        query: the recall query (the newest user message's text).
        candidates: hits of one retrieval leg, any type.
        content_of: memory text by rowid; a candidate whose id is absent is kept.
        id_of: the rowid of a candidate.

    Call it before the relative floor is computed, so an echo never sets the floor. Pure.
    """
    return [c for c in candidates if not is_echo(query, content_of.get(id_of(c), ""))]


def asks_only(terms: Collection[str], content: str) -> bool:
    """True when every query term that ``content`` holds occurs only in its question sentences.

    Args:
        terms: the query's index terms (:func:`shared.recall_index.analysis.query_tokens`).
        content: a memory's text.

    A memory that only *asked* about what the query names ("That's nice! What pet do you
    have?" for "What pet do I have?") holds no answer to it, however well it matches. A
    question sentence is one :func:`is_question_or_request` would count as a question (ends in
    ``?`` with no first-person clause); a text with no ``?``/``？`` is never asks-only, nor is
    one holding none of ``terms``, nor one longer than :data:`MAX_ASKS_CHARS`. Pure; never
    raises.
    """
    if len(content) > MAX_ASKS_CHARS or ("?" not in content and "？" not in content):
        return False
    wanted = set(terms)
    in_questions = False
    for sentence in _sentences(content):
        found = wanted.intersection(analyse(sentence))
        if not found:
            continue
        if not _is_question_sentence(sentence):
            return False
        in_questions = True
    return in_questions


def demote_questions(
    terms: Collection[str],
    candidates: Sequence[Candidate],
    content_of: Mapping[int, str],
    factor: float,
) -> list[Candidate]:
    """``candidates`` with the score of asks-only memories (:func:`asks_only`) times ``factor``.

    Args:
        terms: the query's index terms.
        candidates: keyword hits, best first, ``score`` ≥ 0.
        content_of: memory text by rowid; a candidate whose id is absent is left alone.
        factor: multiplier in 0..1 (1 leaves every score alone; chosen on LoCoMo, see the
            README, "Recall quality").

    Returns:
        The candidates re-sorted by score (stable: equal scores keep their order). Call it before
        the relative floor, so a question never sets the floor at its full score. Pure.
    """
    if factor >= 1.0 or not terms:
        return list(candidates)
    out = [
        msgspec.structs.replace(c, score=c.score * factor)
        if asks_only(terms, content_of.get(c.memory_id, ""))
        else c
        for c in candidates
    ]
    out.sort(key=lambda c: -c.score)
    return out
