"""Pure lifecycle decisions: typed-decay deadlines, eviction reasons, immunity, relevance decay.

Every function here is pure (``now`` is passed in) and is shared by the sweep, capacity eviction
and the read-time filter's rule (:class:`shared.store.memories.Retention`, built from settings by
:func:`shared.retrieval.retention_of`), so what recall hides and what the sweep deletes agree.

Rules (see "Lifecycle" in ``docs/ARCHITECTURE.md``):

- A memory type has a TTL in seconds (``Retention.ttl_s``); absent or ``<= 0`` → immune by type.
- A memory accessed (injected) at least ``Retention.access_immunity`` times is immune by access.
- Deadline = (last access, else creation) + TTL; at or after the deadline the memory is *decayed*
  (the same ``<=`` comparison as :func:`shared.store.memories.visibility_sql`).
- A memory whose explicit ``expires_at`` is at or before ``now`` is *expired*, whatever its type.

Relevance decay (exponential half-life): an unused memory's relevance is multiplied by
``0.5 ** (unused_s / half_life_s)``, where ``unused_s`` is the time since its last use (access,
else creation) that falls inside the period being applied. Because the factor is multiplicative,
applying it per period composes exactly: ``r(t) = r(t0) * 0.5 ** ((t - t0) / half_life)`` for a
memory unused since ``t0``, however often (or rarely, e.g. after downtime) the decay runs.
"""

from __future__ import annotations

import math
from typing import Literal

from shared.store.memories import Retention
from shared.store.memories.lifecycle import LifecycleRow

EvictionReason = Literal["expired", "decayed", "capacity", "summarized"]
DAY_S = 86_400.0

__all__ = [
    "DAY_S",
    "EvictionReason",
    "LifecycleRow",
    "capacity_order",
    "deadline",
    "decay_factor",
    "decayed_relevance",
    "eviction_reason",
    "is_immune",
    "last_used_at",
    "type_ttl_s",
]


def last_used_at(row: LifecycleRow) -> float:
    """Last access time, else creation time (unix seconds)."""
    return row.created_at if row.last_accessed_at is None else row.last_accessed_at


def type_ttl_s(memory_type: str, retention: Retention) -> float | None:
    """TTL in seconds of ``memory_type``; ``None`` when the type is immune (no TTL or TTL <= 0)."""
    ttl = retention.ttl_s.get(memory_type, 0.0)
    return ttl if ttl > 0 else None


def is_immune(memory_type: str, access_count: int, retention: Retention) -> bool:
    """True if the memory never decays.

    Its type has no TTL, or it was accessed at least ``retention.access_immunity`` times
    (``access_immunity <= 0`` disables access immunity).
    """
    if type_ttl_s(memory_type, retention) is None:
        return True
    return retention.access_immunity > 0 and access_count >= retention.access_immunity


def deadline(row: LifecycleRow, retention: Retention) -> float | None:
    """Typed-decay deadline in unix seconds: last use + TTL; ``None`` if immune (type or access)."""
    if is_immune(row.type, row.access_count, retention):
        return None
    ttl = type_ttl_s(row.type, retention)
    assert ttl is not None
    return last_used_at(row) + ttl


def eviction_reason(row: LifecycleRow, retention: Retention, now: float) -> EvictionReason | None:
    """Why the sweep deletes ``row`` at ``now``.

    ``"expired"`` (explicit ``expires_at`` reached), ``"decayed"`` (typed-decay deadline reached),
    or ``None`` (keep).
    """
    if row.expires_at is not None and row.expires_at <= now:
        return "expired"
    due = deadline(row, retention)
    if due is not None and due <= now:
        return "decayed"
    return None


def capacity_order(row: LifecycleRow, retention: Retention) -> tuple[int, float, float, int]:
    """Sort key for capacity eviction, first = evicted first.

    Non-immune before immune (immune ones go only when nothing else is left), then lowest
    relevance, then least recently used, then lowest rowid (oldest) for a stable order.
    """
    immune = 1 if is_immune(row.type, row.access_count, retention) else 0
    return (immune, row.relevance, last_used_at(row), row.id)


def decay_factor(unused_s: float, half_life_s: float) -> float:
    """Relevance multiplier after ``unused_s`` seconds unused: ``0.5 ** (unused_s / half_life_s)``.

    Range (0, 1]; ``unused_s <= 0`` → 1.0; ``half_life_s <= 0`` → 1.0 (decay disabled).
    Source: exponential decay with half-life H, N(t) = N0 * 2^(-t/H).
    """
    if unused_s <= 0 or half_life_s <= 0:
        return 1.0
    return math.pow(0.5, unused_s / half_life_s)


def decayed_relevance(
    relevance: float, last_used: float, last_run: float, now: float, half_life_s: float
) -> float:
    """Relevance after applying the period ``(last_run, now]`` to a memory.

    Only the part of the period since the memory was last used at ``last_used`` counts:
    ``now - max(last_run, last_used)``.

    This is the exact rule the store's single ``UPDATE`` applies (see
    :meth:`shared.store.memories.lifecycle.LifecycleStore.decay_relevance`). Result within [0,
    relevance].
    """
    return relevance * decay_factor(now - max(last_run, last_used), half_life_s)
