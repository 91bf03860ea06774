"""``mnemogate worker --metrics-port N``: the worker's own ``/metrics`` on ``host:N``.

A stdlib HTTP server in a daemon thread (the arq worker owns the event loop and is rebuilt when
Redis is lost; the server outlives those restarts). Each scrape renders this process's job and
embedding-cache counters (:mod:`shared.metrics`) plus the shared-state gauges, read on a short
connection of its own (database) and a synchronous Redis client (queue depth). Access follows
``metrics_access`` like the gateway's ``/metrics``.
"""

from __future__ import annotations

import asyncio
import hmac
import logging
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import redis

from shared.errors import MnemogateError
from shared.metrics import CONTENT_TYPE, Snapshot, check_metrics_access, render
from shared.metrics_snapshot import take_snapshot
from shared.settings import Settings
from shared.store import Store

log = logging.getLogger("mnemogate.worker.metrics")


def _snapshot(settings: Settings, queue_name: str) -> Snapshot:
    async def go() -> Snapshot:
        store = await Store.open(settings.db_path, run_migrations=False)
        try:
            client = redis.Redis.from_url(settings.redis_url, socket_timeout=1.0)

            def zcard() -> int:
                return int(client.zcard(queue_name))  # type: ignore[arg-type]

            async def depth() -> int:
                return await asyncio.to_thread(zcard)

            try:
                return await take_snapshot(store, depth)
            finally:
                client.close()
        finally:
            await store.close()

    return asyncio.run(go())


def _handler(settings: Settings, queue_name: str) -> type[BaseHTTPRequestHandler]:
    class MetricsHandler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            if self.path.split("?")[0] != "/metrics":
                self.send_error(404)
                return
            header = self.headers.get("authorization", "")
            scheme, _, token = header.partition(" ")
            admin = bool(settings.admin_token) and scheme.lower() == "bearer"
            admin = admin and hmac.compare_digest(token.strip(), settings.admin_token)
            try:
                check_metrics_access(settings.metrics_access, settings.admin_token, admin)
                body = render(_snapshot(settings, queue_name))
            except MnemogateError as exc:
                self.send_error(exc.status, exc.message)
                return
            self.send_response(200)
            self.send_header("content-type", CONTENT_TYPE)
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None:
            log.debug(format, *args)

    return MetricsHandler


def start_metrics_server(settings: Settings, queue_name: str, port: int) -> ThreadingHTTPServer:
    """Serve ``/metrics`` on ``settings.host``:``port`` in a daemon thread.

    Returns the server (``shutdown()`` stops it).

    Raises:
        OSError: the port cannot be bound.

    """
    server = ThreadingHTTPServer((settings.host, port), _handler(settings, queue_name))
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, name="metrics", daemon=True).start()
    log.info("worker metrics on http://%s:%d/metrics", settings.host, port)
    return server
