"""The in-memory vector search's two stages against the exact scan, on real chat text.

Usage::

    python bench/vector_preselect.py [--sizes 10k,100k] [--queries 500] [--dims 96]
        [--data-dir data] [--no-kernel]

For each size the database of ``bench/gateway.py`` (``gw-<N>-static.db``: the caller owns N
LoCoMo turns embedded with the bundled static table, built once through the product's write
path) gives the caller's vector matrix, row-normalised as the gateway holds it. Distinct LoCoMo
questions are embedded with the same table. Printed per size: recall@10 and @20 of the two-stage
search (:mod:`shared.recall_index.preselect`, ``--dims`` principal directions, 10 x 80 rows, and
at least one in 50, kept as the vector leg keeps them for its default top-k of 20) against the
exact scan's top 20, the share of queries whose top-20 list is identical, and the CPU
microseconds per query of both (one BLAS thread, as in the gateway), with their ratio. The two
stages run as the vector leg runs them (:func:`shared.recall_index.preselect.best_rows`): with
the compiled kernel when it is built (``_vecscan``), else numpy; ``--no-kernel`` runs the numpy
path in any case (to compare both from one checkout). With the kernel the line ends with how
often its top-20 and top-80 lists are the numpy path's.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from collections.abc import Callable
from pathlib import Path
from unittest.mock import patch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np
import numpy.typing as npt

from bench._corpus import queries
from bench.gateway import build_db
from bench.recall_latency import STATIC_TABLE, parse_size
from shared.blas_threads import limit_blas_threads
from shared.embedding.static import StaticEmbeddingSource
from shared.recall_index import preselect
from shared.recall_index.preselect import best_rows, build_preselect
from shared.recall_index.vectors import OVERSAMPLE
from shared.store import Store

TOP_K = 20
"""The vector leg's default ``recall_top_k``."""


async def caller_matrix(path: Path) -> npt.NDArray[np.float32]:
    """The row-normalised vectors of the owner with the most memories in ``path``."""
    store = await Store.open(str(path))
    try:
        rows = await store.reader.execute_fetchall(
            "SELECT owner_id FROM memories GROUP BY owner_id ORDER BY count(*) DESC LIMIT 1"
        )
        owner = next(iter(rows))[0]
        vecs = list(
            await store.reader.execute_fetchall(
                "SELECT embedding FROM vec_memories WHERE owner_id = ?", (owner,)
            )
        )
    finally:
        await store.close()
    mat = np.frombuffer(b"".join(bytes(r[0]) for r in vecs), dtype=np.float32)
    mat = mat.reshape(len(vecs), -1)
    return mat / np.maximum(np.linalg.norm(mat, axis=1), 1e-9)[:, None]


def cpu_us(run: Callable[[int], object], n: int) -> float:
    """CPU microseconds per call of ``run(i)`` for ``i`` in ``range(n)``."""
    started = time.process_time()
    for i in range(n):
        run(i)
    return (time.process_time() - started) * 1e6 / n


def measure(mat: npt.NDArray[np.float32], qs: npt.NDArray[np.float32], dims: int) -> str:
    """One size's line (see the module docstring)."""
    take = TOP_K * OVERSAMPLE
    pre = build_preselect(mat, dims)
    if pre is None:
        return f"{len(mat):>8,} rows: scanned whole (below the two-stage size)"

    def exact(i: int) -> npt.NDArray[np.intp]:
        sims = mat @ qs[i]
        top = np.argpartition(-sims, take - 1)[:take]
        return top[np.argsort(-sims[top], kind="stable")]

    def two_stage(i: int) -> npt.NDArray[np.intp]:
        rows = pre.rows(qs[i], take)
        assert rows is not None
        return best_rows(mat, qs[i], rows, take)[0]

    kernel = "numpy" if pre.head16 is None else "compiled kernel"
    hit10 = hit20 = same = 0
    for i in range(len(qs)):
        want, got = exact(i)[:TOP_K].tolist(), two_stage(i)[:TOP_K].tolist()
        hit10 += len(set(want[:10]) & set(got[:10]))
        hit20 += len(set(want) & set(got))
        same += want == got
    n = len(qs)
    full, two = cpu_us(exact, n), cpu_us(two_stage, n)
    return (
        f"{len(mat):>8,} rows x {mat.shape[1]}: recall@10 {hit10 / (10 * n):.4f}, "
        f"recall@20 {hit20 / (TOP_K * n):.4f}, identical top-20 {same / n:.1%}; CPU per query "
        f"exact {full:.0f} us, two stages ({dims} dims, {kernel}) {two:.0f} us ({two / full:.2f}x)"
        + ("" if pre.head16 is None else same_as_numpy(mat, qs, dims, two_stage))
    )


def same_as_numpy(
    mat: npt.NDArray[np.float32],
    qs: npt.NDArray[np.float32],
    dims: int,
    kernel: Callable[[int], npt.NDArray[np.intp]],
) -> str:
    """How often the kernel's two stages return the numpy path's top 20 and top 80 lists."""
    take = TOP_K * OVERSAMPLE
    got = [kernel(i).tolist() for i in range(len(qs))]
    same20 = same80 = 0
    with patch.object(preselect, "_vecscan", None):
        plain = build_preselect(mat, dims)
        assert plain is not None
        for i in range(len(qs)):
            rows = plain.rows(qs[i], take)
            assert rows is not None
            want = best_rows(mat, qs[i], rows, take)[0].tolist()
            same20 += want[:TOP_K] == got[i][:TOP_K]
            same80 += want == got[i]
    return (
        f"; the numpy path's top 20 in {same20 / len(qs):.1%} of queries, "
        f"top {take} in {same80 / len(qs):.1%}"
    )


async def main_async(args: argparse.Namespace) -> None:
    limit_blas_threads()
    if args.no_kernel:
        preselect._vecscan = None  # type: ignore[assignment]  # the numpy path of both stages
    table = StaticEmbeddingSource.load(STATIC_TABLE)
    qs = np.asarray(table.embed_sync(queries(args.queries)), dtype=np.float32)
    qs = qs / np.maximum(np.linalg.norm(qs, axis=1), 1e-9)[:, None]
    for size in (parse_size(s) for s in args.sizes.split(",")):
        db = Path(args.data_dir) / f"gw-{size}-static.db"
        await build_db(db, size, "static")
        print(measure(await caller_matrix(db), qs, args.dims), flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10k,100k")
    parser.add_argument("--queries", type=int, default=500)
    parser.add_argument("--dims", type=int, default=96)
    parser.add_argument("--no-kernel", action="store_true", help="numpy even with the kernel")
    parser.add_argument("--data-dir", default=str(Path(__file__).resolve().parents[1] / "data"))
    args = parser.parse_args()
    asyncio.run(main_async(args))


if __name__ == "__main__":
    main()
