"""Qdrant failures mapped to :class:`~shared.errors.VectorIndexError` with a short ``code``.

qdrant-client raises httpx, grpc, timeout and its own exceptions depending on the transport and
mode (server or local); :func:`map_error` turns each into one error the engine can degrade on:
``qdrant_timeout``, ``qdrant_unavailable``, ``qdrant_unauthorized``,
``qdrant_collection_missing``, ``qdrant_bad_request``.
"""

from __future__ import annotations

from http import HTTPStatus

import grpc  # a qdrant-client dependency; only its gRPC transport raises grpc.RpcError
import httpx
from qdrant_client.http.exceptions import ResponseHandlingException, UnexpectedResponse

from shared.errors import VectorIndexError

#: Client errors that are worth retrying: request timeout and rate limiting.
RETRYABLE_4XX = (HTTPStatus.REQUEST_TIMEOUT, HTTPStatus.TOO_MANY_REQUESTS)
#: Answers that mean the API key is wrong or lacks rights.
UNAUTHORIZED = (HTTPStatus.UNAUTHORIZED, HTTPStatus.FORBIDDEN)


def _status_code(status: int | None) -> str:
    if status in UNAUTHORIZED:
        return "qdrant_unauthorized"
    if status == HTTPStatus.NOT_FOUND:
        return "qdrant_collection_missing"
    if (
        status is not None
        and HTTPStatus.BAD_REQUEST <= status < HTTPStatus.INTERNAL_SERVER_ERROR
        and status not in RETRYABLE_4XX
    ):
        return "qdrant_bad_request"
    return "qdrant_unavailable"


def _is_timeout(exc: BaseException) -> bool:
    if isinstance(exc, TimeoutError | httpx.TimeoutException):
        return True
    if isinstance(exc, ResponseHandlingException):
        return _is_timeout(exc.source)
    return False


def already_exists(exc: BaseException) -> bool:
    """True if ``exc`` says the collection or index being created exists already."""
    if isinstance(exc, UnexpectedResponse):
        return exc.status_code == HTTPStatus.CONFLICT or b"already exists" in exc.content
    return "already exists" in str(exc)


def map_error(exc: BaseException, action: str, timeout_s: float) -> VectorIndexError:
    """Translate a Qdrant-side exception raised while doing ``action`` into a VectorIndexError.

    Returns (does not raise) the mapped error; ``code`` is one of ``qdrant_timeout``,
    ``qdrant_unauthorized``, ``qdrant_collection_missing``, ``qdrant_bad_request``,
    ``qdrant_unavailable``.
    """
    if isinstance(exc, VectorIndexError):
        return exc
    if _is_timeout(exc):
        return VectorIndexError(
            f"qdrant timed out after {timeout_s:g}s while {action}", code="qdrant_timeout"
        )
    if isinstance(exc, UnexpectedResponse):
        code = _status_code(exc.status_code)
        detail = exc.content[:200].decode("utf-8", "replace").strip()
        return VectorIndexError(
            f"qdrant answered HTTP {exc.status_code} while {action}: {detail}", code=code
        )
    if isinstance(exc, ResponseHandlingException):
        exc = exc.source
    if isinstance(exc, ValueError) and "not found" in str(exc).lower():
        # local mode raises ValueError("Collection ... not found")
        return VectorIndexError(
            f"qdrant collection missing while {action}: {exc}", code="qdrant_collection_missing"
        )
    if isinstance(exc, ValueError):
        return VectorIndexError(f"qdrant rejected {action}: {exc}", code="qdrant_bad_request")
    name = type(exc).__name__
    return VectorIndexError(
        f"qdrant unreachable while {action}: {name}: {exc}", code="qdrant_unavailable"
    )


#: Exceptions the adapter maps; anything else is a bug and propagates unchanged.
MAPPED_ERRORS: tuple[type[BaseException], ...] = (
    TimeoutError,
    UnexpectedResponse,
    ResponseHandlingException,
    httpx.HTTPError,
    OSError,
    ValueError,
    grpc.RpcError,
)
