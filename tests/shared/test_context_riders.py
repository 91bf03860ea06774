"""without_riders: hits matching only through their context go with the screened hits."""

from __future__ import annotations

from shared.context_riders import without_riders

SISTER = "My sister is called Anna"
DOG = "My dog is called Rex"
TEA = "I prefer tea"  # matches "called" only through its context (a neighbour's words)
HIKING = "My favourite hobby is hiking"


def _kept(query: str, before: list[str], after: list[str]) -> list[str]:
    return without_riders(query, before, after, lambda text: text)


def test_riders_go_when_every_direct_hit_was_screened() -> None:
    assert _kept("What is my brother called?", [SISTER, DOG, TEA, HIKING], [TEA, HIKING]) == []


def test_riders_stay_beside_a_direct_hit() -> None:
    kept = [DOG, TEA]
    assert _kept("What is my dog called?", [SISTER, DOG, TEA], kept) == kept


def test_nothing_screened_keeps_everything() -> None:
    # the context field's purpose: only the neighbours named it
    hits = [TEA, HIKING]
    assert _kept("What did I decide about the launch?", hits, hits) == hits


def test_a_screened_rider_leaves_the_others() -> None:
    # the dropped hit held no query word itself: no direct evidence was screened
    assert _kept("What is my brother called?", [TEA, HIKING], [HIKING]) == [HIKING]


def test_empty_cases() -> None:
    assert _kept("What is my brother called?", [SISTER], []) == []
    assert _kept("", [SISTER, TEA], [TEA]) == [TEA]
