"""The user's people and pets a query asks about, and memories about someone else."""

from __future__ import annotations

import pytest

from shared.personal_subjects import about_someone_else, asked_subjects, drop_other_subjects


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
