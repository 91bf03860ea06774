"""Near-duplicate rule for extracted facts: key, then near-duplicates.

See "Learning" in ``docs/ARCHITECTURE.md``.

The learning pipeline dedupes in two steps. First, facts carry stable upsert keys
(:mod:`shared.extraction.facts`), so restating a fact updates its row. Second, a fact whose key is
new but whose text is near-identical to a fact the same owner + end user already has updates that
row instead of inserting a second one. This module is the pure second step; candidates come from
an FTS5 lookup in :mod:`shared.learning`. Near-duplicate *vectors* can later be added by the
vector tier as a third step.

The rule (:func:`is_near_duplicate`), chosen to merge rewordings but never two different facts:

1. Both facts belong to the same *key family* (:func:`key_family`): the key without its last
   ``:``-separated part, e.g. ``preference:like`` vs ``preference:dislike``, ``pattern:always``
   vs ``pattern:never``. A like and a dislike of one thing never merge.
2. Both or neither contain a negation word (``not``, ``never``, ``no``, ``don't``, ...).
3. Their normalised token sets (:func:`fact_tokens`: NFKC, case-folded, surrounding punctuation
   stripped, ``User``/``the``/``a``/filler words dropped, dots inside tokens kept so ``Next.js``
   and ``3.12`` survive) are equal, or their Jaccard similarity |A∩B| / |A∪B| is at least
   :data:`JACCARD_THRESHOLD` (0.9). With 0.9 a single changed word in a fact of under ten
   tokens is never a duplicate (9/11 = 0.82): "prefers Postgres 16" and "prefers Postgres 15"
   stay apart, while case, punctuation, articles, "has decided" vs "decided" and "User"/"The
   user" differences merge.
"""

from __future__ import annotations

import unicodedata

__all__ = [
    "JACCARD_THRESHOLD",
    "fact_tokens",
    "is_near_duplicate",
    "jaccard",
    "key_family",
]

#: Minimum token-set Jaccard similarity of two near-duplicate facts (see the module docstring).
JACCARD_THRESHOLD = 0.9

_STRIP = ".,;:!?()[]{}\"'`“”‘’«»。，！？；：、…-—–*_"
#: Function words that never tell two facts apart (prepositions such as before/after/in/with do,
#: so they are kept).
_FILLER = frozenset(
    {
        "user",
        "user's",
        "users",
        "the",
        "a",
        "an",
        "to",
        "of",
        "is",
        "are",
        "was",
        "were",
        "be",
        "been",
        "being",
        "am",
        "has",
        "have",
        "had",
        "do",
        "does",
        "did",
        "will",
        "would",
        "shall",
        "that",
        "this",
        "these",
        "those",
        "it",
        "its",
        "i",
        "me",
        "my",
        "their",
        "them",
        "they",
        "really",
        "very",
        "also",
        "just",
        "quite",
        "too",
        "so",
    }
)
_NEGATIONS = frozenset(
    [
        "not",
        "no",
        "never",
        "nobody",
        "nothing",
        "neither",
        "nor",
        "don't",
        "doesn't",
        "didn't",
        "won't",
        "isn't",
        "aren't",
        "wasn't",
        "can't",
        "cannot",
        "dislikes",
        "dislike",
        "hates",
        "hate",
    ]
)


def fact_tokens(text: str) -> frozenset[str]:
    """Normalised word set of a fact's ``text`` (rules in the module docstring).

    >>> sorted(fact_tokens("The user prefers Next.js, really."))
    ['next.js', 'prefers']
    """
    norm = unicodedata.normalize("NFKC", text).casefold().replace("’", "'")
    out: set[str] = set()
    for raw in norm.split():
        token = raw.strip(_STRIP)
        if token and token not in _FILLER:
            out.add(token)
    return frozenset(out)


def jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    """|a ∩ b| / |a ∪ b| in 0.0..1.0 (1.0 for two empty sets)."""
    if not a and not b:
        return 1.0
    return len(a & b) / len(a | b)


def key_family(key: str) -> str:
    """The key without its last ``:`` part (``preference:like:rust`` → ``preference:like``).

    A key without ``:`` is its own family.
    """
    family, sep, _ = key.rpartition(":")
    return family if sep else key


def _negated(tokens: frozenset[str]) -> bool:
    return not tokens.isdisjoint(_NEGATIONS)


def is_near_duplicate(
    content_a: str, key_a: str, content_b: str, key_b: str, threshold: float = JACCARD_THRESHOLD
) -> bool:
    """True when fact A (``content_a``, ``key_a``) restates fact B and should update B's row.

    ``threshold`` is the Jaccard cut-off in 0.0..1.0 (default :data:`JACCARD_THRESHOLD`).
    Pure; never raises.
    """
    if key_a == key_b:
        return True
    if key_family(key_a) != key_family(key_b):
        return False
    a, b = fact_tokens(content_a), fact_tokens(content_b)
    if not a or not b or _negated(a) != _negated(b):
        return False
    return a == b or jaccard(a, b) >= threshold
