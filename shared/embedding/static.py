"""Static (model2vec-style) embeddings distilled from all-MiniLM-L6-v2: a lookup table, no model.

Method (model2vec, Tulkens & van Dongen 2024, https://github.com/MinishLab/model2vec):

1. embed every vocabulary token alone (``[CLS] token [SEP]``) with the transformer, mean-pooled;
2. reduce the 384-d token vectors to ``dim`` (default 256) with PCA, computed with numpy's SVD of
   the covariance matrix; components are sign-fixed so builds are reproducible;
3. weight each row by SIF (Arora, Liang & Ma 2017, "A simple but tough-to-beat baseline for
   sentence embeddings") with a Zipf estimate of the token's probability from its vocabulary rank,
   as model2vec's ``sif_coefficient`` does: ``p(r) = (1/r) / H_V``, ``w(r) = a / (a + p(r))``,
   ``a = 1e-4``. The BERT vocabulary is only roughly frequency-ordered, so this mostly damps the
   most common words (ids ~2000-3000).

A sentence vector is the mean of its word pieces' rows (no [CLS]/[SEP]), L2-normalised. Special
and ``[unusedN]`` tokens get zero rows. On 2 shared cores the build took 18-30 s and embedding
ran at ~28k (20-token) to ~60k (8-token) sentences/s (an earlier measurement: ~16 s and ~35k/s). The
``.npz`` holds the table, the tokenizer JSON and metadata, so loading needs only ``numpy`` and
``tokenizers``.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import os
import tempfile
from collections.abc import Callable, Collection, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from shared.embedding.base import EmbeddingSource, Vectors, empty_vectors, l2_normalize
from shared.embedding.onnx_minilm import (
    MODEL_DIM,
    MODEL_NAME,
    load_session,
    load_tokenizer,
    run_model,
    tokenizer_json,
)
from shared.embedding.wordpiece import ascii_wordpiece
from shared.errors import ConfigurationError, EmbeddingError

#: Rank of a table of vectors (rows × dimensions).
MATRIX_NDIM = 2

if TYPE_CHECKING:
    from tokenizers import Tokenizer

#: Default table width (model2vec's potion models use 256).
DEFAULT_DIM = 256
#: model2vec's default SIF coefficient ``a``.
DEFAULT_SIF_COEFFICIENT = 1e-4
#: Default file name of the table inside a cache directory.
DEFAULT_FILE_NAME = f"minilm-static-{DEFAULT_DIM}.npz"
#: Version of the ``.npz`` layout.
FORMAT_VERSION = 1
#: Batches smaller than this many characters are embedded on the event loop (a thread hop costs
#: more than the work); larger ones go to a worker thread.
INLINE_MAX_CHARS = 4096
#: Texts per tokenize-and-sum step in :meth:`StaticEmbeddingSource.embed_sync` (measured best
#: between 16 and 64 on 2 cores).
EMBED_CHUNK = 32

ProgressCallback = Callable[[int, int], None]
_FIRST = np.zeros(1, dtype=np.int64)
"""``reduceat`` offsets of one text."""


def _is_special(token: str) -> bool:
    return token.startswith("[") and token.endswith("]")


def _sif_weights(vocab_size: int, coefficient: float) -> npt.NDArray[np.float32]:
    """SIF weights ``a / (a + p(r))`` with Zipf ``p(r) = (1/r)/H_V``, ``r = id + 1``."""
    inv_rank = 1.0 / np.arange(1, vocab_size + 1, dtype=np.float64)
    proba = inv_rank / inv_rank.sum()
    weights: npt.NDArray[np.float32] = (coefficient / (coefficient + proba)).astype(np.float32)
    return weights


def build_static_table(
    out_path: str | os.PathLike[str],
    dim: int = DEFAULT_DIM,
    progress: ProgressCallback | None = None,
    *,
    token_ids: Collection[int] | None = None,
    sif_coefficient: float | None = DEFAULT_SIF_COEFFICIENT,
    batch_size: int = 1024,
    threads: int = 0,
) -> Path:
    """Distill the static table from the ONNX transformer and write it to ``out_path``.

    CPU-bound and synchronous (18-30 s on 2 cores for the whole vocabulary); call it from a
    worker thread or a CLI, not on an event loop. The file is written atomically (temp + rename).

    Args:
        out_path: target ``.npz`` file; parent directories are created.
        dim: table width, 1..384 (PCA components kept).
        progress: called as ``progress(done_tokens, total_tokens)`` after every batch.
        token_ids: embed only these vocabulary ids (others get zero rows) — for tests; the
            default is the whole 30,522-token vocabulary.
        sif_coefficient: SIF ``a``; ``None`` disables the weighting.
        batch_size: tokens per forward pass.
        threads: onnxruntime intra-op threads (0 = default).

    Returns:
        The path written.

    Raises:
        ConfigurationError: ``dim`` out of range, or fewer usable tokens than ``dim``.
        EmbeddingError: the local-embeddings packages are missing.
    """
    if not 1 <= dim <= MODEL_DIM:
        raise ConfigurationError(f"static table dim must be in 1..{MODEL_DIM}")
    tok_text = tokenizer_json()
    tok = load_tokenizer(tok_text)
    vocab_size = tok.get_vocab_size()
    vocab = tok.get_vocab()
    special = {i for t, i in vocab.items() if _is_special(t)}
    wanted = range(vocab_size) if token_ids is None else sorted(set(token_ids))
    ids = np.array([i for i in wanted if 0 <= i < vocab_size and i not in special], np.int64)
    if len(ids) < dim:
        raise ConfigurationError(f"need at least {dim} tokens to fit {dim} PCA components")

    token_vecs = _token_vectors(ids, vocab, batch_size, threads, progress)
    reduced = _principal_components(token_vecs, dim)
    if sif_coefficient is not None:
        reduced *= _sif_weights(vocab_size, sif_coefficient)[ids, None]
    table = np.zeros((vocab_size, dim), dtype=np.float32)
    table[ids] = reduced.astype(np.float32)
    meta = _table_meta(dim, vocab_size, len(ids), sif_coefficient, partial=token_ids is not None)
    return _write_table(Path(out_path), table, tok_text, meta)


def _table_meta(
    dim: int, vocab_size: int, embedded: int, sif_coefficient: float | None, *, partial: bool
) -> dict[str, object]:
    """The table's metadata; its model name says how it differs from the default build."""
    model = f"{MODEL_NAME}-static"
    if sif_coefficient != DEFAULT_SIF_COEFFICIENT:
        model += "-nosif" if sif_coefficient is None else f"-sif{sif_coefficient:g}"
    if partial:
        model += "-partial"
    return {
        "format": FORMAT_VERSION,
        "model": model,
        "teacher": MODEL_NAME,
        "dim": dim,
        "vocab_size": vocab_size,
        "tokens_embedded": embedded,
        "sif_coefficient": sif_coefficient,
    }


