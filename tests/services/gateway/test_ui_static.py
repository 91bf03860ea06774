"""``/ui`` serves Memory Studio from the package: redirect, security headers, no other origin."""

from __future__ import annotations

import re

import httpx

from services.gateway.ui import STATIC_DIR
from tests.harness import GatewayHarness


def test_ui_is_served_with_a_strict_policy(gateway: GatewayHarness) -> None:
    r = httpx.get(gateway.base_url + "/ui")
    assert r.status_code == 308 and r.headers["location"] == "/ui/"
    page = httpx.get(gateway.base_url + "/ui/")
    assert page.status_code == 200 and "Memory Studio" in page.text
    csp = page.headers["content-security-policy"]
    assert "default-src 'self'" in csp and "unsafe-inline" not in csp and "unsafe-eval" not in csp
    assert page.headers["x-content-type-options"] == "nosniff"
    for name in (
        "studio.js",
        "api.js",
        "dom.js",
        "memories.js",
        "playground.js",
        "engine.js",
        "events.js",
        "studio.css",
    ):
        asset = httpx.get(f"{gateway.base_url}/ui/{name}")
        assert asset.status_code == 200, name
        kind = "javascript" if name.endswith(".js") else "css"
        assert kind in asset.headers["content-type"], name
    assert httpx.get(gateway.base_url + "/ui/../pyproject.toml").status_code == 404
    assert httpx.get(gateway.base_url + "/ui/missing.js").status_code == 404


def test_static_files_load_nothing_from_other_origins() -> None:
    files = sorted(STATIC_DIR.iterdir())
    assert {f.suffix for f in files} == {".html", ".css", ".js"}
    for f in files:
        text = f.read_text()
        assert not re.search(r"https?://", text), f.name  # no CDN, no external fonts
        assert "style=" not in text or f.suffix != ".html", f.name  # CSP: no inline styles
        if f.suffix == ".html":
            assert re.search(r"<script>", text) is None  # CSP: no inline scripts
