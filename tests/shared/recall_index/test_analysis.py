"""Text analysis of the in-memory index under a restarted stem cache (large owners)."""

from __future__ import annotations

import pytest

from shared.fts_query import query_terms
from shared.recall_index import analysis


def test_analysis_survives_the_stem_cache_restart(monkeypatch: pytest.MonkeyPatch) -> None:
    """More distinct tokens than the stem cache holds: every token still gets its term."""
    monkeypatch.setattr(analysis, "_STEMS_MAX", 5)
    analysis.analyse_many(["alpha beta gamma"])
    terms, counts = analysis.analyse_many(["alpha beta gamma delta epsilon zeta eta running"])
    assert counts == [8] and terms[-1] == "run" and terms[0] == "alpha"


@pytest.mark.parametrize(
    "query",
    [
        "When did Caroline go to the LGBTQ support group? Running runners ran",
        "Café naïve résumé running café",
        "我喜欢喝绿茶 and green tea, 緑茶が好き",
        "x " * 3000 + "long pasted words running",
    ],
)
def test_query_tokens_under_every_cap_are_those_of_the_capped_query_terms(query: str) -> None:
    for max_terms in (0, 1, 2, 3, 5, 32, 256, 5000):
        expected: list[str] = []
        for term in query_terms(query, max_terms):
            for token in analysis.analyse(term):
                if token not in expected:
                    expected.append(token)
        assert analysis.query_tokens(query, max_terms) == expected
