"""Memory Studio in a real headless Chromium against a real gateway (uvicorn, SQLite, embedded
jobs): sign in, list, search, add, edit, delete, bulk delete, export, import, playground ranking,
reindex progress, settings validation, events, tenant isolation, keyboard use, phone width."""

from __future__ import annotations

import json
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.harness import GatewayHarness
from tests.ui.conftest import ADMIN_TOKEN, ARTIFACTS, PHONE

expect = pytest.importorskip(
    "playwright.sync_api", reason="the playwright package is not installed"
).expect
expect.set_options(timeout=20_000)  # a loaded machine is slow, not wrong

SEED = [
    ("I drink green tea every morning", "preference", "factual"),
    ("My sister Ana lives in Lisbon", "fact", "semantic"),
    ("The deploy pipeline runs on Fridays", "fact", "semantic"),
    ("Prefers answers with code examples in Rust", "preference", "semantic"),
    ("Decided to move the team to weekly planning", "decision", "episodic"),
]


def seed(admin: httpx.Client, owner: str, rows: list[tuple[str, str, str]]) -> list[str]:
    """Create memories for ``owner`` through the API; returns their ids."""
    ids = []
    for content, category, type_ in rows:
        r = admin.post(
            "/api/memory",
            json={"owner_id": owner, "content": content, "category": category, "type": type_},
        )
        assert r.status_code == 201, r.text
        ids.append(r.json()["id"])
    return ids


def expect_rows(page: Any, n: int) -> None:
    """Wait until the memory list shows ``n`` rows (Playwright's retrying assertion)."""
    expect(page.locator("#mem-rows td.content")).to_have_count(n)


def rows_text(page: Any) -> list[str]:
    """The content cells of the memory list."""
    return [t.strip() for t in page.locator("#mem-rows td.content").all_inner_texts()]


def off_loop(fn: Any, *args: Any) -> Any:
    """Run ``fn(*args)`` in another thread: the Playwright sync API keeps an event loop running in
    this one, so the harness's own ``asyncio.run`` store helpers cannot run here."""
    with ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(fn, *args).result()


