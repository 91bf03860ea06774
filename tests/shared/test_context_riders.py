"""without_riders: hits matching only through their context go with the screened hits;
without_fact_riders: and beside a learned fact that answers the query itself."""

from __future__ import annotations

from shared.context_riders import without_fact_riders, without_riders

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


LIVES = "User lives in Munich"  # a learned fact
LIVE_TURN = "I live in Munich"  # the turn it came from
DOG_FACT = "User has a dog named Rex"  # rides on "I live in Munich" (its neighbour)
FACTS = {LIVES, DOG_FACT}


def _beside_facts(query: str, hits: list[str], facts: set[str] = FACTS) -> list[str]:
    return without_fact_riders(query, hits, lambda text: text, lambda text: text in facts)


def test_a_fact_answering_the_query_drops_the_riders() -> None:
    hits = [LIVES, LIVE_TURN, DOG, DOG_FACT]
    assert _beside_facts("Where do I live?", hits) == [LIVES, LIVE_TURN]


def test_riders_stay_when_no_fact_holds_the_query_words() -> None:
    # turns only (a conversation without extracted facts): the context field does its job
    hits = [LIVE_TURN, DOG, TEA]
    assert _beside_facts("Where do I live?", hits) == hits
    # a fact among the hits, but only through its own context: no answer to lean on
    assert _beside_facts("Where do I live?", [DOG_FACT, DOG]) == [DOG_FACT, DOG]


def test_fact_riders_edge_cases() -> None:
    assert _beside_facts("Where do I live?", []) == []
    assert _beside_facts("Where do I live?", [DOG_FACT]) == [DOG_FACT]
    assert _beside_facts("", [LIVES, DOG]) == [LIVES, DOG]  # no query terms: nothing to judge
