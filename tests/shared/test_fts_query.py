"""Tests for shared.fts_query: term extraction, MATCH safety (odd query text) and CJK recall."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import sqlean
from hypothesis import given, settings
from hypothesis import strategies as st

from shared import fts_query
from shared.fts_query import (
    build_match_query,
    cjk_bigrams,
    index_text,
    query_terms,
    quote_term,
)

TOKENIZER = "porter unicode61 remove_diacritics 2"

R1_QUERIES = [
    "what's my favorite editor?",
    "C++ tips",
    'say "hi"',
    "NEAR(a b)",
    "*",
    "AND OR NOT",
]

ODD_QUERIES = [
    "",
    "   ",
    "-",
    "^",
    "col:val",
    "x:y AND z",
    '"',
    '""""',
    "'",
    "(",
    ")",
    "{a b}",
    "a*",
    "NEAR",
    "near the office",
    "🙂🙂 emoji 🎉",
    "مرحبا بالعالم",
    "שלום עולם",
    "\x00\x01\x1f control \x7f",
    "\u200b\u200d\ufeff",
    "e\u0301\u0301\u0301",
    "\u0e31\u0e34",
    "\U0001d400\U0001d401 math bold",
    "\ue000\ue001 private use",
    "ﬁ ligature",
    "𠀀𠀁 ext-b",
    "-- DROP TABLE memories; --",
    "rowid:1 OR 1=1",
]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("what's my favorite editor?", ["favorite", "editor"]),
        ("What’s my favorite editor?", ["favorite", "editor"]),
        ("C++ tips", ["tips"]),
        ('say "hi"', ["say", "hi"]),
        ("NEAR(a b)", ["near"]),
        ("*", []),
        ("AND OR NOT", []),
        ("Which database do we use?", ["database", "use"]),
        ("Write a poem about the sea", ["write", "poem", "sea"]),
        ("Python python PYTHON", ["python"]),
        ("snake_case", ["snake", "case"]),
        ("绿茶", ["绿茶"]),
        ("我喜欢喝绿茶", ["我喜", "喜欢", "欢喝", "喝绿", "绿茶"]),
        ("用Python写代码", ["用", "python", "写代", "代码"]),
        ("Я люблю зелёный чай", ["люблю", "зелёный", "чай"]),
        ("café crème", ["café", "crème"]),
        ("ΚΑΦΕΣ Ϳ0", ["καφεσ", "Ϳ0"]),  # Ϳ (Unicode 7) is not folded by unicode61
        ("ᏣᎳᎩ", ["ᏣᎳᎩ"]),  # Cherokee: no folding to the Unicode 8 small letters
        ("", []),
    ],
)
def test_query_terms(text: str, expected: list[str]) -> None:
    assert query_terms(text) == expected


def test_build_match_query_quotes_and_or_joins() -> None:
    assert build_match_query("what's my favorite editor?") == '"favorite" OR "editor"'
    assert build_match_query("C++ tips") == '"tips"'
    assert build_match_query("*") is None
    assert build_match_query("AND OR NOT") is None
    assert build_match_query("") is None


def test_quote_term_doubles_quotes() -> None:
    assert quote_term('a"b') == '"a""b"'


def test_max_terms_cap_and_dedupe() -> None:
    text = " ".join(f"word{i} word{i}" for i in range(100))
    terms = query_terms(text, max_terms=5)
    assert terms == [f"word{i}" for i in range(5)]
    query = build_match_query(text)
    assert query is not None
    assert query.count(" OR ") == 31
    assert query_terms(text, max_terms=0) == []
    assert build_match_query(text, max_terms=0) is None


@pytest.mark.parametrize(
    ("run", "expected"),
    [
        ("", []),
        ("茶", ["茶"]),
        ("绿茶", ["绿茶"]),
        ("我喜欢", ["我喜", "喜欢"]),
    ],
)
def test_cjk_bigrams(run: str, expected: list[str]) -> None:
    assert cjk_bigrams(run) == expected


def test_index_text_keeps_original_and_appends_segments() -> None:
    assert index_text("Project database is PostgreSQL 16", None) == (
        "Project database is PostgreSQL 16"
    )
    assert index_text("likes tea", "pref:tea") == "likes tea\npref:tea"
    out = index_text("我喜欢喝绿茶", None)
    assert out.startswith("我喜欢喝绿茶\n")
    assert out.split("\n")[-1] == "我喜 喜欢 欢喝 喝绿 绿茶"
    mixed = index_text("用Python写代码", None)
    assert mixed.split("\n")[-1] == "用 Python 写代 代码"


# --- against a real FTS5 table ------------------------------------------------------------------

DOCS = [
    "Project database is PostgreSQL 16",
    "User has a cat named Miso",
    "User prefers dark mode in the editor",
    "我喜欢喝绿茶",
    "Я люблю зелёный чай",
    "café crème every morning",
    "私は緑茶が好きです",
    "저는 녹차를 좋아해요",
    "ฉันชอบชาเขียว",
    "Favourite language: C++ and Rust",
    "我用Python写代码",
]


@pytest.fixture(scope="module")
def fts() -> Iterator[sqlean.Connection]:
    conn = sqlean.connect(":memory:")
    conn.execute(f"create virtual table t using fts5(x, tokenize='{TOKENIZER}')")
    for i, doc in enumerate(DOCS, start=1):
        conn.execute("insert into t(rowid, x) values (?, ?)", (i, index_text(doc, None)))
    yield conn
    conn.close()


def search(conn: sqlean.Connection, text: str) -> list[str]:
    query = build_match_query(text)
    if query is None:
        return []
    rows = conn.execute("select rowid from t where t match ? order by bm25(t)", (query,)).fetchall()
    return [DOCS[r[0] - 1] for r in rows]


