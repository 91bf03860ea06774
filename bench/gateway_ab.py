"""Two versions of the gateway side by side: CPU per request, alternated, in one run.

Usage::

    git worktree add /tmp/mnemogate-base <commit>      # the version to compare against
    python bench/gateway_ab.py --base /tmp/mnemogate-base [--new .] [--config keyword|static|off]
        [--size 10k] [--block 600] [--rounds 8] [--data-dir data]

Sequential runs of ``bench/gateway.py`` from two checkouts differ by ±20 % on a shared 2-core
machine (other load comes and goes between them). Here both gateways (``mnemogate serve`` of
each checkout, the same virtual environment, ``PYTHONPATH`` set to the checkout) run at once,
pinned to CPU 0 where ``taskset`` exists, each on its own copy of ``bench/gateway.py``'s database
(``gw-<N>-<source>.db``, built once under ``--data-dir``), behind one fake upstream. After 400
warm-up requests each, ``--rounds`` rounds send the same block of ``--block`` distinct LoCoMo
questions (learning off, c=10) to one then the other (the order alternates per round), and the
process CPU (all threads, :func:`bench.gateway.cpu_s`) per request of each is printed per round,
with the ratio new/base per round and its median. A checkout's compiled kernels are used when
they were built in place there (``pip install -e .`` in it); else it runs its numpy fallbacks.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench._corpus import queries
from bench._servers import fake_upstream, free_port, wait_port
from bench.gateway import CONFIGS, build_db, cpu_s, fire, gateway_env, pinned
from bench.recall_latency import parse_size

WARM_UP = 400
"""Requests each gateway answers before the measured rounds (connections, caches, cold load)."""


@contextlib.contextmanager
def gateway(tree: Path, db: Path, config: str, upstream: str) -> Iterator[tuple[int, int]]:
    """``mnemogate serve`` of checkout ``tree`` on ``db``; yields ``(pid, port)``."""
    port = free_port()
    env = {**os.environ, **gateway_env(config, db, upstream), "PYTHONPATH": str(tree)}
    cmd = pinned([sys.executable, "-m", "services.cli", "serve", "--port", str(port)])
    proc = subprocess.Popen(
        cmd, cwd=tree, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        wait_port(port, timeout_s=180)
        yield proc.pid, port
    finally:
        proc.terminate()
        proc.wait(timeout=60)


def copy_db(source: Path, to: Path) -> None:
    """A consistent copy of ``source`` (SQLite's online backup: the WAL included)."""
    src, dst = sqlite3.connect(source), sqlite3.connect(to)
    try:
        src.backup(dst)
    finally:
        src.close()
        dst.close()


async def run(args: argparse.Namespace) -> None:
    size = parse_size(args.size)
    source = CONFIGS[args.config]["embedding_source"]
    db = Path(args.data_dir) / f"gw-{size}-{source}.db"
    secret = await build_db(db, size, source)
    headers = {
        "authorization": f"Bearer {secret}",
        "content-type": "application/json",
        "x-mnemogate-no-learn": "true",
    }
    if args.config == "off":
        headers["x-mnemogate-no-memory"] = "true"
    trees = {"base": Path(args.base), "new": Path(args.new)}  # resolved by main()
    qs = queries(WARM_UP + args.block * args.rounds)
    tmp = Path(tempfile.mkdtemp(prefix="gateway-ab-"))
    try:
        with contextlib.ExitStack() as stack:
            upstream = stack.enter_context(fake_upstream())
            servers = {}
            for name, tree in trees.items():
                copy_db(db, tmp / f"{name}.db")
                servers[name] = stack.enter_context(
                    gateway(tree, tmp / f"{name}.db", args.config, upstream)
                )
            url = "http://127.0.0.1:{}/v1/chat/completions"
            for _pid, port in servers.values():
                await fire(url.format(port), headers, qs[:WARM_UP], 4)
            cpu: dict[str, list[float]] = {"base": [], "new": []}
            for r in range(args.rounds):
                block = qs[WARM_UP + r * args.block : WARM_UP + (r + 1) * args.block]
                for name in ("base", "new") if r % 2 == 0 else ("new", "base"):
                    pid, port = servers[name]
                    before = cpu_s(pid)
                    await fire(url.format(port), headers, block, 10)
                    cpu[name].append((cpu_s(pid) - before) * 1000 / len(block))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"{args.config} @{size:,}, {args.rounds} rounds of {args.block} distinct requests, c=10")
    for name in ("base", "new"):
        per = " ".join(f"{x:.3f}" for x in cpu[name])
        print(f"{name:<5} CPU ms/req {per}  mean {sum(cpu[name]) / args.rounds:.3f}")
    ratios = sorted(n / b for b, n in zip(cpu["base"], cpu["new"], strict=True))
    print(
        f"new/base per round: median {ratios[len(ratios) // 2]:.3f} "
        f"(min {ratios[0]:.2f}, max {ratios[-1]:.2f})"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", required=True, help="checkout of the version to compare with")
    parser.add_argument("--new", default=str(Path(__file__).resolve().parents[1]))
    parser.add_argument("--config", choices=["off", "keyword", "static"], default="keyword")
    parser.add_argument("--size", default="10k")
    parser.add_argument("--block", type=int, default=600)
    parser.add_argument("--rounds", type=int, default=8)
    parser.add_argument("--data-dir", default=str(Path(__file__).resolve().parents[1] / "data"))
    args = parser.parse_args()
    args.base, args.new = str(Path(args.base).resolve()), str(Path(args.new).resolve())
    asyncio.run(run(args))


if __name__ == "__main__":
    main()
