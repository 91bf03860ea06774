"""The user's people and pets a query asks about, and memories about someone else."""

from __future__ import annotations

import pytest

from shared.personal_subjects import (
    about_someone_else,
    asked_subjects,
    drop_other_subjects,
    is_someone_elses,
    words_after_subjects,
)


@pytest.mark.parametrize(
    ("query", "subjects"),
    [
        ("What is my dog called?", {("pet", "dog")}),
        ("what's my little sister's name", {("sibling", "sister")}),
        ("When is my wife\u2019s birthday?", {("partner", "wife")}),
        ("What do our kids like?", {("child", "")}),
        ("Write a poem about my two cats and my mum", {("pet", "cat"), ("parent", "mother")}),
        ("What is my name?", set()),
        ("Is a hot dog a sandwich?", set()),
        ("What did Caroline's dog eat?", set()),
        ("Who is my dog-sitter?", set()),
        ("Tell me about your dog", set()),
    ],
)
def test_asked_subjects(query, subjects):
    assert asked_subjects(query) == subjects


DOG = asked_subjects("What is my dog called?")


@pytest.mark.parametrize(
    ("content", "other"),
    [
        ("My sister is called Anna", True),
        ("User has a cat named Tom", True),
        ("My dog is called Rex", False),
        ("My puppy Rex loves the park", False),
        ("My pet is called Rex", False),
        ("Rex is my sister's dog", False),
        ("I have a golden retriever named Rex", False),
        ("The wedding is on June 5", False),
        ("", False),
    ],
)
def test_about_someone_else(content, other):
    assert about_someone_else(content, DOG) is other


def test_a_kind_word_names_any_of_its_kind():
    kids = asked_subjects("What do my kids like?")
    assert not about_someone_else("My son Tom loves Lego", kids)
    assert about_someone_else("My husband loves Lego", kids)
    pets = asked_subjects("What's my pet's name?")
    assert not about_someone_else("My dog is called Rex", pets)


def test_no_subject_keeps_everything():
    assert not about_someone_else("My sister is called Anna", frozenset())
    hits = ["My sister is called Anna", "My dog is called Rex", "I live in Berlin"]
    assert drop_other_subjects("Where do I live?", hits, str) == hits
    assert drop_other_subjects("What is my dog called?", hits, str) == hits[1:]


@pytest.mark.parametrize(
    ("query", "content", "elses"),
    [
        # a subject asked: naming words, or what the query says of it, said of another
        ("What is my dog called?", "I work at a bakery called Crumbs", True),
        ("What should I name my new cat?", "User's name is Dana", True),
        ("When is my sister's birthday?", "My birthday is June 3", True),
        ("When is my sister's birthday?", "My sister's birthday is May 2", False),
        ("What's my dog's favourite toy?", "Biscuit loves his squeaky toy", False),
        ("What is my dog called?", "User has a dog named Biscuit", False),
        # no subject asked, a query about the user: its words said only of someone else
        ("What is my name?", "User has a dog named Biscuit", True),
        ("What is my name?", "User's sister is named Lea", True),
        ("What is my name?", "My sister is called Anna", True),  # naming words are one
        ("When is my birthday?", "My sister's birthday is May 2", True),
        ("What is my name?", "My name is Dana and my dog is Rex", False),
        ("What is my name?", "User's name is Dana", False),
        # only generic words shared while the query names the thing too
        ("What is my favourite book?", "My favourite hobby is hiking", True),
        ("What is my favourite book?", "User's favorite hobby is hiking", True),  # spellings
        ("What is my favourite book?", "My favorite book is Dune", False),
        ("what's my favorite editor?", "My favorite color is green", True),
        ("What is my favourite book?", "My favourite book is Dune", False),
        ("What is my favourite?", "My favourite hobby is hiking", False),
        ("What is the best new phone?", "My new phone is great", False),  # not about the user
        # not about the user: left to the other rules
        ("When is the birthday party?", "My sister's birthday is May 2", False),
        ("Who is Lea?", "User's sister is named Lea", False),
    ],
)
def test_is_someone_elses(query, content, elses):
    assert is_someone_elses(query, content, asked_subjects(query)) is elses


@pytest.mark.parametrize(
    ("content", "words"),
    [
        ("User has a dog named Biscuit", ["named"]),
        ("My sister's birthday is May 2", ["birthday"]),
        ("User's sister is named Lea", ["named"]),
        ("My dog is Rex", []),
        ("my dog is rex", []),
        ("I like dogs", []),
    ],
)
def test_words_after_subjects(content, words):
    assert words_after_subjects(content) == words


TEXTS = [
    "My sister is called Anna",
    "User has a dog named Biscuit",
    "My sister's birthday is May 2",
    "My birthday is June 3",
    "I work at a bakery called Crumbs",
    "My favourite hobby is hiking",
    "Biscuit loves his squeaky toy",
    "My name is Dana and my dog is Rex",
]
QUERIES = [
    "What is my dog called?",
    "What is my name?",
    "When is my sister's birthday?",
    "When is my birthday?",
    "What is my favourite book?",
    "What's my dog's favourite toy?",
    "Who is Lea?",
]


def test_prepared_features_answer_as_the_text_does() -> None:
    from shared.memory_render import MemoryPreparer
    from shared.personal_subjects import features_of
    from tests.records import memory_record

    preparer = MemoryPreparer(None)
    ready = {i: preparer(memory_record(i, t)) for i, t in enumerate(TEXTS)}
    ids = list(ready)
    for query in QUERIES:
        by_text = drop_other_subjects(query, ids, TEXTS.__getitem__)
        prepared = drop_other_subjects(
            query, ids, TEXTS.__getitem__, lambda i: features_of(ready, i)
        )
        assert prepared == by_text, query
