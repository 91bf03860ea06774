"""The one error hierarchy of mnemogate.

Every error the project raises on purpose derives from :class:`MnemogateError`. Each class carries
the HTTP status and the OpenAI-style ``type``/``code`` that the gateway renders as ``{"error":
{"message", "type", "code"}}`` (see "Shape" in ``docs/ARCHITECTURE.md``). Third-party errors
(sqlean, redis, httpx, qdrant) are mapped to these at the adapter boundary.
"""

from __future__ import annotations


class MnemogateError(Exception):
    """Base class. ``status`` is the HTTP status, ``type``/``code`` go into the error body."""

    status: int = 500
    type: str = "server_error"
    code: str | None = "internal_error"

    def __init__(self, message: str, *, code: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        if code is not None:
            self.code = code


class InvalidRequest(MnemogateError):
    """The client sent something malformed or out of range (HTTP 400)."""

    status = 400
    type = "invalid_request_error"
    code = "invalid_request"


class AuthenticationFailed(MnemogateError):
    """Missing, unknown or revoked credentials (HTTP 401)."""

    status = 401
    type = "authentication_error"
    code = "invalid_api_key"


class PermissionDenied(MnemogateError):
    """Authenticated, but not allowed to do this (HTTP 403)."""

    status = 403
    type = "permission_error"
    code = "forbidden"


class NotFound(MnemogateError):
    """No such resource visible to the caller (HTTP 404). Other owners' ids are 404 too."""

    status = 404
    type = "not_found_error"
    code = "not_found"


class Conflict(MnemogateError):
    """The request clashes with the current state (e.g. a memory key already in use): 409."""

    status = 409
    type = "invalid_request_error"
    code = "conflict"


class PayloadTooLarge(MnemogateError):
    """The request body exceeds ``max_body_bytes`` (HTTP 413)."""

    status = 413
    type = "invalid_request_error"
    code = "payload_too_large"


class UnsupportedMediaType(MnemogateError):
    """The request body is in a content coding the gateway does not read (HTTP 415).

    RFC 9110 §15.5.16: "the origin server is refusing to service the request because the content
    is in a format not supported"; a compressed (``Content-Encoding``) body is one.
    """

    status = 415
    type = "invalid_request_error"
    code = "unsupported_content_encoding"


class RequestTimeout(MnemogateError):
    """The request body did not arrive within ``body_read_timeout_s`` (HTTP 408)."""

    status = 408
    type = "invalid_request_error"
    code = "request_timeout"


class UpstreamUnavailable(MnemogateError):
    """The upstream provider could not be reached or failed at the transport level (HTTP 502)."""

    status = 502
    type = "upstream_error"
    code = "upstream_unavailable"


class UpstreamTimeout(MnemogateError):
    """The upstream provider did not answer within the configured timeout (HTTP 504)."""

    status = 504
    type = "upstream_error"
    code = "upstream_timeout"


class ConfigurationError(MnemogateError):
    """Settings are invalid or inconsistent (raised at start-up, or 400 on a settings update).

    ``setting``: the field refused, when one is (its message then starts ``setting '<field>'``,
    which :func:`shared.settings.load_settings` rewrites to name the environment variable).
    """

    status = 400
    type = "invalid_request_error"
    code = "invalid_settings"

    def __init__(
        self, message: str, *, code: str | None = None, setting: str | None = None
    ) -> None:
        super().__init__(message, code=code)
        self.setting = setting


class StoreError(MnemogateError):
    """The SQLite store failed (mapped from ``sqlean.Error``)."""

    status = 503
    type = "server_error"
    code = "store_unavailable"


class EmbeddingError(MnemogateError):
    """An embedding source failed: timeout, HTTP error, rate limit or wrong dimension."""

    status = 503
    type = "server_error"
    code = "embedding_unavailable"


class VectorIndexError(MnemogateError):
    """A vector tier (sqlite-vec or Qdrant) failed or is misconfigured (e.g. dimension mismatch)."""

    status = 503
    type = "server_error"
    code = "vector_index_unavailable"


class JobError(MnemogateError):
    """A background job could not be enqueued or failed permanently."""

    status = 503
    type = "server_error"
    code = "job_failed"
