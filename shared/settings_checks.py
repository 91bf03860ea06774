"""Range checks of :class:`shared.settings.Settings` beyond the types (run at load).

Kept apart from the struct so ``shared/settings.py`` stays one concept: the fields.
"""

from __future__ import annotations

from typing import Any

from shared.errors import ConfigurationError

__all__ = ["MAX_FRESHNESS_MS", "RANGES", "check_ranges", "check_recall_engine"]

#: Inclusive (low, high) ranges of settings checked at load (bytes, words, seconds).
RANGES: dict[str, tuple[float, float]] = {
    "recall_query_max_bytes": (16, 1 << 20),
    "recall_query_max_terms": (1, 4096),
    "integrity_check_interval_s": (0, 86_400),
}


def check_ranges(settings: object, ranges: dict[str, tuple[float, float]]) -> None:
    """Raise :class:`ConfigurationError` for the first field of ``ranges`` out of its range."""
    for name, (low, high) in ranges.items():
        value = getattr(settings, name)
        if not low <= value <= high:
            raise ConfigurationError(f"{name} must be within {low:g}..{high:g}")


MAX_FRESHNESS_MS = 1000
"""Upper bound of ``recall_freshness_ms`` (a memory written elsewhere is seen within 1 s)."""


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
