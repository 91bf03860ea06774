"""The forget matching rule: every topic word present, a clear margin, a bound on breadth."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from shared.forget_terms import (
    MARGIN,
    clear_matches,
    covers_hashed,
    hash_stems,
    stem,
    target_stems,
)


@dataclass(frozen=True)
class Item:
    content: str
    key: str | None = ""


GYM = Item("User goes to the gym on Elm Street", "fact:gym")
WORK = Item("User works at a bakery", "fact:works_at")
TURN = Item("I go to the gym on Elm Street")
PHONE = Item("User's phone number is in the address book")
PARTIAL = Item("User's phone is an old Nokia")


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("works", "work"),
        ("working", "worked"),
        ("numbers", "number"),
        ("Adresse", "adresse"),
        ("preference", "prefer"),
        ("preferences", "prefers"),
        ("employment", "employed"),
    ],
)
def test_stem_merges_inflections(a: str, b: str) -> None:
    assert stem(a) == stem(b)


def test_target_stems_drop_function_and_generic_words() -> None:
    assert target_stems("which gym I go to") == (stem("gym"),)
    assert target_stems("everything you know about that") == ()
    assert target_stems("mon numéro de téléphone") == (stem("numéro"), stem("téléphone"))


def test_named_memories_are_every_one_holding_the_whole_target() -> None:
    named, reason = clear_matches(target_stems("which gym I go to"), [GYM, WORK, TURN], 10)
    assert reason == "ok" and named == [GYM, TURN]


def test_unrelated_target_matches_nothing() -> None:
    assert clear_matches(target_stems("my diet"), [GYM, WORK], 10) == ([], "no_match")
    assert clear_matches((), [GYM], 10) == ([], "no_target")


def test_a_near_miss_within_the_margin_makes_it_ambiguous() -> None:
    target = target_stems("my phone number")
    assert len(target) == 2 and 1 - MARGIN >= 0.5
    # PARTIAL holds "phone" but not "number": coverage 0.5 is not above 1 - MARGIN → still clear
    assert clear_matches(target, [PHONE, PARTIAL], 10) == ([PHONE], "ok")
    three = target_stems("my old phone number")
    # PARTIAL now covers 2 of 3 (0.67 > 0.5): unsure, delete nothing
    assert clear_matches(three, [Item("User's old phone number is 1"), PARTIAL], 10) == (
        [],
        "ambiguous",
    )


def test_too_many_named_is_refused() -> None:
    items = [Item(f"User visited the gym on day {i}") for i in range(5)]
    assert clear_matches(target_stems("the gym"), items, 4) == ([], "too_broad")
    assert len(clear_matches(target_stems("the gym"), items, 5)[0]) == 5


def test_hashed_tombstone_recognises_the_content_without_holding_it() -> None:
    hashes = hash_stems(target_stems("which gym I go to"))
    assert all("gym" not in h for h in hashes)
    assert covers_hashed(hashes, "I go to the gym on Elm Street", "")
    assert not covers_hashed(hashes, "User works at a bakery", "fact:works_at")
    assert not covers_hashed((), "anything", "")


@pytest.mark.parametrize(
    ("target", "memory"),
    [
        ("my address", "I live at 42 Baker Street in London"),
        ("meine Adresse", "Ich wohne in der Baker Street 5 in London"),
        ("mon adresse", "J'habite au 3 rue de la Paix"),
        ("mi dirección", "Vivo en la avenida Mayor 3"),
    ],
)
def test_an_address_is_named_by_its_street_word(target: str, memory: str) -> None:
    named, reason = clear_matches(target_stems(target), [Item(memory), WORK], 10)
    assert (named, reason) == ([Item(memory)], "ok")


@pytest.mark.parametrize(
    "memory",
    [
        "My sister lives in Oslo",
        "I need to call my mom",
        "I pay too much for gas",
        "I play in an orchestra",
        "I work at a bakery",
        "I work on Wall Street",
        "My favourite bar is on Abbey Road",
        "I grew up on Sesame Street",
    ],
)
def test_an_address_target_leaves_other_memories_alone(memory: str) -> None:
    assert clear_matches(target_stems("my address"), [Item(memory)], 10) == ([], "no_match")


def test_either_spelling_forgets_the_other() -> None:
    from shared.forget_terms import clear_matches, target_stems

    class Row:
        def __init__(self, content: str) -> None:
            self.content, self.key = content, ""

    stored = [Row("User's favourite colour is green"), Row("I have four cats")]
    named, reason = clear_matches(target_stems("forget my favorite color"), stored, 10)
    assert reason == "ok" and [r.content for r in named] == ["User's favourite colour is green"]
    assert target_stems("the four of us") != target_stems("the for of us")


def test_naming_words_are_one_stem() -> None:
    from shared.forget_terms import clear_matches, target_stems

    class Row:
        def __init__(self, content: str, key: str = "") -> None:
            self.content, self.key = content, key

    stored = [
        Row("User has a dog named Biscuit", "pet:dog:biscuit"),
        Row("My dog is called Biscuit"),
        Row("My name is Dana"),
    ]
    named, reason = clear_matches(target_stems("forget my dog's name"), stored, 10)
    assert reason == "ok"
    assert [r.content for r in named] == [
        "User has a dog named Biscuit",
        "My dog is called Biscuit",
    ]
