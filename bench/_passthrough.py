"""The baseline of ``bench/gateway.py``: the least a Python proxy can do, Starlette + uvicorn +
aiohttp forwarding ``POST /v1/chat/completions`` to an upstream. Usage:
``python bench/_passthrough.py --port P --upstream http://127.0.0.1:U/v1``."""

from __future__ import annotations

import argparse

import aiohttp
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route


def build(upstream: str) -> Starlette:
    """The pass-through app (one shared aiohttp session)."""
    state: dict[str, aiohttp.ClientSession] = {}

    async def chat(request: Request) -> Response:
        if "s" not in state:
            state["s"] = aiohttp.ClientSession()
        body = await request.body()
        async with state["s"].post(
            upstream + "/chat/completions",
            data=body,
            headers={"content-type": "application/json", "authorization": "Bearer sk-bench"},
        ) as resp:
            return Response(await resp.read(), resp.status, media_type="application/json")

    return Starlette(routes=[Route("/v1/chat/completions", chat, methods=["POST"])])


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--upstream", required=True)
    args = parser.parse_args()
    uvicorn.run(build(args.upstream), host="127.0.0.1", port=args.port, log_level="warning")
