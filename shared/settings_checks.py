"""Range checks of :class:`shared.settings.Settings` beyond the types (run at load).

Kept apart from the struct so ``shared/settings.py`` stays one concept: the fields.
"""

from __future__ import annotations

import difflib
import math
from collections.abc import Iterable, Mapping
from typing import Any

from shared.errors import ConfigurationError

__all__ = [
    "BOUNDS",
    "MAX_BM25_K1",
    "MAX_CONTEXT_WEIGHT",
    "MAX_FRESHNESS_MS",
    "MAX_RECALL_TOKENS",
    "check_bounds",
    "check_numbers",
    "unknown_variables",
]

#: Largest memory block, in tokens (also the search-preview budget bound).
MAX_RECALL_TOKENS = 8000
MAX_FRESHNESS_MS = 1000
"""Upper bound of ``recall_freshness_ms`` (a memory written elsewhere is seen within 1 s)."""

MAX_CONTEXT_WEIGHT = 10.0
"""Upper bound of ``recall_context_weight`` (a context word worth 10 of the memory's own)."""
MAX_BM25_K1 = 10.0
"""Upper bound of ``bm25_k1`` (usual values 0.5-2; above ~10 term frequency never saturates)."""

#: Inclusive (low, high) bounds of numeric settings, checked when the settings load and when the
#: runtime settings API changes one (the same rule both ways); any other numeric field must be
#: finite and >= 0. ``learn_max_turns``: most user turns one learn job reads;
#: ``rerank_candidates``: documents sent to the reranker per recall.
BOUNDS: dict[str, tuple[float, float]] = {
    "max_body_bytes": (1, 1 << 30),
    # under 1 s a slow but healthy client could not send a body
    "body_read_timeout_s": (1, 3600),
    "bm25_b": (0, 1),
    "upstream_timeout_s": (0.001, 3600),
    "upstream_connect_timeout_s": (0.001, 600),
    "recall_max_tokens": (0, 8000),
    "recall_top_k": (1, 1000),
    "recall_max_memories": (0, 1000),
    "keyword_common_term_df": (0, 1_000_000),
    "vector_min_similarity": (-1, 1),
    "vector_preselect_dims": (0, 4096),
    "recall_vector_only_margin": (0, 1),
    "access_immunity": (0, 1_000_000),
    "max_memories_per_owner": (0, 1_000_000_000),
    "sweep_max_scan": (1, 100_000_000),
    "relevance_half_life_days": (0, 36_500),
    "recall_timeout_ms": (0, 60_000),
    "recall_query_max_bytes": (16, 1 << 20),
    "recall_query_max_terms": (1, 4096),
    "recall_relative_floor": (0, 1),
    "recall_min_shared_terms": (0, 32),
    "recall_fusion_keyword_share": (0, 1),
    "recall_context_weight": (0, MAX_CONTEXT_WEIGHT),
    "bm25_k1": (0, MAX_BM25_K1),
    "integrity_check_interval_s": (0, 86_400),
    "job_timeout_s": (0.001, 86_400),
    "recall_cache_mb": (1, 1 << 20),
    "recall_freshness_ms": (0, MAX_FRESHNESS_MS),
    "recall_question_factor": (0, 1),
    "recall_when_factor": (1, 10),
    "rrf_k": (0.001, 10_000),
    "rrf_keyword_weight": (0, 100),
    "rrf_vector_weight": (0, 100),
    "rerank_candidates": (1, 100),
    "rerank_timeout_ms": (1, 60_000),
    "query_rewrite_timeout_ms": (1, 60_000),
    "learn_max_turns": (1, 100),
    "forget_max_matches": (1, 1000),
    "end_user_max_chars": (1, 4096),
    "llm_extractor_min_turns": (1, 1000),
    "llm_extractor_timeout_s": (0.001, 3600),
    "embedding_dim": (0, 16_384),
    "embedding_timeout_s": (0.001, 600),
    "embedding_cache_size": (0, 10_000_000),
    "qdrant_timeout_s": (0.001, 600),
    "episodic_ttl_days": (0, 36_500),
    "factual_ttl_days": (0, 36_500),
    "procedural_ttl_days": (0, 36_500),
    "semantic_ttl_days": (0, 36_500),
    "sweep_batch_size": (1, 1_000_000),
    "job_max_tries": (1, 100),
    "outbox_relay_interval_s": (0.01, 86_400),
    "settings_refresh_s": (0, 3600),
    "http_timeout_s": (0.001, 3600),
    "http_connect_timeout_s": (0.001, 600),
    "port": (1, 65_535),
}

