"""Pure lifecycle decisions: deadlines, eviction reasons, immunity, capacity order, decay factor."""

from __future__ import annotations

import math

import pytest

from shared.lifecycle.decay import (
    DAY_S,
    LifecycleRow,
    capacity_order,
    deadline,
    decay_factor,
    decayed_relevance,
    eviction_reason,
    is_immune,
)
from shared.retrieval import retention_of
from shared.settings import load_settings

NOW = 1_700_000_000.0
RET = retention_of(load_settings({}))  # episodic 30 d, others immune, immunity 3


def row(
    *,
    type: str = "episodic",
    created_days_ago: float = 0.0,
    accessed_days_ago: float | None = None,
    access_count: int = 0,
    expires_in_days: float | None = None,
    relevance: float = 1.0,
    id: int = 1,
) -> LifecycleRow:
    return LifecycleRow(
        id=id,
        public_id=f"mem_{id}",
        owner_id="key_a",
        user_id="",
        session_id=None,
        type=type,
        category="turn",
        content="x",
        created_at=NOW - created_days_ago * DAY_S,
        last_accessed_at=None if accessed_days_ago is None else NOW - accessed_days_ago * DAY_S,
        access_count=access_count,
        expires_at=None if expires_in_days is None else NOW + expires_in_days * DAY_S,
        relevance=relevance,
    )


@pytest.mark.parametrize(
    ("case", "r", "expected"),
    [
        (
            "L1 old episodic accessed twice",
            row(created_days_ago=40, accessed_days_ago=35, access_count=2),
            "decayed",
        ),
        ("L2 factual of any age", row(type="factual", created_days_ago=4000), None),
        (
            "L3 episodic accessed 3 times",
            row(created_days_ago=40, accessed_days_ago=35, access_count=3),
            None,
        ),
        ("fresh episodic", row(created_days_ago=29), None),
        ("exactly at deadline", row(created_days_ago=30), "decayed"),
        (
            "recent access extends deadline",
            row(created_days_ago=90, accessed_days_ago=10, access_count=1),
            None,
        ),
        ("procedural immune by type", row(type="procedural", created_days_ago=999), None),
        ("semantic immune by type", row(type="semantic", created_days_ago=999), None),
        ("explicit expiry passed", row(type="factual", expires_in_days=-1), "expired"),
        ("explicit expiry ahead", row(created_days_ago=1, expires_in_days=1), None),
        ("expiry beats access immunity", row(access_count=9, expires_in_days=0), "expired"),
    ],
)
def test_eviction_reason(case: str, r: LifecycleRow, expected: str | None) -> None:
    assert eviction_reason(r, RET, NOW) == expected, case


def test_deadline_is_last_use_plus_ttl() -> None:
    assert deadline(row(created_days_ago=40), RET) == NOW - 10 * DAY_S
    assert (
        deadline(row(created_days_ago=40, accessed_days_ago=5, access_count=1), RET)
        == NOW + 25 * DAY_S
    )
    assert deadline(row(type="factual"), RET) is None
    assert deadline(row(access_count=3), RET) is None


@pytest.mark.parametrize(
    ("settings", "mtype", "count", "immune"),
    [
        ({}, "episodic", 2, False),
        ({}, "episodic", 3, True),
        ({"access_immunity": 0}, "episodic", 99, False),
        ({"factual_ttl_days": 7}, "factual", 0, False),
        ({"episodic_ttl_days": 0}, "episodic", 0, True),
    ],
)
def test_is_immune(settings: dict[str, object], mtype: str, count: int, immune: bool) -> None:
    assert is_immune(mtype, count, retention_of(load_settings({}, **settings))) is immune


def test_capacity_order_non_immune_then_relevance_then_lru() -> None:
    rows = [
        row(id=1, type="factual", relevance=0.0),  # immune by type: after every non-immune
        row(id=2, relevance=0.9, created_days_ago=50),
        row(id=3, relevance=0.2, created_days_ago=1),
        row(id=4, relevance=0.2, created_days_ago=5),  # same relevance, less recently used
        row(id=5, relevance=0.1, access_count=3),  # immune by access
    ]
    order = [r.id for r in sorted(rows, key=lambda r: capacity_order(r, RET))]
    assert order == [4, 3, 2, 1, 5]


@pytest.mark.parametrize(
    ("unused_days", "half_life_days", "expected"),
    [
        (0, 30, 1.0),
        (30, 30, 0.5),
        (60, 30, 0.25),
        (15, 30, math.sqrt(0.5)),
        (10, 0, 1.0),
        (-5, 30, 1.0),
    ],
)
def test_decay_factor(unused_days: float, half_life_days: float, expected: float) -> None:
    assert decay_factor(unused_days * DAY_S, half_life_days * DAY_S) == pytest.approx(expected)


def test_decay_composes_exactly_whatever_the_schedule() -> None:
    """Catch-up after downtime equals daily runs: the factor is multiplicative."""
    half = 30 * DAY_S
    used = NOW - 100 * DAY_S
    daily = 1.0
    last_run = NOW - 60 * DAY_S
    for day in range(1, 61):
        t = NOW - (60 - day) * DAY_S
        daily = decayed_relevance(daily, used, last_run, t, half)
        last_run = t
    once = decayed_relevance(1.0, used, NOW - 60 * DAY_S, NOW, half)
    assert daily == pytest.approx(once) == pytest.approx(0.25)


def test_decay_counts_only_the_unused_part_of_the_period() -> None:
    half = 30 * DAY_S
    assert decayed_relevance(0.8, NOW - 30 * DAY_S, NOW - 60 * DAY_S, NOW, half) == pytest.approx(
        0.4
    )
