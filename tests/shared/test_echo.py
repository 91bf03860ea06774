"""Questions, requests and echoes of the query (pure functions of :mod:`shared.echo`)."""

from __future__ import annotations

import pytest

from shared.echo import drop_echoes, is_echo, is_question_or_request


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
