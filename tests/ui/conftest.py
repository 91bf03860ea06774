"""Browser fixtures: Playwright for Python driving the system Chromium (never a downloaded one).

The browser is Debian's ``/usr/bin/chromium`` (``apt-get install chromium``; ``scripts/test``
installs it on CI) or ``MNEMOGATE_CHROMIUM``. Without it, or without the ``playwright`` package,
every browser test is skipped with the reason. Screenshots go to ``tests/artifacts/ui/``
(gitignored); with ``MNEMOGATE_DOCS_SCREENSHOTS=1`` the README's tab screenshots in ``docs/`` are
rewritten too.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.harness import GatewayHarness

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "tests" / "artifacts" / "ui"
DOCS = ROOT / "docs"
ADMIN_TOKEN = "studio-admin-token"
LAPTOP = {"width": 1280, "height": 860}
PHONE = {"width": 390, "height": 844}


def chromium_path() -> str | None:
    """The Chromium executable to drive, or None when this machine has none."""
    configured = os.environ.get("MNEMOGATE_CHROMIUM")
    if configured:
        return configured if Path(configured).exists() else None
    for name in ("chromium", "chromium-browser"):
        found = shutil.which(name)
        if found:
            return found
    return "/usr/bin/chromium" if Path("/usr/bin/chromium").exists() else None


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """A headless Chromium for one test module; skips when Chromium or Playwright is missing.

    Module scope, not session: Playwright's sync API keeps an event loop running in this thread
    while it is started, so tests after the module (``asyncio.run``) must find it stopped."""
    executable = chromium_path()
    if executable is None:
        pytest.skip("no Chromium on this machine: apt-get install chromium (or MNEMOGATE_CHROMIUM)")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        pytest.skip("the playwright package is not installed (pip install -e '.[dev]')")
    with sync_playwright() as pw:
        chromium = pw.chromium.launch(
            executable_path=executable,
            headless=True,
            args=["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"],
        )
        yield chromium
        chromium.close()


class Studio:
    """One browser page on a gateway's ``/ui``, recording console errors and page errors."""

    def __init__(self, browser: Any, gateway: GatewayHarness, viewport: dict[str, int]) -> None:
        self.gateway = gateway
        self.context = browser.new_context(viewport=viewport, accept_downloads=True)
        self.context.set_default_timeout(20_000)
        self.page = self.context.new_page()
        self.errors: list[str] = []
        self.page.on("console", lambda m: self.errors.append(m.text) if m.type == "error" else None)
        self.page.on("pageerror", lambda exc: self.errors.append(f"pageerror: {exc}"))

    def open(self, token: str) -> Any:
        """Load ``/ui/``, sign in with ``token`` and wait for the Memories tab."""
        page = self.page
        page.goto(self.gateway.base_url + "/ui/")
        page.fill("#token", token)
        page.click("#signin-form button[type=submit]")
        page.wait_for_selector("#app:not([hidden])")
        page.wait_for_selector("#mem-rows tr")
        return page

    def shot(self, name: str, docs: bool = False) -> Path:
        """Save a screenshot as a test artifact (and into ``docs/`` when asked and enabled)."""
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        path = ARTIFACTS / f"{name}.png"
        self.page.screenshot(path=str(path), full_page=True)
        if docs and os.environ.get("MNEMOGATE_DOCS_SCREENSHOTS") == "1":
            self.page.evaluate("window.scrollTo(0, 0)")
            self.page.screenshot(path=str(DOCS / f"studio-{name}.png"), full_page=False)
        return path

    def close(self) -> None:
        """Close the browser context."""
        self.context.close()


@pytest.fixture
def studio_gateway(gateway_factory: Any) -> GatewayHarness:
    """An embedded gateway with an admin token (the Studio signs in with it or a key)."""
    gw: GatewayHarness = gateway_factory(admin_token=ADMIN_TOKEN, metrics_access="admin")
    return gw


@pytest.fixture
def admin_http(studio_gateway: GatewayHarness) -> Iterator[httpx.Client]:
    """The admin's API client of :func:`studio_gateway`."""
    with httpx.Client(
        base_url=studio_gateway.base_url,
        headers={"authorization": f"Bearer {ADMIN_TOKEN}"},
        timeout=30,
    ) as client:
        yield client


@pytest.fixture
def open_studio(browser: Any, studio_gateway: GatewayHarness) -> Iterator[Any]:
    """``open_studio(viewport=LAPTOP) -> Studio``; asserts no console errors at the end."""
    made: list[Studio] = []

    def make(viewport: dict[str, int] | None = None) -> Studio:
        studio = Studio(browser, studio_gateway, viewport or LAPTOP)
        made.append(studio)
        return studio

    yield make
    for studio in made:
        studio.close()
    for studio in made:
        assert studio.errors == [], studio.errors
