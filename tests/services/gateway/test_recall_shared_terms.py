"""R3 through the real HTTP path: a question sharing one common word with a small store injects
nothing (the shared-terms rule, two-term questions included), while the questions the memories
answer still get them."""

from __future__ import annotations

import pytest

from tests.services.gateway.test_recall import ask, memory_text, seed


@pytest.fixture
def key(gateway):
    return gateway.create_key("a")


@pytest.mark.parametrize(
    ("query", "injected"),
    [
        # one common word shared with an unrelated question: nothing of the dog is injected
        ("How do I call a function in Rust?", 0),
        ("Who is called the father of computing?", 0),
        ("What is this pattern called in software design?", 0),
        ("Is a hot dog a sandwich?", 0),
        ("What's a good name for a startup?", 0),
        ("How do I name a git branch?", 0),
        # two search terms, one of them shared: a general question, not about the dog
        ("Who called the meeting?", 0),
        ("Where do dogs sleep?", 0),
        # two search terms, both in one memory: it is about the dog
        ("Is Rex a good dog?", 2),
        # the questions the memories answer still get them
        ("What is my dog called?", 2),
        ("What's my dog's name?", 2),
        ("Tell me what my dog Rex likes", 2),
    ],
)
def test_r3_a_query_sharing_one_common_word_with_a_small_store_injects_nothing(
    gateway, upstream, key, query, injected
):
    key_id, secret = key
    seed(gateway, key_id, "My dog is called Rex.", "User has a dog named Rex")
    resp = ask(gateway, secret, [{"role": "user", "content": query}])
    assert resp.headers["x-mnemogate-memory-injected"] == str(injected)
    assert ("Rex" in memory_text(upstream)) is (injected > 0)


@pytest.mark.parametrize(
    "query",
    [
        # a request about the user names one thing they told among generic words: it still
        # gets the memory (the rule is for questions that do not speak of the user)
        "Write a short poem about my parrot",
        "Which city am I living in right now?",
        "Suggest a birthday gift idea for my parrot",
    ],
)
def test_a_request_about_the_user_sharing_one_term_still_gets_the_memory(
    gateway, upstream, key, query
):
    key_id, secret = key
    seed(gateway, key_id, "My parrot is called Kiwi", "I live in Lisbon")
    resp = ask(gateway, secret, [{"role": "user", "content": query}])
    assert resp.headers["x-mnemogate-memory-injected"] != "0"
    assert ("Kiwi" if "parrot" in query else "Lisbon") in memory_text(upstream)
