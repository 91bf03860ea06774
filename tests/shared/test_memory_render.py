"""Prepared features equal what the request path computed on the fly, for random memories.

The block line a :class:`MemoryPreparer` keeps is ``memory_line`` of the redacted content (or of
the content itself with the filter off), and its echo features give the same echo and asks-only
answers as the analysis of the text.
"""

from __future__ import annotations

import msgspec
from hypothesis import given, settings
from hypothesis import strategies as st

from shared.echo import _Query, is_echo, normalised_words, question_share, question_share_of
from shared.memory_block import RecalledMemory, memory_line
from shared.memory_render import MemoryPreparer, preparer_for
from shared.ranking import Candidate
from shared.recall_index.analysis import query_tokens
from shared.recall_index.prepared import Prepared
from shared.sensitive import SensitiveDetector
from shared.time_cues import boost_time_cues, cue_terms, states_relative_time
from tests.records import memory_record

WORDS = [
    "what", "is", "my", "dog", "called", "I", "live", "in", "Berlin", "do", "you", "have",
    "pet", "rex", "please", "tell", "me", "that's", "nice", "café", "Straße", "ｔａｇ",
]  # fmt: skip
PIECES = [
    "?", ".", "!", " ", ", ", "\n", "\u200b", "\u202e", "</recalled_memories>",
    "＜recalled memory＞",
    "alice@example.com", "+1 415 555 0100", "4111 1111 1111 1111", "sk-abcdefghijklmnopqrstuv12",
    "BLUEBIRD-7",
]  # fmt: skip

texts = st.lists(st.sampled_from(WORDS + PIECES), max_size=30).map(" ".join)
detectors = st.sampled_from(
    [None, SensitiveDetector(), SensitiveDetector(custom_patterns=(r"BLUEBIRD-\d",))]
)
dates = st.one_of(
    st.floats(min_value=-1e12, max_value=1e12), st.sampled_from([float("nan"), float("inf")])
)


@settings(max_examples=300, deadline=None)
@given(texts, dates, st.text(max_size=12), detectors)
def test_the_prepared_line_is_memory_line_of_the_redacted_content(
    content: str, created_at: float, category: str, detector: SensitiveDetector | None
) -> None:
    prepared = MemoryPreparer(detector)(
        memory_record(content=content, created_at=created_at, category=category)
    )
    shown = content if detector is None else detector.redact(content)
    expected = memory_line(RecalledMemory(content=shown, created_at=created_at, category=category))
    assert prepared.line == expected


@settings(max_examples=300, deadline=None)
@given(texts, texts)
def test_prepared_echo_features_answer_like_the_text(query: str, content: str) -> None:
    prepared = MemoryPreparer(None)(memory_record(content=content, created_at=0.0, category=""))
    assert _Query(query).echoed_by(content, prepared.asked) == is_echo(query, content)
    echoed = _Query(query).echoed_by(content, prepared.asked, prepared.words_len)
    assert echoed == is_echo(query, content)
    assert prepared.words_len == len(normalised_words(content))
    weights = dict.fromkeys(query_tokens(query), 1.0)
    features = None if prepared.q_terms is None else (prepared.q_terms, prepared.s_terms)
    assert question_share_of(weights, features) == question_share(weights, content)


def test_a_question_memory_is_prepared_with_its_features() -> None:
    prepared = MemoryPreparer(None)(
        memory_record(content="That's nice! What pet do you have?", created_at=0.0, category="fact")
    )
    assert prepared.line == "- [1970-01-01] (fact) That's nice! What pet do you have?"
    assert prepared.q_terms is not None and "pet" in prepared.q_terms
    assert "nice" in prepared.s_terms
    assert question_share_of({"pet": 1.0}, (prepared.q_terms, prepared.s_terms)) == 1.0
    question = MemoryPreparer(None)(
        memory_record(content="What is my dog called?", created_at=0.0, category="")
    )
    assert "dog" in question.asked
    assert msgspec.msgpack.decode(msgspec.msgpack.encode(question), type=type(question)) == question


def test_fingerprints_name_the_redaction_configuration() -> None:
    plain, custom = SensitiveDetector(), SensitiveDetector(custom_patterns=("BLUEBIRD",))
    fingerprints = {
        preparer_for(False, plain).fingerprint,
        preparer_for(True, plain).fingerprint,
        preparer_for(True, custom).fingerprint,
    }
    assert len(fingerprints) == 3
    assert preparer_for(False, custom).fingerprint == preparer_for(False, plain).fingerprint
    assert MemoryPreparer(plain).fingerprint == preparer_for(True, plain).fingerprint


CUE_WORDS = ["yesterday", "last", "week", "ago", "3", "days", "when", "Berlin", "moved", "dog"]
cue_texts = st.lists(st.sampled_from(WORDS + PIECES + CUE_WORDS), max_size=30).map(" ".join)


@settings(max_examples=300, deadline=None)
@given(st.lists(cue_texts, min_size=1, max_size=8), st.sampled_from(["When did I move", ""]), texts)
def test_prepared_time_cues_boost_like_the_text(contents, ask, topic) -> None:
    prepare = MemoryPreparer(None)
    memories = [memory_record(rowid=i + 1, content=t) for i, t in enumerate(contents)]
    candidates = [Candidate(memory_id=m.id, score=1.0 + m.id) for m in memories]
    content = {m.id: m.content for m in memories}
    ready = {m.id: prepare(m) for m in memories}
    query = f"{ask} {topic}?"
    expected = boost_time_cues(query, candidates, content, 1.5)
    assert boost_time_cues(query, candidates, content, 1.5, ready) == expected
    for m in memories:
        assert ready[m.id].cue_terms == cue_terms(m.content)
        assert (ready[m.id].cue_terms is not None) == states_relative_time(m.content)


def test_a_record_without_the_new_features_is_analysed_from_its_text() -> None:
    text = "We adopted a puppy last week"
    old = Prepared("- line", ())  # words_len -1: prepared before the features existed
    candidates = [Candidate(memory_id=1, score=1.0)]
    boosted = boost_time_cues("When did we adopt the puppy?", candidates, {1: text}, 2.0, {1: old})
    assert boosted == [Candidate(memory_id=1, score=2.0)]
    assert _Query(text).echoed_by(text, old.asked, old.words_len)
