"""Whether a relayed SSE stream reached its format's successful end, followed as it arrives.

Each format classifies one event (its ``event_status`` predicate): ``ok`` for its successful
terminal event (chat ``data: [DONE]``, Responses ``response.completed``, Messages
``message_stop``), ``failed`` for a failure or a terminal event that is not a success (an in-band
error, ``response.failed``, ``response.incomplete``), ``open`` for any other event. A stream's
status folds its events: ``failed`` once any event failed, else ``ok`` once the successful
terminal event was seen, else ``open`` (the upstream stopped early). Only an ``ok`` stream is
learned from; an ``open`` one gets an in-band error event appended by the relay
(docs/ARCHITECTURE.md, "Streaming").
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable

from shared.formats.base import StreamStatus
from shared.formats.sse import iter_events

EventStatus = Callable[[str, bytes], StreamStatus]
"""A format's predicate over one event: ``(event name or "", data payload) -> status``."""

MAX_PENDING_BYTES = 16 * 1024 * 1024
"""Largest single event followed (bytes); a longer one cannot be read and counts as ``open``."""

_BOUNDARY = re.compile(rb"\r?\n\r?\n")


def fold(status: StreamStatus, event: StreamStatus) -> StreamStatus:
    """The stream status after one more event: ``failed`` sticks, then ``ok`` sticks."""
    if "failed" in (status, event):
        return "failed"
    return "ok" if "ok" in (status, event) else "open"


def fold_events(
    events: Iterable[tuple[str, bytes]], classify: EventStatus, status: StreamStatus = "open"
) -> StreamStatus:
    """``status`` folded with every event of ``events`` under ``classify``."""
    for name, payload in events:
        status = fold(status, classify(name, payload))
    return status


class StreamEnd:
    """Follows a stream chunk by chunk and keeps its status (see the module docstring).

    Only the event in progress is held (at most :data:`MAX_PENDING_BYTES`); complete events are
    classified as soon as their blank line arrives.
    """

    def __init__(self, classify: EventStatus) -> None:
        """Follow a stream whose events ``classify`` judges; the status starts ``open``."""
        self._classify = classify
        self._pending = bytearray()
        self._overflow = False
        self.status: StreamStatus = "open"

    def feed(self, chunk: bytes) -> None:
        """Take the next relayed ``chunk``; classify the events it completes."""
        start = max(0, len(self._pending) - 3)  # a boundary may straddle two chunks
        self._pending.extend(chunk)
        end = -1
        for match in _BOUNDARY.finditer(self._pending, start):
            end = match.end()
        if end >= 0:
            complete = bytes(self._pending[:end])
            del self._pending[:end]
            if self._overflow:  # the head of this event was dropped: skip what is left of it
                first = _BOUNDARY.search(complete)
                complete = complete[first.end() :] if first else b""
                self._overflow = False
            self.status = fold_events(iter_events(complete), self._classify, self.status)
        if len(self._pending) > MAX_PENDING_BYTES:
            self._pending.clear()
            self._overflow = True

    def finish(self) -> StreamStatus:
        """The final status once the upstream ended (a last event without its blank line counts).

        Returns:
            ``ok``, ``failed`` or ``open`` (see the module docstring).
        """
        if self._pending and not self._overflow:
            rest = bytes(self._pending)
            self.status = fold_events(iter_events(rest), self._classify, self.status)
        self._pending.clear()
        return self.status
