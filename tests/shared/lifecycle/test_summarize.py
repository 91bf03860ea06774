"""Summarization: the extractive method (pure) and runs over a real store (owners never mix)."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from shared.lifecycle.summarize import (
    GroupSummary,
    build_summary,
    extract_summary,
    split_sentences,
    summarize,
    summary_sentence_budget,
    terms,
)
from shared.settings import load_settings
from shared.store import Store
from tests.lifecycle_seed import DAY, add, fts_rows, ids, query


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("I moved to Berlin. I use Next.js daily!", ["I moved to Berlin.", "I use Next.js daily!"]),
        ("pi is 3.14 ok", ["pi is 3.14 ok"]),
        ("我喜欢茶。我住在东京。", ["我喜欢茶。", "我住在东京。"]),
        ("line one\nline two", ["line one", "line two"]),
        ("", []),
    ],
)
def test_split_sentences(text: str, expected: list[str]) -> None:
    assert split_sentences(text) == expected


def test_terms_are_casefolded_and_cjk_bigrammed() -> None:
    assert terms("Straße IS big") == ["strasse", "is", "big"]
    assert terms("我喜欢茶") == ["我喜", "喜欢", "欢茶"]


def test_extract_prefers_central_sentences_and_dedupes() -> None:
    sentences = [
        "We debugged the deploy pipeline.",
        "We debugged the deploy pipeline!",  # duplicate after folding
        "The deploy pipeline failed on the cache step.",
        "Lunch was nice.",
        "The cache step of the pipeline is fixed.",
    ]
    chosen = extract_summary(sentences, 2)
    assert 3 not in chosen and 1 not in chosen and len(chosen) == 2


def test_questions_are_never_picked_over_the_statement_they_repeat() -> None:
    # a question repeats its answer's words, so SumBasic used to keep it and drop the answer
    sentences = ["What is my city?", "What is my city again?", "I live in Istanbul, my city."]
    assert extract_summary(sentences, 1) == [2]
    assert extract_summary(["What is my city?", "Where do I work?"], 2) == []


@pytest.mark.parametrize(("n", "k"), [(0, 0), (1, 1), (3, 1), (4, 2), (30, 8), (300, 8)])
def test_sentence_budget(n: int, k: int) -> None:
    assert summary_sentence_budget(n) == k


async def test_two_owners_are_never_mixed_and_originals_go_after_the_summary(
    tmp_path: Path,
) -> None:
    db = str(tmp_path / "s.db")
    now = time.time()
    store = await Store.open(db)
    try:
        a_ids, b_ids = [], []
        for i in range(6):
            a_ids.append(
                await add(
                    store,
                    f"alpha project meeting number {i}. alpha budget talk.",
                    owner="key_a",
                    created=now - (20 - i) * DAY,
                )
            )
            b_ids.append(
                await add(
                    store,
                    f"bravo recipe idea {i}. bravo cooking notes.",
                    owner="key_b",
                    created=now - (20 - i) * DAY,
                )
            )
        recent = await add(store, "alpha recent turn", owner="key_a", created=now - DAY)
        fact = await add(
            store,
            "alpha fact",
            owner="key_a",
            type="factual",
            category="fact",
            created=now - 90 * DAY,
        )
        made: list[GroupSummary] = []

        dry = await summarize(
            store, load_settings({}), now, older_than_days=10, dry_run=True, listener=made.append
        )
        assert dry.summaries == 2 and dry.summarized == 12 and dry.tokens_saved > 0
        assert all(m.summary_id is None for m in made)
        assert len(ids(db)) == 14, "dry run changed something"

        made.clear()
        report = await summarize(
            store, load_settings({}), now, older_than_days=10, listener=made.append
        )
        assert report.summaries == 2 and report.groups == 2
        assert report.tokens_saved == report.tokens_before - report.tokens_after > 0
        by_owner = {m.owner_id: m for m in made}
        assert set(by_owner) == {"key_a", "key_b"}
        assert "bravo" not in by_owner["key_a"].content and "alpha" in by_owner["key_a"].content
        assert "alpha" not in by_owner["key_b"].content and "bravo" in by_owner["key_b"].content
        rows = query(
            db,
            "SELECT owner_id, type, category, metadata, public_id FROM memories "
            "WHERE category = 'summary'",
        )
        owners_of = dict(query(db, "SELECT public_id, owner_id FROM memories"))
        for owner, mtype, _cat, meta, _pid in rows:
            assert mtype == "semantic"
            sources = json.loads(meta)["summary"]["source_ids"]
            assert len(sources) == 6
            assert all(owners_of.get(s) in (None, owner) for s in sources)
        left = ids(db)
        assert not left & set(a_ids + b_ids)
        assert {recent, fact} <= left
        assert all(fts_rows(db, i) == 0 for i in a_ids + b_ids)
    finally:
        await store.close()


async def test_owner_filter_and_sessions_stay_separate(tmp_path: Path) -> None:
    db = str(tmp_path / "s.db")
    now = time.time()
    store = await Store.open(db)
    try:
        for i in range(3):
            await add(
                store,
                f"session one talk {i}. more words here.",
                session="s1",
                created=now - 20 * DAY + i,
            )
            await add(store, f"owner wide talk {i}. more words here.", created=now - 20 * DAY + i)
            await add(
                store,
                f"other owner {i}. more words here.",
                owner="key_b",
                created=now - 20 * DAY + i,
            )
        made: list[GroupSummary] = []
        report = await summarize(
            store,
            load_settings({}),
            now,
            older_than_days=10,
            owner_id="key_a",
            listener=made.append,
        )
        assert report.groups == 2
        assert {(m.owner_id, m.session_id) for m in made} == {("key_a", "s1"), ("key_a", None)}
        assert len(query(db, "SELECT id FROM memories WHERE owner_id='key_b'")) == 3
        summaries = query(db, "SELECT session_id, content FROM memories WHERE category='summary'")
        assert {s for s, _ in summaries} == {"s1", None}
        assert all(("session one" in c) == (s == "s1") for s, c in summaries)
    finally:
        await store.close()


def test_build_summary_prefixes_dates_and_adds_no_words() -> None:
    from shared.lifecycle.decay import LifecycleRow

    rows = [
        LifecycleRow(
            id=i,
            public_id=f"m{i}",
            owner_id="o",
            user_id="",
            session_id=None,
            type="episodic",
            category="turn",
            content=c,
            created_at=86_400.0 * (i + 1),
            last_accessed_at=None,
            access_count=0,
            expires_at=None,
            relevance=1.0,
        )
        for i, c in enumerate(["我喜欢喝绿茶。我每天喝绿茶。", "周末我去爬山。", "我喜欢喝绿茶。"])
    ]
    text = build_summary(rows)
    for line in text.splitlines():
        day, sentence = line.split(" ", 1)
        assert day.startswith("1970-01-0")
        assert any(sentence in r.content for r in rows)


async def test_decayed_memories_are_not_resurrected_by_a_summary(tmp_path: Path) -> None:
    db = str(tmp_path / "s.db")
    now = time.time()
    store = await Store.open(db)
    try:
        for i in range(3):
            await add(store, f"long gone talk {i}. filler words.", created=now - 60 * DAY + i)
        report = await summarize(store, load_settings({}), now, older_than_days=10)
        assert report.summaries == 0 and len(ids(db)) == 3  # left to the sweep
    finally:
        await store.close()
