"""``mnemogate sweep`` and ``mnemogate summarize`` as subprocesses: lifecycle rules via the CLI."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time
from pathlib import Path

from shared.store import Store
from tests.lifecycle_seed import DAY, add, ids, query, seed_cases


def cli(db: str, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    full = dict(os.environ)
    full.update({"MNEMOGATE_DB_PATH": db, "MNEMOGATE_REDIS_URL": ""})
    full.update({f"MNEMOGATE_{k.upper()}": v for k, v in env.items()})
    return subprocess.run(
        [sys.executable, "-m", "services.cli", *args],
        env=full,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def seed(db: str, fn):
    async def go():
        store = await Store.open(db)
        try:
            return await fn(store)
        finally:
            await store.close()

    return asyncio.run(go())


def public_id(db: str, rowid: int) -> str:
    return str(query(db, "SELECT public_id FROM memories WHERE id = ?", (rowid,))[0][0])


def test_l1_to_l3_dry_run_lists_then_sweep_removes(tmp_path: Path) -> None:
    db = str(tmp_path / "cli.db")
    case = seed(db, lambda s: seed_cases(s, time.time()))
    l1 = public_id(db, case["L1"])

    dry = cli(db, "sweep", "--dry-run")
    assert dry.returncode == 0, dry.stderr
    lines = dry.stdout.strip().splitlines()
    assert lines[0].startswith(f"would delete\t{l1}\tdecayed\towner=key_a\tuser=-\tepisodic/turn\t")
    assert "zebrafish" in lines[0]
    assert lines[-1].startswith("dry run: scanned 4 rows") and "nothing was removed" in lines[-1]
    assert len(lines) == 2
    assert ids(db) == set(case.values())

    real = cli(db, "sweep")
    assert real.returncode == 0, real.stderr
    out = real.stdout.strip().splitlines()
    assert out[0].startswith(f"deleted\t{l1}\tdecayed")
    assert (
        out[-1].startswith("sweep: scanned 4 rows") and "deleted 1 (expired 0, decayed 1" in out[-1]
    )
    assert ids(db) == {case["L2"], case["L3"], case["fresh"]}  # L2 type-immune, L3 access-immune


def test_l4_sweep_progress_survives_process_restarts(tmp_path: Path) -> None:
    db = str(tmp_path / "cli.db")
    now = time.time()

    async def fill(store: Store) -> int:
        await add(store, "fresh one", created=now)
        await add(store, "fresh two", created=now)
        return await add(store, "old episodic", created=now - 60 * DAY)

    old = seed(db, fill)
    env = {"sweep_max_scan": "2", "sweep_batch_size": "1"}
    first = cli(db, "sweep", **env)
    assert "scanned 2 rows" in first.stdout and "deleted 0" in first.stdout, first.stdout
    assert old in ids(db)
    second = cli(db, "sweep", **env)  # a new process: resumes at the persisted cursor
    assert "deleted 1" in second.stdout, second.stdout
    assert old not in ids(db)


def test_summarize_cli_per_owner_and_dry_run(tmp_path: Path) -> None:
    db = str(tmp_path / "cli.db")
    now = time.time()

    async def fill(store: Store) -> None:
        for i in range(4):
            await add(
                store,
                f"alpha planning session {i}. alpha notes.",
                owner="key_a",
                created=now - 20 * DAY + i,
            )
            await add(
                store,
                f"bravo travel idea {i}. bravo notes.",
                owner="key_b",
                created=now - 20 * DAY + i,
            )

    seed(db, fill)
    dry = cli(db, "summarize", "--older-than-days", "10", "--dry-run")
    assert dry.returncode == 0, dry.stderr
    assert dry.stdout.count("would summarize\t") == 2
    assert (
        dry.stdout.strip()
        .splitlines()[-1]
        .startswith("dry run: 2 groups, 8 memories -> 2 summaries")
    )
    assert len(ids(db)) == 8

    only_a = cli(db, "summarize", "--older-than-days", "10", "--owner", "key_a")
    assert only_a.returncode == 0, only_a.stderr
    head = [ln for ln in only_a.stdout.splitlines() if ln.startswith("summary mem_")]
    assert len(head) == 1 and "owner=key_a" in head[0] and "4 memories -> 1" in head[0]
    assert "summarize: 1 groups, 4 memories -> 1 summaries" in only_a.stdout
    rows = query(db, "SELECT owner_id, category FROM memories ORDER BY owner_id")
    assert rows.count(("key_a", "summary")) == 1 and rows.count(("key_b", "turn")) == 4
