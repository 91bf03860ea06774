"""Table-driven tests for shared.fusion: CombSUM of min-max normalised leg scores."""

from __future__ import annotations

import math

import pytest

from shared.errors import ConfigurationError
from shared.fusion import combsum_candidates, combsum_fuse
from shared.ranking import Candidate, ScoredMemory


def test_combsum_hand_computed() -> None:
    # keyword: 4/4 = 1, 2/4 = 0.5; vector over its hits (0.9 .. 0.5): (0.9-0.5)/0.4 = 1, 0
    keyword = [Candidate(1, 4.0), Candidate(2, 2.0)]
    vector = [Candidate(2, 0.9), Candidate(3, 0.5)]
    fused = combsum_fuse(keyword, vector, keyword_share=0.75)
    by_id = {m.memory_id: m for m in fused}
    assert by_id[1].score == pytest.approx(0.75)
    assert by_id[2].score == pytest.approx(0.75 * 0.5 + 0.25 * 1.0)
    assert by_id[3].score == pytest.approx(0.0)
    assert by_id[2] == ScoredMemory(
        memory_id=2,
        score=by_id[2].score,
        keyword_rank=2,
        vector_rank=1,
        keyword_score=2.0,
        vector_score=0.9,
    )
    assert [m.memory_id for m in fused] == [1, 2, 3]


def test_combsum_keeps_score_gaps_that_rrf_loses() -> None:
    # two keyword hits nearly tied, the second far more similar: CombSUM lets the vector decide
    keyword = [Candidate(1, 5.0), Candidate(2, 4.9)]
    vector = [Candidate(2, 0.8), Candidate(3, 0.4), Candidate(1, 0.3)]
    assert [m.memory_id for m in combsum_fuse(keyword, vector)][:2] == [2, 1]


@pytest.mark.parametrize(
    ("share", "first"),
    [(1.0, 1), (0.0, 3)],
)
def test_combsum_share_bounds_select_one_leg(share: float, first: int) -> None:
    keyword = [Candidate(1, 3.0), Candidate(2, 1.0)]
    vector = [Candidate(3, 0.9), Candidate(2, 0.6), Candidate(1, 0.2)]
    assert combsum_fuse(keyword, vector, keyword_share=share)[0].memory_id == first


def test_combsum_empty_legs_and_ties() -> None:
    assert combsum_fuse([], []) == []
    only_kw = combsum_fuse([Candidate(7, 2.0), Candidate(7, 9.0), Candidate(5, 2.0)], [])
    # a repeated id counts at its first position; equal scores keep the keyword order
    assert [m.memory_id for m in only_kw] == [7, 5]
    assert only_kw[0].keyword_score == 2.0
    # one vector hit: no spread to normalise over, so it adds nothing
    one = combsum_fuse([], [Candidate(4, 0.7)])
    assert [(m.memory_id, m.score) for m in one] == [(4, 0.0)]


@pytest.mark.parametrize("share", [-0.1, 1.5, math.nan, math.inf])
def test_combsum_invalid_share(share: float) -> None:
    with pytest.raises(ConfigurationError):
        combsum_fuse([Candidate(1, 1.0)], [], keyword_share=share)


def test_combsum_scores_every_candidate_by_its_own_cosine() -> None:
    # memory 1 is a keyword hit the vector leg did not return (outside its top k); with the
    # candidates' cosines it counts its own 0.6 instead of 0, normalised over all candidates
    keyword = [Candidate(1, 4.0), Candidate(2, 4.0)]
    vector = [Candidate(2, 0.5), Candidate(3, 0.9)]
    cosines = {1: 0.7, 2: 0.5, 3: 0.9}
    plain = {m.memory_id: m.score for m in combsum_fuse(keyword, vector, keyword_share=0.5)}
    assert plain[1] == pytest.approx(0.5)  # vector part 0: not a vector-leg hit
    assert plain[2] == pytest.approx(0.5)  # vector part 0: the leg's lowest hit
    fused = combsum_fuse(keyword, vector, keyword_share=0.5, similarity=cosines)
    by_id = {m.memory_id: m for m in fused}
    # cosines over the pool 0.5..0.9: 1 → 0.5, 2 → 0, 3 → 1
    assert by_id[1].score == pytest.approx(0.5 + 0.5 * 0.5)
    assert by_id[2].score == pytest.approx(0.5)
    assert by_id[3].score == pytest.approx(0.5)
    assert by_id[1].vector_score == pytest.approx(0.7)
    assert by_id[1].vector_rank is None
    assert fused[0].memory_id == 1


def test_combsum_candidate_without_cosine_falls_back_to_its_leg_score() -> None:
    # memory 2 has no cached row (absent from the cosines): its vector-leg cosine is used; memory
    # 1 has neither and counts 0 on the vector side
    keyword = [Candidate(1, 2.0)]
    vector = [Candidate(2, 0.8), Candidate(3, 0.4)]
    fused = combsum_fuse(keyword, vector, keyword_share=0.5, similarity={3: 0.4})
    by_id = {m.memory_id: m for m in fused}
    assert by_id[2].score == pytest.approx(0.5)
    assert by_id[3].score == pytest.approx(0.0)
    assert by_id[1].score == pytest.approx(0.5)
    assert by_id[1].vector_score is None


def test_combsum_candidates_are_the_fused_ids_and_scores() -> None:
    keyword = [Candidate(1, 4.0), Candidate(2, 3.0), Candidate(1, 9.0), Candidate(5, 0.0)]
    vector = [Candidate(3, 0.9), Candidate(2, 0.6), Candidate(6, 0.6)]
    for similarity in (None, {1: 0.7, 2: 0.6, 5: -0.2}):
        fused = combsum_fuse(keyword, vector, keyword_share=0.6, similarity=similarity)
        got = combsum_candidates(keyword, vector, keyword_share=0.6, similarity=similarity)
        assert [(c.memory_id, c.score) for c in got] == [(m.memory_id, m.score) for m in fused]
    assert combsum_candidates([], []) == []
