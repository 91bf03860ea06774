"""CLI commands of user control: ``keys update`` (switches and cap) and ``stats`` (usage).

``mnemogate keys update ID [--recall on|off|inherit] [--learn on|off|inherit]
[--max-memories N] [--max-bytes N]`` prints the key's new settings; ``mnemogate stats
[--key ID] [--days N]`` prints memory usage per key and UTC day as a table. See
docs/ARCHITECTURE.md, "Controlling memory".
"""

from __future__ import annotations

import argparse
import sys
import time
from typing import Any

from shared import control_api
from shared.control_api import KeyUpdate
from shared.settings import Settings
from shared.store import Store

SWITCH_CHOICES = ("on", "off", "inherit")
STATS_COLUMNS = (
    ("day", "day"),
    ("key", "key_id"),
    ("requests_w_memory", "requests_with_memory"),
    ("memories_injected", "memories_injected"),
    ("tokens_injected", "tokens_injected"),
    ("facts_learned", "facts_learned"),
    ("forgets", "forgets"),
    ("forgotten", "memories_forgotten"),
)


def add_parsers(
    sub: argparse._SubParsersAction[Any], keys_sub: argparse._SubParsersAction[Any]
) -> None:
    """Add ``keys update`` to ``keys_sub`` and ``stats`` to ``sub``."""
    update = keys_sub.add_parser("update", help="set a key's memory switches and cap")
    update.add_argument("id")
    update.add_argument("--recall", choices=SWITCH_CHOICES, default=None)
    update.add_argument("--learn", choices=SWITCH_CHOICES, default=None)
    update.add_argument("--max-memories", type=int, default=None, metavar="N", help="0 = no cap")
    update.add_argument("--max-bytes", type=int, default=None, metavar="N", help="0 = no cap")
    stats = sub.add_parser("stats", help="memory usage per key and day")
    stats.add_argument("--key", default=None, metavar="ID", help="only this key")
    stats.add_argument("--days", type=int, default=30, metavar="N", help="last N days (30)")


def describe_key(view: control_api.KeyView) -> str:
    """One line: id, name, recall, learn, caps."""
    return (
        f"{view.id}\t{view.name}\trecall={view.recall}\tlearn={view.learn}\t"
        f"max_memories={view.max_memories or '-'}\tmax_bytes={view.max_bytes or '-'}"
    )


async def run_keys_update(settings: Settings, args: argparse.Namespace) -> int:
    """``keys update``: apply the options to the key; prints it.

    Raises MnemogateError (exit 1) for an unknown key or a negative cap.
    """
    body = KeyUpdate(
        recall=args.recall,
        learn=args.learn,
        max_memories=args.max_memories,
        max_bytes=args.max_bytes,
    )
    store = await Store.open(settings.db_path)
    try:
        view = await control_api.update_key(store, args.id, body)
    finally:
        await store.close()
    print("updated " + describe_key(view))
    return 0


async def run_stats(settings: Settings, args: argparse.Namespace) -> int:
    """``stats``: usage per key and UTC day, one row each, oldest day first."""
    store = await Store.open(settings.db_path)
    try:
        result = await control_api.usage(store, args.key, args.days, time.time())
    finally:
        await store.close()
    rows = [[str(getattr(item, attr)) for _title, attr in STATS_COLUMNS] for item in result.items]
    header = [title for title, _attr in STATS_COLUMNS]
    widths = [max(len(c) for c in col) for col in zip(header, *rows, strict=False)]
    for row in (header, *rows):
        print("  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip())
    if not rows:
        print(f"no memory activity in the last {args.days} days", file=sys.stderr)
    return 0
