"""Handlers read the application state through the typed accessor, never ``app.state`` itself."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from starlette.applications import Starlette
from starlette.requests import Request

from services.gateway.state import state_of

ROOT = Path(__file__).resolve().parents[3]
UNTYPED = re.compile(r"\.state\.gateway\b")


def test_only_the_state_module_touches_app_state() -> None:
    found = [
        path.relative_to(ROOT).as_posix()
        for top in ("services", "shared", "workers", "tests")
        for path in sorted((ROOT / top).rglob("*.py"))
        if UNTYPED.search(path.read_text(encoding="utf-8"))
    ]
    allowed = {"services/gateway/state.py", "tests/services/gateway/test_state_access.py"}
    assert sorted(set(found) - allowed) == []


def test_state_of_refuses_an_app_whose_lifespan_did_not_run() -> None:
    request = Request({"type": "http", "app": Starlette(), "headers": []})
    with pytest.raises(RuntimeError, match="lifespan"):
        state_of(request)