def wait_until(fn: Any, timeout_s: float = 20.0) -> Any:
    """Poll ``fn`` until it returns a truthy value; AssertionError after ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        value = fn()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError("condition not reached")


def test_memories_tab_crud_search_export_import(
    open_studio: Any, studio_gateway: GatewayHarness, admin_http: httpx.Client, tmp_path: Path
) -> None:
    key_id, _ = off_loop(studio_gateway.create_key, "alice")
    seed(admin_http, key_id, SEED)
    studio = open_studio()
    page = studio.open(ADMIN_TOKEN)
    assert page.inner_text("#who-label") == "Signed in as admin"
    assert len(rows_text(page)) == len(SEED)
    expect(page.locator("#stat-cards .stat").first).to_contain_text(f"Memories{len(SEED)}")
    studio.shot("memories", docs=True)

    # search narrows the list (FTS5)
    page.fill("#mem-filters input[name=q]", "Lisbon")
    page.click("#mem-filters button[type=submit]")
    expect_rows(page, 1)
    assert rows_text(page) == ["My sister Ana lives in Lisbon"]
    page.click("#mem-filters button[type=reset]")
    expect_rows(page, len(SEED))

    # type filter
    page.select_option("#mem-filters select[name=type]", "episodic")
    page.click("#mem-filters button[type=submit]")
    expect_rows(page, 1)
    page.click("#mem-filters button[type=reset]")

    # add through the dialog
    page.click("#add-memory")
    page.fill("#add-form textarea[name=content]", "Allergic to peanuts")
    page.select_option("#add-form select[name=category]", "fact")
    page.fill("#add-form input[name=owner_id]", key_id)
    page.click("#add-form button[type=submit]")
    page.wait_for_selector("#mem-rows td.content:text-is('Allergic to peanuts')")
    stored = {m.content for m in off_loop(studio_gateway.memories, key_id)}
    assert "Allergic to peanuts" in stored

    # inline edit
    row = page.locator("#mem-rows tr", has_text="Allergic to peanuts")
    row.get_by_role("button", name="Edit memory").click()
    page.fill("#mem-rows textarea", "Allergic to peanuts and cashews")
    page.click("#mem-rows button:text-is('Save')")
    page.wait_for_selector("#mem-rows td.content:text-is('Allergic to peanuts and cashews')")
    assert "Allergic to peanuts and cashews" in {
        m.content for m in off_loop(studio_gateway.memories, key_id)
    }

    # delete with confirmation (cancel first: nothing happens)
    row = page.locator("#mem-rows tr", has_text="cashews")
    row.get_by_role("button", name="Delete memory").click()
    page.click("#confirm-cancel")
    assert len(off_loop(studio_gateway.memories, key_id)) == len(SEED) + 1
    row.get_by_role("button", name="Delete memory").click()
    page.click("#confirm-ok")
    expect_rows(page, len(SEED))
    assert "Allergic to peanuts and cashews" not in {
        m.content for m in off_loop(studio_gateway.memories)
    }

    # export: a JSONL download of every memory
    with page.expect_download() as info:
        page.click("#export")
    exported = tmp_path / "export.jsonl"
    info.value.save_as(exported)
    lines = [json.loads(line) for line in exported.read_text().splitlines() if line.strip()]
    assert sorted(r["content"] for r in lines) == sorted(c for c, _, _ in SEED)
    expect(page.locator("#transfer-label")).to_contain_text("Exported 5 memories")

    # import a file of new memories, with progress and result
    new_rows = [
        dict(lines[0], id=f"imp-{i}", key=f"imported-{i}", content=f"Imported fact number {i}")
        for i in range(3)
    ]
    upload = tmp_path / "import.jsonl"
    upload.write_text("\n".join(json.dumps(r) for r in new_rows) + "\n")
    page.set_input_files("#import-file", str(upload))
    expect(page.locator("#transfer-label")).to_contain_text("Imported 3 memories")
    expect_rows(page, len(SEED) + 3)
    assert page.locator("#transfer-bar").get_attribute("value") == "100"

    # bulk delete by filter: the matching rows go, the others stay
    page.fill("#mem-filters input[name=q]", "Imported")
    page.click("#mem-filters button[type=submit]")
    expect_rows(page, 3)
    page.click("#bulk-delete")
    page.wait_for_selector("#confirm[open]")
    assert "3 memories" in page.inner_text("#confirm-text")
    assert page.locator("#confirm-all-wrap").is_hidden()
    page.click("#confirm-ok")
    page.wait_for_selector("#mem-rows td.empty")
    assert len(off_loop(studio_gateway.memories, key_id)) == len(SEED)

    # an unfiltered bulk delete needs the explicit all box (the API's all=true rule)
    page.click("#mem-filters button[type=reset]")
    expect_rows(page, len(SEED))
    page.click("#bulk-delete")
    page.wait_for_selector("#confirm[open]")
    assert page.locator("#confirm-ok").is_disabled()
    page.click("#confirm-cancel")
    assert len(off_loop(studio_gateway.memories, key_id)) == len(SEED)
    studio.shot("memories-after")


def test_playground_ranking_and_drops(
    open_studio: Any, studio_gateway: GatewayHarness, admin_http: httpx.Client
) -> None:
    key_id, _ = off_loop(studio_gateway.create_key, "alice")
    seed(admin_http, key_id, SEED)
    seed(admin_http, key_id, [("i drink GREEN tea   every morning", "preference", "factual")])
    studio = open_studio()
    page = studio.open(ADMIN_TOKEN)
    page.click("#tab-playground")
    page.fill("#play-form input[name=query]", "what tea do I drink in the morning?")
    page.fill("#play-form input[name=owner_id]", key_id)
    page.select_option("#play-form select[name=strategy]", "exact")
    page.fill("#play-form input[name=budget]", "500")
    page.check("#play-form input[name=explain]")
    page.click("#play-form button[type=submit]")
    page.wait_for_selector("#play-result:not([hidden])")
    first = page.locator("#play-rows tr").first
    assert "green tea" in first.inner_text().lower()
    assert "fts5" in first.inner_text()
    assert (
        page.inner_text("#play-block").count("green tea")
        + page.inner_text("#play-block").count("GREEN tea")
        == 1
    )
    dropped = page.inner_text("#play-dropped")
    assert "duplicate" in dropped
    studio.shot("playground-exact")
    # hybrid (the default strategy): both legs rank, the vector rank column is filled
    page.select_option("#play-form select[name=strategy]", "")
    page.fill("#play-form input[name=query]", "which drink do I have at breakfast? tea?")
    page.click("#play-form button[type=submit]")
    expect(page.locator("#play-summary")).to_contain_text("hybrid")
    vector_ranks = page.locator("#play-rows td[data-label='Vector rank']").all_inner_texts()
    assert any(r.strip().isdigit() for r in vector_ranks), vector_ranks
    studio.shot("playground", docs=True)

    # the API agrees with the page (order, ranks)
    r = admin_http.post(
        "/api/memory/search-preview",
        json={
            "query": "what tea do I drink in the morning?",
            "owner_id": key_id,
            "strategy": "exact",
            "budget": 500,
            "explain": True,
        },
    ).json()
    assert [i["keyword_rank"] for i in r["items"]] == sorted(i["keyword_rank"] for i in r["items"])
    assert any(d["reason"] == "duplicate" for d in r["dropped"])
    # a budget of one memory's size drops the rest as "budget"
    r2 = admin_http.post(
        "/api/memory/search-preview",
        json={
            "query": "tea morning Lisbon Fridays",
            "owner_id": key_id,
            "strategy": "exact",
            "budget": 20,
            "explain": True,
        },
    ).json()
    assert len(r2["items"]) == 1 and any(d["reason"] == "budget" for d in r2["dropped"])


def test_engine_reindex_settings_and_events(
    open_studio: Any, studio_gateway: GatewayHarness, admin_http: httpx.Client
) -> None:
    key_id, secret = off_loop(studio_gateway.create_key, "alice")
    seed(admin_http, key_id, SEED)
    # traffic, so the timeline has an injection
    with httpx.Client(base_url=studio_gateway.base_url, timeout=30) as client:
        r = client.post(
            "/v1/chat/completions",
            headers={"authorization": f"Bearer {secret}"},
            json={"model": "m", "messages": [{"role": "user", "content": "Which tea do I drink?"}]},
        )
        assert r.status_code == 200 and r.headers["x-mnemogate-memory-injected"] != "0"
    wait_until(lambda: admin_http.get("/api/events", params={"kind": "injection"}).json()["total"])
    studio = open_studio()
    page = studio.open(ADMIN_TOKEN)
    page.click("#tab-engine")
    page.wait_for_selector("#engine-details .card")
    assert "Signature" in page.inner_text("#engine-details")

    # reindex with progress until nothing is pending
    page.check("#reindex-force")
    page.click("#reindex")
    expect(page.locator("#reindex-label")).to_contain_text("Reindex complete", timeout=60_000)
    assert page.locator("#reindex-bar").get_attribute("value") == "100"
    stats = admin_http.get("/api/memory/stats").json()
    assert stats["pending_reindex"] == 0
    assert f"{stats['total']} embedded" in page.inner_text("#reindex-label")
    reindexed = admin_http.get("/api/events", params={"kind": "reindex"}).json()["items"]
    assert any(
        e["detail"]["force"] and e["detail"]["embedded"] == stats["total"] for e in reindexed
    )

    # settings: the API's validation message is shown; a valid value is saved
    page.wait_for_selector("#settings-fields [data-field=recall_max_tokens] input")
    page.fill("[data-field=recall_max_tokens] input", "99999")
    page.click("#settings-form button[type=submit]")
    page.wait_for_selector("#settings-error:not([hidden])")
    assert "recall_max_tokens" in page.inner_text("#settings-error")
    studio.errors = [e for e in studio.errors if "status of 400" not in e]  # the expected 400
    page.fill("[data-field=recall_max_tokens] input", "1500")
    page.click("#settings-form button[type=submit]")
    expect(page.locator("#toast")).to_contain_text("Saved recall_max_tokens")
    assert admin_http.get("/api/settings").json()["settings"]["recall_max_tokens"] == 1500
    studio.shot("engine", docs=True)

    # events: the injection and the settings change, filterable by kind
    page.click("#tab-events")
    page.wait_for_selector("#event-list li .badge")
    text = page.inner_text("#event-list")
    assert "injection" in text and "settings_change" in text
    page.select_option("#event-filters select[name=kind]", "settings_change")
    page.click("#event-filters button[type=submit]")
    expect(page.locator("#event-list .badge:text-is('injection')")).to_have_count(0)
    expect(page.locator("#event-list .badge").first).to_have_text("settings_change")
    assert "recall_max_tokens" in page.inner_text("#event-list")
    page.select_option("#event-filters select[name=kind]", "")
    page.click("#event-filters button[type=submit]")
    page.wait_for_selector("#event-list .badge:text-is('injection')")
    studio.shot("events", docs=True)


def test_client_key_sees_only_its_own(
    open_studio: Any, studio_gateway: GatewayHarness, admin_http: httpx.Client
) -> None:
    a_id, a_secret = off_loop(studio_gateway.create_key, "alice")
    b_id, _ = off_loop(studio_gateway.create_key, "bob")
    seed(admin_http, a_id, SEED[:2])
    seed(admin_http, b_id, [("Bob's secret project is called Falcon", "fact", "semantic")])
    seed(admin_http, "global", [("Company holidays are in August", "fact", "semantic")])
    with httpx.Client(base_url=studio_gateway.base_url, timeout=30) as client:
        r = client.post(
            "/v1/chat/completions",
            headers={"authorization": f"Bearer {a_secret}", "x-mnemogate-no-learn": "1"},
            json={"model": "m", "messages": [{"role": "user", "content": "green tea?"}]},
        )
        assert r.status_code == 200
    # the request's events are written in the background: the events tab (read once when it
    # opens) must find them, or it shows "No events yet." and the owners check below is empty
    wait_until(lambda: admin_http.get("/api/events", params={"owner_id": a_id}).json()["total"])
    studio = open_studio()
    page = studio.open(a_secret)
    assert page.inner_text("#who-label") == f"Client key {a_id}"
    texts = rows_text(page)
    assert set(texts) == {SEED[0][0], SEED[1][0], "Company holidays are in August"}
    assert not any("Falcon" in t for t in texts)
    assert page.locator("#mem-filters input[name=owner_id]").is_hidden()
    # global memories are read-only for a client key
    row = page.locator("#mem-rows tr", has_text="Company holidays")
    assert row.get_by_role("button", name="Edit memory").count() == 0
    page.fill("#mem-filters input[name=q]", "Falcon")
    page.click("#mem-filters button[type=submit]")
    page.wait_for_selector("#mem-rows td.empty")
    # playground and events show nothing of bob's
    page.click("#tab-playground")
    page.fill("#play-form input[name=query]", "secret project Falcon")
    page.click("#play-form button[type=submit]")
    page.wait_for_selector("#play-result:not([hidden])")
    assert "Falcon" not in page.inner_text("#play-result")
    page.click("#tab-events")
    page.wait_for_selector("#event-list li")
    owners = page.locator("#event-list .mono").all_inner_texts()
    assert owners and all(o.startswith(a_id) for o in owners)
    assert page.locator("#settings-card").is_hidden()
    studio.shot("client-events")


def first_row_box(page: Any, timeout_s: float = 30.0) -> Any:
    """The first memory row's bounding box, polled: the tab may re-render its rows meanwhile."""
    deadline = time.monotonic() + timeout_s
    while True:
        box = page.locator("#mem-rows tr").first.bounding_box()
        if box is not None or time.monotonic() > deadline:
            return box
        page.wait_for_timeout(50)


