"""What every wire format provides to the gateway's one request flow.

A format knows its request shape (typed msgspec structs for the fields the gateway reads; the
rest passes through as raw bytes), where its recall query and learning turns are, where the
memory block goes, how to read the assistant's text from an answer or a stream, and how errors
look on its route. The request flow in ``services/gateway/pipeline.py`` is format-neutral.
"""

from __future__ import annotations

import abc
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Annotated, Any, Generic, Literal, Protocol, TypeVar

import msgspec

from shared.formats.raw import Fields, decode_fields, decode_typed
from shared.injection import (
    DEFAULT_STRATEGY,
    ProviderCapabilities,
    all_user_texts,
    newest_user_text,
)

FormatName = Literal["chat", "responses", "messages", "embeddings"]
FORMAT_NAMES: tuple[FormatName, ...] = ("chat", "responses", "messages", "embeddings")
StreamStatus = Literal["ok", "failed", "open"]


class EndUserMetadata(msgspec.Struct, frozen=True):
    """``metadata`` of a request: ``user_id`` names the end user (other keys ignored)."""

    user_id: str | None = None


def end_user_of(
    user: str | None, safety_identifier: str | None, metadata: EndUserMetadata | None
) -> str:
    """The first non-blank of ``user``, ``safety_identifier``, ``metadata.user_id``, else ``""``.

    Returned as written (the length limit is checked by :func:`shared.end_user.resolve_end_user`,
    never cut here). Pure.
    """
    meta = metadata.user_id if metadata is not None else None
    for value in (user, safety_identifier, meta):
        if value and value.strip():
            return value
    return ""


@dataclass(frozen=True)
class ParsedRequest:
    """A validated request.

    ``raw``: the body as received. ``fields``: its top-level object, values as ``msgspec.Raw``
    (written back verbatim).
    ``model``: the requested model (may carry a ``provider/`` prefix). ``stream``: SSE wanted.
    ``end_user``: the end-user id the body names (``user``, ``metadata.user_id``...), or ``""``.
    ``query``: the recall query (newest user input, memory blocks removed), ``""`` if none.
    ``learning_turns``: computes the learning source, every user input text oldest first
    (never assistant text); called off the request path, after the answer was sent.
    ``conversation``: computes the user and assistant messages as ``{"role", "content"}`` dicts
    with text content, oldest first (:func:`text_turns`): the search context of captured turns
    (:func:`shared.turn_context.assistant_replies`) and the query rewrite's history, never a
    learning source.
    """

    raw: bytes
    fields: Fields
    model: str
    stream: bool = False
    end_user: str = ""
    query: str = ""
    learning_turns: Callable[[], list[str]] = list
    conversation: Callable[[], list[dict[str, str]]] = list

    @property
    def user_turns(self) -> list[str]:
        """The learning source (computed on each access)."""
        return self.learning_turns()


class OpenAIRequest(msgspec.Struct, frozen=True, kw_only=True):
    """What the gateway reads of every OpenAI request body (chat completions and Responses).

    Each format's struct adds its conversation field (``messages``, ``input``); other fields
    pass through. ``user``, ``safety_identifier`` and ``metadata.user_id`` name the end user, in
    that order (:func:`end_user_of`).
    """

    model: Annotated[str, msgspec.Meta(min_length=1)]
    stream: bool | None = None
    user: str | None = None
    safety_identifier: str | None = None
    metadata: EndUserMetadata | None = None


_Req = TypeVar("_Req", bound=OpenAIRequest)


class OpenAIFormat(abc.ABC, Generic[_Req]):
    """What the OpenAI formats (chat completions, Responses) share: parsing and ``x_api_key``.

    A subclass names its :attr:`request_type` and reads the conversation out of it
    (:meth:`messages`); ``x-api-key`` never authenticates on these routes.
    """

    x_api_key = False
    request_type: type[_Req]

    @abc.abstractmethod
    def messages(self, req: _Req) -> list[dict[str, Any]]:
        """The messages of ``req`` as chat-like ``{"role", "content"}`` dicts, oldest first."""

    def parse(self, raw: bytes) -> ParsedRequest:
        """Validate ``raw`` as :attr:`request_type` and read it. Raises ``InvalidRequest``.

        The messages (:meth:`messages`) give the recall query, the learning source and, as
        ``(role, content)`` pairs, the conversation (:func:`text_turns`).
        """
        req = decode_typed(raw, self.request_type)
        plain = self.messages(req)
        return ParsedRequest(
            raw=raw,
            fields=decode_fields(raw),
            model=req.model,
            stream=req.stream is True,
            end_user=end_user_of(req.user, req.safety_identifier, req.metadata),
            query=newest_user_text(plain),
            learning_turns=lambda: all_user_texts(plain),
            conversation=lambda: text_turns((m["role"], m["content"]) for m in plain),
        )


