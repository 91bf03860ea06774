"""The commit hint moves on every commit, by any process, and only then.

Commits made by another process must show in the hint, and what it returns must be the bytes of
the wal-index header in the ``-shm`` file.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from shared.store import Store
from shared.store.commit_hint import WAL_INDEX_HEADER_BYTES, CommitHint


def commit_elsewhere(path: str, name: str) -> None:
    """Create an API key through a separate Python process (its own SQLite connection)."""
    code = (
        "import asyncio, sys\n"
        "from shared.store import Store\n"
        "async def main():\n"
        "    store = await Store.open(sys.argv[1], run_migrations=False)\n"
        "    await store.keys.create(sys.argv[2])\n"
        "    await store.close()\n"
        "asyncio.run(main())\n"
    )
    subprocess.run([sys.executable, "-c", code, path, name], check=True, timeout=120)


@pytest.fixture
async def store(tmp_path):
    opened = await Store.open(str(tmp_path / "h.db"))
    yield opened
    await opened.close()


async def test_another_process_commit_moves_the_hint_and_nothing_else_does(store):
    hint = CommitHint(store.path)
    try:
        await store.keys.create("here")
        first = hint.read()
        assert first is not None and len(first) == WAL_INDEX_HEADER_BYTES
        assert hint.read() == first  # nothing committed
        await store.keys.list()
        assert hint.read() == first  # a read is not a commit
        commit_elsewhere(store.path, "there")
        second = hint.read()
        assert second != first
        await store.keys.create("here again")
        assert hint.read() not in (first, second)
    finally:
        hint.close()


async def test_the_hint_is_the_files_own_header_bytes(store):
    hint = CommitHint(store.path)
    try:
        for name in ("a", "b", "c"):
            await store.keys.create(name)
            fd = os.open(f"{store.path}-shm", os.O_RDONLY)
            try:
                on_disk = os.pread(fd, WAL_INDEX_HEADER_BYTES, 0)
            finally:
                os.close(fd)
            assert hint.read() == on_disk
    finally:
        hint.close()


async def test_a_closed_hint_reads_again_and_still_follows_commits(store):
    hint = CommitHint(store.path)
    await store.keys.create("a")
    before = hint.read()
    hint.close()
    hint.close()  # twice is harmless
    assert hint.read() == before
    await store.keys.create("b")
    assert hint.read() != before
    hint.close()


def test_no_file_no_hint(tmp_path):
    assert CommitHint(None).read() is None
    assert CommitHint(":memory:").read() is None
    missing = CommitHint(str(tmp_path / "absent.db"))
    assert missing.read() is None  # no -shm file: "may have changed", never an error
    missing.close()
