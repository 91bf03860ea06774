"""Tests for the regex fact extractor (the behaviours of ``docs/ARCHITECTURE.md`` "Learning")."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from shared.extraction import (
    CATEGORIES,
    TYPES,
    ExtractedFact,
    extract_facts,
    is_do_not_remember,
    key_for_statement,
    slug,
)
from shared.extraction.patterns import _DNR_RE, APOSTROPHES


def facts_of(text: str) -> list[tuple[str, str]]:
    return [(f.key, f.content) for f in extract_facts(text)]


# ---- learning behaviours --------------------------------------------------------------------


def test_e1_four_facts_like_and_dislike_kept_apart() -> None:
    text = (
        "I prefer TypeScript. I'll use Postgres for this project. "
        "I always commit before pushing. I don't like Python."
    )
    got = extract_facts(text)
    assert [(f.key, f.content, f.category, f.type) for f in got] == [
        ("preference:like:typescript", "User prefers TypeScript", "preference", "semantic"),
        (
            "decision:postgres",
            "User decided to use Postgres for this project",
            "decision",
            "semantic",
        ),
        (
            "pattern:always:commit-before-pushing",
            "User always commits before pushing",
            "pattern",
            "procedural",
        ),
        ("preference:dislike:python", "User dislikes Python", "preference", "semantic"),
    ]


@pytest.mark.parametrize(
    ("text", "key", "content"),
    [
        ("I don't like Python", "preference:dislike:python", "User dislikes Python"),
        ("I do not like Python", "preference:dislike:python", "User dislikes Python"),
        ("I don’t like Python", "preference:dislike:python", "User dislikes Python"),
        ("I dont really like Python", "preference:dislike:python", "User dislikes Python"),
        ("I dislike Python", "preference:dislike:python", "User dislikes Python"),
        ("I hate YAML", "preference:dislike:yaml", "User hates YAML"),
        ("I can't stand tabs", "preference:dislike:tabs", "User dislikes tabs"),
        ("I’m not a fan of Go", "preference:dislike:go", "User dislikes Go"),
        ("I like Python", "preference:like:python", "User likes Python"),
        ("I really love Rust", "preference:like:rust", "User loves Rust"),
        ("I enjoy hiking", "preference:like:hiking", "User enjoys hiking"),
        ("I'm a big fan of Rust", "preference:like:rust", "User is a fan of Rust"),
        ("Thanks! I'd prefer shorter answers.", "preference:like:shorter-answers",
         "User prefers shorter answers"),
    ],
)  # fmt: skip
def test_e1_polarity_table(text: str, key: str, content: str) -> None:
    assert facts_of(text) == [(key, content)]


def test_e1_negated_like_is_never_a_like() -> None:
    for text in ["It's not that I like Python", "I never said I like Python"]:
        assert all(not f.key.startswith("preference:like") for f in extract_facts(text)), text


@pytest.mark.parametrize(
    ("text", "content"),
    [
        ("I prefer Next.js for frontend", "User prefers Next.js for frontend"),
        ("I prefer Python 3.12 for scripts.", "User prefers Python 3.12 for scripts"),
        ("I prefer Node.js, e.g. for small APIs.", "User prefers Node.js, e.g. for small APIs"),
        ("I prefer the docs at https://docs.python.org/3.12/ for reference",
         "User prefers the docs at https://docs.python.org/3.12/ for reference"),
        ("I prefer C++ over C#", "User prefers C++ over C#"),
    ],
)  # fmt: skip
def test_e2_objects_not_cut_at_dots(text: str, content: str) -> None:
    assert [f.content for f in extract_facts(text)] == [content]


def test_e2_keys_keep_dotted_names() -> None:
    assert facts_of("I prefer Next.js for frontend") == [
        ("preference:like:next.js", "User prefers Next.js for frontend")
    ]


@pytest.mark.parametrize(
    "text",
    [
        "I will use Redis",
        "I’ll use Redis",
        "I'll use Redis",
        "We'll use Redis.",
        "I decided to use Redis",
        "Let's use Redis",
        "I'm going to use Redis",
        "Going to use Redis",
    ],
)
def test_e3_decision_all_spellings(text: str) -> None:
    got = extract_facts(text)
    assert [(f.key, f.content, f.category) for f in got] == [
        ("decision:redis", "User decided to use Redis", "decision")
    ]


@pytest.mark.parametrize(
    "text",
    [
        "Should I always use tabs here?",
        "Should I always use tabs here",
        "Do you think I prefer tabs?",
        "What if I use Redis",
        "How do I use Redis for caching",
        "I prefer tabs, right？",
        "Can I use Postgres for this project",
        # typed without the mark after a hesitation ("called lol" once taught "a dog named lol")
        "hey what is my dog called lol",
        "hey what's my dog called lol",
        "hmm ok what is my cat called",
        "so what's my dog called then",
    ],
)
def test_e4_questions_yield_nothing(text: str) -> None:
    assert extract_facts(text) == []


@pytest.mark.parametrize(
    "text",
    [
        "Don't remember this: my locker code is 4411",
        "Don’t remember this: I prefer tabs",
        "Please do not remember that I live in Berlin",
        "I prefer tabs. Don't save this.",
        "Forget this, my name is Alice",
        "Off the record: I hate my job",
        "I don't want you to remember that I like Rust",
    ],
)
def test_e5_do_not_remember_skips_whole_message(text: str) -> None:
    assert is_do_not_remember(text)
    assert extract_facts(text) == []


_DNR_PIECES = [
    "don't remember this",
    "DO NOT save that",
    "dont log it",
    "Never store this",
    "forget what I just said",
    "off-the-record",
    "do not put it in your memory",
    "I don\u2019t want you to record",
    "please",
    "I prefer tabs",
    "my dog is called Rex",
    "I don't remember the command",
    "K\u212aelvin \u017fign",
    ",",
    ".",
    "\u00a0",
    "\n",
]


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from(_DNR_PIECES), max_size=6), st.randoms(use_true_random=False))
def test_do_not_remember_answers_as_its_pattern(pieces: list[str], rnd: random.Random) -> None:
    """The substring pre-check never changes the answer of the case-insensitive pattern."""
    text = " ".join(
        "".join(c.upper() if rnd.random() < 0.3 else c for c in piece) for piece in pieces
    )
    assert is_do_not_remember(text) == (_DNR_RE.search(text.translate(APOSTROPHES)) is not None)


@pytest.mark.parametrize(
    "text",
    ["I don't remember the command", "I prefer tabs", "Remember that I use Vim", ""],
)
def test_e5_ordinary_text_is_not_do_not_remember(text: str) -> None:
    assert not is_do_not_remember(text)


def test_e6_non_latin_objects_get_distinct_stable_keys() -> None:
    first = extract_facts("I prefer 咖啡和茶")
    second = extract_facts("I prefer 绿茶饮料")
    assert [f.content for f in first] == ["User prefers 咖啡和茶"]
    assert [f.content for f in second] == ["User prefers 绿茶饮料"]
    assert first[0].key != second[0].key
    assert first[0].key.startswith("preference:like:~")
    assert extract_facts("I prefer 咖啡和茶")[0].key == first[0].key  # stable


def test_e7_assistant_self_talk_is_not_a_user_fact() -> None:
    assert extract_facts("As an AI, I usually recommend Python") == []
    assert extract_facts("As a language model I always prefer clarity.") == []


def test_e8_name_and_city_from_one_sentence() -> None:
    assert facts_of("My name is Alice and I live in Berlin") == [
        ("identity:name", "User's name is Alice"),
        ("identity:location", "User lives in Berlin"),
    ]


# ---- coverage of the other statement kinds ----------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("My favorite editor is Helix", [("preference:favorite:editor",
                                          "User's favorite editor is Helix")]),
        ("Honestly, Vim is my favorite editor", [("preference:favorite:editor",
                                                  "User's favorite editor is Vim")]),
        ("I'm called Bob", [("identity:name", "User's name is Bob")]),
        ("Call me Al", [("identity:nickname", "User likes to be called Al")]),
        ("call me on +1 415 555 0100", []),
        ("I'm from Spain", [("identity:origin", "User is from Spain")]),
        ("I'm based in São Paulo", [("identity:location", "User is based in São Paulo")]),
        ("i live in berlin", [("identity:location", "User lives in berlin")]),
        ("I live in fear", []),
        ("I work as a data scientist at Spotify", [("identity:job",
                                                    "User works as a data scientist")]),
        ("I'm a software engineer", [("identity:job", "User is a software engineer")]),
        ("I'm a bit tired", []),
        ("I work at Acme Corp", [("identity:employer", "User works at Acme Corp")]),
        ("I have a cat named Miso", [("pet:cat:miso", "User has a cat named Miso")]),
        ("my dog Rex loves walks", [("pet:dog:rex", "User has a dog named Rex")]),
        ("my dog is sick", []),
        ("My wife is named Anna.", [("family:wife", "User's wife is named Anna")]),
        ("My sister Maria lives in Rome", [("family:sister:maria",
                                            "User's sister is named Maria")]),
        ("my sister is a doctor", []),
        ("I use Neovim for Python", [("tool:neovim", "User uses Neovim for Python")]),
        ("I use it daily", []),
        ("I usually work late", [("pattern:usually:work-late", "User usually works late")]),
        ("I never push to main on Fridays", [("pattern:never:push",
                                              "User never pushes to main on Fridays")]),
        ("I tend to write tests first", [("pattern:usually:write-tests-first",
                                          "User tends to write tests first")]),
        ("I switched from npm to pnpm", [("decision:pnpm", "User switched from npm to pnpm")]),
        ("We'll use Postgres for our backend",
         [("decision:postgres", "User decided to use Postgres for their backend")]),
        ("I'm working on a memory gateway", [("context:working-on:a-memory-gateway",
                                              "User is working on a memory gateway")]),
        ("I no longer use Vim", [("tool:vim", "User no longer uses Vim")]),
        ("I don't like Python anymore", [("preference:like:python",
                                          "User no longer likes Python")]),
    ],
)  # fmt: skip
def test_statement_kinds(text: str, expected: list[tuple[str, str]]) -> None:
    assert facts_of(text) == expected


def test_correction_overwrites_the_key_it_corrects() -> None:
    [old] = extract_facts("I use Vim for notes")
    [new] = extract_facts("I no longer use Vim")
    assert old.key == new.key == "tool:vim"
    assert new.category == "correction"


@pytest.mark.parametrize(
    "text",
    [
        "maybe I'll use Deno",
        "I think I might use Bun",
        "I'm not sure, I'll use Redis",
        "I'll probably use Redis",
        "If I use Rust I'd prefer Cargo",
        "Suppose we use Kafka for this",
        "Hypothetically I'd prefer Go",
    ],
)
def test_hedges_and_hypotheticals_yield_nothing(text: str) -> None:
    assert extract_facts(text) == []


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("README says: I prefer tabs", []),
        ("The docs say: I always use the CLI", []),
        ("He said: I love pizza", []),
        ("Error: I will use the fallback", []),
        ('He said "I love pizza" and I prefer pasta', [("preference:like:pasta",
                                                        "User prefers pasta")]),
        ("```\nI prefer Java\n```\nI prefer Kotlin", [("preference:like:kotlin",
                                                      "User prefers Kotlin")]),
        ("> I love Java\nI love Kotlin", [("preference:like:kotlin", "User loves Kotlin")]),
        ("Why does `I prefer X` fail?", []),
        ('I prefer "dark mode"', [("preference:like:dark-mode", "User prefers dark mode")]),
    ],
)  # fmt: skip
def test_quoted_and_pasted_text_is_not_a_fact(text: str, expected: list[tuple[str, str]]) -> None:
    assert facts_of(text) == expected


def test_multiple_facts_and_pronouns_in_third_person() -> None:
    assert facts_of("I prefer tabs, and I use Vim for my notes") == [
        ("preference:like:tabs", "User prefers tabs"),
        ("tool:vim", "User uses Vim for their notes"),
    ]


def test_object_is_capped() -> None:
    [fact] = extract_facts("I prefer " + "very " * 100 + "long things")
    assert len(fact.content) <= len("User prefers ") + 200


def test_same_key_later_statement_wins() -> None:
    assert facts_of("My name is Alice. Actually, my name is Bob.") == [
        ("identity:name", "User's name is Bob")
    ]


@pytest.mark.parametrize(
    "text",
    ["", "   ", "Write a poem about the sea", "Thanks!", "我喜欢绿茶", "Python 3.12 is out."],
)
def test_no_facts_in_ordinary_requests(text: str) -> None:
    assert extract_facts(text) == []


# ---- keys -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Next.js", "next.js"),
        ("C++", "c++"),
        ("C#", "c#"),
        ("Postgres for this project", "postgres-for-this-project"),
        ("  TypeScript!  ", "typescript"),
    ],
)
def test_slug_readable(text: str, expected: str) -> None:
    assert slug(text) == expected


def test_slug_non_latin_and_long_are_hashed_and_distinct() -> None:
    a, b = slug("咖啡和茶"), slug("绿茶饮料")
    assert a.startswith("~") and b.startswith("~") and a != b
    assert slug("café") != slug("cafe") and slug("café").startswith("cafe~")
    long_a, long_b = slug("x" * 60 + "a"), slug("x" * 60 + "b")
    assert long_a != long_b and len(long_a) <= 48 + 11


@pytest.mark.parametrize(
    ("category", "content", "key"),
    [
        ("preference", "User prefers TypeScript", "preference:like:typescript"),
        ("preference", "User dislikes Python", "preference:dislike:python"),
        ("preference", "User doesn't like Python", "preference:dislike:python"),
        ("fact", "User's name is Alice", "identity:name"),
        ("fact", "User lives in Berlin", "identity:location"),
        ("decision", "User decided to use Postgres for this project", "decision:postgres"),
        ("pattern", "User always commits before pushing", "pattern:always:commit-before-pushing"),
        ("correction", "User no longer uses Vim", "tool:vim"),
        ("context", "Project deadline is Friday", "context:project-deadline-is-friday"),
        ("bogus", "Something odd", "fact:something-odd"),
    ],
)
def test_key_for_statement_matches_regex_scheme(category: str, content: str, key: str) -> None:
    assert key_for_statement(category, content) == key


def test_regex_and_statement_keys_agree() -> None:
    for text in ["I prefer TypeScript", "I don't like Python", "My name is Alice",
                 "I live in Berlin", "I'll use Postgres for this project",
                 "I always commit before pushing", "I never push to main", "I'm always late",
                 "I tend to write tests first", "I no longer use Vim",
                 "I work at Acme"]:  # fmt: skip
        [fact] = extract_facts(text)
        assert key_for_statement(fact.category, fact.content) == fact.key, text


# ---- properties -------------------------------------------------------------------------------


def _valid(fact: ExtractedFact) -> bool:
    return (
        fact.category in CATEGORIES
        and fact.type in TYPES
        and 0.0 <= fact.confidence <= 1.0
        and fact.key == fact.key.lower()
        and fact.content.startswith("User")
        and ":" in fact.key
    )


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=400))
def test_extract_never_raises_on_arbitrary_unicode(text: str) -> None:
    assert all(_valid(f) for f in extract_facts(text))


_LEADS = ["I prefer ", "I don't like ", "My name is ", "I always ", "I'll use ", "I live in "]


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=80), st.sampled_from(_LEADS))
def test_extract_never_raises_on_statement_shaped_input(tail: str, lead: str) -> None:
    assert all(_valid(f) for f in extract_facts(lead + tail))


@pytest.mark.parametrize(
    ("key", "expected"),
    [
        ("preference:like:java", ["preference:dislike:java"]),
        ("preference:dislike:java", ["preference:like:java"]),
        ("pattern:always:commit", ["pattern:never:commit", "pattern:rarely:commit"]),
        (
            "pattern:never:x",
            [
                f"pattern:{a}:x"
                for a in ("always", "usually", "often", "typically", "generally", "normally")
            ],
        ),
        ("identity:name", []),
        ("decision:postgres", []),
        ("pattern:broken", []),
    ],
)
def test_contradicted_keys(key, expected):
    from shared.extraction import contradicted_keys

    assert contradicted_keys(key) == expected


def test_the_statement_beside_such_a_question_is_still_learned() -> None:
    facts = [f.content for f in extract_facts("what's my dog called lol. My dog is called Rex.")]
    assert facts == ["User has a dog named Rex"]
