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
    asks_only,
    demote_questions,
    drop_echoes,
    is_echo,
)
from shared.extraction.regex import extract_facts
from shared.fts_query import query_terms
from shared.question_form import (
    asks_about_the_user,
    is_question_or_request,
    says_one_thing,
    states_nothing,
)
from shared.ranking import Candidate
from shared.recall_index.analysis import query_tokens


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
        # typed without the question mark
        "what laptop do I have",
        "What did I decide about the laptop",
        "do I have a dog",
        "is my flight on Monday",
        "How long ago did we meet",
        "whats my sisters job",
        "wheres my phone",
        "how old am I",
        "what time is it",
        "Have you been to Rome",
        # other closing marks, short fragments and indirect questions
        "What is my dog called?!",
        "whats my dogs name??",
        "my dog's name?",
        "I wonder what my dog is called",
        "I was wondering whether my flight is on Monday.",
        "do you know where I parked my car",
        "Do you remember what my dog is called?",
        # asides around the question, hesitations before it, "do you remember" + a name
        "What is my dog called? :)",
        "What's my dog's name?\U0001f605",
        "What is my dog called? lol",
        "What is my dog called? #pets",
        "What is my dog called? (asking for a friend)",
        "What is my dog called? I forgot.",
        "Do you remember my dog's name",
        "do you recall my sister's job",
        "Any idea what my dog is called",
        "hmm ok what is my cat's name",
        "ok so can you tell me my dog's name",
        "what's my dog called lol",
        "what\u2019s my dog called lmao",
        "what's my dog called again lol pls",
        "what's my name lol",
        "So... what is my dog's name? just curious",
        "So... what's my dog called? just curious lol",
        "hey what is my dog called lol",
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
        # unpunctuated, but a statement: a first-person word after the interrogative, closing
        # punctuation, an imperative "do", or a statement beside the question
        "When I was young I lived in Paris",
        "What I love most is hiking",
        "how we met is a long story",
        "What a lovely day.",
        "Do remember that my sister lives in Oslo",
        "I moved to Berlin. what should I see",
        "When the weather is bad I work from home",
        "What the vet told me is that Rex needs surgery",
        "Where the kids go to school is St Marys",
        "When the baby arrives we will move to Leeds",
        "What she told me is that I am adopted",
        "Which is why I sold my Volvo",
        "Did you know I speak five languages",
        "I wonder. My dog is called Rex",
        "My dog is called Rex, any name ideas for a second dog?",
        "When it is cold I stay in",
        # an aside-like word that starts a statement, a clause after "do you know"
        "What is my dog called? I forgot my keys.",
        "I forgot my keys at home.",
        "So I moved to Berlin",
        "Anyway my dog is Rex",
        "Do you know Rex is my dog",
        "Do you know we're moving to Leeds",
        "Do you remember that my dog is Rex",
        "what's up, I moved to Berlin",
        "then my dog died",
        # notes to remember, worded as requests or questions, carry the fact
        "Please note that I am allergic to peanuts",
        "Can you remember that my bike is a Brompton",
        "Could you keep in mind that my flat is on the fourth floor?",
        "Remember that my sister is a doctor in Lyon",
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


@pytest.mark.parametrize(
    ("query", "content", "expected"),
    [
        # the words shared with the query are only in a question: it asked, it holds no answer
        ("What pet do I have?", "That's so nice! What pet do you have?", True),
        ("What is my dog called?", "Great. What do you call your dog?", True),
        # a statement holds one of them: the answer may be there
        ("What pet do I have?", "I have a pet cat. What pet do you have?", False),
        ("What is my dog called?", "My dog is called Rex", False),
        # a first-person clause makes the sentence a statement, as for capture
        ("Berlin tips", "I moved to Berlin, any tips?", False),
        # no question mark, or none of the query's words: never asks-only
        ("What pet do I have?", "Please list pet names", False),
        ("What pet do I have?", "How are you?", False),
        ("", "What pet do you have?", False),
        # a long text is never checked (bounded cost)
        ("What pet do I have?", "What pet do you have? " + "Well. " * 400, False),
    ],
)
def test_asks_only(query, content, expected):
    assert asks_only(query_tokens(query), content) is expected


