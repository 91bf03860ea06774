"""Benchmark helpers: start the fake upstream and a gateway as real subprocesses on 127.0.0.1."""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def free_port() -> int:
    """A TCP port on 127.0.0.1 that was free a moment ago."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_port(port: int, timeout_s: float = 30.0) -> None:
    """Block until 127.0.0.1:port accepts connections."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 0.2):
            return
        time.sleep(0.05)
    raise RuntimeError(f"nothing listens on {port}")


@contextlib.contextmanager
def process(
    args: list[str], env: dict[str, str] | None = None
) -> Iterator[subprocess.Popen[bytes]]:
    """Run ``args`` (cwd = project root) for the duration of the block; stop it by pid after."""
    proc = subprocess.Popen(
        args,
        cwd=ROOT,
        env={**os.environ, **(env or {})},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        yield proc
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@contextlib.contextmanager
def fake_upstream(
    reply: str = "OK", mirror: bool = False, mirror_model: str | None = None
) -> Iterator[str]:
    """A fake OpenAI-compatible upstream subprocess; yields its base URL (``.../v1``).

    ``mirror``: it answers with the JSON of the messages it received (to read injections);
    ``mirror_model``: only requests for that model are answered that way.
    """
    port = free_port()
    extra = ["--mirror"] if mirror else []
    if mirror_model:
        extra += ["--mirror-model", mirror_model]
    with process(
        [
            sys.executable,
            "-m",
            "tests.fakes.upstream",
            "--port",
            str(port),
            "--reply",
            reply,
            *extra,
        ]
    ):
        wait_port(port)
        yield f"http://127.0.0.1:{port}/v1"


def create_key(db_path: str) -> str:
    """Create an API key in ``db_path`` through the CLI; returns the secret (last stdout line)."""
    out = subprocess.run(
        [sys.executable, "-m", "services.cli", "keys", "create", "--name", "bench"],
        cwd=ROOT,
        env={**os.environ, "MNEMOGATE_DB_PATH": db_path},
        check=True,
        capture_output=True,
        text=True,
    )
    return out.stdout.strip().splitlines()[-1]


@contextlib.contextmanager
def gateway(db_path: str, upstream_url: str, **settings: str) -> Iterator[str]:
    """A ``mnemogate serve`` subprocess (embedded mode unless ``redis_url`` given); yields URL."""
    port = free_port()
    env = {
        "MNEMOGATE_DB_PATH": db_path,
        "MNEMOGATE_UPSTREAM_BASE_URL": upstream_url,
        "MNEMOGATE_UPSTREAM_API_KEY": "sk-bench",
        **{f"MNEMOGATE_{k.upper()}": v for k, v in settings.items()},
    }
    with process([sys.executable, "-m", "services.cli", "serve", "--port", str(port)], env):
        wait_port(port)
        yield f"http://127.0.0.1:{port}"
