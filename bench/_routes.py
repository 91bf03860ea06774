"""The client formats side by side for ``bench/gateway.py --routes chat,responses,messages``.

Each route (``/v1/chat/completions``, ``/v1/responses``, ``/v1/messages``) gets the same
conversation (an instruction, a user turn, an assistant ``ok`` and a distinct LoCoMo question) in
its own wire format, JSON and streamed. Requests are interleaved (for every question: each route,
upstream alone then gateway, JSON then stream) so that every figure sees the same machine state.
Added latency is the p50/p90 through the gateway minus the same percentile of the fake upstream
alone on the same route; TTFB is the time to the first content delta event (chat
``choices[0].delta.content``, Responses ``response.output_text.delta``, Messages
``content_block_delta``). Each route's figures are printed with their ratio to the chat route's.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import aiohttp

from bench.recall_latency import pct

Delta = Callable[[dict[str, Any]], bool]


def _chat_delta(event: dict[str, Any]) -> bool:
    choices = event.get("choices") or [{}]
    return bool((choices[0].get("delta") or {}).get("content"))


@dataclass(frozen=True)
class Route:
    """One client format: its path, body builder, request headers and first-delta predicate."""

    name: str
    path: str
    is_delta: Delta

    def body(self, question: str, stream: bool, gateway: bool) -> str:
        """The JSON body of one request; ``gateway`` selects the provider-prefixed model."""
        turns = [
            {"role": "user", "content": "Hello, I am back."},
            {"role": "assistant", "content": "ok"},
            {"role": "user", "content": question},
        ]
        if self.name == "chat":
            msgs = [{"role": "system", "content": "Be brief."}, *turns]
            return json.dumps({"model": "m", "messages": msgs, "stream": stream})
        if self.name == "responses":
            body = {"model": "m", "instructions": "Be brief.", "input": turns, "stream": stream}
            return json.dumps(body)
        model = "claude/c" if gateway else "c"
        return json.dumps(
            {"model": model, "max_tokens": 64, "system": "Be brief.", "messages": turns}
            | {"stream": stream}
        )

    def headers(self, key: str) -> dict[str, str]:
        """Headers carrying ``key`` the way this format's SDK sends it."""
        if self.name == "messages":
            return {"x-api-key": key, "anthropic-version": "2023-06-01"}
        return {"authorization": f"Bearer {key}"}


ROUTES = {
    "chat": Route("chat", "/chat/completions", _chat_delta),
    "responses": Route(
        "responses", "/responses", lambda e: e.get("type") == "response.output_text.delta"
    ),
    "messages": Route("messages", "/messages", lambda e: e.get("type") == "content_block_delta"),
}


def _has_delta(buf: bytes, route: Route) -> bool:
    """Whether a complete ``data:`` line of ``buf`` is this route's first content delta."""
    for line in buf.split(b"\n")[:-1]:
        if not line.startswith(b"data:"):
            continue
        try:
            event = json.loads(line[5:])
        except ValueError:
            continue
        if isinstance(event, dict) and route.is_delta(event):
            return True
    return False


async def timed(
    session: aiohttp.ClientSession, url: str, headers: dict[str, str], body: str, route: Route
) -> tuple[float, float]:
    """One request: (total ms, ms to the first content delta; 0 for JSON). Raises on non-2xx."""
    t = time.perf_counter()
    ttfb = 0.0
    async with session.post(url, data=body, headers=headers) as resp:
        resp.raise_for_status()
        if resp.content_type != "text/event-stream":
            await resp.read()
            return (time.perf_counter() - t) * 1000, ttfb
        buf = b""
        async for chunk in resp.content.iter_any():
            if not ttfb:
                buf += chunk
                if _has_delta(buf, route):
                    ttfb = (time.perf_counter() - t) * 1000
    if not ttfb:
        raise RuntimeError(f"{route.name}: stream without a content delta")
    return (time.perf_counter() - t) * 1000, ttfb


@dataclass(frozen=True)
class Target:
    """One server to call: base URL (``.../v1``), API key, and whether it is the gateway."""

    base: str
    key: str
    gateway: bool


async def sample(
    targets: list[Target], routes: list[Route], qs: Iterator[str], n: int
) -> dict[tuple[str, int, str], list[float]]:
    """``n`` interleaved rounds; samples keyed (route, target index, json|stream|ttfb), in ms."""
    out: dict[tuple[str, int, str], list[float]] = {}
    base_headers = {"content-type": "application/json", "x-mnemogate-no-learn": "true"}
    async with aiohttp.ClientSession() as session:
        for _ in range(n):
            for route in routes:
                for i, tg in enumerate(targets):
                    headers = base_headers | route.headers(tg.key)
                    url = tg.base + route.path
                    for stream in (False, True):
                        body = route.body(next(qs), stream, tg.gateway)
                        total, ttfb = await timed(session, url, headers, body, route)
                        kind = "stream" if stream else "json"
                        out.setdefault((route.name, i, kind), []).append(total)
                        if stream:
                            out.setdefault((route.name, i, "ttfb"), []).append(ttfb)
    return out


def figures(s: dict[tuple[str, int, str], list[float]], route: str) -> dict[str, float]:
    """Added p50/p90 (JSON, stream) and TTFB p50 (through the gateway, and added), in ms."""
    f: dict[str, float] = {}
    for kind in ("json", "stream"):
        for q, label in ((0.5, "p50"), (0.9, "p90")):
            f[f"{kind}_{label}"] = pct(s[(route, 1, kind)], q) - pct(s[(route, 0, kind)], q)
    f["ttfb"] = pct(s[(route, 1, "ttfb")], 0.5)
    f["ttfb_added"] = f["ttfb"] - pct(s[(route, 0, "ttfb")], 0.5)
    return f


def _cell(value: float, chat: float, signed: bool) -> str:
    """``value`` in ms (``+`` sign when an added figure) and its ratio to the chat route's."""
    text = f"{value:+7.2f}" if signed else f"{value:7.2f}"
    return f"{text} ({value / chat:.2f}x)" if chat > 0 else f"{text}   (n/a)"


def table(name: str, s: dict[tuple[str, int, str], list[float]], routes: list[Route]) -> list[str]:
    """Printable rows: one per route, each figure followed by its ratio to the chat route's."""
    chat = figures(s, "chat")
    keys = ("json_p50", "json_p90", "stream_p50", "stream_p90", "ttfb", "ttfb_added")
    lines = [
        f"{'route @ ' + name:<26} "
        + " ".join(f"{k:>16}" for k in ("added JSON p50", "JSON p90", "stream p50", "stream p90"))
        + f" {'TTFB p50':>16} {'added TTFB p50':>16}  (ms, ratio to chat)"
    ]
    for route in routes:
        f = figures(s, route.name)
        cells = [_cell(f[k], chat[k], signed=k != "ttfb") for k in keys]
        lines.append(f"{route.name:<26} " + " ".join(f"{c:>16}" for c in cells))
    return lines