@dataclass(frozen=True)
class Placement:
    """How to place a block: the injection strategy and the provider's capabilities."""

    strategy: str = DEFAULT_STRATEGY
    caps: ProviderCapabilities = field(default_factory=ProviderCapabilities)


class StreamOutcome(msgspec.Struct, frozen=True):
    """What a captured stream says.

    The assistant's text and whether the stream reached its successful end (``ok``), reported a
    failure or ended unsuccessfully (``failed``), or neither yet (``open``).
    """

    text: str
    status: StreamStatus


class WireFormat(Protocol):
    """One client format.

    ``name`` is what providers list in ``formats``; ``path`` is appended to the provider's
    ``base_url``; ``x_api_key`` tells whether ``x-api-key`` authenticates.
    """

    @property
    def name(self) -> FormatName:
        """The format's name."""
        ...

    @property
    def path(self) -> str:
        """The upstream path, appended to the provider's ``base_url``."""
        ...

    @property
    def x_api_key(self) -> bool:
        """Whether ``x-api-key`` authenticates on this route."""
        ...

    def parse(self, raw: bytes) -> ParsedRequest:
        """Validate and read ``raw``. Raises ``InvalidRequest`` (HTTP 400)."""
        ...

    def place(self, fields: Fields, block: str, placement: Placement) -> Fields | None:
        """New top-level fields with ``block`` placed, or None when there is nowhere to put it.

        Never mutates ``fields``.
        """
        ...

    def assistant_text(self, body: bytes) -> str:
        """The assistant's text in a whole JSON answer, ``""`` when unreadable."""
        ...

    def stream_outcome(self, data: bytes) -> StreamOutcome:
        """Read a captured (possibly truncated) stream."""
        ...

    def event_status(self, event: str, payload: bytes) -> StreamStatus:
        """Classify one SSE event (name or ``""``, data payload) for the stream's end.

        ``ok``: the format's successful terminal event; ``failed``: a failure or a terminal
        event that is not a success; ``open``: any other event (see
        ``shared/formats/stream_end.py``).
        """
        ...

    def stream_error(self, message: str, type_: str, code: str | None, sent: bytes) -> bytes:
        """An in-band SSE error event in this format; ``sent`` is what was relayed so far."""
        ...

    def error_body(self, message: str, type_: str, code: str | None) -> dict[str, Any]:
        """The JSON error body of this route."""
        ...


def openai_error(message: str, type_: str, code: str | None) -> dict[str, Any]:
    """OpenAI's error shape ``{"error": {"message", "type", "code"}}``."""
    return {"error": {"message": message, "type": type_, "code": code}}


def text_of_parts(content: Any, kinds: tuple[str, ...]) -> str:
    r"""Text of a message ``content``: a string as is.

    A list of parts → the ``text`` of parts whose ``type`` is in ``kinds`` joined with ``"\n"``;
    anything else → ``""``.
    """
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    return "\n".join(
        part["text"]
        for part in content
        if isinstance(part, dict)
        and part.get("type", "text") in kinds
        and isinstance(part.get("text"), str)
    )


#: Text part types of an assistant turn (``output_text``: Responses output items sent back).
ASSISTANT_TEXT_KINDS = ("text", "input_text", "output_text")


def text_turns(
    messages: Iterable[tuple[str, Any]],
    user_kinds: tuple[str, ...] = ("text", "input_text"),
    assistant_kinds: tuple[str, ...] = ASSISTANT_TEXT_KINDS,
) -> list[dict[str, str]]:
    """The user and assistant turns of ``messages`` as chat-like dicts with text content.

    ``messages`` holds ``(role, content)`` pairs; each user or assistant turn becomes
    ``{"role", "content"}`` with :func:`text_of_parts` of the role's part kinds; other roles are
    dropped. Pure; never raises.
    """
    out: list[dict[str, str]] = []
    for role, content in messages:
        if role == "user":
            out.append({"role": role, "content": text_of_parts(content, user_kinds)})
        elif role == "assistant":
            out.append({"role": role, "content": text_of_parts(content, assistant_kinds)})
    return out
