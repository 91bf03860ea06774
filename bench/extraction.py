"""Learning throughput: regex fact extraction (messages/s) and learn jobs through arq (jobs/s).

Usage::

    python bench/extraction.py [--locomo ../shared/data/locomo10.json] [--messages 50000]
                               [--jobs 2000] [--redis-url redis://127.0.0.1:6379/11]

1. **Regex extraction**: :func:`shared.extraction.extract_facts` over a realistic mix, in this
   process, one core: every turn of the LoCoMo conversations given with ``--locomo`` (read from
   that path, never copied into the repository; skipped if absent) plus synthetic first-person
   statements (preferences, dislikes, decisions, habits, identity, questions, hedges, pastes,
   non-Latin text). The mix is cycled until ``--messages`` messages were processed; messages/s
   and µs/message are printed per source and overall. Goal: over 5,000 messages/s.
2. **Jobs through arq**: ``--jobs`` distinct ``learn`` jobs (payloads drawn from the same mix)
   are enqueued to a real Redis (the database in ``--redis-url`` is FLUSHED before and after: use
   one nothing else uses), then one ``mnemogate worker --burst`` subprocess (defaults: 50
   concurrent jobs, poll 0.1 s) drains them into a fresh SQLite file. jobs/s = jobs / (drain
   wall time − the same worker's start-up + exit time on an empty queue, measured first).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import redis

from services.gateway.app import arq_pool
from shared.extraction import extract_facts
from shared.jobs.payloads import LEARN, LearnPayload
from shared.jobs.queue import ArqQueue, resolve_queue_name
from shared.store import Store

ROOT = Path(__file__).resolve().parents[1]

_OBJECTS = [
    "TypeScript",
    "Postgres 16",
    "Next.js",
    "Rust",
    "dark mode",
    "Vim",
    "green tea",
    "Python 3.12",
    "tabs over spaces",
    "Kubernetes",
    "Redis",
    "the Oxford comma",
]
_TEMPLATES = [
    "I prefer {o} for most of my work.",
    "I don't like {o} at all.",
    "I'll use {o} for this project.",
    "I always check {o} before pushing.",
    "My name is Dana and I live in Lisbon.",
    "I work as a data engineer at Acme.",
    "I have a cat named Miso.",
    "Should I use {o} here?",
    "Maybe I will try {o} next year, not sure.",
    "The README says: I prefer {o} for everything.",
    "Can you explain how {o} handles errors? Here is my code:\n```\nx = 1\n```",
    "I prefer 绿茶饮料 in the morning.",
    "Don't remember this: my locker code is 4411.",
    "Thanks, that helps a lot!",
    "I'm currently working on a migration to {o}, and I usually write tests first.",
]


def locomo_turns(path: Path | None) -> list[str]:
    """Every dialogue turn text of the LoCoMo file at ``path`` (empty list if not given)."""
    if path is None or not path.exists():
        return []
    data = json.loads(path.read_text(encoding="utf-8"))
    out: list[str] = []
    for sample in data:
        conv = sample["conversation"]
        for name, value in conv.items():
            if name.startswith("session_") and isinstance(value, list):
                out.extend(t["text"] for t in value if t.get("text"))
    return out


def synthetic(n: int, seed: int = 7) -> list[str]:
    """``n`` synthetic user messages from :data:`_TEMPLATES` (deterministic for ``seed``)."""
    rng = random.Random(seed)
    return [rng.choice(_TEMPLATES).format(o=rng.choice(_OBJECTS)) for _ in range(n)]


def time_regex(messages: list[str], total: int) -> tuple[float, int]:
    """Run the extractor over ``messages`` cycled to ``total``; returns (seconds, facts found)."""
    found = 0
    started = time.perf_counter()
    done = 0
    while done < total:
        for text in messages[: total - done]:
            found += len(extract_facts(text))
        done += min(len(messages), total - done)
    return time.perf_counter() - started, found


async def enqueue(redis_url: str, db: str, texts: list[str]) -> str:
    """Enqueue one learn job per text on ``db``'s default arq queue; returns that queue's name
    (the one ``mnemogate worker`` derives from the same database)."""
    store = await Store.open(db)
    name = resolve_queue_name("", await store.identity.store_id())
    queue = ArqQueue(arq_pool(redis_url, name), store.outbox)
    try:
        for i, text in enumerate(texts):
            payload = LearnPayload(
                owner_id=f"bench{i % 20}",
                user_id="",
                session_id=None,
                user_turns=[text, f"(bench message {i})"],
                created_at=1_700_000_000.0 + i,
                request_id=f"b{i}",
            )
            await queue.enqueue(LEARN, payload)
        return name
    finally:
        await queue.close()
        await store.close()


def run_burst_worker(db: str, redis_url: str) -> float:
    """Run ``mnemogate worker --burst`` to completion; returns its wall time in seconds."""
    env = {**os.environ, "MNEMOGATE_DB_PATH": db, "MNEMOGATE_REDIS_URL": redis_url}
    env["MNEMOGATE_QUEUE_NAME"] = ""  # the default: derived from the database, as enqueue does
    started = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "services.cli", "worker", "--burst"],
        cwd=ROOT,
        env=env,
        check=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    return time.perf_counter() - started


def main() -> int:
    """Parse arguments, run both benchmarks, print the figures; returns the exit status."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--locomo", type=Path, default=None, help="path to locomo10.json")
    ap.add_argument("--messages", type=int, default=50_000)
    ap.add_argument("--jobs", type=int, default=2000)
    ap.add_argument("--redis-url", default="redis://127.0.0.1:6379/11")
    args = ap.parse_args()

    real = locomo_turns(args.locomo)
    fake = synthetic(max(2000, len(real)))
    mix = real + fake
    random.Random(1).shuffle(mix)
    print(f"regex extraction, one core: {len(real)} LoCoMo turns + {len(fake)} synthetic")
    for name, msgs in (("locomo", real), ("synthetic", fake), ("mix", mix)):
        if not msgs:
            continue
        extract_facts(msgs[0])  # warm-up
        seconds, found = time_regex(msgs, args.messages)
        rate = args.messages / seconds
        print(
            f"  {name:<10} {args.messages} msgs in {seconds:.2f}s: {rate:,.0f} messages/s "
            f"({1e6 / rate:.0f} µs/msg), {found} facts"
        )

    client = redis.Redis.from_url(args.redis_url)
    client.flushdb()
    try:
        with tempfile.TemporaryDirectory() as tmp:
            db = str(Path(tmp) / "bench.db")
            idle = run_burst_worker(db, args.redis_url)  # start-up + migrate + exit, no jobs
            texts = [mix[i % len(mix)] for i in range(args.jobs)]
            queue_name = asyncio.run(enqueue(args.redis_url, db, texts))
            assert client.zcard(queue_name) == args.jobs, "jobs were not all enqueued"
            wall = run_burst_worker(db, args.redis_url)
            assert client.zcard(queue_name) == 0, "the worker did not drain the queue"
            busy = max(1e-9, wall - idle)
            print(
                f"learn jobs through arq, one worker (--burst, 50 concurrent): {args.jobs} jobs "
                f"drained in {wall:.2f}s wall (idle start+exit {idle:.2f}s): "
                f"{args.jobs / busy:,.0f} jobs/s ({args.jobs / wall:,.0f} jobs/s incl. start-up)"
            )
    finally:
        client.flushdb()
        client.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
