"""LoCoMo loading and scoring shared by the benchmarks (the data set is read from its path, never
copied into the repo: ``../shared/data/locomo10.json``).

Memory text format: ``"[<session date>] <speaker>: <text>"`` (image captions appended as
``[image: ...]``); search context: the two turns before and after in the same session
(:func:`turn_memories`).

Protocol (``../shared/data/README.md``): one memory per dialog turn, one owner/namespace per
conversation, each question of categories 1-4 as the query, a hit when any evidence turn is in the
top k. Reports Hit@1/5/10 and MRR over categories 1-4 and per category.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from shared.question_form import states_nothing
from shared.turn_context import neighbour_context

CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}
_DIA = re.compile(r"D(\d+):(\d+)")
# one evidence reference: "D4:3", "D:11:26" (a stray colon), or a range "D4:1-D4:5" / "D4:1-5"
_EVIDENCE = re.compile(r"D:?(\d+):(\d+)(?:\s*-\s*(?:D:?(\d+):)?(\d+))?")
#: Longest evidence range expanded (a malformed range never expands to thousands of turns).
MAX_RANGE = 50


@dataclass(frozen=True)
class Turn:
    """One dialog turn: id (``D<session>:<n>``, used only to score), speaker, text (+ image
    caption), session date, and the number of the session it belongs to (from the data set's
    ``session_<n>`` lists, the way a chat client groups turns into one conversation)."""

    dia_id: str
    speaker: str
    text: str
    date: str
    session: int = 0

    def memory_text(self, with_date: bool = True, with_speaker: bool = True) -> str:
        """``"[<date>] <speaker>: <text>"`` (date and speaker optional) — this turn's memory text.

        Without the speaker the date is left out too: the bare turn text, as a chat user's own
        turn is stored (the check that a ranking gain is not LoCoMo's prefix).
        """
        if not with_speaker:
            return self.text
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


def evidence_ids(raw: str) -> list[str]:
    """Every turn id an evidence string names, normalised, in order.

    ``"D1:3"`` → ``["D1:3"]``; ``"D8:6; D9:17"`` and ``"D9:1 D4:4"`` → each id; a range
    ``"D4:1-D4:5"`` or ``"D4:1-5"`` → ``D4:1`` .. ``D4:5`` (same session only, at most
    :data:`MAX_RANGE` turns); ``"D:11:26"`` → ``"D11:26"``; nothing recognisable → ``[]``.
    """
    out: list[str] = []
    for m in _EVIDENCE.finditer(raw):
        session, first = int(m.group(1)), int(m.group(2))
        last = first
        if m.group(4) is not None and int(m.group(3) or session) == session:
            last = int(m.group(4))
        if not first <= last < first + MAX_RANGE:
            last = first
        out.extend(f"D{session}:{n}" for n in range(first, last + 1))
    return out


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
                    conv.turns.append(Turn(dia, t["speaker"], text, date, n))
        for qa in item["qa"]:
            if qa.get("category") not in CATEGORIES:
                continue
            evidence = frozenset(e for x in qa.get("evidence", []) for e in evidence_ids(x))
            if evidence:
                conv.questions.append(Question(qa["question"], int(qa["category"]), evidence))
        out.append(conv)
    return out


@dataclass(frozen=True)
class TurnMemory:
    """A turn as the product's learning would store it: ``content`` and search ``context``."""

    turn: Turn
    content: str
    context: str


def turn_memories(
    conv: Conversation, with_date: bool = True, capture_all: bool = False, with_speaker: bool = True
) -> list[TurnMemory]:
    """The memories of ``conv``'s turns, built with the product's own pure functions.

    ``content`` is :meth:`Turn.memory_text`; ``context`` is
    :func:`shared.turn_context.neighbour_context` over the memory texts of the turn's session
    (every turn of it, in order, whoever spoke: two before, two after), exactly as learning fills
    ``memories.context`` from a chat. Turns that only ask, request or exchange pleasantries
    (:func:`shared.question_form.states_nothing` on the memory text) are left out as learning
    leaves them out, unless ``capture_all``. ``with_speaker`` False: the bare turn texts
    (:meth:`Turn.memory_text`), context included. No speaker, dia_id or sample-id handling.
    """
    sessions: dict[int, list[Turn]] = {}
    for turn in conv.turns:
        sessions.setdefault(turn.session, []).append(turn)
    out: list[TurnMemory] = []
    for turns in sessions.values():
        texts = [t.memory_text(with_date, with_speaker) for t in turns]
        for i, turn in enumerate(turns):
            if not capture_all and states_nothing(texts[i]):
                continue
            out.append(TurnMemory(turn, texts[i], neighbour_context(texts, i)))
    return out


@dataclass
class Scores:
    """Accumulates ranked results; reports Hit@k and MRR overall and per category."""

    ks: Sequence[int] = (1, 5, 10)
    rows: list[tuple[int, int | None]] = field(default_factory=list)  # (category, first hit rank)
    full: list[int | None] = field(default_factory=list)  # first hit rank in the full list

    def add(
        self,
        category: int,
        ranked: Iterable[str],
        evidence: frozenset[str],
        full: Iterable[str] | None = None,
    ) -> None:
        """Record one question: ``ranked`` dia ids best first (what recall returns: Hit@k and
        MRR), ``full`` the full candidate list best first (MRR full; default ``ranked``)."""
        ranked = list(ranked)
        rank = next((i + 1 for i, d in enumerate(ranked) if d in evidence), None)
        self.rows.append((category, rank))
        ranked_full = ranked if full is None else list(full)
        self.full.append(next((i + 1 for i, d in enumerate(ranked_full) if d in evidence), None))

    def summary(self, category: int | None = None) -> dict[str, float]:
        """``{"n", "hit@k"..., "mrr", "mrr_full"}`` over one category's rows (default: all)."""
        idx = [i for i, (c, _r) in enumerate(self.rows) if category is None or c == category]
        n = len(idx) or 1
        ranks = [self.rows[i][1] for i in idx]
        out: dict[str, float] = {"n": float(len(idx))}
        for k in self.ks:
            out[f"hit@{k}"] = sum(1 for r in ranks if r is not None and r <= k) / n
        out["mrr"] = sum(1.0 / r for r in ranks if r is not None) / n
        full = [self.full[i] for i in idx]
        out["mrr_full"] = sum(1.0 / r for r in full if r is not None) / n
        return out

    def table(self, title: str) -> str:
        """A printable table: overall then each category (MRR full = over the full list)."""
        head = (
            f"{'':<14}{'n':>6}"
            + "".join(f"{'Hit@' + str(k):>9}" for k in self.ks)
            + f"{'MRR':>9}{'MRR full':>10}"
        )
        lines = [title, head]
        groups: list[tuple[str, int | None]] = [("all (1-4)", None)]
        groups += [(f"{c} {name}", c) for c, name in CATEGORIES.items()]
        for label, category in groups:
            s = self.summary(category)
            lines.append(
                f"{label:<14}{int(s['n']):>6}"
                + "".join(f"{s[f'hit@{k}']:>9.3f}" for k in self.ks)
                + f"{s['mrr']:>9.3f}{s['mrr_full']:>10.3f}"
            )
        return "\n".join(lines)
