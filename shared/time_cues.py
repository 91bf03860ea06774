"""Time cues: "when" questions, and memories that state when something happened (pure functions).

A memory stating that something happened "yesterday", "last week" or "two months ago" answers a
"when" question together with its date, which the injected memory line carries
(:mod:`shared.memory_block`). For a query that asks when (:func:`asks_when`), recalled memories
whose own text holds such a relative time expression (:func:`states_relative_time`) are ranked
at ``recall_when_factor`` times their fused score (after the legs are floored and fused, so a
memory found by either leg is promoted; docs/ARCHITECTURE.md, "Recall and ranking"; the factor
and its LoCoMo figures, with and without LoCoMo's prefix, are in the README, "Recall quality").

English only: another language's "when" question is never recognised, so its ranking is
unchanged. Absolute dates ("on 8 May 2023") are deliberately not cues: a memory text that starts
with its date would match every "when" query alike.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping, Sequence

import msgspec

from shared.ranking import Candidate
from shared.recall_index.analysis import analyse, query_tokens
from shared.recall_index.prepared import Prepared

__all__ = ["asks_when", "boost_time_cues", "cue_terms", "states_relative_time"]

#: Memory texts whose cue is kept per process (an LRU keyed by the text itself), as
#: :data:`shared.echo.ECHO_CACHE_SIZE`.
CUE_CACHE_SIZE = 16_384
#: Characters of a memory text searched for a cue (bounds the per-recall cost).
MAX_CUE_CHARS = 2000

_MONTHS = "january|february|march|april|may|june|july|august|september|october|november|december"
_DAYS = "monday|tuesday|wednesday|thursday|friday|saturday|sunday"
_UNITS = (
    "day|days|week|weeks|weekend|weekends|month|months|year|years|night|morning|evening|"
    "afternoon|summer|winter|spring|fall|autumn"
)
_RELATIVE_TIME_RE = re.compile(
    rf"\b(?:yesterday|today|tonight|tomorrow|ago|recently|lately|"
    rf"(?:last|next|this|past|coming)\s+(?:{_UNITS}|{_DAYS}|{_MONTHS})|\d+\s+(?:{_UNITS}))\b",
    re.IGNORECASE,
)
# A sentence that asks when: "When did I ...", "What year ...", "How long ago ...".
_WHEN_RE = re.compile(
    r"(?:^|[.!?:;]\s*)\s*(?:when\b|what\s+(?:date|day|year|month|time)\b|how\s+long\s+ago\b|"
    r"which\s+(?:year|month|day|date)\b)",
    re.IGNORECASE,
)


#: Index terms of the words a when-question is made of ("what year", "how long ago"): not the
#: question's topic, so they never make a memory on-topic (:func:`boost_time_cues`).
_TIME_TERMS = frozenset(
    analyse("when what which date day days year years month months week weeks time how long ago")
)


@functools.lru_cache(maxsize=CUE_CACHE_SIZE)
def _terms(text: str) -> frozenset[str]:
    return frozenset(analyse(text[:MAX_CUE_CHARS]))


def asks_when(query: str) -> bool:
    """True when a sentence of ``query`` starts by asking when.

    "When did I move to Berlin?", "Thanks! What year was that?", "How long ago did we meet?",
    "Which month is the trip?" → True; "Tell me about Berlin", "I know when it is" → False.
    English only. Pure; never raises.
    """
    return _WHEN_RE.search(query) is not None


@functools.lru_cache(maxsize=CUE_CACHE_SIZE)
def states_relative_time(text: str) -> bool:
    """True when ``text`` holds a relative time expression; memoised per text.

    "yesterday", "today", "tonight", "tomorrow", "ago", "recently", "lately", "last/next/this/
    past/coming" + a day, week, month, year, season or day name, or a number + such a unit
    ("3 weeks"): "I adopted a puppy last week" → True; "I adopted a puppy" or "[8 May 2023] I
    adopted a puppy" → False. Only the first :data:`MAX_CUE_CHARS` characters are searched.
    Pure; never raises.
    """
    return _RELATIVE_TIME_RE.search(text[:MAX_CUE_CHARS]) is not None


def cue_terms(text: str) -> tuple[str, ...] | None:
    """The index terms :func:`boost_time_cues` compares with a query's topic, sorted.

    Those of the first :data:`MAX_CUE_CHARS` characters of ``text`` when it
    :func:`states_relative_time`, else None (never a cue). Pure.
    """
    return tuple(sorted(_terms(text))) if states_relative_time(text) else None


def boost_time_cues(
    query: str,
    candidates: Sequence[Candidate],
    content_of: Mapping[int, str],
    factor: float,
    prepared: Mapping[int, Prepared] | None = None,
) -> list[Candidate]:
    """``candidates`` with the score of time-stating memories times ``factor`` for a when-query.

    Args:
        query: the recall query; nothing changes unless :func:`asks_when` holds for it.
        candidates: recall candidates (fused, or the keyword leg alone), best first,
            ``score`` ≥ 0.
        content_of: memory text by rowid; a candidate whose id is absent is left alone.
        factor: multiplier ≥ 1 for a memory whose text :func:`states_relative_time` (1 = off;
            chosen on LoCoMo, see the README, "Recall quality") and shares a topic word with the
            query (a query term other than the when-words: "I moved to Berlin two years ago"
            is not promoted for "What year did my brother go to Rome?").
        prepared: features prepared when the memories were indexed, by rowid
            (:class:`shared.recall_index.prepared.Prepared` ``cue_terms``); the others are
            analysed here.

    Returns:
        The candidates re-sorted by score (stable: equal scores keep their order). Pure.
    """
    if factor == 1.0 or not asks_when(query):
        return list(candidates)
    topic = frozenset(query_tokens(query)) - _TIME_TERMS

    ready = prepared or {}

    def cued(c: Candidate) -> bool:
        p = ready.get(c.memory_id)
        if p is not None and p.words_len >= 0:
            terms = p.cue_terms
            return terms is not None and (not topic or not topic.isdisjoint(terms))
        text = content_of.get(c.memory_id, "")
        return states_relative_time(text) and (not topic or not topic.isdisjoint(_terms(text)))

    out = [msgspec.structs.replace(c, score=c.score * factor) if cued(c) else c for c in candidates]
    out.sort(key=lambda c: -c.score)
    return out
