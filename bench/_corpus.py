"""Real-text corpora for the performance benchmarks: LoCoMo turns and questions, varied.

Memory ``i`` is LoCoMo turn ``i mod T`` as ``"[<date>] <speaker>: <text>"``; from the second pass
over the ``T`` (5,882) turns on, half of another turn (chosen by a seeded generator) is appended,
so every memory text is distinct and reads like chat. Queries are the data set's category 1-4
questions (1,536), cycled with a varying suffix taken from a turn when more are needed, so every
request body is distinct. The data set is read from ``../shared/data/locomo10.json`` (never copied
into the repo); set ``MNEMOGATE_LOCOMO`` to read it elsewhere.
"""

from __future__ import annotations

import os
import random
from collections.abc import Callable
from pathlib import Path

from bench._locomo import load

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_PATH = ROOT.parent / "shared" / "data" / "locomo10.json"


def _data() -> tuple[list[str], list[str], list[str]]:
    convs = load(os.environ.get("MNEMOGATE_LOCOMO", str(DEFAULT_PATH)))
    turns = [t.memory_text() for c in convs for t in c.turns]
    texts = [t.text for c in convs for t in c.turns]
    questions = [q.text for c in convs for q in c.questions]
    return turns, texts, questions


def _cycled(
    base: list[str], texts: list[str], n: int, seed: int, vary: Callable[[str, list[str], int], str]
) -> list[str]:
    """``base`` cycled to ``n`` items; from the second pass on, item ``i`` is
    ``vary(item, words of a text of texts chosen by a generator seeded with seed, i)``."""
    rng = random.Random(seed)
    out: list[str] = []
    for i in range(n):
        item = base[i % len(base)]
        if i >= len(base):
            item = vary(item, texts[rng.randrange(len(texts))].split(), i)
        out.append(item)
    return out


def memories(n: int, seed: int = 7) -> list[str]:
    """``n`` distinct memory texts (see the module docstring)."""
    turns, texts, _ = _data()

    def vary(base: str, words: list[str], i: int) -> str:
        return f"{base} {' '.join(words[len(words) // 2 :])} #{i // len(turns)}"

    return _cycled(turns, texts, n, seed, vary)


def queries(n: int, seed: int = 11) -> list[str]:
    """``n`` distinct query texts: LoCoMo questions, then the same with a turn fragment added."""
    _, texts, questions = _data()
    return _cycled(
        questions, texts, n, seed, lambda q, words, i: f"{q} ({' '.join(words[:6])}, {i})"
    )
