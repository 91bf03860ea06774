"""Range checks of :class:`shared.settings.Settings` beyond the types (run at load).

Kept apart from the struct so ``shared/settings.py`` stays one concept: the fields.
"""

from __future__ import annotations

import math
from typing import Any

from shared.errors import ConfigurationError

__all__ = [
    "MAX_BM25_K1",
    "MAX_CONTEXT_WEIGHT",
    "MAX_FRESHNESS_MS",
    "MAX_RECALL_TOKENS",
    "POSITIVE",
    "RANGES",
    "check_finite",
    "check_positive",
    "check_ranges",
    "check_recall_engine",
]

#: Largest memory block, in tokens (also the search-preview budget bound).
MAX_RECALL_TOKENS = 8000
MAX_FRESHNESS_MS = 1000
"""Upper bound of ``recall_freshness_ms`` (a memory written elsewhere is seen within 1 s)."""

MAX_CONTEXT_WEIGHT = 10.0
"""Upper bound of ``recall_context_weight`` (a context word worth 10 of the memory's own)."""
MAX_BM25_K1 = 10.0
"""Upper bound of ``bm25_k1`` (usual values 0.5-2; above ~10 term frequency never saturates)."""

#: Inclusive (low, high) ranges of settings checked at load (tokens, bytes, words, counts,
#: characters, milliseconds, seconds, fractions). ``learn_max_turns``: most user turns one learn
#: job reads; ``rerank_candidates``: documents sent to the reranker per recall.
RANGES: dict[str, tuple[float, float]] = {
    "recall_max_tokens": (0, MAX_RECALL_TOKENS),
    "recall_query_max_bytes": (16, 1 << 20),
    "recall_query_max_terms": (1, 4096),
    "recall_relative_floor": (0.0, 1.0),
    "recall_fusion_keyword_share": (0.0, 1.0),
    "recall_question_factor": (0.0, 1.0),
    "recall_when_factor": (1.0, 10.0),
    "recall_vector_only_margin": (0.0, 1.0),
    "recall_context_weight": (0.0, MAX_CONTEXT_WEIGHT),
    "bm25_k1": (0.0, MAX_BM25_K1),
    "vector_min_similarity": (-1.0, 1.0),
    "rrf_keyword_weight": (0.0, 100.0),
    "rrf_vector_weight": (0.0, 100.0),
    "learn_max_turns": (1, 100),
    "forget_max_matches": (1, 1000),
    "end_user_max_chars": (1, 4096),
    "rerank_candidates": (1, 100),
    "integrity_check_interval_s": (0, 86_400),
}

#: Settings that must be > 0 (bytes, seconds, the RRF constant).
POSITIVE = (
    "max_body_bytes",
    "body_read_timeout_s",
    "rrf_k",
    "upstream_timeout_s",
    "upstream_connect_timeout_s",
    "job_timeout_s",
    "http_timeout_s",
    "http_connect_timeout_s",
)


def check_finite(settings: object) -> None:
    """Raise :class:`ConfigurationError` for the first float field that is NaN or infinite.

    An environment value like ``nan`` or ``inf`` parses as a float; every range check would pass
    NaN (all comparisons are false) and recall would then fail on every request instead of the
    gateway refusing to start.
    """
    for name in getattr(type(settings), "__struct_fields__", ()):
        value = getattr(settings, name)
        if isinstance(value, float) and not math.isfinite(value):
            raise ConfigurationError(f"setting '{name}' must be a finite number, got {value!r}")


def check_ranges(settings: object, ranges: dict[str, tuple[float, float]]) -> None:
    """Raise :class:`ConfigurationError` for the first field of ``ranges`` out of its range."""
    for name, (low, high) in ranges.items():
        value = getattr(settings, name)
        if not low <= value <= high:
            raise ConfigurationError(f"{name} must be within {low:g}..{high:g}")


def check_positive(settings: object, names: tuple[str, ...]) -> None:
    """Raise :class:`ConfigurationError` for the first field of ``names`` that is not > 0."""
    for name in names:
        if getattr(settings, name) <= 0:
            raise ConfigurationError(f"{name} must be positive")


def check_recall_engine(s: Any) -> None:
    """Validate the recall engine's settings.

    Raises:
        ConfigurationError: ``bm25_k1`` < 0, ``bm25_b`` outside 0..1, ``recall_context_weight``
            < 0, ``recall_cache_mb`` < 1 or ``recall_freshness_ms`` outside 0..1000.
    """
    if s.bm25_k1 < 0:
        raise ConfigurationError(f"setting 'bm25_k1' must be >= 0, got {s.bm25_k1}")
    if not 0.0 <= s.bm25_b <= 1.0:
        raise ConfigurationError(f"setting 'bm25_b' must be within 0..1, got {s.bm25_b}")
    if s.recall_context_weight < 0:
        raise ConfigurationError(
            f"setting 'recall_context_weight' must be >= 0, got {s.recall_context_weight}"
        )
    if s.recall_cache_mb < 1:
        raise ConfigurationError(f"setting 'recall_cache_mb' must be >= 1, got {s.recall_cache_mb}")
    if not 0 <= s.recall_freshness_ms <= MAX_FRESHNESS_MS:
        raise ConfigurationError("recall_freshness_ms must be within 0..1000")
