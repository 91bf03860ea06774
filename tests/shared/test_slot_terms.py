"""slot_terms: the search-only words of a learned fact, by its upsert key."""

from __future__ import annotations

import pytest

from shared.extraction.facts import slug
from shared.slot_terms import KIND_TERMS, SLOT_TERMS, slot_terms, with_slot_terms


@pytest.mark.parametrize(
    ("key", "words"),
    [
        ("identity:employer", "job employer workplace"),
        ("identity:job", "job occupation profession career"),
        ("pet:dog:rex", "pet pets"),
        ("pet:dog", "pet pets"),
        ("preference:favorite:hobby", "hobby hobbies fun pastime leisure"),
        ("preference:like:tea", "enjoy favorite drink beverage"),
        ("preference:dislike:coffee", "dislike hate drink beverage"),
        ("pattern:usually:running", "habit routine sport sports exercise"),
        ("preference:like:postgres", "enjoy favorite"),
        ("identity:name", ""),
        ("identity:nickname", "name nickname"),
        ("turn:abc123", ""),
        ("", ""),
    ],
)
def test_words_by_key(key: str, words: str) -> None:
    assert slot_terms(key) == words


def test_the_longest_listed_prefix_wins() -> None:
    # preference:favorite:hobby is listed itself; another favourite falls back to nothing listed
    assert slot_terms("preference:favorite:hobby").startswith("hobby")
    assert slot_terms("preference:favorite:book") == ""


def test_a_hashed_slug_is_looked_up_without_its_hash() -> None:
    assert slot_terms("preference:like:tea~0123456789") == slot_terms("preference:like:tea")


def test_kind_words_are_keyed_by_slug() -> None:
    for thing in KIND_TERMS:
        assert slug(thing) == thing  # a key's last part is a slug: every listed thing can match


def test_with_slot_terms_puts_one_line_before_the_context() -> None:
    assert with_slot_terms("identity:job", "I work as a nurse") == (
        SLOT_TERMS["identity:job"] + "\nI work as a nurse"
    )
    assert with_slot_terms("identity:job", "") == SLOT_TERMS["identity:job"]
    assert with_slot_terms("identity:name", "My name is Dana") == "My name is Dana"


def test_forget_reads_the_slot_words_of_a_key() -> None:
    from shared.forget_terms import is_named, slot_key_patterns, target_stems

    class Row:
        def __init__(self, content: str, key: str) -> None:
            self.content, self.key = content, key

    job = target_stems("Please forget my job")
    assert "identity:employer%" in slot_key_patterns(job)
    assert is_named(job, Row("User works at a bakery called Crumbs", "identity:employer"))
    assert not is_named(job, Row("User lives in Munich", "identity:location"))
    drink = target_stems("forget what I drink")
    assert "preference:%:tea" in slot_key_patterns(drink)
    assert is_named(drink, Row("User prefers tea", "preference:like:tea"))
    assert not is_named(drink, Row("User prefers Vim", "preference:like:vim"))
    assert slot_key_patterns(target_stems("forget the meeting notes")) == ()
