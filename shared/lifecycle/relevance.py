"""Scheduled relevance decay with catch-up (see "Lifecycle" in ``docs/ARCHITECTURE.md``).

Each memory's ``relevance`` (0..1; recall's tie-breaker and capacity's eviction order) decays
while it is unused:

    relevance *= 0.5 ** ((now - max(last_run, last_use)) / half_life)

applied to every memory whose last use (access, else creation) is before ``now``, with
``half_life = relevance_half_life_days`` (0 disables decay). ``last_run`` is persisted in
``lifecycle_state.relevance_decayed_at``, so a restart or a missed schedule (downtime) is caught
up in full at the next run rather than reset; the factor composes exactly across runs (see
:mod:`shared.lifecycle.decay`). The first run ever only starts the clock. Run daily by the
``decay_relevance`` job (arq cron in the worker); the schedule affects granularity, not outcome.
"""

from __future__ import annotations

import msgspec

from shared.errors import ConfigurationError
from shared.lifecycle.decay import DAY_S, decay_factor
from shared.settings import Settings
from shared.store import Store


class DecayReport(msgspec.Struct, kw_only=True):
    """Outcome of one decay run.

    Rows updated, the previous run (unix seconds or None for the first run), the elapsed period in
    seconds and the factor a memory unused for the whole period received (1.0 = no decay).
    """

    updated: int
    previous_run: float | None
    elapsed_s: float
    full_period_factor: float


async def decay_relevance(store: Store, settings: Settings, now: float) -> DecayReport:
    """Apply relevance decay for the period since the last persisted run, up to ``now``.

    Raises:
        ConfigurationError: ``relevance_half_life_days`` is negative.
        StoreError: the database failed (nothing is applied; the next run catches up).
    """
    if settings.relevance_half_life_days < 0:
        raise ConfigurationError("relevance_half_life_days must be >= 0")
    half_life_s = settings.relevance_half_life_days * DAY_S
    updated, previous = await store.lifecycle.decay_relevance(now, half_life_s)
    elapsed = 0.0 if previous is None else max(0.0, now - previous)
    return DecayReport(
        updated=updated,
        previous_run=previous,
        elapsed_s=elapsed,
        full_period_factor=decay_factor(elapsed, half_life_s),
    )
