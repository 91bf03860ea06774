"""The OpenAPI document states exactly what the server enforces: schemathesis (every check:
server errors, status codes, content types, response schemas, schema-valid data accepted,
schema-violating data rejected, undeclared methods → 405 with ``Allow``, auth, stateful links)
runs against a real ``mnemogate serve`` process with the admin token and with a client key,
each against its variant of the document (``?for=admin`` / ``?for=client``), and finds nothing.

Bounded: a fixed seed and :data:`MAX_EXAMPLES` examples per operation keep each run well under
two minutes on a loaded 2-core machine and make a failure reproducible.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.fakes.upstream import FakeUpstream, free_port
from tests.processes import create_key, gateway_env, serve
from tests.waiting import READY_TIMEOUT_S

MAX_EXAMPLES = 25
SEED = 20_261_201
ADMIN_TOKEN = "schemathesis-admin-token"


def _schemathesis(url: str, token: str, report: Path) -> subprocess.CompletedProcess[str]:
    args = [
        "run",
        url,
        "--checks",
        "all",
        "--header",
        f"Authorization: Bearer {token}",
        "--max-examples",
        str(MAX_EXAMPLES),
        "--seed",
        str(SEED),
        "--workers",
        "1",
        "--request-timeout",
        str(READY_TIMEOUT_S),
        "--generation-database",
        "none",
        "--no-color",
        "--report",
        "junit",
        "--report-junit-path",
        str(report),
    ]
    return subprocess.run(
        [sys.executable, "-c", "from schemathesis.cli import schemathesis; schemathesis()", *args],
        capture_output=True,
        text=True,
        timeout=15 * 60,
        cwd=report.parent,
    )


@pytest.mark.timeout(20 * 60)
@pytest.mark.parametrize("principal", ["admin", "client"])
def test_schemathesis_finds_no_failure(tmp_path: Path, upstream: FakeUpstream, principal: str):
    env = gateway_env(
        str(tmp_path / "st.db"),
        upstream.base_url,
        embedding_source="none",
        admin_token=ADMIN_TOKEN,
    )
    token = ADMIN_TOKEN if principal == "admin" else create_key(env, "schemathesis")
    port = free_port()
    with serve(env, port, tmp_path / "serve.log"):
        run = _schemathesis(
            f"http://127.0.0.1:{port}/api/openapi.json?for={principal}",
            token,
            tmp_path / "junit.xml",
        )
    summary = run.stdout[-6000:] + run.stderr[-2000:]
    assert run.returncode == 0, summary
    assert " passed" in run.stdout and "failures" not in run.stdout.split("SUMMARY")[-1], summary
