"""``MNEMOGATE_LOG_FORMAT=json``: a real ``mnemogate serve`` process writes one JSON object per
line; the access line carries request id, route, status, latency, tier and injected count and
no memory content or secrets."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import httpx

from tests.fakes.upstream import FakeUpstream, free_port

ADMIN = "json-logs-admin-token"
CONTENT = "I drink jasmine tea every morning"


def test_json_logs(tmp_path: Path, upstream: FakeUpstream) -> None:
    port = free_port()
    env = {
        **os.environ,
        "MNEMOGATE_DB_PATH": str(tmp_path / "m.db"),
        "MNEMOGATE_UPSTREAM_BASE_URL": upstream.base_url,
        "MNEMOGATE_UPSTREAM_API_KEY": "sk-upstream-secret",
        "MNEMOGATE_ADMIN_TOKEN": ADMIN,
        "MNEMOGATE_LOG_FORMAT": "json",
        "MNEMOGATE_REDIS_URL": "",
    }
    created = subprocess.run(
        [sys.executable, "-m", "services.cli", "keys", "create", "--name", "logs"],
        env=env,
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    secret = created.stdout.strip().splitlines()[-1]
    log_path = tmp_path / "serve.log"
    with open(log_path, "wb") as log_file:
        proc = subprocess.Popen(
            [sys.executable, "-m", "services.cli", "serve", "--port", str(port)],
            env=env,
            stdout=log_file,
            stderr=subprocess.STDOUT,
        )
        try:
            base = f"http://127.0.0.1:{port}"
            deadline = time.monotonic() + 90
            while time.monotonic() < deadline:
                assert proc.poll() is None, log_path.read_text()
                try:
                    if httpx.get(base + "/healthz", timeout=2).status_code == 200:
                        break
                except httpx.TransportError:
                    time.sleep(0.1)
            admin = {"authorization": f"Bearer {ADMIN}"}
            # the --port flag, not the default, is what the settings view reports
            shown = httpx.get(base + "/api/settings", headers=admin).json()["settings"]
            assert shown["port"] == port
            key_id = httpx.get(
                base + "/api/memory/stats", headers={"authorization": f"Bearer {secret}"}
            ).json()["owner_id"]
            r = httpx.post(
                base + "/api/memory", headers=admin, json={"owner_id": key_id, "content": CONTENT}
            )
            assert r.status_code == 201
            r = httpx.post(
                base + "/v1/chat/completions",
                headers={
                    "authorization": f"Bearer {secret}",
                    "x-request-id": "req-json-1",
                    "x-mnemogate-no-learn": "1",
                },
                json={"model": "m", "messages": [{"role": "user", "content": "Which tea?"}]},
                timeout=30,
            )
            assert r.status_code == 200 and r.headers["x-mnemogate-request-id"] == "req-json-1"
            assert r.headers["x-mnemogate-memory-injected"] == "1"
        finally:
            proc.terminate()
            proc.wait(timeout=30)
    lines = [line for line in log_path.read_text().splitlines() if line.strip()]
    records = [json.loads(line) for line in lines]  # every line is one JSON object
    assert all({"ts", "level", "logger", "msg"} <= set(r) for r in records)
    (access,) = [r for r in records if r.get("request_id") == "req-json-1"]
    assert access["logger"] == "mnemogate.access" and access["level"] == "info"
    assert access["route"] == "/v1/chat/completions" and access["status"] == 200
    assert access["method"] == "POST" and access["latency_ms"] > 0
    assert access["tier"] in ("hybrid", "fts5") and access["injected"] == 1
    assert access["upstream_ms"] > 0
    assert any(r["logger"].startswith("uvicorn") for r in records)  # uvicorn's own lines too
    text = log_path.read_text()
    for secret_text in (CONTENT, "jasmine", secret, ADMIN, "sk-upstream-secret"):
        assert secret_text not in text
