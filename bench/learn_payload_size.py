"""Learn job payload size: the minimised payload against the whole-history one, on LoCoMo.

Usage::

    python bench/learn_payload_size.py [--locomo ../shared/data/locomo10.json] [--window 8]

Each LoCoMo conversation is replayed as one chat (its first speaker the user, the other the
assistant), at the request that adds its newest user turn: every earlier user turn is learned
(the learning cursor stands at ``n - 1`` in a real SQLite store). Baseline, in the same run: the
payload the gateway sent before minimising (every user turn, the replies of the newest
``window + 3`` turns). Printed per conversation: user turns, both MessagePack sizes in bytes,
their ratio and the user turns whose text the minimised payload keeps; then the median ratio
and the totals. The data set is read from the given path, never copied into the repository.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import msgspec

from bench._corpus import DEFAULT_PATH
from bench._locomo import load
from shared.jobs.payloads import LearnPayload
from shared.learn_payload import learn_payload
from shared.models import Scope
from shared.new_turns import prefix_ids
from shared.store import Store
from shared.turn_context import AFTER, REACH, assistant_replies


async def measure(locomo: str, window: int) -> None:
    """Print the sizes of both payloads for every conversation of ``locomo``."""
    ratios: list[float] = []
    totals = [0, 0]
    with tempfile.TemporaryDirectory() as tmp:
        store = await Store.open(str(Path(tmp) / "payload.db"))
        try:
            for n, conv in enumerate(load(locomo)):
                user = conv.turns[0].speaker
                chat = [
                    {"role": "user" if t.speaker == user else "assistant", "content": t.text}
                    for t in conv.turns
                ]
                turns = [m["content"] for m in chat if m["role"] == "user"]
                scope = Scope(owner_id=f"conv{n}")
                learned = prefix_ids(turns)[-2]
                await store.cursors.mark_learned(
                    scope.owner_id, "", learned, len(turns) - 1, time.time()
                )
                whole = LearnPayload(
                    owner_id=scope.owner_id,
                    user_id="",
                    session_id=None,
                    user_turns=turns,
                    replies=assistant_replies(chat, keep_last=window + AFTER + REACH),
                    assistant_text="ok",
                    created_at=0.0,
                    request_id="r",
                )
                minimal = await learn_payload(
                    store.cursors, scope, turns, chat, "ok", window=window, created_at=0.0,
                    request_id="r",
                )  # fmt: skip
                before = len(msgspec.msgpack.encode(whole))
                after = len(msgspec.msgpack.encode(minimal))
                ratios.append(after / before)
                totals[0] += before
                totals[1] += after
                print(
                    f"conversation {n}: {len(turns)} user turns, whole {before} B, minimal "
                    f"{after} B, ratio {after / before:.3f}, text kept for "
                    f"{len(turns) - minimal.kept_from} turns"
                )
        finally:
            await store.close()
    print(
        f"median ratio {statistics.median(ratios):.3f}; total whole {totals[0]} B, "
        f"minimal {totals[1]} B (ratio {totals[1] / totals[0]:.3f})"
    )


def main() -> int:
    """Parse the arguments and run :func:`measure`."""
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("--locomo", default=str(DEFAULT_PATH))
    ap.add_argument("--window", type=int, default=8, help="learn_max_turns")
    args = ap.parse_args()
    asyncio.run(measure(args.locomo, args.window))
    return 0


if __name__ == "__main__":
    sys.exit(main())