def _token_vectors(
    ids: npt.NDArray[np.int64],
    vocab: dict[str, int],
    batch_size: int,
    threads: int,
    progress: ProgressCallback | None,
) -> npt.NDArray[np.float32]:
    """The transformer's vector of each token ``ids`` alone (``[CLS] token [SEP]``).

    Shape ``(len(ids), 384)``; ``progress(done, total)`` after every batch.
    """
    session = load_session(threads)
    cls_id, sep_id = vocab["[CLS]"], vocab["[SEP]"]
    token_vecs = np.empty((len(ids), MODEL_DIM), dtype=np.float32)
    for start in range(0, len(ids), batch_size):
        chunk = ids[start : start + batch_size]
        seq = np.stack([np.full_like(chunk, cls_id), chunk, np.full_like(chunk, sep_id)], axis=1)
        token_vecs[start : start + len(chunk)] = run_model(session, seq, np.ones_like(seq))
        if progress is not None:
            progress(start + len(chunk), len(ids))
    return token_vecs


def _principal_components(token_vecs: npt.NDArray[np.float32], dim: int) -> npt.NDArray[np.float64]:
    """``token_vecs`` centred and projected on their first ``dim`` principal components.

    PCA: eigenvectors of the covariance via SVD (symmetric PSD, so U = V = the eigenvectors);
    each component's sign is fixed so that its largest coordinate is positive.
    """
    n = len(token_vecs)
    centred = token_vecs.astype(np.float64) - token_vecs.mean(axis=0, dtype=np.float64)
    cov = centred.T @ centred / max(n - 1, 1)
    components = np.linalg.svd(cov)[0][:, :dim]
    signs = np.sign(components[np.abs(components).argmax(axis=0), np.arange(dim)])
    components *= np.where(signs == 0, 1.0, signs)
    reduced: npt.NDArray[np.float64] = centred @ components
    return reduced


