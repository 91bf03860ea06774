"""Choosing the embedding source from plain settings values (degrade, never fail)."""

from __future__ import annotations

import logging
import os
from pathlib import Path

import httpx

from shared.embedding.base import EmbeddingSource
from shared.embedding.cache import CachedEmbeddingSource, EmbeddingCache
from shared.embedding.onnx_minilm import TransformerEmbeddingSource, transformers_available
from shared.embedding.remote import RemoteEmbeddingSource
from shared.embedding.static import DEFAULT_FILE_NAME, StaticEmbeddingSource
from shared.errors import ConfigurationError, EmbeddingError

log = logging.getLogger(__name__)

#: Accepted values of ``kind``.
SOURCE_CHOICES = ("auto", "remote", "transformers", "static", "none")


def static_table_path(
    static_path: str | os.PathLike[str] | None, cache_dir: str | os.PathLike[str] | None
) -> Path | None:
    """Where the static table is.

    ``static_path`` if given, else ``cache_dir/minilm-static-256.npz``, else ``None``.
    """
    if static_path:
        return Path(static_path)
    if cache_dir:
        return Path(cache_dir) / DEFAULT_FILE_NAME
    return None


def select_source(
    kind: str,
    *,
    client: httpx.AsyncClient | None = None,
    base_url: str = "",
    api_key: str = "",
    model: str = "",
    dim: int | None = None,
    timeout_s: float = 5.0,
    cache_dir: str | os.PathLike[str] | None = None,
    static_path: str | os.PathLike[str] | None = None,
    cache: EmbeddingCache | None = None,
) -> EmbeddingSource | None:
    """Build the embedding source ``kind`` names; ``None`` means keyword-only retrieval.

    ``"auto"``: remote if ``base_url`` is set; else static if its table file exists (and loads);
    else transformers if :func:`transformers_available`; else ``None``. The explicit kinds insist
    on their source. Nothing is downloaded, and the transformer loads lazily on first use.

    Args:
        kind: one of :data:`SOURCE_CHOICES`.
        client: shared HTTP client, required for a remote source.
        base_url: the remote endpoint's base URL.
        api_key: the remote endpoint's API key.
        model: the remote model name.
        dim: the remote vector dimension (0/None = learn it from the first answer).
        timeout_s: the remote request timeout, in seconds.
        cache_dir: directory holding the default static table file (:data:`DEFAULT_FILE_NAME`).
        static_path: explicit static table file (overrides ``cache_dir``).
        cache: if given, the chosen source is wrapped in :class:`CachedEmbeddingSource`.

    Raises:
        ConfigurationError: unknown ``kind``; remote without ``base_url``/``client`` or with an
            invalid URL; static without a readable table; transformers not installed.
    """
    chosen = _choose(
        kind,
        client=client,
        base_url=base_url,
        api_key=api_key,
        model=model,
        dim=dim,
        timeout_s=timeout_s,
        table=static_table_path(static_path, cache_dir),
    )
    if chosen is None or cache is None:
        return chosen
    return CachedEmbeddingSource(chosen, cache)


def _static(table: Path | None) -> EmbeddingSource:
    """The static source over ``table``.

    Raises:
        ConfigurationError: no table path, or the table cannot be loaded.
    """
    if table is None:
        raise ConfigurationError("embedding source 'static' needs a table path or cache dir")
    try:
        return StaticEmbeddingSource.load(table)
    except EmbeddingError as exc:
        raise ConfigurationError(f"{exc.message}; build it with build_static_table()") from None


def _choose(
    kind: str,
    *,
    client: httpx.AsyncClient | None,
    base_url: str,
    api_key: str,
    model: str,
    dim: int | None,
    timeout_s: float,
    table: Path | None,
) -> EmbeddingSource | None:
    if kind not in SOURCE_CHOICES:
        raise ConfigurationError(f"unknown embedding source {kind!r}; use one of {SOURCE_CHOICES}")
    if kind == "none":
        return None
    if kind == "remote" or (kind == "auto" and base_url):
        if not base_url:
            raise ConfigurationError("embedding source 'remote' needs an embedding base URL")
        if client is None:
            raise ConfigurationError("embedding source 'remote' needs an HTTP client")
        return RemoteEmbeddingSource(client, base_url, api_key, model, dim, timeout_s)
    if kind == "static":
        return _static(table)
    if kind == "auto" and table is not None and table.is_file():
        try:
            return StaticEmbeddingSource.load(table)
        except EmbeddingError as exc:
            log.warning("static embedding table not usable, falling back: %s", exc.message)
    if transformers_available():
        return TransformerEmbeddingSource()
    if kind == "transformers":
        raise ConfigurationError(
            "embedding source 'transformers' needs the local-embeddings extra "
            "(pip install 'mnemogate[local-embeddings]')"
        )
    log.info("no embedding source available: keyword-only retrieval")
    return None