def test_keyboard_phone_width_and_bad_token(
    open_studio: Any, studio_gateway: GatewayHarness, admin_http: httpx.Client
) -> None:
    key_id, _ = off_loop(studio_gateway.create_key, "alice")
    seed(admin_http, key_id, SEED[:3])
    studio = open_studio(PHONE)
    page = studio.page
    page.goto(studio_gateway.base_url + "/ui")  # redirected to /ui/
    page.fill("#token", "not-a-token")
    page.keyboard.press("Enter")
    page.wait_for_selector("#signin-error:not([hidden])")
    assert "not accepted" in page.inner_text("#signin-error")
    studio.errors = [e for e in studio.errors if "status of 401" not in e]  # the expected 401
    # keyboard only: type the token, Enter, then arrow keys across the tabs
    page.focus("#token")
    page.keyboard.type(ADMIN_TOKEN)
    page.keyboard.press("Enter")
    page.wait_for_selector("#mem-rows td.content")
    page.focus("#tab-memories")
    page.keyboard.press("ArrowRight")
    assert page.evaluate("document.activeElement.id") == "tab-playground"
    assert page.locator("#panel-playground").is_visible()
    page.keyboard.press("End")
    assert page.evaluate("document.activeElement.id") == "tab-events"
    page.keyboard.press("Home")
    page.wait_for_selector("#mem-rows td.content")
    # phone width: no horizontal overflow, rows stacked as cards
    width = page.evaluate("document.documentElement.scrollWidth")
    assert width <= PHONE["width"], width
    box = first_row_box(page)
    assert box is not None, "no memory row became visible"
    assert box["width"] <= PHONE["width"]
    studio.shot("phone-memories")
    assert (ARTIFACTS / "phone-memories.png").stat().st_size > 0