def test_demote_questions_reorders_before_the_floor():
    terms = query_tokens("What pet do I have?")
    content = {1: "Nice! What pet do you have?", 2: "I have a pet hamster", 3: "pets?"}
    hits = [Candidate(1, 4.0, rank=1), Candidate(2, 3.0, rank=2), Candidate(9, 2.5, rank=3)]
    out = demote_questions(terms, hits, content, 0.5)
    assert [(c.memory_id, c.score) for c in out] == [(2, 3.0), (9, 2.5), (1, 2.0)]
    assert out[2].rank == 1  # the leg's own rank is kept
    # factor 1 (off) and no query terms leave the list alone
    assert demote_questions(terms, hits, content, 1.0) == hits
    assert demote_questions([], hits, content, 0.5) == hits


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("hi", True),
        ("Hello!", True),
        ("ok thanks", True),
        ("...", True),
        ("What is my dog called?", True),
        ("Please list pet names", True),
        ("My dog is called Rex", False),
        ("hi! I live in Berlin", False),
        ("Hello, I need help with my cat", False),
        ("lol", True),
        (":) \U0001f605", True),
        ("#monday", True),
        ("haha my dog is called Rex", False),
    ],
)
def test_states_nothing(text: str, expected: bool) -> None:
    assert states_nothing(text) is expected


# Questions as users type them without "?": a lead ("wait,", "quick question:"), an indirect
# form ("I need to know what ...", "not sure what ..."), a trailing aside ("..., I can't recall")
ASKED_WITHOUT_A_QUESTION_MARK = [
    "Wait, what is my dog called again",
    "Remind me, what is my cat called again",
    "Question: what is my dog called",
    "Random question - what's my dog called",
    "Quick question: what is my dog called",
    "I need to know what my dog is called.",
    "I want to know my dog's name",
    "what is my dog called, I can't recall",
    "Not sure what my dog is called",
    "I forgot where I parked",
    "Wait, what is my name again",
    "Sorry, where do I live again",
    # asked in place: the answer's slot holds the interrogative word
    "My name is what again",
    "My dog is called what?",
    "My name is what?",
    "my sister is called what again lol",
    "I live where again",
    "my dog is how old again",
]
STATED_AFTER_A_LEAD = [
    "Sorry, I moved to Berlin last week",
    "Actually my dog is called Max now",
    "Also I love hiking",
    "I'm not sure about the job offer yet",
    "I forgot my keys at home",
    "A question came up at work about my visa",
    "I need to know French for my new job",
    "I know what I want for my birthday",
    "Guess what? My dog is called Rex.",
]


@pytest.mark.parametrize("text", ASKED_WITHOUT_A_QUESTION_MARK)
def test_a_question_typed_without_its_mark_states_nothing_and_yields_no_fact(text: str) -> None:
    assert states_nothing(text)
    assert extract_facts(text) == []  # no "User has a dog named again"


@pytest.mark.parametrize("text", STATED_AFTER_A_LEAD)
def test_a_statement_after_a_lead_or_hedge_is_still_captured(text: str) -> None:
    assert not states_nothing(text)


def test_a_pet_name_is_never_a_trailing_adverb() -> None:
    assert extract_facts("My dog is called Rex again.")[0].content == "User has a dog named Rex"
    assert extract_facts("my dog called again") == []


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("Write a short poem about my parrot", True),
        ("Which city am I living in right now?", True),
        ("Help me plan an anniversary surprise for my wife", True),
        ("What car do I drive to work?", True),
        ("Is a hot dog a sandwich?", False),
        ("How do I call a function in Rust?", False),
        ("How can I name a git branch?", False),
        ("Tell me about T. rex dinosaurs", False),
        ("What did Caroline research?", False),
    ],
)
def test_asks_about_the_user(query: str, expected: bool) -> None:
    assert asks_about_the_user(query) is expected


@pytest.mark.parametrize(
    "text",
    ["My name is idk", "my dog is called whatever", "My job is none of your business"],
)
def test_a_non_answer_states_nothing(text: str) -> None:
    assert states_nothing(text)  # never captured, so never injected for "What is my name?"
    assert extract_facts(text) == []


@pytest.mark.parametrize("text", ["My secret is safe with you", "My plan is nothing special"])
def test_a_statement_about_a_secret_or_nothing_is_still_one(text: str) -> None:
    assert not states_nothing(text)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("My dog is called Rex.", True),
        ("ok, my dog is called Rex lol", True),
        ("My dog is called Rex. He loves the beach.", False),
        ("hi", False),
    ],
)
def test_says_one_thing(text: str, expected: bool) -> None:
    assert says_one_thing(text) is expected