@pytest.mark.parametrize(
    ("query", "expected_doc"),
    [
        ("绿茶", "我喜欢喝绿茶"),  # R4
        ("我喜欢喝绿茶", "我喜欢喝绿茶"),
        ("зелёный", "Я люблю зелёный чай"),
        ("Зелёный чай?", "Я люблю зелёный чай"),
        ("cafe", "café crème every morning"),
        ("CRÈME", "café crème every morning"),
        ("緑茶", "私は緑茶が好きです"),
        ("녹차", "저는 녹차를 좋아해요"),
        ("ชาเขียว", "ฉันชอบชาเขียว"),
        ("what's my favorite editor?", "User prefers dark mode in the editor"),
        ("Which database do we use?", "Project database is PostgreSQL 16"),
        ("C++ tips for Rust", "Favourite language: C++ and Rust"),
        ("python", "我用Python写代码"),
        ("写代码", "我用Python写代码"),
    ],
)
def test_real_fts5_recall(fts: sqlean.Connection, query: str, expected_doc: str) -> None:
    found = search(fts, query)
    assert found, query
    assert found[0] == expected_doc


def test_r2_only_database_memory(fts: sqlean.Connection) -> None:
    assert search(fts, "Which database do we use?") == ["Project database is PostgreSQL 16"]


def test_r3_unrelated_query_finds_nothing(fts: sqlean.Connection) -> None:
    assert search(fts, "Write a poem about the sea") == []


@pytest.mark.parametrize("text", R1_QUERIES + ODD_QUERIES)
def test_listed_inputs_never_error(fts: sqlean.Connection, text: str) -> None:
    search(fts, text)  # must not raise


@settings(max_examples=400, deadline=None)
@given(st.text(max_size=80))
def test_any_text_is_a_valid_match_query(text: str) -> None:
    query = build_match_query(text)
    if query is None:
        return
    conn = _shared_conn()
    conn.execute("select rowid from t where t match ? order by bm25(t)", (query,)).fetchall()


# Common scripts (weighted in), plus arbitrary Unicode: code points newer than SQLite's unicode61
# tables (emoji, Greek yot, Cherokee small letters) are where Python and SQLite disagree.
COMMON_TEXT = st.text(
    alphabet=st.one_of(
        st.characters(min_codepoint=0x20, max_codepoint=0x24F),  # ASCII, Latin-1, Latin Ext
        st.characters(min_codepoint=0x370, max_codepoint=0x4FF),  # Greek, Cyrillic
        st.characters(min_codepoint=0x600, max_codepoint=0x6FF),  # Arabic
        st.characters(min_codepoint=0xE00, max_codepoint=0xE7F),  # Thai
        st.characters(min_codepoint=0x3000, max_codepoint=0x30FF),  # CJK punct, Kana
        st.characters(min_codepoint=0x4E00, max_codepoint=0x4FFF),  # Han
        st.characters(min_codepoint=0xAC00, max_codepoint=0xAD00),  # Hangul
        st.characters(min_codepoint=0x1F600, max_codepoint=0x1F64F),  # emoji
        st.sampled_from(" \n\t'\"*^:-()"),
    ),
    max_size=40,
)


@settings(max_examples=300, deadline=None)
@given(st.one_of(COMMON_TEXT, st.text(max_size=40)))
def test_any_text_indexes_and_finds_itself(text: str) -> None:
    query = build_match_query(text)
    if query is None:
        return
    conn = sqlean.connect(":memory:")
    try:
        conn.execute(f"create virtual table t using fts5(x, tokenize='{TOKENIZER}')")
        conn.execute("insert into t(rowid, x) values (1, ?)", (index_text(text, None),))
        rows = conn.execute("select rowid from t where t match ?", (query,)).fetchall()
    finally:
        conn.close()
    # A query built from a text must find that text once indexed.
    assert rows == [(1,)]


@pytest.mark.parametrize(
    "text",
    [
        "\u0958\u093e\u0932\u093e",  # Hindi typed with the precomposed nukta letter U+0958
        "0\u0f57",  # Tibetan U+0F57: NFC decomposes both (composition exclusions)
        "cafe\u0301 au lait",  # a combining accent, which NFC composes
    ],
)
def test_a_word_nfc_rewrites_is_found_by_itself(text: str) -> None:
    conn = sqlean.connect(":memory:")
    try:
        conn.execute(f"create virtual table t using fts5(x, tokenize='{TOKENIZER}')")
        conn.execute("insert into t(rowid, x) values (1, ?)", (index_text(text, None),))
        query = build_match_query(text.split(maxsplit=1)[0])
        assert conn.execute("select rowid from t where t match ?", (query,)).fetchall() == [(1,)]
    finally:
        conn.close()


_CONN: list[sqlean.Connection] = []


def _shared_conn() -> sqlean.Connection:
    if not _CONN:
        conn = sqlean.connect(":memory:")
        conn.execute(f"create virtual table t using fts5(x, tokenize='{TOKENIZER}')")
        for i, doc in enumerate(DOCS, start=1):
            conn.execute("insert into t(rowid, x) values (?, ?)", (i, index_text(doc, None)))
        _CONN.append(conn)
    return _CONN[0]


@settings(max_examples=300, deadline=None)
@given(
    text=st.text(alphabet=st.sampled_from("abcXYZ019 _'-?!.\\n\\tIaAthewhatTHE"), max_size=80),
    max_terms=st.integers(0, 6),
)
def test_ascii_terms_equal_the_unicode_path(text: str, max_terms: int) -> None:
    assert fts_query._ascii_terms(text, max_terms) == fts_query._unicode_terms(text, max_terms)