EXACT_INTEGERS = 2**53
"""Integers below this are exact in a float64 (IEEE 754), so printed without an exponent."""


def number_text(value: float) -> str:
    """``value`` as a person writes it: ``1048576`` and ``0.5``, not ``1.04858e+06``."""
    if float(value).is_integer() and abs(value) < EXACT_INTEGERS:
        return str(int(value))
    return repr(float(value))


def check_bounds(name: str, value: Any) -> None:
    """Raise :class:`ConfigurationError` unless the number ``value`` of ``name`` is in range.

    In range: finite and within :data:`BOUNDS` (by default ``>= 0``). Non-numbers and booleans
    are not checked.
    """
    if isinstance(value, bool) or not isinstance(value, int | float):
        return
    if not math.isfinite(value):
        raise ConfigurationError(
            f"setting '{name}' must be a finite number, got {value!r}", setting=name
        )
    low, high = BOUNDS.get(name, (0, math.inf))
    if not low <= value <= high:
        if math.isinf(high):
            raise ConfigurationError(
                f"setting '{name}' must be >= {number_text(low)}, got {number_text(value)}",
                setting=name,
            )
        raise ConfigurationError(
            f"setting '{name}' must be within {number_text(low)}..{number_text(high)}, "
            f"got {number_text(value)}",
            setting=name,
        )


def check_numbers(settings: object) -> None:
    """:func:`check_bounds` on every field of ``settings`` (a msgspec struct)."""
    for name in getattr(type(settings), "__struct_fields__", ()):
        check_bounds(name, getattr(settings, name))


#: Variables with the settings' prefix that are not settings: the README's client key, the
#: vector kernel's switch, the test suite's and the benchmarks' own.
OTHER_VARIABLES = frozenset(
    {
        "MNEMOGATE_KEY",
        "MNEMOGATE_VECSCAN_NO_AVX2",
        "MNEMOGATE_CHROMIUM",
        "MNEMOGATE_DOCS_SCREENSHOTS",
        "MNEMOGATE_LOCOMO",
    }
)
OTHER_PREFIXES = ("MNEMOGATE_TEST_", "MNEMOGATE_BENCH_")


def unknown_variables(environ: Mapping[str, str], fields: Iterable[str], prefix: str) -> list[str]:
    """One line per ``prefix`` variable of ``environ`` that names no setting (sorted).

    A typo (``MNEMOGATE_RECAL_TOP_K``) is otherwise ignored without a word; each line names the
    closest setting variable when one is close (:func:`difflib.get_close_matches` on the names
    without ``prefix``, cutoff 0.8).
    Variables of :data:`OTHER_VARIABLES` and :data:`OTHER_PREFIXES` are not reported. Pure.
    """
    known = {prefix + name.upper() for name in fields}
    lines = []
    for name in sorted(environ):
        if not name.startswith(prefix) or name in known or name in OTHER_VARIABLES:
            continue
        if name.startswith(OTHER_PREFIXES):
            continue
        # compared without the prefix, which every name shares: MNEMOGATE_FOO is not "close" to
        # MNEMOGATE_PORT, MNEMOGATE_RECAL_TOP_K is to MNEMOGATE_RECALL_TOP_K
        close = difflib.get_close_matches(
            name.removeprefix(prefix), [k.removeprefix(prefix) for k in known], n=1, cutoff=0.8
        )
        hint = f" (did you mean {prefix}{close[0]}?)" if close else ""
        lines.append(f"{name} is not a setting and is ignored{hint}")
    return lines
