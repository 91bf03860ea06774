"""Questions, requests and echoes of the query (pure functions of :mod:`shared.echo`)."""

from __future__ import annotations

import re
import unicodedata

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from shared.echo import (
    MAX_ECHO_TERMS,
    QUESTION_ECHO_CONTAINMENT,
    drop_echoes,
    is_echo,
    is_question_or_request,
)
from shared.fts_query import query_terms


@pytest.mark.parametrize(
    "text",
    [
        "What is my dog called?",
        "what's my dog's name?",
        "Should I always use tabs here?",
        "Write a poem about the sea",
        "Can you help me with Rust?",
        "Please summarise this. Thanks!",
        "Hi! Could you explain closures? Thank you.",
        "Tell me a joke",
    ],
)
def test_only_asking_is_a_question_or_request(text):
    assert is_question_or_request(text)


@pytest.mark.parametrize(
    "text",
    [
        "My dog is called Rex",
        "I moved to Berlin, any tips?",
        "I decided to move the launch to March.",
        "The marketing plan needs a new date.",
        "When I was young I lived in Paris.",
        "Explain closures. I use JS daily.",
        "ok",
        "",
        "我喜欢喝绿茶",
    ],
)
def test_a_statement_is_not(text):
    assert not is_question_or_request(text)


def test_echo_rules():
    assert is_echo("What is my dog called?", "what is my dog called")  # same words
    assert is_echo("My dog is called Rex.", "my dog is called rex")  # a statement repeated
    assert is_echo("What's my dog called again?", "What is my dog called?")  # a near copy
    assert is_echo("what is my dog's name", "What is my dog called?")  # half its terms
    # the answer to a question shares its terms and is never an echo
    assert not is_echo("Do I live in Berlin?", "I live in Berlin")
    assert not is_echo("What is my dog called?", "My dog is called Rex")
    assert not is_echo(
        "When is the marketing plan's new date?", "The marketing plan needs a new date."
    )
    # an unrelated question is not an echo of this one
    assert not is_echo("What is my dog called?", "Where should I travel in May?")
    assert not is_echo("", "")


def test_drop_echoes_keeps_order_and_unknown_ids():
    content = {1: "What is my dog called?", 2: "My dog is called Rex", 3: "I walk my dog daily"}
    kept = drop_echoes("What is my dog called?", [3, 1, 2, 9], content, lambda i: i)
    assert kept == [3, 2, 9]


def _reference_is_echo(query: str, content: str) -> bool:
    """The rule of :func:`is_echo` computed the plain way (no pre-checks, no memo)."""

    def words(text: str) -> str:
        return " ".join(re.findall(r"\w+", unicodedata.normalize("NFKC", text).casefold()))

    if words(query) and words(query) == words(content):
        return True
    if not is_question_or_request(content):
        return False
    terms = set(query_terms(content, MAX_ECHO_TERMS))
    if not terms:
        return False
    shared = terms.intersection(query_terms(query, MAX_ECHO_TERMS))
    return len(shared) >= QUESTION_ECHO_CONTAINMENT * len(terms)


_WORDS = [
    "What",
    "is",
    "my",
    "dog",
    "called",
    "Rex",
    "?",
    "!",
    ".",
    "Please",
    "tell",
    "me",
    "I",
    "live",
    "in",
    "Berlin",
    "ﬁle",
    "file",
    "Straße",
    "STRASSE",
    "  ",
    "\n",
    "Hi",
]


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.one_of(st.sampled_from(_WORDS), st.text(max_size=6)), max_size=8),
    st.lists(st.one_of(st.sampled_from(_WORDS), st.text(max_size=6)), max_size=8),
)
def test_is_echo_matches_the_plain_rule(query: list[str], content: list[str]) -> None:
    q, c = " ".join(query), " ".join(content)
    assert is_echo(q, c) == _reference_is_echo(q, c)
    assert is_echo(q, q) == _reference_is_echo(q, q)
