"""First start answers at once: a real ``mnemogate serve`` on a fresh data directory serves
keyword recall while it builds the static embedding table in the background, then switches to
hybrid recall (visible in ``/readyz`` and ``GET /api/engine``) and embeds the memories written
meanwhile. Real build (the bundled tokenizer and the ONNX model), real SQLite, real HTTP."""

from __future__ import annotations

import time
from pathlib import Path

import httpx
import pytest

from shared.embedding.autobuild import BUILDING
from tests.fakes.upstream import FakeUpstream, free_port
from tests.processes import create_key, gateway_env, serve
from tests.waiting import READY_TIMEOUT_S, wait_until

#: The build takes 20-30 s of CPU; on a saturated 2-core machine (niced child) up to ~20 min.
BUILD_TIMEOUT_S = 1500.0


def _embedding(base: str) -> str:
    return str(httpx.get(base + "/readyz", timeout=READY_TIMEOUT_S).json()["checks"]["embedding"])


@pytest.mark.timeout(BUILD_TIMEOUT_S + 300)
def test_first_start_serves_keyword_recall_then_switches_to_hybrid(
    tmp_path: Path, upstream: FakeUpstream, record_property
):
    db = str(tmp_path / "data" / "mnemogate.db")
    env = gateway_env(
        db, upstream.base_url, static_table_autobuild="true", recall_timeout_ms="60000"
    )
    secret = create_key(env)
    auth = {"authorization": f"Bearer {secret}"}
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    launched = time.monotonic()
    with serve(env, port, tmp_path / "serve.log"):
        answered_s = time.monotonic() - launched
        # it answers while the table is still being built: the build is not in the way
        assert _embedding(base) == BUILDING
        engine = httpx.get(base + "/api/engine", headers=auth, timeout=READY_TIMEOUT_S).json()
        assert engine["embedding"]["status"] == BUILDING
        made = httpx.post(
            base + "/api/memory",
            headers=auth,
            json={"content": "User's favourite drink is green tea"},
            timeout=READY_TIMEOUT_S,
        )
        assert made.status_code == 201, made.text
        chat = {"model": "m", "messages": [{"role": "user", "content": "what drink do I like?"}]}
        first = httpx.post(
            base + "/v1/chat/completions", headers=auth, json=chat, timeout=READY_TIMEOUT_S
        )
        assert first.status_code == 200
        assert first.headers["x-mnemogate-memory-tier"] == "fts5"
        assert first.headers["x-mnemogate-memory-injected"] == "1"

        wait_until(
            lambda: _embedding(base).startswith("static:"),
            timeout_s=BUILD_TIMEOUT_S,
            what="the static table built and loaded",
        )
        built_s = time.monotonic() - launched
        engine = httpx.get(base + "/api/engine", headers=auth, timeout=READY_TIMEOUT_S).json()
        assert engine["embedding"]["status"].startswith("static:"), engine

        def hybrid() -> bool:  # the memory written during the build got its vector
            resp = httpx.post(
                base + "/v1/chat/completions",
                headers={**auth, "x-mnemogate-no-learn": "1"},
                json=chat,
                timeout=READY_TIMEOUT_S,
            )
            return resp.headers["x-mnemogate-memory-tier"] == "hybrid"

        wait_until(hybrid, what="hybrid recall")
    assert (Path(db).parent / "models" / "minilm-static-256.npz").is_file()
    record_property("first_answer_s", round(answered_s, 2))
    record_property("static_table_ready_s", round(built_s, 1))
    print(f"first start: answered after {answered_s:.1f} s, hybrid after {built_s:.1f} s")
