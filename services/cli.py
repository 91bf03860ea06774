"""The ``mnemogate`` command line: serve, worker, migrate, keys, stats, reindex, sweep, summarize.

Settings come from ``MNEMOGATE_*`` environment variables (see ``deploy/mnemogate.env.example``);
``serve --host/--port`` override them. Exit status: 0 success, 1 failure, 2 usage error.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import math
import os
import sys
from collections.abc import Callable, Sequence

import msgspec

from services import cli_control, cli_vectors
from shared.control_api import key_view
from shared.control_chars import has_control_char
from shared.errors import MnemogateError
from shared.jobs.queue import resolve_queue_name
from shared.logs import configure_logging
from shared.settings import ENV_PREFIX, Settings, load_providers, load_settings, settings_fields
from shared.settings_checks import BOUNDS, unknown_variables
from shared.store import Store
from shared.store.connection import migrate, open_connection


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="mnemogate", description="Memory gateway for chat LLMs.")
    sub = p.add_subparsers(dest="command", required=True)
    serve = sub.add_parser("serve", help="run the HTTP gateway")
    serve.add_argument("--host", default=None)
    serve.add_argument("--port", type=_port, default=None)
    worker = sub.add_parser("worker", help="run an arq worker (needs MNEMOGATE_REDIS_URL)")
    worker.add_argument("--burst", action="store_true", help="drain the queue, then exit")
    worker.add_argument(
        "--metrics-port",
        type=_port,
        default=None,
        metavar="N",
        help="serve the worker's Prometheus metrics on MNEMOGATE_HOST:N/metrics",
    )
    sub.add_parser("migrate", help="apply database migrations")
    keys = sub.add_parser("keys", help="manage client API keys")
    keys_sub = keys.add_subparsers(dest="keys_command", required=True)
    create = keys_sub.add_parser("create", help="create a key; prints the secret once")
    create.add_argument("--name", required=True, type=_key_name)
    keys_sub.add_parser("list", help="list keys")
    revoke = keys_sub.add_parser("revoke", help="revoke a key by id")
    revoke.add_argument("id")
    sweep = sub.add_parser("sweep", help="delete expired and decayed memories, enforce capacity")
    sweep.add_argument("--dry-run", action="store_true", help="list what would go, remove nothing")
    summarize = sub.add_parser("summarize", help="condense old episodic memories into summaries")
    summarize.add_argument("--older-than-days", type=_positive_days, required=True, metavar="N")
    summarize.add_argument("--owner", default=None, metavar="ID", help="only this owner")
    summarize.add_argument("--dry-run", action="store_true", help="show summaries, change nothing")
    cli_vectors.add_parsers(sub)
    cli_control.add_parsers(sub, keys_sub)
    return p


async def _migrate(settings: Settings) -> int:
    conn = await open_connection(settings.db_path)
    try:
        applied = await migrate(conn)
    finally:
        await conn.close()
    print("applied: " + ", ".join(applied) if applied else "database is up to date")
    return 0


def _port(text: str) -> int:
    """A TCP port 1-65535 (``--port``, ``--metrics-port``); anything else is a usage error."""
    try:
        port = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a port number: {text!r}") from None
    low, high = BOUNDS["port"]
    if not low <= port <= high:
        raise argparse.ArgumentTypeError(f"a port must be within {low:g}..{high:g}, got {port}")
    return port


def _positive_days(text: str) -> float:
    """``--older-than-days``: a finite number of days > 0, as the REST API requires."""
    try:
        days = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of days: {text!r}") from None
    if not (days > 0 and math.isfinite(days)):
        raise argparse.ArgumentTypeError(f"the age must be a number of days > 0, got {text}")
    return days


def _key_name(text: str) -> str:
    """``--name`` of a new key, stripped.

    A blank name, or one holding a control character (Unicode category Cc: a newline or tab
    would split the tab-separated ``keys list`` line), is a usage error (exit status 2).
    """
    name = text.strip()
    if not name:
        raise argparse.ArgumentTypeError("a key name must not be blank")
    if has_control_char(name):
        raise argparse.ArgumentTypeError("a key name must not hold control characters")
    return name


async def _keys(settings: Settings, args: argparse.Namespace) -> int:
    if args.keys_command == "update":
        return await cli_control.run_keys_update(settings, args)
    store = await Store.open(settings.db_path)
    try:
        if args.keys_command == "create":
            key, secret = await store.keys.create(args.name)
            # the database named: a key made in another store (another working directory, no
            # MNEMOGATE_DB_PATH) is never accepted by the gateway
            where = os.path.abspath(settings.db_path)  # noqa: ASYNC240 (a one-off CLI command)
            print(f"created key {key.id} ({key.name}) in {where}; the secret is shown once:")
            print(secret)
        elif args.keys_command == "list":
            for k in await store.keys.list():
                status = "revoked" if k.revoked_at else "active"
                view = key_view(k)
                print(
                    f"{k.id}\t{k.name}\t{k.prefix}…\t{status}\trecall={view.recall}\t"
                    f"learn={view.learn}"
                )
        elif args.keys_command == "revoke":
            if not await store.keys.revoke(args.id):
                print(f"no active key with id {args.id}", file=sys.stderr)
                return 1
            print(f"revoked {args.id}")
    finally:
        await store.close()
    return 0


def _serve(settings: Settings, args: argparse.Namespace) -> int:
    import uvicorn

    from services.gateway.app import create_app
    from services.gateway.http_protocol import GatewayHttpProtocol

    host = args.host or settings.host
    port = args.port or settings.port
    # the flags win over the environment, and /api/settings shows what is actually served
    settings = msgspec.structs.replace(settings, host=host, port=port)
    # refused here as "error: ..." (exit 1), not as a traceback of the server's start-up
    load_providers(settings)
    asyncio.run(_migrate_and_identify(settings))
    # log_config=None: uvicorn's loggers go through the root handler (text or JSON lines)
    uvicorn.run(
        create_app(settings),
        host=host,
        port=port,
        log_level="info",
        access_log=False,
        log_config=None,
        http=GatewayHttpProtocol,  # the JSON error shape for requests the parser refuses
    )
    return 0


def _worker(settings: Settings, args: argparse.Namespace) -> int:
    from workers.worker import run_worker

    store_id = asyncio.run(_migrate_and_identify(settings))
    queue_name = resolve_queue_name(settings.queue_name, store_id)
    if args.metrics_port is not None:
        from workers.metrics_server import start_metrics_server

        start_metrics_server(settings, queue_name, args.metrics_port)
    return run_worker(settings, queue_name, burst=args.burst)


async def _migrate_and_identify(settings: Settings) -> str:
    """Migrate the database; returns its store id (for the default queue name)."""
    store = await Store.open(settings.db_path)
    try:
        return await store.identity.store_id()
    finally:
        await store.close()


def _preview(text: str, width: int = 80) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


async def _sweep(settings: Settings, args: argparse.Namespace) -> int:
    r"""``mnemogate sweep [--dry-run]``.

    One line per memory removed (or that would be), then a totals line. Line format (tab
    separated): ``<deleted|would delete>\t<public id>\t<reason>\towner=<id>\tuser=<id or
    ->\t<type>/<category>\t<content preview>``.
    """
    import time

    from shared.lifecycle.decay import EvictionReason, LifecycleRow
    from shared.lifecycle.sweep import sweep

    verb = "would delete" if args.dry_run else "deleted"

    def show(row: LifecycleRow, reason: EvictionReason) -> None:
        print(
            f"{verb}\t{row.public_id}\t{reason}\towner={row.owner_id}\tuser={row.user_id or '-'}"
            f"\t{row.type}/{row.category}\t{_preview(row.content)}"
        )

    async with cli_vectors.lifecycle_runtime(settings) as (runtime, on_deleted):
        report = await sweep(
            runtime.store,
            runtime.settings,
            time.time(),
            dry_run=args.dry_run,
            on_deleted=on_deleted,
            listener=show,
        )
    kinds = ("expired", "decayed", "capacity")
    reasons = ", ".join(f"{r} {report.by_reason.get(r, 0)}" for r in kinds)
    span = f"cursor {report.cursor_start} -> {report.cursor_end}" + (
        ", full pass" if report.full_pass else ", resumes next run"
    )
    if args.dry_run:
        print(
            f"dry run: scanned {report.scanned} rows ({span}); would delete {report.deleted} "
            f"({reasons}); nothing was removed"
        )
    else:
        print(
            f"sweep: scanned {report.scanned} rows ({span}); deleted {report.deleted} "
            f"({reasons}) in {report.duration_s:.2f} s"
        )
    return 0


async def _summarize(settings: Settings, args: argparse.Namespace) -> int:
    r"""``mnemogate summarize --older-than-days N [--owner ID] [--dry-run]``.

    Per summary a header line ``<summary <id>|would summarize>\towner=..\tuser=..\tsession=..\t<n>
    memories -> 1\t tokens <before> -> <after> (saved <n>)``, the source ids and the summary lines
    (indented), then a totals line.
    """
    import time

    from shared.lifecycle.summarize import GroupSummary, summarize

    def show(made: GroupSummary) -> None:
        head = "would summarize" if made.summary_id is None else f"summary {made.summary_id}"
        print(
            f"{head}\towner={made.owner_id}\tuser={made.user_id or '-'}\t"
            f"session={made.session_id or '-'}\t{len(made.source_ids)} memories -> 1\t"
            f"tokens {made.tokens_before} -> {made.tokens_after} (saved {made.tokens_saved})"
        )
        print("  sources: " + " ".join(made.source_ids))
        for line in made.content.splitlines():
            print("  | " + line)

    async with cli_vectors.lifecycle_runtime(settings) as (runtime, on_deleted):
        report = await summarize(
            runtime.store,
            runtime.settings,
            time.time(),
            older_than_days=args.older_than_days,
            owner_id=args.owner,
            dry_run=args.dry_run,
            on_deleted=on_deleted,
            listener=show,
        )
    totals = (
        f"{report.groups} groups, {report.summarized} memories -> {report.summaries} summaries, "
        f"tokens {report.tokens_before} -> {report.tokens_after} (saved {report.tokens_saved})"
    )
    if args.dry_run:
        print(f"dry run: {totals}; nothing was changed")
    else:
        print(f"summarize: {totals}")
    return 0


#: Each subcommand: settings and parsed arguments → exit status.
COMMANDS: dict[str, Callable[[Settings, argparse.Namespace], int]] = {
    "serve": _serve,
    "worker": _worker,
    "migrate": lambda settings, args: asyncio.run(_migrate(settings)),
    "keys": lambda settings, args: asyncio.run(_keys(settings, args)),
    "stats": lambda settings, args: asyncio.run(cli_control.run_stats(settings, args)),
    "sweep": lambda settings, args: asyncio.run(_sweep(settings, args)),
    "summarize": lambda settings, args: asyncio.run(_summarize(settings, args)),
    "reindex": lambda settings, args: asyncio.run(cli_vectors.run_reindex(settings, args.force)),
    "models": lambda settings, args: cli_vectors.run_build_static(settings, args.out, args.dim),
    "qdrant": lambda settings, args: asyncio.run(cli_vectors.run_qdrant_recreate(settings)),
}


LONG_RUNNING = frozenset({"serve", "worker"})
"""Commands that warn about unknown ``MNEMOGATE_`` variables (``scripts/serve`` also runs
``migrate`` and ``keys``: warning in each printed every line three times)."""


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``mnemogate`` console script; returns the exit status."""
    args = _parser().parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s %(message)s")
    command = COMMANDS.get(args.command)
    if command is None:
        return 2
    try:
        settings = load_settings()
        configure_logging(settings.log_format)
        if args.command in LONG_RUNNING:  # once per start, not for every one-shot command
            for line in unknown_variables(os.environ, settings_fields(), ENV_PREFIX):
                logging.getLogger("mnemogate").warning("%s", line)
        return command(settings, args)
    except MnemogateError as exc:
        print(f"error: {exc.message}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    raise SystemExit(main())
