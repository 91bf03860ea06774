"""``/metrics`` after real traffic (parsed with ``prometheus_client.parser``), its access
setting, ``x-request-id``, the worker's ``--metrics-port`` and multiprocess aggregation."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
from prometheus_client.parser import text_string_to_metric_families

from services.gateway.observe import with_request_id
from tests.fakes.upstream import FakeUpstream, free_port
from tests.harness import GatewayHarness
from tests.waiting import READY_TIMEOUT_S, wait_until

ADMIN = "metrics-admin-token"


def samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """Every sample of a scrape: (name, sorted labels) → value."""
    out: dict[tuple[str, tuple[tuple[str, str], ...]], float] = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            out[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return out


def value(scrape: dict[Any, float], name: str, **labels: str) -> float:
    """The sample ``name{labels}`` (0 when absent)."""
    return scrape.get((name, tuple(sorted(labels.items()))), 0.0)


def total(scrape: dict[Any, float], name: str, **labels: str) -> float:
    """Sum of ``name`` over every sample whose labels include ``labels``."""
    return sum(
        v for (n, lbls), v in scrape.items() if n == name and set(labels.items()) <= set(lbls)
    )


def scrape(gw: GatewayHarness) -> dict[Any, float]:
    r = httpx.get(gw.base_url + "/metrics", headers={"authorization": f"Bearer {ADMIN}"})
    assert r.status_code == 200, r.text
    assert r.headers["content-type"].startswith("text/plain")
    return samples(r.text)


def chat(gw: GatewayHarness, secret: str, text: str, **headers: str) -> httpx.Response:
    return httpx.post(
        gw.base_url + "/v1/chat/completions",
        headers={"authorization": f"Bearer {secret}", **headers},
        json={"model": "m", "messages": [{"role": "user", "content": text}]},
        timeout=30,
    )


def test_metrics_after_real_traffic(gateway_factory: Any, upstream: FakeUpstream) -> None:
    gw: GatewayHarness = gateway_factory(admin_token=ADMIN)
    key_id, secret = gw.create_key("m")
    admin = {"authorization": f"Bearer {ADMIN}"}
    for text in ("I drink green tea every morning", "My sister lives in Lisbon"):
        r = httpx.post(
            gw.base_url + "/api/memory",
            headers=admin,
            json={"owner_id": key_id, "content": text},
        )
        assert r.status_code == 201
    before = scrape(gw)
    for _ in range(3):
        r = chat(gw, secret, "Which tea do I drink?", **{"x-mnemogate-no-learn": "1"})
        assert r.status_code == 200 and r.headers["x-mnemogate-memory-injected"] == "1"
    assert httpx.get(gw.base_url + "/api/memory/unknown-id", headers=admin).status_code == 404
    # a degradation: recall gets no time at all
    r = httpx.put(gw.base_url + "/api/settings", headers=admin, json={"recall_timeout_ms": 0})
    assert r.status_code == 200
    r = chat(gw, secret, "I moved to Porto last year")  # learned in the background
    assert r.headers.get("x-mnemogate-memory-degraded") == "recall_timeout"
    # learning runs in the background (embedded mode)
    after = wait_until(
        lambda: s if total(s := scrape(gw), "mnemogate_jobs_total", job="learn") else None,
        what="the learn job counted",
    )

    def delta(name: str, **labels: str) -> float:
        return total(after, name, **labels) - total(before, name, **labels)

    route = "/v1/chat/completions"
    assert delta("mnemogate_http_requests_total", route=route, status="200") == 4
    assert delta("mnemogate_http_requests_total", route="/api/memory/{id}", status="404") == 1
    assert delta("mnemogate_upstream_seconds_count") == 4
    assert delta("mnemogate_added_latency_seconds_count") == 4
    assert delta("mnemogate_recall_seconds_count") == 4
    assert delta("mnemogate_recall_seconds_count", tier="hybrid") == 3
    assert delta("mnemogate_injected_memories_total") == 3
    assert delta("mnemogate_injected_tokens_total") > 0
    assert delta("mnemogate_memory_degraded_total", reason="recall_timeout") == 1
    assert total(after, "mnemogate_jobs_total", job="learn", outcome="ok") >= 1
    assert total(after, "mnemogate_embedding_cache_lookups_total") > 0
    stored = value(after, "mnemogate_memories_stored")
    assert stored == len(gw.memories()) and stored >= 2
    assert ("mnemogate_outbox_jobs", ()) in after and ("mnemogate_job_queue_depth", ()) in after
    # bounded labels: no owner id anywhere in the scrape
    text = httpx.get(gw.base_url + "/metrics", headers=admin).text
    assert key_id not in text


def test_metrics_access_setting(gateway_factory: Any, tmp_path: Path) -> None:
    guarded = gateway_factory(admin_token=ADMIN, db_path=str(tmp_path / "a.db"))
    assert httpx.get(guarded.base_url + "/metrics").status_code == 401
    wrong = httpx.get(guarded.base_url + "/metrics", headers={"authorization": "Bearer x"})
    assert wrong.status_code == 401 and wrong.json()["error"]["type"] == "authentication_error"
    opened = gateway_factory(metrics_access="open", db_path=str(tmp_path / "b.db"))
    fresh = httpx.get(opened.base_url + "/metrics")
    assert fresh.status_code == 200
    # label values known in advance are exported from the start, before any embedding
    for result in ("hit", "miss"):
        assert ("mnemogate_embedding_cache_lookups_total", (("result", result),)) in samples(
            fresh.text
        )
    off = gateway_factory(metrics_access="off", admin_token=ADMIN, db_path=str(tmp_path / "c.db"))
    r = httpx.get(off.base_url + "/metrics", headers={"authorization": f"Bearer {ADMIN}"})
    assert r.status_code == 404
    no_admin = gateway_factory(db_path=str(tmp_path / "d.db"))  # admin-only, no token set
    assert httpx.get(no_admin.base_url + "/metrics").status_code == 404


def test_request_id_header(gateway: GatewayHarness) -> None:
    r = httpx.get(gateway.base_url + "/healthz", headers={"x-request-id": "abc-123.x:y_z"})
    assert r.headers["x-request-id"] == "abc-123.x:y_z"
    for bad in ("has space", "x" * 129, "semi;colon", ""):
        r = httpx.get(gateway.base_url + "/healthz", headers={"x-request-id": bad})
        got = r.headers["x-request-id"]
        assert got != bad and len(got) == 16 and int(got, 16) >= 0
    one = httpx.get(gateway.base_url + "/healthz").headers["x-request-id"]
    two = httpx.get(gateway.base_url + "/healthz").headers["x-request-id"]
    assert one != two
    r = httpx.get(gateway.base_url + "/no/such/route")
    assert r.status_code == 404 and len(r.headers["x-request-id"]) == 16
    assert r.headers["x-mnemogate-request-id"] == r.headers["x-request-id"]
    # a provider's own request id (passed back by the proxy) stays; ours has its own name
    assert with_request_id([(b"x-request-id", b"req_up"), (b"a", b"1")], b"ours") == [
        (b"x-request-id", b"req_up"),
        (b"a", b"1"),
        (b"x-mnemogate-request-id", b"ours"),
    ]


def test_worker_metrics_port(tmp_path: Path, worker_process: Any, redis_url: str) -> None:
    db = str(tmp_path / "w.db")
    port = free_port()
    proc = worker_process(db, "--metrics-port", str(port), metrics_access="open")

    def metrics() -> str | None:
        assert proc.poll() is None, "worker exited"
        try:
            r = httpx.get(f"http://127.0.0.1:{port}/metrics", timeout=READY_TIMEOUT_S)
        except httpx.TransportError:
            return None
        ok = r.status_code == 200 and "mnemogate_job_queue_depth" in r.text
        return r.text if ok else None

    body = wait_until(metrics, what="the worker's metrics port")
    scrape = samples(body)
    assert value(scrape, "mnemogate_job_queue_depth") == 0
    assert value(scrape, "mnemogate_memories_stored") == 0
    assert httpx.get(f"http://127.0.0.1:{port}/other").status_code == 404


CHILD = """
import sys
from shared import metrics
metrics.note_request("/v1/chat/completions", 200, 0.01, 0.005)
metrics.note_job("learn", "ok")
if sys.argv[1] == "render":
    sys.stdout.write(metrics.render(metrics.Snapshot()).decode())
