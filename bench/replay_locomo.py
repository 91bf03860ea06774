"""Replay LoCoMo conversations through a running gateway and measure what it injects.

Usage: ``python bench/replay_locomo.py ../shared/data/locomo10.json [--conversations N]``

Starts a fake upstream (empty answers; requests for the model ``mirror`` are answered with the
messages received) and a gateway (embedded mode, temp SQLite) unless ``--gateway-url``/
``--api-key`` name a running one (whose upstream must then be ``python -m tests.fakes.upstream
--reply '' --mirror-model mirror``). With the official ``openai`` client it replays each
conversation the way a chat client sends one: one end user per conversation, one chat session per
LoCoMo session, every turn (``"[<date>] <speaker>: <text>"``) as a user message sent with the
session's earlier turns as history, so learning sees the same neighbouring turns as
``bench/locomo_recall.py`` stores as context. It waits until the gateway has learned them, then
asks every category 1-4 question in a new session with ``x-mnemogate-no-learn: 1`` (probes are
recalled for but not learned) and reads the memory block the upstream received. A hit at k: an
evidence turn among the first k injected memories.

For comparison it computes a plain FTS5 OR-query baseline on the same turn texts (porter
unicode61, stop words dropped, each term quoted, OR-joined, bm25 order) in the same run.
Prints Hit@1/5/10 and MRR (all and per category), injected-memory counts and gateway latency
percentiles.
"""

from __future__ import annotations

import argparse
import json
import re
import sqlite3
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import openai
import sqlean

from bench._locomo import Conversation, Scores, load
from bench._servers import create_key, fake_upstream, gateway

BLOCK_LINE = re.compile(r"^- \[\d{4}-\d{2}-\d{2}\] (?:\([a-z_-]+\) )?(.*)$")
BASELINE_STOP = frozenset(
    [
        "a",
        "an",
        "and",
        "are",
        "as",
        "at",
        "be",
        "but",
        "by",
        "did",
        "do",
        "does",
        "for",
        "from",
        "had",
        "has",
        "have",
        "he",
        "her",
        "him",
        "his",
        "how",
        "i",
        "if",
        "in",
        "is",
        "it",
        "its",
        "me",
        "my",
        "of",
        "on",
        "or",
        "our",
        "she",
        "so",
        "that",
        "the",
        "their",
        "them",
        "they",
        "this",
        "to",
        "was",
        "we",
        "were",
        "what",
        "when",
        "where",
        "which",
        "who",
        "why",
        "will",
        "with",
        "would",
        "you",
        "your",
    ]
)


def norm(text: str) -> str:
    """Whitespace-collapsed text, as the memory block shows content."""
    return " ".join(text.split())


def injected_contents(reply: str) -> list[str]:
    """Memory contents, in block order, from the mirrored messages JSON."""
    messages = json.loads(reply)
    out: list[str] = []
    for m in messages:
        content = m.get("content")
        texts = (
            [content]
            if isinstance(content, str)
            else [p.get("text", "") for p in content or [] if isinstance(p, dict)]
        )
        for text in texts:
            if "<recalled_memories>" not in text:
                continue
            for line in text.splitlines():
                match = BLOCK_LINE.match(line.strip())
                if match:
                    out.append(match.group(1))
    return out


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))] if ordered else 0.0


def baseline(conv: Conversation, with_date: bool, scores: Scores) -> None:
    """Plain FTS5 OR-query over the same memory texts (independent of the project's code)."""
    db = sqlean.connect(":memory:")
    db.execute("CREATE VIRTUAL TABLE t USING fts5(x, dia UNINDEXED, tokenize='porter unicode61')")
    db.executemany(
        "INSERT INTO t VALUES (?, ?)", [(t.memory_text(with_date), t.dia_id) for t in conv.turns]
    )
    for q in conv.questions:
        terms = [w for w in re.findall(r"\w+", q.text.lower()) if w not in BASELINE_STOP]
        if not terms:
            scores.add(q.category, [], q.evidence)
            continue
        match = " OR ".join('"' + w.replace('"', '""') + '"' for w in dict.fromkeys(terms))
        try:
            rows = db.execute(
                "SELECT dia FROM t WHERE t MATCH ? ORDER BY bm25(t) LIMIT 10", (match,)
            ).fetchall()
        except (sqlite3.Error, sqlean.Error):
            rows = []
        scores.add(q.category, [r[0] for r in rows], q.evidence)
    db.close()


def count_turns(db_path: str, user: str) -> int:
    """Turn memories of ``user`` in the gateway's SQLite (0 if unreadable)."""
    conn = sqlean.connect(db_path)
    try:
        return int(
            conn.execute(
                "SELECT COUNT(*) FROM memories WHERE user_id = ? AND category = 'turn'", (user,)
            ).fetchone()[0]
        )
    except sqlean.Error:
        return 0
    finally:
        conn.close()


def wait_learned(db_path: str, user: str, timeout_s: float = 300, quiet_s: float = 2.0) -> int:
    """Wait until the learned-turn count of ``user`` stops changing for ``quiet_s`` seconds
    (identical texts and do-not-remember turns are learned once or not at all, so the count
    can stay below the number of turns)."""
    deadline = time.monotonic() + timeout_s
    last, since = -1, time.monotonic()
    while time.monotonic() < deadline:
        count = count_turns(db_path, user)
        if count != last:
            last, since = count, time.monotonic()
        elif time.monotonic() - since >= quiet_s:
            return count
        time.sleep(0.2)
    return last


