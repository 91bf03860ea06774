"""Embeddings from an OpenAI-compatible ``POST {base_url}/embeddings`` endpoint.

The endpoint URL comes from settings an operator (or a tenant, through the settings API) controls,
so it is validated like any server-side request target (:mod:`shared.outbound_policy`): only
http(s), no credentials or query in the URL, never a cloud metadata, link-local or
IPv4-embedding IPv6 address; names are checked again at connect time by the guarded HTTP client
(:mod:`shared.outbound_guard`). Loopback and private addresses stay allowed: self-hosted
embedding servers live there.
"""

from __future__ import annotations

import asyncio
import logging
import math
from collections.abc import Sequence
from http import HTTPStatus

import httpx
import msgspec
import numpy as np

from shared.embedding.base import EmbeddingSource, Vectors, empty_vectors, l2_normalize
from shared.errors import ConfigurationError, EmbeddingError
from shared.outbound_policy import validate_outbound_url

#: Largest TCP port number.
MAX_PORT = 65535

log = logging.getLogger(__name__)


def validate_endpoint_url(url: str) -> str:
    """Check an embedding (or other upstream) base URL.

    See :func:`shared.outbound_policy.validate_outbound_url` (same contract, kept under this name).

    Raises:
        ConfigurationError: the URL is malformed or points at a blocked host or address.
    """
    return validate_outbound_url(url)


class _Item(msgspec.Struct):
    embedding: list[float]
    index: int = -1


class _Response(msgspec.Struct):
    data: list[_Item]


_DECODER = msgspec.json.Decoder(_Response)


class RemoteEmbeddingSource(EmbeddingSource):
    """An OpenAI-compatible embeddings endpoint (OpenAI, vLLM, Ollama, LiteLLM, TEI, …).

    Args:
        client: the shared ``httpx.AsyncClient`` (owned by the caller, not closed here).
        base_url: e.g. ``https://api.openai.com/v1``; validated by :func:`validate_endpoint_url`.
        api_key: sent as ``Authorization: Bearer``; empty → no header. Never logged or repr'd.
        model: model name sent in the request body.
        dim: expected dimension; ``None`` or ``0`` → learn it from the first response.
        timeout_s: total deadline per request in seconds (> 0).
        max_batch: texts per HTTP request (OpenAI accepts up to 2048).

    Raises:
        ConfigurationError: invalid URL, empty model, non-positive timeout/batch or negative dim.
    """

    source = "remote"

    def __init__(
        self,
        client: httpx.AsyncClient,
        base_url: str,
        api_key: str,
        model: str,
        dim: int | None = None,
        timeout_s: float = 5.0,
        *,
        max_batch: int = 256,
    ) -> None:
        if not model:
            raise ConfigurationError("remote embeddings need a model name")
        if dim is not None and dim < 0:
            raise ConfigurationError("embedding dimension must be positive")
        if not timeout_s > 0 or not math.isfinite(timeout_s):
            raise ConfigurationError("embedding timeout must be a positive number of seconds")
        if max_batch < 1:
            raise ConfigurationError("max_batch must be at least 1")
        self._client = client
        self.base_url = validate_endpoint_url(base_url)
        self._api_key = api_key
        self.model = model
        self.dim = dim or 0
        self._timeout_s = timeout_s
        self._max_batch = max_batch

    async def embed(self, texts: Sequence[str]) -> Vectors:
        """Embed ``texts``, one request per ``max_batch`` texts; see :meth:`EmbeddingSource.embed`.

        Raises:
            EmbeddingError: ``.code`` is ``embedding_timeout`` (deadline passed),
                ``embedding_rate_limited`` (HTTP 429), ``embedding_http_error`` (any other
                non-2xx), ``embedding_unreachable`` (connection failed),
                ``embedding_bad_response`` (body not the OpenAI shape, wrong count, non-finite
                values) or ``embedding_dimension_mismatch`` (length differs from the configured
                or first-seen dimension).
        """
        if not texts:
            return empty_vectors(self.dim)
        chunks = [
            await self._request(list(texts[i : i + self._max_batch]))
            for i in range(0, len(texts), self._max_batch)
        ]
        return chunks[0] if len(chunks) == 1 else np.concatenate(chunks, axis=0)

    async def _request(self, texts: list[str]) -> Vectors:
        headers = {"Authorization": f"Bearer {self._api_key}"} if self._api_key else {}
        body = {"model": self.model, "input": texts, "encoding_format": "float"}
        try:
            async with asyncio.timeout(self._timeout_s):
                resp = await self._client.post(
                    f"{self.base_url}/embeddings",
                    json=body,
                    headers=headers,
                    timeout=self._timeout_s,
                )
        except (TimeoutError, httpx.TimeoutException):
            raise EmbeddingError(
                f"embedding request timed out after {self._timeout_s:g}s",
                code="embedding_timeout",
            ) from None
        except httpx.HTTPError as exc:
            raise EmbeddingError(
                f"embedding endpoint unreachable: {type(exc).__name__}",
                code="embedding_unreachable",
            ) from None
        if resp.status_code == HTTPStatus.TOO_MANY_REQUESTS:
            raise EmbeddingError(
                "embedding endpoint rate-limited (429)", code="embedding_rate_limited"
            )
        if not resp.is_success:
            raise EmbeddingError(
                f"embedding endpoint answered HTTP {resp.status_code}", code="embedding_http_error"
            )
        return self._parse(resp.content, len(texts))

    def _parse(self, content: bytes, expected: int) -> Vectors:
        try:
            data = _DECODER.decode(content).data
        except (msgspec.DecodeError, msgspec.ValidationError) as exc:
            raise EmbeddingError(
                f"embedding response malformed: {str(exc)[:120]}", code="embedding_bad_response"
            ) from None
        if len(data) != expected:
            raise EmbeddingError(
                f"embedding response has {len(data)} vectors for {expected} inputs",
                code="embedding_bad_response",
            )
        if all(item.index >= 0 for item in data):
            data = sorted(data, key=lambda item: item.index)
            if [item.index for item in data] != list(range(expected)):
                raise EmbeddingError(
                    "embedding response indices do not match the inputs",
                    code="embedding_bad_response",
                )
        lengths = {len(item.embedding) for item in data}
        if len(lengths) != 1 or 0 in lengths:
            raise EmbeddingError(
                "embedding response vectors have inconsistent lengths",
                code="embedding_bad_response",
            )
        got = lengths.pop()
        if self.dim and got != self.dim:
            raise EmbeddingError(
                f"embedding dimension {got} differs from the expected {self.dim}",
                code="embedding_dimension_mismatch",
            )
        mat = np.asarray([item.embedding for item in data], dtype=np.float32)
        if not np.isfinite(mat).all():
            raise EmbeddingError(
                "embedding response contains non-finite values", code="embedding_bad_response"
            )
        if not self.dim:
            self.dim = got
            log.info(
                "remote embedding dimension learned: %s:%s -> %d", self.base_url, self.model, got
            )
        return l2_normalize(mat)

    def __repr__(self) -> str:
        return f"<RemoteEmbeddingSource {self.signature} at {self.base_url}>"
