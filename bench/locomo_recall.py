"""Recall quality on LoCoMo through the project's own store, embedding and retrieval code.

Usage::

    python bench/locomo_recall.py ../shared/data/locomo10.json [--engine fts|vector|hybrid]
        [--source transformers|static] [--conversations N] [--compare-int8] [--setting k=v ...]
        [--no-date | --text-only] [--quick] [--grid 'name=v1,v2;name2=...']

Every dialog turn becomes a memory as learning would store it
(:func:`bench._locomo.turn_memories`: content ``"[<date>] <speaker>: <text>"``, search context
the two turns before and after in its session, question-only turns left out; one owner per
conversation) written with the store's upsert; vectors are written through the engine
(sqlite-vec). Each category 1-4 question is answered by ``shared.retrieval.recall`` with the
product's settings (strategy from ``--engine``; token budget raised to 8000 so the top 10 are not
cut by the budget). Prints Hit@1/5/10 and MRR overall and per category, index build time and
query latency p50/p99; ``--compare-int8`` also reports int8-vs-float recall@10 agreement of the
vector KNN and the size of each vector table.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import httpx
import numpy as np

from bench._locomo import Scores, load, turn_memories
from shared.engine import build_engine, record_of
from shared.models import NewMemory, Scope
from shared.retrieval import recall, retention_of
from shared.settings import load_settings
from shared.store import Store
from shared.store.sqlite_vec import SqliteVecIndex

STRATEGY = {"fts": "exact", "vector": "semantic", "hybrid": "hybrid"}


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))] if ordered else 0.0


async def main_async(args: argparse.Namespace) -> None:
    convs = load(args.path, args.conversations)
    extra = dict(s.split("=", 1) for s in args.setting)
    with tempfile.TemporaryDirectory() as tmp:
        db = os.path.join(tmp, "locomo.db")
        settings = load_settings(
            {},
            db_path=db,
            retrieval_strategy=STRATEGY[args.engine],
            embedding_source="none" if args.engine == "fts" else args.source,
            static_model_path=args.static_path or "",
            recall_max_tokens=8000,
            recall_top_k=max(20, args.top_k),
            **extra,
        )
        store = await Store.open(db)
        http = httpx.AsyncClient()
        engine = build_engine(settings, store, http, retention_of(settings))
        dia_of: dict[int, str] = {}
        t0 = time.perf_counter()
        now = time.time()
        for conv in convs:
            for tm in turn_memories(conv, args.with_date, args.capture_all, args.with_speaker):
                m, _ = await store.writes.upsert(
                    NewMemory(
                        owner_id=conv.sample_id,
                        content=tm.content,
                        context=tm.context if args.context else "",
                        type="episodic",
                        category="turn",
                        key=f"turn:{tm.turn.dia_id}",
                    ),
                    now=now,
                )
                dia_of[m.id] = tm.turn.dia_id
        t_store = time.perf_counter() - t0
        t_embed = 0.0
        vectors: dict[int, np.ndarray] = {}
        if engine.enabled:
            assert engine.embedder is not None
            t1 = time.perf_counter()
            await engine.warm_up()
            memories = list((await store.memories.get_many(list(dia_of))).values())
            memories.sort(key=lambda m: m.id)
            mat = await engine.embedder.embed([m.content for m in memories])
            await engine.sqlite_vec.ensure(int(mat.shape[1]), engine.embedder.signature)
            await engine.sqlite_vec.upsert([record_of(m, mat[i]) for i, m in enumerate(memories)])
            vectors = {m.id: mat[i] for i, m in enumerate(memories)}
            t_embed = time.perf_counter() - t1
        print(
            f"indexed {len(dia_of)} turns of {len(convs)} conversations: store "
            f"{t_store:.1f} s, embeddings {t_embed:.1f} s"
            + (f" ({engine.embedder.signature})" if engine.embedder else "")
        )
        for variant in grid(settings, args.grid):
            await evaluate(store, engine, convs, variant, dia_of, args.engine, args.quick)
        if args.compare_int8 and engine.enabled and engine.embedder is not None:
            await compare_int8(store, engine, vectors, convs, settings, tmp)
        await engine.close()  # background work (snapshot writes) stops before the store closes
        await http.aclose()
        await store.close()


def grid(settings, spec: str | None):  # type: ignore[no-untyped-def]
    """Settings variants: every combination of ``name=v1,v2;name2=...`` (or just ``settings``)."""
    import itertools

    import msgspec

    if not spec:
        return [settings]
    axes = [
        (name, values.split(","))
        for name, values in (part.split("=", 1) for part in spec.split(";") if part)
    ]
    out = []
    for combo in itertools.product(*(values for _, values in axes)):
        raw = msgspec.structs.asdict(settings)
        raw.update({name: value for (name, _), value in zip(axes, combo, strict=True)})
        out.append(msgspec.convert(raw, type(settings), strict=False))
    return out


async def evaluate(store, engine, convs, settings, dia_of, engine_name, quick=False) -> None:  # type: ignore[no-untyped-def]
    """Answer every question with ``recall`` under ``settings``; print the table.

    Hit@k and MRR come from what recall returns under ``settings``; "MRR full" from a second
    recall of the same question with every candidate kept (top k 1000, no relevance floor, no
    memory cap), so a hit ranked below the injected ones still counts (``quick``: skipped, MRR
    full = MRR).
    """
    import msgspec

    full_settings = msgspec.structs.replace(
        settings, recall_top_k=1000, recall_relative_floor=0.0, recall_max_memories=0
    )
    scores = Scores()
    latencies: list[float] = []
    injected: list[int] = []
    for conv in convs:
        scope = Scope(owner_id=conv.sample_id, include_global=False)
        for q in conv.questions:
            s = time.perf_counter()
            result = await recall(store.memories, scope, q.text, settings, time.time(), engine)
            latencies.append((time.perf_counter() - s) * 1000)
            injected.append(len(result.memories))
            ranked = [dia_of[m.id] for m in result.memories]
            if quick:
                scores.add(q.category, ranked, q.evidence)
                continue
            full = await recall(store.memories, scope, q.text, full_settings, time.time(), engine)
            scores.add(q.category, ranked, q.evidence, [dia_of[m.id] for m in full.memories])
    print(
        scores.table(
            f"engine={engine_name} strategy={settings.retrieval_strategy} "
            f"fusion={settings.recall_fusion} share={settings.recall_fusion_keyword_share} "
            f"score_all={settings.recall_fusion_score_all} "
            f"rrf_k={settings.rrf_k} weights kw:vec={settings.rrf_keyword_weight}:"
            f"{settings.rrf_vector_weight} floor={settings.recall_relative_floor} "
            f"min_sim={settings.vector_min_similarity} k1={settings.bm25_k1} b={settings.bm25_b} "
            f"context_weight={settings.recall_context_weight} "
            f"question_factor={settings.recall_question_factor} "
            f"when_factor={settings.recall_when_factor}"
        )
    )
    print(
        f"recall latency (n={len(latencies)}): p50 {pct(latencies, 0.5):.2f} ms, "
        f"p99 {pct(latencies, 0.99):.2f} ms; memories returned: mean "
        f"{sum(injected) / max(1, len(injected)):.1f}",
        flush=True,
    )


async def compare_int8(store, engine, vectors, convs, settings, tmp) -> None:  # type: ignore[no-untyped-def]
    """Recall@10 agreement of int8 vs float KNN (same vectors), and vector table sizes."""
    int8_db = os.path.join(tmp, "int8.db")
    store8 = await Store.open(int8_db)
    # the same memory rows (same rowids) in the second database: KNN joins them for visibility
    await store8.writer.execute("ATTACH DATABASE ? AS src", (store.path,))
    await store8.writer.execute("INSERT INTO memories SELECT * FROM src.memories")
    await store8.writer.execute("DETACH DATABASE src")
    idx8 = SqliteVecIndex(store8.writer, store8.reader, store8.memories, quantization="int8")
    mems = await store.memories.get_many(list(vectors))
    dim = len(next(iter(vectors.values())))
    await idx8.ensure(dim, engine.embedder.signature)
    await idx8.upsert([record_of(mems[i], v) for i, v in vectors.items()])
    agree: list[float] = []
    for conv in convs:
        scope = Scope(owner_id=conv.sample_id, include_global=False)
        for q in conv.questions:
            qv = await engine.embed_query(q.text)
            f = {h.memory_id for h in await engine.sqlite_vec.search(qv, scope, 10, time.time())}
            i = {h.memory_id for h in await idx8.search(qv, scope, 10, time.time())}
            if f:
                agree.append(len(f & i) / len(f))
    size_f = await vec_bytes(store)
    size_i = await vec_bytes(store8)
    print(
        f"int8 vs float32 KNN recall@10 agreement: {sum(agree) / len(agree):.3f} "
        f"(n={len(agree)}); vector storage: float32 {size_f / 1e6:.2f} MB, int8 "
        f"{size_i / 1e6:.2f} MB ({size_i / max(1, size_f):.2f}x)"
    )
    await store8.close()


async def vec_bytes(store: Store) -> int:
    """Bytes of the vec0 vector chunks (``vec_memories_vector_chunks00`` blobs)."""
    async with store.reader.execute(
        "SELECT COALESCE(SUM(LENGTH(vectors)), 0) FROM vec_memories_vector_chunks00"
    ) as cur:
        row = await cur.fetchone()
    return int(row[0])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("path")
    parser.add_argument("--engine", choices=list(STRATEGY), default="hybrid")
    parser.add_argument("--source", choices=["transformers", "static"], default="transformers")
    parser.add_argument(
        "--static-path", default=None, help="static table (.npz) for --source static"
    )
    parser.add_argument("--conversations", type=int, default=None)
    parser.add_argument("--top-k", type=int, default=20)
    parser.add_argument("--no-date", dest="with_date", action="store_false")
    parser.add_argument(
        "--text-only",
        dest="with_speaker",
        action="store_false",
        help="memory text and context without the '[date] speaker:' prefix (the bare turn text)",
    )
    parser.add_argument(
        "--no-context",
        dest="context",
        action="store_false",
        help="store no conversation context (memories.context empty)",
    )
    parser.add_argument(
        "--capture-all",
        action="store_true",
        help="also store turns that only ask or request (learning leaves them out)",
    )
    parser.add_argument("--compare-int8", action="store_true")
    parser.add_argument(
        "--quick", action="store_true", help="skip the full-list recall (MRR full = MRR)"
    )
    parser.add_argument(
        "--grid",
        default=None,
        help="evaluate every combination, e.g. 'rrf_k=10,60;rrf_vector_weight=1,0.5'",
    )
    parser.add_argument(
        "--setting",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="override a setting, e.g. rrf_k=60",
    )
    asyncio.run(main_async(parser.parse_args()))


if __name__ == "__main__":
    main()
