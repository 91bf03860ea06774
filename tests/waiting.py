"""Waiting in tests: poll a condition with a generous bound instead of sleeping a fixed time.

A loaded CI machine (2 shared cores, other jobs running) can be 10-50x slower than a quiet one,
so every wait polls for the condition it needs and gives up only after :data:`READY_TIMEOUT_S`
(default 120 s; ``MNEMOGATE_TEST_READY_TIMEOUT_S`` overrides it). A passing test never waits
longer than its condition takes.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")

READY_TIMEOUT_S = float(os.environ.get("MNEMOGATE_TEST_READY_TIMEOUT_S", "120"))
"""Upper bound of every readiness wait in the suite, in seconds."""

TEST_RECALL_TIMEOUT_MS = 60_000
"""Recall budget (``recall_timeout_ms``) of every test gateway whose test does not check the
budget itself: the 250 ms production default, or even 10 s, can run out on a loaded machine
and turn a slow recall into a missing injection."""

_FIRST_INTERVAL_S = 0.01
_MAX_INTERVAL_S = 0.2


def wait_until(
    probe: Callable[[], T | None],
    *,
    timeout_s: float = READY_TIMEOUT_S,
    what: str = "condition",
) -> T:
    """Call ``probe`` until it returns a truthy value, and return that value.

    Polls every 10 ms at first, backing off to 200 ms. Exceptions raised by ``probe`` propagate
    (wrap the probe if a failure means "not yet").

    Raises:
        AssertionError: ``probe`` stayed falsy for ``timeout_s`` seconds (the message names
            ``what`` and the time waited).
    """
    start = time.monotonic()
    interval = _FIRST_INTERVAL_S
    while True:
        value = probe()
        if value:
            return value
        waited = time.monotonic() - start
        if waited > timeout_s:
            raise AssertionError(f"{what} not reached within {waited:.1f} s")
        time.sleep(interval)
        interval = min(interval * 2, _MAX_INTERVAL_S)