def run(args: argparse.Namespace, gw_url: str, secret: str, db_path: str | None) -> None:
    convs = load(args.path, args.conversations)
    client = openai.OpenAI(base_url=gw_url + "/v1", api_key=secret, max_retries=0)
    gw_scores, base_scores = Scores(), Scores()
    replay_ms: list[float] = []
    ask_ms: list[float] = []
    injected_counts: list[int] = []
    unmapped = 0
    degraded: dict[str, int] = {}
    for conv in convs:
        user = f"locomo-{conv.sample_id}"
        by_text: dict[str, str] = {}
        t0 = time.perf_counter()
        history: dict[int, list[dict[str, str]]] = {}
        for turn in conv.turns:
            text = turn.memory_text(args.with_date)
            by_text.setdefault(norm(text), turn.dia_id)
            messages = history.setdefault(turn.session, [])
            messages.append({"role": "user", "content": text})
            s = time.perf_counter()
            client.chat.completions.create(
                model="fake-model",
                user=user,
                messages=messages,  # type: ignore[arg-type]
                extra_headers={"x-mnemogate-session-id": f"{user}-s{turn.session}"},
            )
            replay_ms.append((time.perf_counter() - s) * 1000)
        learned = wait_learned(db_path, user) if db_path else len(conv.turns)
        print(
            f"{conv.sample_id}: replayed {len(conv.turns)} turns in "
            f"{time.perf_counter() - t0:.1f}s, learned {learned}; "
            f"asking {len(conv.questions)} questions",
            flush=True,
        )
        for q in conv.questions:
            s = time.perf_counter()
            raw = client.chat.completions.with_raw_response.create(
                model="mirror",
                user=user,
                messages=[{"role": "user", "content": q.text}],
                extra_headers={"x-mnemogate-no-learn": "1", "x-mnemogate-session-id": "ask"},
            )
            ask_ms.append((time.perf_counter() - s) * 1000)
            reason = raw.headers.get("x-mnemogate-memory-degraded")
            if reason:
                degraded[reason] = degraded.get(reason, 0) + 1
            resp = raw.parse()
            contents = injected_contents(resp.choices[0].message.content or "[]")
            injected_counts.append(len(contents))
            ranked = []
            for c in contents:
                dia = by_text.get(norm(c))
                if dia is None:
                    unmapped += 1
                else:
                    ranked.append(dia)
            gw_scores.add(q.category, ranked, q.evidence)
        baseline(conv, args.with_date, base_scores)
    print()
    print(gw_scores.table(f"gateway ({args.label}, memories injected in order)"))
    print()
    print(base_scores.table("baseline: plain FTS5 OR-query, top 10"))
    print()
    print(
        f"injected memories per question: mean {statistics.mean(injected_counts):.1f}, "
        f"median {statistics.median(injected_counts):.0f}, max {max(injected_counts)}; "
        f"injected lines not mapped to a turn: {unmapped}; degraded recalls: "
        f"{degraded or 'none'}"
    )
    print(
        f"gateway latency, replay turns (n={len(replay_ms)}): p50 {pct(replay_ms, 0.5):.2f} ms, "
        f"p90 {pct(replay_ms, 0.9):.2f} ms, p99 {pct(replay_ms, 0.99):.2f} ms"
    )
    print(
        f"gateway latency, questions (n={len(ask_ms)}): p50 {pct(ask_ms, 0.5):.2f} ms, "
        f"p90 {pct(ask_ms, 0.9):.2f} ms, p99 {pct(ask_ms, 0.99):.2f} ms"
    )
    g, b = gw_scores.summary(), base_scores.summary()
    print(
        f"Hit@5 gateway {g['hit@5']:.3f} vs baseline {b['hit@5']:.3f} "
        f"({'>=' if g['hit@5'] >= b['hit@5'] else '<'} baseline)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("path", help="path to locomo10.json (e.g. ../shared/data/locomo10.json)")
    parser.add_argument("--conversations", type=int, default=2)
    parser.add_argument("--gateway-url", default=None)
    parser.add_argument("--api-key", default=None)
    parser.add_argument("--db-path", default=None, help="the running gateway's SQLite (to wait)")
    parser.add_argument(
        "--no-date",
        dest="with_date",
        action="store_false",
        help="replay turns as '<speaker>: <text>' without the session date",
    )
    parser.add_argument(
        "--setting",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="extra MNEMOGATE_ setting for the gateway this script starts",
    )
    args = parser.parse_args()
    args.label = ", ".join(args.setting) or "default settings"
    if args.gateway_url:
        if not args.api_key:
            parser.error("--gateway-url needs --api-key")
        run(args, args.gateway_url, args.api_key, args.db_path)
        return
    extra = dict(s.split("=", 1) for s in args.setting)
    with tempfile.TemporaryDirectory() as tmp, fake_upstream("", mirror_model="mirror") as up:
        db = str(Path(tmp) / "replay.db")
        secret = create_key(db)
        with gateway(db, up, **extra) as gw:
            run(args, gw, secret, db)


if __name__ == "__main__":
    main()
