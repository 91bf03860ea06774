"""The recall query bound: size limits hold for any text, short texts pass unchanged, both ends
of a long text are kept."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from shared.query_bound import bound_query


@given(st.text(), st.integers(1, 600), st.integers(1, 80))
def test_limits_hold_for_any_text(text: str, max_bytes: int, max_terms: int):
    out = bound_query(text, max_bytes, max_terms)
    assert len(out.encode("utf-8")) <= max_bytes
    assert len(out.split()) <= max_terms


@given(st.text(max_size=40))
def test_text_within_limits_is_unchanged(text: str):
    assert bound_query(text, 4096, 256) is text


def test_both_ends_of_a_long_paste_are_kept():
    text = "favourite editor question " + "log line " * 10_000 + " which editor do I use"
    out = bound_query(text, 4096, 256)
    assert out.startswith("favourite editor question")
    assert out.endswith("which editor do I use")


def test_multibyte_text_is_never_split_inside_a_character():
    out = bound_query("我喜欢喝绿茶" * 10_000, 101, 256)
    assert len(out.encode("utf-8")) <= 101
    assert set(out) <= set("我喜欢喝绿茶\n")


@pytest.mark.parametrize(("max_bytes", "max_terms"), [(0, 1), (1, 0)])
def test_invalid_limits_are_refused(max_bytes: int, max_terms: int):
    with pytest.raises(ValueError):
        bound_query("x", max_bytes, max_terms)
