"""Corrections and non-answers in the regex extractor: what replaces or rejects a stored fact.

A corrected name marks its fact with the slot it replaces (``replaces``), a preference chosen
against another lists the other's key (``rejects``), and a non-answer in a name's slot is no
name at all (docs/ARCHITECTURE.md, "Learning").
"""

from __future__ import annotations

import pytest

from shared.extraction.regex import extract_facts


@pytest.mark.parametrize(
    "text",
    [
        "my dog is called whatever",
        "my dog is called idk",
        "My name is idk",
        "my name is none of your business",
        "My name is unknown",
        "my wife is called lol",
        "my cat is named something weird",
    ],
)
def test_a_non_answer_in_a_names_slot_is_no_name(text: str) -> None:
    # "My name is idk" once overwrote the user's real name with "idk"
    assert extract_facts(text) == []


def test_a_name_after_a_non_answer_word_elsewhere_is_still_learned() -> None:
    assert [f.content for f in extract_facts("lol my dog is called Rex")] == [
        "User has a dog named Rex"
    ]


@pytest.mark.parametrize(
    ("text", "key", "replaces"),
    [
        ("Actually my dog is called Max", "pet:dog:max", "pet:dog:"),
        ("No, my dog is called Max", "pet:dog:max", "pet:dog:"),
        ("My dog's name is actually Max", "pet:dog:max", "pet:dog:"),
        ("Sorry, my sister is called Anna", "family:sister:anna", "family:sister:"),
        ("My dog is called Rex", "pet:dog:rex", ""),  # a statement, not a correction
        ("I also have a dog named Rex", "pet:dog:rex", ""),  # a second dog
        ("No, my wife is called Eve", "family:wife", ""),  # one key already: an upsert
    ],
)
def test_a_corrected_name_replaces_the_names_of_its_slot(text: str, key: str, replaces: str):
    (fact,) = extract_facts(text)
    assert (fact.key, fact.replaces) == (key, replaces)


@pytest.mark.parametrize(
    ("text", "key", "rejects"),
    [
        ("I prefer Vim, not Emacs", "preference:like:vim", ("preference:like:emacs",)),
        ("I prefer Vim over Emacs", "preference:like:vim", ("preference:like:emacs",)),
        ("I love tea instead of coffee", "preference:like:tea", ("preference:like:coffee",)),
        ("I prefer tea rather than coffee", "preference:like:tea", ("preference:like:coffee",)),
        ("I like Rust more than Go", "preference:like:rust", ()),  # a comparison
        ("I like hiking over the weekend", "preference:like:hiking", ()),  # "over" is a time
    ],
)
def test_a_preference_chosen_against_another_rejects_it(
    text: str, key: str, rejects: tuple[str, ...]
) -> None:
    (fact,) = extract_facts(text)
    assert (fact.key, fact.rejects) == (key, rejects)


def test_a_correction_naming_the_wrong_name_rejects_that_name() -> None:
    (fact,) = extract_facts("Sorry, my dog is called Max, not Rex")
    assert (fact.key, fact.replaces, fact.rejects) == ("pet:dog:max", "", ("pet:dog:rex",))
