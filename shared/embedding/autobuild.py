"""First start without a static table: build it in the background, serve keyword recall meanwhile.

Distilling the static table (:func:`shared.embedding.static.build_static_table`) takes 20-100 s
of CPU depending on machine load. An embedded gateway (``mnemogate serve`` without Redis, as
``./scripts/serve`` runs it) whose embedding source is ``auto`` with no remote endpoint and no
table yet would otherwise either wait for it or embed with the slow transformer. Instead it
answers at once with keyword recall, builds the table in a child process (niced, one
onnxruntime thread, so the serving process keeps its core and its GIL), then loads the table,
switches the engine to hybrid recall and starts the reindex of existing memories. Progress is
visible as the engine's ``embedding`` status: ``building_static_table`` → ``warming_up`` → the
table's signature (``/readyz`` checks and ``GET /api/engine``). See docs/ARCHITECTURE.md,
"First start".

Run as ``python -m shared.embedding.autobuild OUT.npz`` it is the child process.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING

from shared.embedding.cache import CachedEmbeddingSource
from shared.embedding.onnx_minilm import transformers_available
from shared.embedding.select import static_table_path
from shared.embedding.static import StaticEmbeddingSource, build_static_table
from shared.errors import EmbeddingError
from shared.settings import Settings

if TYPE_CHECKING:
    from shared.engine import Engine

log = logging.getLogger("mnemogate.engine")

__all__ = ["BUILDING", "FAILED", "autobuild_target", "build_and_switch", "build_in_subprocess"]

BUILDING = "building_static_table"
"""Engine ``embedding`` status while the table is being built (keyword recall serves)."""
FAILED = "static_table_failed"
"""Engine ``embedding`` status when the build failed (keyword recall goes on; see the log)."""
CHILD_NICE = 5
"""Scheduling niceness added in the child: serving keeps priority over the build, yet on a
saturated machine the build still gets about a third of a normal process's share (nice 10 got a
tenth: 30 s of CPU took over half an hour under a CPU hog on both cores)."""


def autobuild_target(settings: Settings, model_dir: Path, *, embedded: bool) -> Path | None:
    """Where to build the static table in the background, or None when no build is due.

    Due when: ``static_table_autobuild`` is on, the process is embedded (workers and queue-mode
    gateways expect ``mnemogate models build-static`` at deploy time), the embedding source is
    ``auto`` with no ``embedding_base_url``, the table file (``static_model_path``, else
    ``model_dir``/minilm-static-256.npz) does not exist, and the local-embeddings extra is
    installed.
    """
    if not (settings.static_table_autobuild and embedded):
        return None
    if settings.embedding_source != "auto" or settings.embedding_base_url:
        return None
    path = static_table_path(settings.static_model_path or None, model_dir)
    if path is None or path.is_file() or not transformers_available():
        return None
    return path


async def build_in_subprocess(path: Path) -> None:
    """Run ``python -m shared.embedding.autobuild path`` and wait for it.

    The child is killed if the waiting task is cancelled (shutdown).

    Raises:
        EmbeddingError: (``static_build_failed``) the child failed; its last stderr lines are in
            the message.
    """
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "shared.embedding.autobuild",
        str(path),
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.PIPE,
    )
    try:
        _, err = await proc.communicate()
    except asyncio.CancelledError:
        with contextlib.suppress(ProcessLookupError):
            proc.kill()
        await proc.wait()
        raise
    if proc.returncode != 0:
        tail = err.decode("utf-8", "replace").strip().splitlines()[-3:]
        raise EmbeddingError(
            f"building the static table failed ({proc.returncode}): {' | '.join(tail)}",
            code="static_build_failed",
        )


async def build_and_switch(
    engine: Engine, path: Path, on_ready: Callable[[], Awaitable[object]]
) -> bool:
    """Build the table at ``path`` while ``engine`` serves keyword recall, then switch to it.

    Sets ``engine.embedder`` to None and ``engine.building`` to :data:`BUILDING` for the
    duration; on success loads the table (cached like any source), warms it up, clears
    ``building`` and awaits ``on_ready()`` (the caller starts the reindex there). On failure
    ``building`` becomes :data:`FAILED` and keyword recall goes on. Returns whether it switched.
    """
    engine.embedder = None
    engine.warm = False
    engine.building = BUILDING
    log.info("building the static embedding table in the background: %s", path)
    try:
        await build_in_subprocess(path)
        source = await asyncio.to_thread(StaticEmbeddingSource.load, path)
    except EmbeddingError as exc:
        log.error("%s; keyword recall only", exc.message)
        engine.building = FAILED
        return False
    engine.embedder = CachedEmbeddingSource(source, engine.cache) if engine.cache else source
    engine.building = None
    await engine.warm_up()
    log.info("static embedding table ready: hybrid recall on (%s)", source.signature)
    await on_ready()
    return True


def main(argv: list[str]) -> int:
    """Child process: build the table at ``argv[0]`` with one onnxruntime thread, niced."""
    if len(argv) != 1:
        print("usage: python -m shared.embedding.autobuild OUT.npz", file=sys.stderr)
        return 2
    with contextlib.suppress(OSError, AttributeError):
        os.nice(CHILD_NICE)
    build_static_table(Path(argv[0]), threads=1)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
