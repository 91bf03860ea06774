"""Real gateway processes for tests: ``mnemogate serve`` as a subprocess on 127.0.0.1, started
and waited for by polling ``/healthz`` (never a fixed sleep; bound :data:`READY_TIMEOUT_S`)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import sqlean

from tests.waiting import READY_TIMEOUT_S, wait_until

CLI = (sys.executable, "-m", "services.cli")


def gateway_env(db_path: str, upstream_base_url: str, **settings: str) -> dict[str, str]:
    """The environment of a gateway subprocess: this process's, minus Redis (embedded mode
    unless ``redis_url`` is given), plus ``MNEMOGATE_<NAME>`` for each of ``settings``."""
    env = dict(os.environ)
    env.pop("MNEMOGATE_REDIS_URL", None)
    env.update(
        {
            "MNEMOGATE_DB_PATH": db_path,
            "MNEMOGATE_UPSTREAM_BASE_URL": upstream_base_url,
            "MNEMOGATE_UPSTREAM_API_KEY": "sk-upstream-test",
            "MNEMOGATE_LIFECYCLE_SCHEDULE": "false",
            "MNEMOGATE_STATIC_TABLE_AUTOBUILD": "false",  # tests that want the build ask
        }
    )
    env.update({f"MNEMOGATE_{k.upper()}": v for k, v in settings.items()})
    return env


def create_key(env: Mapping[str, str], name: str = "test") -> str:
    """Create a client key with the CLI; returns its secret."""
    made = subprocess.run(
        [*CLI, "keys", "create", "--name", name],
        env=dict(env),
        capture_output=True,
        check=True,
        timeout=READY_TIMEOUT_S,
    )
    return made.stdout.decode().strip().splitlines()[-1]


def answers(url: str) -> bool:
    """True when ``GET url`` answers 200 (any transport error: False)."""
    try:
        return httpx.get(url, timeout=READY_TIMEOUT_S).status_code == 200
    except httpx.TransportError:
        return False


@contextmanager
def serve(
    env: Mapping[str, str], port: int, log_path: Path, *args: str
) -> Iterator[subprocess.Popen[bytes]]:
    """Run ``mnemogate serve --port PORT *args`` until the block ends (SIGTERM, then SIGKILL
    after :data:`READY_TIMEOUT_S`); yields once ``/healthz`` answers.

    Raises:
        AssertionError: the process exited or did not answer within :data:`READY_TIMEOUT_S`.
    """
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(
            [*CLI, "serve", "--port", str(port), *args],
            env=dict(env),
            stdout=subprocess.DEVNULL,
            stderr=log,
        )
    try:

        def up() -> bool:
            if proc.poll() is not None:
                raise AssertionError(f"gateway exited: {log_path.read_text()[-2000:]}")
            return answers(f"http://127.0.0.1:{port}/healthz")

        wait_until(up, what=f"gateway on port {port}")
        yield proc
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=READY_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def db_rows(db_path: str, query: str) -> list[tuple[Any, ...]]:
    """The rows of ``query`` on the gateway's database, read on a connection of its own."""
    conn = sqlean.connect(db_path)
    try:
        return [tuple(r) for r in conn.execute(query).fetchall()]
    finally:
        conn.close()
