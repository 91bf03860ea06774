"""Pure ranking: token estimates, relevance floor, Reciprocal Rank Fusion, ordering, budget walk.

No I/O and no clock: anything time-dependent takes its values as arguments (see docs). The
retrieval module runs the keyword and vector legs, turns their raw scores into :class:`Candidate`
lists, applies :func:`apply_relevance_floor` per leg, fuses them with :func:`fuse_candidates`
(weighted RRF) or :func:`shared.fusion.combsum_fuse`, orders with :func:`order_candidates`,
drops repeated texts with :func:`drop_duplicate_content` and cuts with :func:`budget_walk`.

Defaults come from LoCoMo measurements: RRF ``k = 10`` with keyword:vector weights
``2:1`` beat the keyword leg alone, while the common seed ``k = 60`` with equal weights scored
below it; ``SEED_RRF_K`` keeps that value available.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence
from typing import TypeVar

import msgspec

from shared.errors import ConfigurationError

__all__ = [
    "DEFAULT_KEYWORD_WEIGHT",
    "DEFAULT_MAX_TOKENS",
    "DEFAULT_RELATIVE_FLOOR",
    "DEFAULT_RRF_K",
    "DEFAULT_VECTOR_WEIGHT",
    "MAX_MAX_TOKENS",
    "MEMORY_OVERHEAD_TOKENS",
    "SEED_RRF_K",
    "Candidate",
    "ScoredMemory",
    "apply_relevance_floor",
    "bm25_to_relevance",
    "budget_walk",
    "clamp_max_tokens",
    "content_key",
    "drop_duplicate_content",
    "estimate_tokens",
    "fuse_candidates",
    "memory_tokens",
    "order_candidates",
    "rrf_fuse",
]

T = TypeVar("T")

# --- constants ---------------------------------------------------------------------------------

DEFAULT_RRF_K = 2.0
"""RRF smoothing constant chosen on LoCoMo with ``bench/locomo_recall.py`` (k=2, keyword:vector 3:1:
Hit@5 0.635 / MRR 0.496 with MiniLM, 0.633 / 0.497 static, vs FTS5 alone 0.618 / 0.489; k=10 2:1
from an earlier trial gave 0.641 / 0.473, i.e. a lower MRR than keyword alone)."""
SEED_RRF_K = 60.0
"""The k of Cormack, Clarke & Büttcher (SIGIR 2009); scored below FTS5 alone on LoCoMo."""
DEFAULT_KEYWORD_WEIGHT = 3.0
"""Weight of the keyword (FTS5 bm25) leg in RRF (docs/ARCHITECTURE.md)."""
DEFAULT_VECTOR_WEIGHT = 1.0
"""Weight of the vector (KNN) leg in RRF (docs/ARCHITECTURE.md)."""

CONTENT_KEY_CACHE = 8192
"""Memory texts whose :func:`content_key` is memoised (a few MB at most)."""

DEFAULT_RELATIVE_FLOOR = 0.3
"""A candidate must score at least this fraction of its leg's best score (0..1)."""

DEFAULT_MAX_TOKENS = 2000
"""Default token budget for the injected block (matches ``Settings.recall_max_tokens``)."""
MAX_MAX_TOKENS = 8000
"""Upper clamp for the injection budget (matches the settings validation range 0..8000)."""

MEMORY_OVERHEAD_TOKENS = 8
"""Fixed tokens per memory for its line in the block: ``"- [YYYY-MM-DD] (category) "`` + newline.

``- [2024-05-01] (preference) `` is 29 ASCII bytes → 8 by the 4-bytes rule of
:func:`estimate_tokens`, and cl100k tokenises it into about 8-10 tokens."""
ASCII_END = 0x80
"""First code point past ASCII (U+0080)."""


# --- token estimate ----------------------------------------------------------------------------


_ASCII_BYTES = bytes(range(ASCII_END))


