"""Pure rules of shared.time_cues and shared.echo.question_share."""

from __future__ import annotations

import pytest

from shared.echo import question_share
from shared.ranking import Candidate
from shared.recall_index.analysis import query_tokens
from shared.time_cues import asks_when, boost_time_cues, states_relative_time


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("When did I move to Berlin?", True),
        ("Thanks! What year was that?", True),
        ("how long ago did we meet", True),
        ("Which month is the trip?", True),
        ("Tell me about Berlin", False),
        ("I know when it is", False),
        ("Wann bin ich umgezogen?", False),  # English only
    ],
)
def test_asks_when(query: str, expected: bool) -> None:
    assert asks_when(query) is expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("I adopted a puppy last week", True),
        ("We moved here 3 years ago", True),
        ("Yesterday I ran a marathon", True),
        ("The concert is next Friday", True),
        ("I adopted a puppy", False),
        ("[1:56 pm on 8 May, 2023] Caroline: I adopted a puppy", False),  # absolute dates: no cue
        ("This is my last chance", False),
    ],
)
def test_states_relative_time(text: str, expected: bool) -> None:
    assert states_relative_time(text) is expected


def test_boost_time_cues_reorders_only_for_when_queries() -> None:
    content = {1: "I adopted a puppy", 2: "I adopted a puppy last week"}
    hits = [Candidate(1, 4.0, rank=1), Candidate(2, 3.0, rank=2)]
    out = boost_time_cues("When did I adopt a puppy?", hits, content, 1.5)
    assert [(c.memory_id, c.score) for c in out] == [(2, 4.5), (1, 4.0)]
    assert boost_time_cues("Did I adopt a puppy?", hits, content, 1.5) == hits
    assert boost_time_cues("When did I adopt a puppy?", hits, content, 1.0) == hits


def test_boost_time_cues_needs_a_topic_word_besides_the_when_words() -> None:
    content = {1: "My brother went to Rome with his band", 2: "I moved to Berlin two years ago"}
    hits = [Candidate(1, 4.0, rank=1), Candidate(2, 3.0, rank=2)]
    out = boost_time_cues("What year did my brother go to Rome?", hits, content, 1.5)
    assert out == hits  # "years" is a when-word, not the question's topic


def test_question_share_weighs_the_terms_only_asked_about() -> None:
    terms = query_tokens("How does she stay confident in business?")
    assert terms == ["stai", "confid", "busi"]
    text = "I feel low on confidence. Any tips on how you stay confident in business?"
    weights = {"stai": 2.0, "confid": 1.0, "busi": 1.0}
    assert question_share(weights, text) == pytest.approx(3.0 / 4.0)
    assert question_share(dict.fromkeys(terms, 1.0), text) == pytest.approx(2.0 / 3.0)
    # all in question sentences, none, no question mark at all
    assert question_share(weights, "How do you stay confident in business?") == 1.0
    assert question_share(weights, "I stay confident in business.") == 0.0
    assert question_share(weights, "Nothing here?") == 0.0
