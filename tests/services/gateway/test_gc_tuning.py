"""The gateway's start-up freezes the start-up heap and raises the young-generation threshold."""

from __future__ import annotations

import gc
from typing import Any

from services.gateway.app import GC_YOUNG_THRESHOLD


def test_started_gateway_froze_its_heap_and_collects_young_objects_less_often(
    gateway_factory: Any,
) -> None:
    gateway_factory()  # the harness serves create_app() in this process
    assert gc.get_threshold()[0] == GC_YOUNG_THRESHOLD > 700
    assert gc.get_freeze_count() > 0