def estimate_tokens(text: str) -> int:
    """Estimated LLM tokens of ``text``: ``ceil(ascii_bytes / 4 + non_ascii_utf8_bytes / 3)``.

    ``""`` → 0; result ≥ 0; never raises (lone surrogates count as 3 bytes).

    Rationale: OpenAI's rule of thumb is ~4 characters (= bytes) per token for English text
    (https://help.openai.com/en/articles/4936856). Non-ASCII text tokenises much worse with BPE
    vocabularies (cl100k/o200k): a Han/Kana/Hangul/Thai character (3 UTF-8 bytes) costs about one
    token, sometimes two. Counting non-ASCII bytes at 3 per token gives exactly 1 token per CJK
    character (a plain ``bytes / 4`` rule would give 0.75 and under-count), ~0.67 per
    Cyrillic/Greek letter (cl100k: ~0.4-0.5, so a safe over-count) and 1.33 per 4-byte emoji.
    Over-counting is the safe direction for a budget.
    """
    if text.isascii():  # fast path (C speed): ceil(bytes / 4)
        return -(-len(text) // 4)
    encoded = text.encode("utf-8", errors="surrogatepass")
    other_bytes = len(encoded.translate(None, _ASCII_BYTES))  # bytes >= 0x80, counted in C
    ascii_bytes = len(encoded) - other_bytes
    # ceil(a/4 + o/3) == ceil((3a + 4o) / 12), in integers.
    return -(-(3 * ascii_bytes + 4 * other_bytes) // 12)


def memory_tokens(content: str) -> int:
    """Estimated tokens one memory costs in the block: :func:`estimate_tokens` + overhead.

    The overhead is :data:`MEMORY_OVERHEAD_TOKENS` (bullet, date, category, newline).
    """
    return estimate_tokens(content) + MEMORY_OVERHEAD_TOKENS


def clamp_max_tokens(value: int | float | str | None) -> int:
    """Clamp a requested token budget to ``[0, MAX_MAX_TOKENS]`` (0..8000).

    ``None``, non-numeric strings, NaN → :data:`DEFAULT_MAX_TOKENS` (2000); ``±inf`` clamp to the
    bounds; fractions are truncated toward zero. ``0`` means "inject nothing". Never raises.
    """
    if value is None or isinstance(value, bool):
        return DEFAULT_MAX_TOKENS
    try:
        number = float(value)
    except (TypeError, ValueError):
        return DEFAULT_MAX_TOKENS
    if math.isnan(number):
        return DEFAULT_MAX_TOKENS
    if number <= 0:
        return 0
    if number >= MAX_MAX_TOKENS:
        return MAX_MAX_TOKENS
    return int(number)


# --- candidates and floor ----------------------------------------------------------------------


class Candidate(msgspec.Struct, frozen=True):
    """One hit of one retrieval leg.

    ``memory_id``: the memory's integer rowid. ``score``: higher is better, ≥ 0 for keyword hits
    (see :func:`bm25_to_relevance`), cosine similarity in [-1, 1] for vector hits. ``rank``: 1-based
    position in its leg (0 = not set; :func:`rrf_fuse` uses list order). ``matched_terms``: number
    of distinct query terms the memory matched, or ``None`` when unknown / not applicable (vector).
    """

    memory_id: int
    score: float
    rank: int = 0
    matched_terms: int | None = None


class ScoredMemory(msgspec.Struct, frozen=True):
    """A fused result: ``score`` = RRF score (higher better); per-leg rank/score or ``None``."""

    memory_id: int
    score: float
    keyword_rank: int | None = None
    vector_rank: int | None = None
    keyword_score: float | None = None
    vector_score: float | None = None


def bm25_to_relevance(bm25: float) -> float:
    """Turn an FTS5 ``bm25()`` value (≤ 0, more negative = better) into a score ≥ 0, higher better.

    Returns ``max(0.0, -bm25)``; NaN → 0.0. The value is not normalised: FTS5 clamps a term's IDF
    to 1e-6 when it occurs in at least half the rows (``fts5_aux.c``: ``if( idf<=0.0 ) idf=1e-6``),
    so on a small corpus real matches can score ~1e-6. That is why :func:`apply_relevance_floor`
    defaults to a floor *relative to the best hit* and term matching, not an absolute bm25 value.
    """
    if math.isnan(bm25):
        return 0.0
    return max(0.0, -bm25)


def apply_relevance_floor(
    candidates: Sequence[Candidate],
    *,
    relative_floor: float = DEFAULT_RELATIVE_FLOOR,
    absolute_floor: float | None = None,
    min_matched_terms: int = 1,
) -> list[Candidate]:
    """Drop candidates that are too weak to inject; keeps input order.

    A candidate is kept only if ALL hold:

    (a) ``matched_terms is None`` or ``matched_terms >= min_matched_terms`` (default 1: it must
        contain at least one non-stop-word query term; an FTS5 OR-query of
        :func:`shared.fts_query.query_terms` already guarantees this for keyword hits);
    (b) ``score >= relative_floor * best`` where ``best`` is the highest score in ``candidates``
        (default 0.3; 0 disables; only applied when ``best > 0``);
    (c) ``score >= absolute_floor`` if given (default ``None`` = off; use it for vector legs,
        where KNN always returns k neighbours however unrelated, e.g. a cosine floor).

    Non-finite scores are dropped. ``relative_floor`` must be within [0, 1], else
    :class:`ConfigurationError`. An empty result is a valid answer (see docs).
    """
    if not (0.0 <= relative_floor <= 1.0):
        raise ConfigurationError("relative_floor must be within 0..1")
    finite = [c for c in candidates if math.isfinite(c.score)]
    if not finite:
        return []
    best = max(c.score for c in finite)
    kept: list[Candidate] = []
    for c in finite:
        if c.matched_terms is not None and c.matched_terms < min_matched_terms:
            continue
        if best > 0 and c.score < relative_floor * best:
            continue
        if absolute_floor is not None and c.score < absolute_floor:
            continue
        kept.append(c)
    return kept


# --- fusion ------------------------------------------------------------------------------------


def rrf_fuse(legs: Sequence[tuple[Sequence[int], float]], k: float) -> list[tuple[int, float]]:
    """Weighted Reciprocal Rank Fusion.

    ``score(d) = Σ_i w_i / (k + rank_i(d))`` over the legs that contain ``d``, ranks 1-based
    (Cormack, Clarke & Büttcher, "Reciprocal Rank Fusion outperforms Condorcet and individual Rank
    Learning Methods", SIGIR 2009; weights per the docs). ``legs``: ``(ids best-first, weight)``;
    a repeated id within one leg counts at its first (best) position only.

    Returns ``[(memory_id, score)]`` sorted by score desc, ties broken by the better (smaller)
    best rank across legs, then by the smaller id — fully deterministic.

    Raises :class:`ConfigurationError` if ``k <= 0`` or a weight is negative or not finite.
    """
    if not (math.isfinite(k) and k > 0):
        raise ConfigurationError("rrf k must be a positive finite number")
    scores: dict[int, float] = {}
    best_rank: dict[int, int] = {}
    for ids, weight in legs:
        if not (math.isfinite(weight) and weight >= 0):
            raise ConfigurationError("rrf weights must be finite and >= 0")
        seen: set[int] = set()
        for pos, memory_id in enumerate(ids, start=1):
            if memory_id in seen:
                continue
            seen.add(memory_id)
            scores[memory_id] = scores.get(memory_id, 0.0) + weight / (k + pos)
            best_rank[memory_id] = min(best_rank.get(memory_id, pos), pos)
    return sorted(scores.items(), key=lambda item: (-item[1], best_rank[item[0]], item[0]))


def fuse_candidates(
    keyword: Sequence[Candidate],
    vector: Sequence[Candidate],
    *,
    k: float = DEFAULT_RRF_K,
    keyword_weight: float = DEFAULT_KEYWORD_WEIGHT,
    vector_weight: float = DEFAULT_VECTOR_WEIGHT,
) -> list[ScoredMemory]:
    """Fuse a keyword and a vector leg (each best-first) with :func:`rrf_fuse`.

    Ranks are the 1-based list positions. Either leg may be empty (then the result is that leg's
    order with RRF scores). Raises like :func:`rrf_fuse`.
    """
    kw_rank: dict[int, tuple[int, float]] = {}
    for pos, c in enumerate(keyword, start=1):
        kw_rank.setdefault(c.memory_id, (pos, c.score))
    vec_rank: dict[int, tuple[int, float]] = {}
    for pos, c in enumerate(vector, start=1):
        vec_rank.setdefault(c.memory_id, (pos, c.score))
    fused = rrf_fuse(
        [
            ([c.memory_id for c in keyword], keyword_weight),
            ([c.memory_id for c in vector], vector_weight),
        ],
        k,
    )
    out: list[ScoredMemory] = []
    for memory_id, score in fused:
        kw = kw_rank.get(memory_id)
        vec = vec_rank.get(memory_id)
        out.append(
            ScoredMemory(
                memory_id=memory_id,
                score=score,
                keyword_rank=kw[0] if kw else None,
                vector_rank=vec[0] if vec else None,
                keyword_score=kw[1] if kw else None,
                vector_score=vec[1] if vec else None,
            )
        )
    return out


# --- ordering and budget -----------------------------------------------------------------------


def order_candidates(
    items: Sequence[tuple[int, float, float, float]],
) -> list[int]:
    """Final order of memories from plain values ``(memory_id, score, relevance, updated_at)``.

    Sort keys: ``score`` desc, then ``relevance`` (per-memory 0..1) desc, then ``updated_at``
    (unix seconds) desc = most recent first, then ``memory_id`` asc so the order is total.
    NaN in any value sorts as the worst. Returns the memory ids in that order.
    """
    # descending = ascending by the negation; NaN negates to +inf, the worst. The keys end with
    # the id, so sorting them orders the ids (equal keys are the same id and values)
    inf, isnan = math.inf, math.isnan
    keys = sorted(
        (
            inf if isnan(score) else -score,
            inf if isnan(relevance) else -relevance,
            inf if isnan(updated) else -updated,
            memory_id,
        )
        for memory_id, score, relevance, updated in items
    )
    return [k[3] for k in keys]


@functools.lru_cache(maxsize=CONTENT_KEY_CACHE)
def content_key(text: str) -> str:
    r"""The form in which two memory texts are compared: whitespace collapsed, casefolded.

    ``"  Who is my  doctor?\n"`` → ``"who is my doctor?"``: runs of whitespace (as
    :meth:`str.split` sees it: spaces, tabs, newlines, U+00A0, U+2028/2029, ...) become one
    space, the ends are trimmed, then :meth:`str.casefold` (which also folds ``ß`` → ``ss``).
    No other normalisation (no NFKC, punctuation kept). Pure; never raises. Memoised per text
    (:data:`CONTENT_KEY_CACHE` texts: the same memories are recalled request after request).
    """
    return " ".join(text.split()).casefold()


def drop_duplicate_content(items: Sequence[T], content_of: Callable[[T], str]) -> list[T]:
    """Keep only the first (best-ranked) of items whose texts have the same :func:`content_key`.

    ``items``: best first, e.g. memories in their final order. ``content_of``: the text of one
    item, e.g. ``lambda m: m.content``. Returns a new list, order of the kept items preserved;
    empty input → ``[]``. Run it before the memory cap and :func:`budget_walk` so a repeated text
    (an owner-wide memory and an end user's own copy of it) takes neither a slot nor budget.
    Pure; never raises (unless ``content_of`` does).
    """
    seen: set[str] = set()
    kept: list[T] = []
    for item in items:
        key = content_key(content_of(item))
        if key in seen:
            continue
        seen.add(key)
        kept.append(item)
    return kept


def budget_walk(items: Sequence[T], tokens_of: Callable[[T], int], max_tokens: int) -> list[T]:
    """Take ``items`` (best first) while the running token total fits ``max_tokens``.

    Rules:

    * Skip-and-continue: an item that does not fit is skipped and the walk goes on, so smaller,
      lower-ranked items can still use the remaining budget (order of taken items is preserved).
    * The total of the result never exceeds ``max_tokens``: an item larger than the whole budget
      is never taken, even the best one (a 40 KB note must not put 15,000 tokens into every
      request that matches it; the budget protects the provider's context window).
    * ``max_tokens <= 0`` → ``[]`` (0 means "inject nothing"); empty input → ``[]``.

    ``tokens_of`` must return a non-negative int (negative values count as 0), e.g.
    ``lambda m: memory_tokens(m.content)``.
    """
    if max_tokens <= 0:
        return []
    taken: list[T] = []
    total = 0
    for item in items:
        cost = max(0, tokens_of(item))
        if total + cost <= max_tokens:
            taken.append(item)
            total += cost
    return taken
