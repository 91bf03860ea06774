"""The per-test timeout leaves room for the suite's bounded waits to fail with their own message."""

from __future__ import annotations

import pytest

from tests.waiting import READY_TIMEOUT_S


def test_pytest_timeout_is_well_above_the_longest_bounded_wait(request: pytest.FixtureRequest):
    """A wait that runs out must raise its AssertionError (naming what it waited for) before
    pytest-timeout kills the test with a bare stack dump: the per-test timeout is at least 2.5x
    :data:`READY_TIMEOUT_S`. Raising ``MNEMOGATE_TEST_READY_TIMEOUT_S`` needs ``--timeout`` too."""
    option = request.config.getoption("timeout", None)
    configured = float(option if option is not None else request.config.getini("timeout"))
    assert configured == 0 or configured >= 2.5 * READY_TIMEOUT_S, (
        f"pytest timeout {configured} s is too close to READY_TIMEOUT_S {READY_TIMEOUT_S} s"
    )
