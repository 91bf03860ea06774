"""Near-duplicate rule for extracted facts (shared/dedupe.py): table-driven."""

from __future__ import annotations

import pytest

from shared.dedupe import fact_tokens, is_near_duplicate, jaccard, key_family


@pytest.mark.parametrize(
    ("a", "key_a", "b", "key_b", "expected"),
    [
        # same key is always the same fact
        ("User prefers Rust", "preference:like:rust", "anything", "preference:like:rust", True),
        # rewordings that differ only in case, punctuation, articles, "has", "The user"
        (
            "User has decided to use Postgres for this project",
            "decision:has-decided",
            "User decided to use Postgres for this project.",
            "decision:postgres",
            True,
        ),
        (
            "The user prefers next.js",
            "preference:like:x",
            "User prefers Next.js",
            "preference:like:y",
            True,
        ),
        # like vs dislike never merge, nor always vs never
        (
            "User prefers Python",
            "preference:like:python",
            "User dislikes Python",
            "preference:dislike:python",
            False,
        ),
        (
            "User always commits before pushing",
            "pattern:always:a",
            "User never commits before pushing",
            "pattern:never:a",
            False,
        ),
        # meaning-bearing prepositions and one changed word keep facts apart
        (
            "User always commits after pushing",
            "pattern:always:a",
            "User always commits before pushing",
            "pattern:always:b",
            False,
        ),
        (
            "User prefers Postgres 16",
            "preference:like:a",
            "User prefers Postgres 15",
            "preference:like:b",
            False,
        ),
        (
            "User prefers 咖啡和茶",
            "preference:like:~1",
            "User prefers 绿茶饮料",
            "preference:like:~2",
            False,
        ),
        # negation on one side only
        ("User does not use Vim at work", "tool:a", "User does use Vim at work", "tool:b", False),
        # a different key family never merges, however similar
        (
            "User's name is Alice",
            "identity:name",
            "User's name is Alice",
            "fact:user-s-name-is-alice",
            False,
        ),
    ],
)
def test_near_duplicate_rule(a, key_a, b, key_b, expected):
    assert is_near_duplicate(a, key_a, b, key_b) is expected


def test_tokens_keep_dots_and_drop_function_words():
    assert fact_tokens("The user uses Python 3.12, really!") == {"uses", "python", "3.12"}
    assert fact_tokens("User’s name is Ålice") == {"name", "ålice"}


def test_jaccard_and_family():
    assert jaccard(frozenset(), frozenset()) == 1.0
    assert jaccard(frozenset({"a", "b"}), frozenset({"b", "c"})) == pytest.approx(1 / 3)
    assert key_family("preference:like:rust") == "preference:like"
    assert key_family("identity:name") == "identity"
    assert key_family("plain") == "plain"
