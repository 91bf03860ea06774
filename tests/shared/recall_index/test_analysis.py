"""Text analysis of the in-memory index under a restarted stem cache (large owners)."""

from __future__ import annotations

import pytest

from shared.recall_index import analysis


def test_analysis_survives_the_stem_cache_restart(monkeypatch: pytest.MonkeyPatch) -> None:
    """More distinct tokens than the stem cache holds: every token still gets its term."""
    monkeypatch.setattr(analysis, "_STEMS_MAX", 5)
    analysis.analyse_many(["alpha beta gamma"])
    terms, counts = analysis.analyse_many(["alpha beta gamma delta epsilon zeta eta running"])
    assert counts == [8] and terms[-1] == "run" and terms[0] == "alpha"
