"""LoCoMo loading and scoring shared by the benchmarks (the data set is read from its path, never
copied into the repo: ``../shared/data/locomo10.json``).

Protocol (``../shared/data/README.md``): one memory per dialog turn, one owner/namespace per
conversation, each question of categories 1-4 as the query, a hit when any evidence turn is in the
top k. Reports Hit@1/5/10 and MRR over categories 1-4 and per category.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}
_DIA = re.compile(r"D(\d+):(\d+)")


@dataclass(frozen=True)
class Turn:
    """One dialog turn: id (``D<session>:<n>``), speaker, text (+ image caption), session date."""

    dia_id: str
    speaker: str
    text: str
    date: str

    def memory_text(self, with_date: bool = True) -> str:
        """``"[<date>] <speaker>: <text>"`` (date optional) — the memory text of this turn."""
        base = f"{self.speaker}: {self.text}"
        return f"[{self.date}] {base}" if with_date and self.date else base


@dataclass(frozen=True)
class Question:
    """A category 1-4 question and its evidence turn ids (normalised)."""

    text: str
    category: int
    evidence: frozenset[str]


@dataclass
class Conversation:
    sample_id: str
    turns: list[Turn] = field(default_factory=list)
    questions: list[Question] = field(default_factory=list)


def normalise_dia_id(raw: str) -> str | None:
    """``"D1:3 "`` → ``"D1:3"``; malformed ids such as ``"D10:"`` → None."""
    match = _DIA.search(raw)
    return f"D{int(match.group(1))}:{int(match.group(2))}" if match else None


def load(path: str, limit: int | None = None) -> list[Conversation]:
    """The first ``limit`` conversations of ``locomo10.json`` with turns and cat 1-4 questions."""
    with open(path, encoding="utf-8") as fh:
        data = json.load(fh)
    out: list[Conversation] = []
    for item in data[: limit or None]:
        conv = Conversation(sample_id=item["sample_id"])
        c = item["conversation"]
        sessions = sorted(
            (int(k.split("_")[1]) for k in c if re.fullmatch(r"session_\d+", k)),
        )
        for n in sessions:
            date = c.get(f"session_{n}_date_time", "")
            for t in c[f"session_{n}"]:
                text = t["text"]
                if t.get("blip_caption"):
                    text += f" [image: {t['blip_caption']}]"
                dia = normalise_dia_id(t["dia_id"])
                if dia:
                    conv.turns.append(Turn(dia, t["speaker"], text, date))
        for qa in item["qa"]:
            if qa.get("category") not in CATEGORIES:
                continue
            evidence = frozenset(
                e for e in (normalise_dia_id(x) for x in qa.get("evidence", [])) if e
            )
            if evidence:
                conv.questions.append(Question(qa["question"], int(qa["category"]), evidence))
        out.append(conv)
    return out


@dataclass
class Scores:
    """Accumulates ranked results; reports Hit@k and MRR overall and per category."""

    ks: Sequence[int] = (1, 5, 10)
    rows: list[tuple[int, int | None]] = field(default_factory=list)  # (category, first hit rank)

    def add(self, category: int, ranked: Iterable[str], evidence: frozenset[str]) -> None:
        """Record one question: ``ranked`` dia ids best first."""
        rank = next((i + 1 for i, d in enumerate(ranked) if d in evidence), None)
        self.rows.append((category, rank))

    def summary(self, rows: list[tuple[int, int | None]] | None = None) -> dict[str, float]:
        """``{"n", "hit@k"..., "mrr"}`` over ``rows`` (default: all)."""
        rows = self.rows if rows is None else rows
        n = len(rows) or 1
        out: dict[str, float] = {"n": float(len(rows))}
        for k in self.ks:
            out[f"hit@{k}"] = sum(1 for _, r in rows if r is not None and r <= k) / n
        out["mrr"] = sum(1.0 / r for _, r in rows if r is not None) / n
        return out

    def table(self, title: str) -> str:
        """A printable table: overall then each category."""
        head = (
            f"{'':<14}{'n':>6}" + "".join(f"{'Hit@' + str(k):>9}" for k in self.ks) + f"{'MRR':>9}"
        )
        lines = [title, head]
        groups = [("all (1-4)", self.rows)] + [
            (f"{c} {name}", [r for r in self.rows if r[0] == c]) for c, name in CATEGORIES.items()
        ]
        for label, rows in groups:
            s = self.summary(rows)
            lines.append(
                f"{label:<14}{int(s['n']):>6}"
                + "".join(f"{s[f'hit@{k}']:>9.3f}" for k in self.ks)
                + f"{s['mrr']:>9.3f}"
            )
        return "\n".join(lines)