def _write_table(
    out: Path, table: npt.NDArray[np.float32], tok_text: str, meta: dict[str, object]
) -> Path:
    """Write the table, the tokenizer and ``meta`` to ``out`` atomically (temp file + rename)."""
    out.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(prefix=out.name, suffix=".tmp", dir=out.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            np.savez(
                fh,
                table=table,
                tokenizer=np.frombuffer(tok_text.encode("utf-8"), dtype=np.uint8),
                meta=np.frombuffer(json.dumps(meta).encode("utf-8"), dtype=np.uint8),
            )
        os.replace(tmp_name, out)
    except BaseException:
        Path(tmp_name).unlink(missing_ok=True)
        raise
    return out


class StaticEmbeddingSource(EmbeddingSource):
    """Embeddings by table lookup: tokenize, mean of token rows, L2-normalise.

    Build one with :meth:`load`. ``dim`` is the table width (256 by default); ``model`` comes
    from the file (``all-MiniLM-L6-v2-int8-static`` for a default build).
    """

    source = "static"
    #: Static (bag-of-word-pieces) vectors share a large common component: unrelated or
    #: content-free queries ("*", "AND OR NOT") reached 0.45-0.52 against long memories, related
    #: pairs 0.55-0.62 (measured on the distilled 256-d table).
    min_similarity = 0.5

    def __init__(self, table: npt.NDArray[np.float32], tokenizer: Tokenizer, model: str) -> None:
        if table.ndim != MATRIX_NDIM or table.shape[0] != tokenizer.get_vocab_size():
            raise EmbeddingError(
                "static table does not match its tokenizer", code="static_table_invalid"
            )
        self._table = np.ascontiguousarray(table, dtype=np.float32)
        self._tokenizer = tokenizer
        # a query's ids in Python (plain ASCII): a tokenizer call costs more than the lookups
        self._wordpiece = ascii_wordpiece(tokenizer)
        self.model = model
        self.dim = int(table.shape[1])

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> StaticEmbeddingSource:
        """Load a table written by :func:`build_static_table` (~0.1 s, ~31 MB of RAM at 256-d).

        Raises:
            EmbeddingError: ``static_table_missing`` (no file) or ``static_table_invalid``
                (unreadable, wrong layout, or ``tokenizers`` not installed →
                ``embedding_unavailable``).
        """
        p = Path(path)
        if not p.is_file():
            raise EmbeddingError(f"static table {p} does not exist", code="static_table_missing")
        try:
            with np.load(p, allow_pickle=False) as data:
                table = data["table"]
                tok_text = data["tokenizer"].tobytes().decode("utf-8")
                meta: dict[str, Any] = json.loads(data["meta"].tobytes().decode("utf-8"))
            if meta.get("format") != FORMAT_VERSION or table.dtype != np.float32:
                raise ValueError("unsupported static table format")
        except (OSError, KeyError, ValueError, UnicodeDecodeError) as exc:
            raise EmbeddingError(
                f"static table {p} is unreadable: {str(exc)[:120]}", code="static_table_invalid"
            ) from None
        return cls(table, load_tokenizer(tok_text), str(meta.get("model", "static")))

    def embed_sync(self, texts: Sequence[str]) -> Vectors:
        """Synchronous :meth:`embed` (pure CPU, no I/O); same shapes and guarantees.

        Works in chunks of :data:`EMBED_CHUNK` texts so temporaries stay small (large gathers
        page-fault their way through fresh memory and run 3x slower). One text (a query) skips
        the chunking, and plain ASCII is tokenized in Python (:mod:`shared.embedding.wordpiece`:
        the same ids); it is summed the same way, so its vector is bit-identical to the batch
        path's.
        """
        if not texts:
            return empty_vectors(self.dim)
        items = list(texts)
        if len(items) == 1:
            ids = None if self._wordpiece is None else self._wordpiece.ids(items[0])
            if ids is None:
                ids = self._tokenizer.encode(items[0], add_special_tokens=False).ids
            return self._one(ids)
        out = np.zeros((len(items), self.dim), dtype=np.float32)
        # encode_batch_fast (tokenizers ≥ 0.20) skips character offsets we do not need.
        encode = getattr(self._tokenizer, "encode_batch_fast", self._tokenizer.encode_batch)
        for start in range(0, len(items), EMBED_CHUNK):
            encs = encode(items[start : start + EMBED_CHUNK], add_special_tokens=False)
            lengths = np.fromiter((len(e.ids) for e in encs), dtype=np.int64, count=len(encs))
            flat = np.fromiter(
                itertools.chain.from_iterable(e.ids for e in encs),
                dtype=np.int64,
                count=int(lengths.sum()),
            )
            nonempty = lengths > 0
            if nonempty.any():
                offsets = np.concatenate(([0], np.cumsum(lengths)[:-1]))
                sums = np.add.reduceat(self._table[flat], offsets[nonempty], axis=0)
                out[start : start + len(encs)][nonempty] = sums
        return l2_normalize(out)

    def _one(self, ids: list[int]) -> Vectors:
        """The (1, dim) vector of one text's token ``ids``: :meth:`embed_sync`'s arithmetic."""
        if not ids:
            return np.zeros((1, self.dim), dtype=np.float32)
        return l2_normalize(np.add.reduceat(self._table[ids], _FIRST, axis=0))

    async def embed(self, texts: Sequence[str]) -> Vectors:
        """See :meth:`EmbeddingSource.embed`.

        Small batches (< 4096 characters in all) run inline; larger ones in a worker thread. A text
        with no known word piece gives a zero row.
        """
        if sum(len(t) for t in texts) < INLINE_MAX_CHARS:
            return self.embed_sync(texts)
        return await asyncio.to_thread(self.embed_sync, list(texts))
