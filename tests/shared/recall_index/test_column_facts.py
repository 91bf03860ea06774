"""Property: :func:`visible_mask` gives the same mask with a segment's column facts as without.

Random per-document columns (some with no end users, sessions, expiries or some types at all, so
that the facts let tests be skipped), random scopes, clocks and retention rules.
"""

from __future__ import annotations

import math

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from shared.recall_index.visibility import TYPE_CODE, ScopeCodes, column_facts, visible_mask
from shared.store.memories import Retention

NOW = 1_700_000_000.0
DAY = 86_400.0


@settings(max_examples=200, deadline=None)
@given(
    seed=st.integers(0, 10_000),
    n=st.integers(1, 60),
    users=st.integers(0, 2),
    sessions=st.integers(0, 2),
    expiring=st.booleans(),
    types=st.lists(st.sampled_from(sorted(TYPE_CODE.values())), min_size=1, unique=True),
    codes=st.builds(
        ScopeCodes, user=st.integers(-1, 2), session=st.integers(-1, 2), any_user=st.booleans()
    ),
    now=st.sampled_from([NOW, NOW + 20 * DAY, math.inf]),
    ttl=st.dictionaries(
        st.sampled_from(sorted(TYPE_CODE)), st.sampled_from([0.0, DAY, 10 * DAY]), max_size=3
    ),
)
def test_facts_never_change_the_mask(
    seed, n, users, sessions, expiring, types, codes, now, ttl
) -> None:
    rng = np.random.default_rng(seed)
    arrays = {
        "alive": rng.random(n) < 0.9,
        "user": rng.integers(0, users + 1, n).astype(np.int32),
        "session": rng.integers(0, sessions + 1, n).astype(np.int32),
        "expires": np.where(
            expiring & (rng.random(n) < 0.5), NOW + rng.integers(-2, 3, n) * DAY, math.inf
        ),
        "type": rng.choice(types, n).astype(np.int8),
        "access": rng.integers(0, 4, n).astype(np.int32),
        "touched": NOW - rng.integers(0, 30, n) * DAY,
    }
    retention = Retention(ttl_s=ttl, access_immunity=2)
    idx = rng.permutation(n)[: rng.integers(0, n + 1)].astype(np.intp)
    facts = column_facts(arrays)
    plain = visible_mask(arrays, idx, codes, now, retention)
    assert visible_mask(arrays, idx, codes, now, retention, facts).tolist() == plain.tolist()