"""


def test_multiprocess_aggregation(tmp_path: Path) -> None:
    """Several processes sharing PROMETHEUS_MULTIPROC_DIR: one scrape sums them all."""
    folder = tmp_path / "prom"
    folder.mkdir()
    env = {**os.environ, "PROMETHEUS_MULTIPROC_DIR": str(folder)}
    for _ in range(2):
        subprocess.run([sys.executable, "-c", CHILD, "count"], env=env, check=True, timeout=60)
    out = subprocess.run(
        [sys.executable, "-c", CHILD, "render"],
        env=env,
        check=True,
        timeout=60,
        capture_output=True,
        text=True,
    ).stdout
    scrape = samples(out)
    route = "/v1/chat/completions"
    assert value(scrape, "mnemogate_http_requests_total", route=route, status="200") == 3
    assert value(scrape, "mnemogate_jobs_total", job="learn", outcome="ok") == 3
    assert value(scrape, "mnemogate_added_latency_seconds_count") == 3


def test_learned_memories_and_forget_events_carry_the_request_id(
    gateway_factory: Any, upstream: FakeUpstream
) -> None:
    """The id a response names (``x-mnemogate-request-id``) is the one the memories it taught and
    the forget event it caused record, so they can be traced to its log lines."""
    gw: GatewayHarness = gateway_factory(admin_token=ADMIN)
    key_id, secret = gw.create_key("trace")
    taught = chat(gw, secret, "I drink jasmine tea every morning", **{"x-request-id": "trace-1"})
    assert taught.headers["x-mnemogate-request-id"] == "trace-1"
    memories = gw.wait_for_memories(lambda ms: any("jasmine" in m.content for m in ms), key_id)
    assert {m.metadata.get("request_id") for m in memories if "jasmine" in m.content} == {"trace-1"}
    plain = chat(gw, secret, "I live at 42 Baker Street")  # no client id: the gateway's own
    generated = plain.headers["x-mnemogate-request-id"]
    gw.wait_for_memories(lambda ms: any("Baker" in m.content for m in ms), key_id)
    assert any(m.metadata.get("request_id") == generated for m in gw.memories(key_id))
    chat(gw, secret, "Please forget my address", **{"x-request-id": "trace-2"})
    admin = {"authorization": f"Bearer {ADMIN}"}

    def forget_event() -> Any:
        items = httpx.get(gw.base_url + "/api/events", headers=admin).json()["items"]
        return next((e for e in items if e["kind"] == "forget"), None)

    event = wait_until(forget_event, what="the forget event")
    assert "trace-2" in json.dumps(event)
