"""Fast rule-based fact extraction from one user message.

See "Learning" in ``docs/ARCHITECTURE.md``.

:func:`extract_facts` turns first-person statements ("I prefer TypeScript", "My name is Alice and
I live in Berlin") into third-person :class:`~shared.extraction.facts.ExtractedFact` values. It is
precise rather than exhaustive: anything doubtful yields nothing.

Steps, all with patterns compiled at import time:

1. The whole message is skipped when it asks not to be remembered (:func:`is_do_not_remember`).
2. Pasted or quoted material is blanked out: fenced code blocks, inline code, ``>`` blockquote
   lines, double-quoted passages of three or more words or containing first-person pronouns,
   and everything after a quotation marker such as ``README says:``, ``he said:``, ``error:``.
3. The text is split into sentences at ``.``/``!``/``?`` followed by whitespace or the end (never
   inside ``Next.js``, ``Python 3.12``, URLs; not after ``e.g.``, ``i.e.``, ``etc.``, …) and at
   ``。！？`` and newlines.
4. Sentences are dropped when they are questions (end in ``?``/``？``, start with an
   interrogative or auxiliary: "Should I…", "Do you…", "What…", or are worded as one after a
   hesitation: "hey what is my dog called lol",
   :func:`shared.question_form.is_question_sentence`), hypotheticals ("if I…",
   "suppose we…", "hypothetically"), or an AI talking about itself ("As an AI, …").
5. Sentences are split into clauses before a new subject ("…, and I live in…", "… but I…");
   a clause with a hedge (maybe, might, perhaps, probably, not sure, considering, …) and the
   clauses after it in the same sentence are dropped.
6. Each rule (preference, dislike, favourite, decision, habit, identity, pet, family, tool,
   context, correction) is tried on each clause; positive rules are ignored when a negation
   precedes the match ("It's not that I like X"), so "I don't like X" can never become a like.

Objects keep the user's spelling and case (trailing punctuation trimmed, at most
:data:`MAX_OBJECT_CHARS`); first-person pronouns inside them become third person ("my" → "their").
Keys follow :mod:`shared.extraction.facts`. Measured on the project's 2-core dev box: ~14,000
typical 1–3 sentence messages/s on one core (~70 µs each); target is 5,000/s on 2 cores.
"""

from __future__ import annotations

import re

from shared.control_chars import control_chars_as_spaces
from shared.extraction.facts import ExtractedFact
from shared.extraction.patterns import (
    AI_SELF_RE,
    HEDGE_RE,
    HYPOTHETICAL_RE,
    IGNORE_CASE,
    INTERROGATIVE_RE,
    MAX_INPUT_CHARS,
    MAX_OBJECT_CHARS,
    NEGATION_RE,
    QUESTION_END_RE,
    clauses,
    is_do_not_remember,
    prepare,
    sentences,
)
from shared.extraction.rule_builders import (
    ADVERBS,
    I_AM,
    RELATIONS,
    SPECIES,
    Builder,
    Rule,
    RuleContext,
    build_context,
    build_correction,
    build_decision,
    build_dislike,
    build_employer,
    build_family,
    build_favorite,
    build_habit,
    build_have_pet,
    build_im_a,
    build_job_at,
    build_like,
    build_location,
    build_my_pet,
    build_name,
    build_nickname,
    build_origin,
    build_switch,
    build_tool,
    build_work_as,
)
from shared.question_form import is_question_sentence

__all__ = ["MAX_INPUT_CHARS", "MAX_OBJECT_CHARS", "extract_facts", "is_do_not_remember"]


def _rule(
    needles: str, pattern: str, build: Builder, *, positive: bool = True, anchor: str = ""
) -> Rule:
    return Rule(
        tuple(needles.split("|")), re.compile(pattern, IGNORE_CASE), build, positive, anchor
    )


_OBJ = r"\s+(?P<obj>\S.*)"
_CORR_VERBS = r"(?P<verb>like|love|enjoy|prefer|use|live\s+in|work\s+at|work\s+for)"
_DECIDE_VERBS = (
    r"(?P<verb>use|go\s+with|stick\s+with|switch\s+to|adopt|pick|choose|migrate\s+to|move\s+to)"
)
_NAMING = (
    r"(?P<naming>'s\s+name\s+is(?:\s+actually)?|\s+is\s+(?:actually\s+)?(?:named|called)|"
    r"\s*,?\s+(?:named|called))"
)

# Order matters: a later rule is ignored where an earlier one matched (corrections before
# dislikes before likes; "I'm a fan of" before "I'm a <job>").
_RULES: tuple[Rule, ...] = (
    # corrections: overwrite the key of the statement they correct
    _rule("no longer", r"\bI\s+no\s+longer\s+" + _CORR_VERBS + _OBJ, build_correction,
          positive=False),
    _rule("anymore|any more", r"\bI\s+(?:don't|do\s+not|dont)\s+" + _CORR_VERBS
          + r"\s+(?P<obj>\S.*?)\s+any\s?more\b", build_correction, positive=False),
    _rule("stopped|quit", r"\bI(?:'ve|\s+have)?\s+(?:stopped|quit)\s+(?P<verb>use)ing" + _OBJ,
          build_correction, positive=False),
    # dislikes
    _rule("n't|not|dont|dislike|hate|detest|loathe|stand",
          r"\bI\s+(?:(?:really|just|absolutely|totally|truly|honestly|still|genuinely|kinda)\s+)"
          r"{0,2}(?:(?:don't|do\s+not|dont|didn't|did\s+not)\s+(?:really\s+|much\s+|particularly\s+)?"
          r"(?:like|love|enjoy|care\s+for)|(?P<verb>dislike|hate|detest|loathe)|can't\s+stand|"
          r"cannot\s+stand|can\s+not\s+stand|can't\s+bear)" + _OBJ, build_dislike, positive=False),
    _rule("not", I_AM + r"not\s+(?:a\s+(?:big\s+|huge\s+|great\s+)?fan\s+of|into|fond\s+of)" + _OBJ,
          build_dislike, positive=False),
    # likes
    _rule("prefer|like|love|enjoy|adore",
          r"\bI\s+" + ADVERBS + r"(?P<verb>prefer|like|love|enjoy|adore)\b" + _OBJ, build_like),
    _rule("prefer|rather", r"\bI(?:'d|\s+would)\s+(?P<verb>prefer|rather)" + _OBJ, build_like),
    _rule("fan", I_AM + r"(?:really\s+|also\s+|such\s+|totally\s+)?an?\s+(?:big\s+|huge\s+|"
          r"massive\s+|real\s+|great\s+)?(?P<verb>fan)\s+of" + _OBJ, build_like),
    _rule("into", I_AM + r"(?:really\s+|also\s+|totally\s+)?(?P<verb>into)" + _OBJ, build_like),
    _rule("favorite|favourite|fav",
          r"\bmy\s+(?:all[\s-]time\s+|absolute\s+|personal\s+)?(?:favou?rite|fave?)\s+"
          r"(?P<what>[^,;:!?]{1,60}?)\s+(?:is|are|was|=)" + _OBJ, build_favorite),
    _rule("favorite|favourite|fav",
          r"^\s*(?P<obj>[^;:!?]{1,80}?)\s+(?:is|are)\s+my\s+(?:all[\s-]time\s+|absolute\s+)?"
          r"(?:favou?rite|fave?)\s+(?P<what>\S.*)", build_favorite),
    # decisions
    _rule("'ll|will|shall",
          r"\b(?:I|we)(?:'ll|\s+will|\s+shall)\s+(?:(?:just|definitely|now|then|also|still|go\s+"
          r"ahead\s+and)\s+){0,2}" + _DECIDE_VERBS + _OBJ, build_decision),
    _rule("decided", r"\b(?:I|we)(?:'ve|\s+have)?\s+(?:(?:finally|just|now|already)\s+)?decided\s+"
          r"to\s+" + _DECIDE_VERBS + _OBJ, build_decision),
    _rule("chose|chosen|picked|opted|went with|selected|decided on",
          r"\b(?:I|we)(?:'ve|\s+have)?\s+(?:(?:finally|just|now|already)\s+)?(?P<verb>chose|chosen|"
          r"picked|opted\s+for|went\s+with|selected|decided\s+on)" + _OBJ, build_decision),
    _rule("let", r"\blet'?s\s+(?:just\s+|definitely\s+)?" + _DECIDE_VERBS + _OBJ, build_decision),
    _rule("going to|gonna",
          r"(?:^\s*|\b(?:I'm|I\s+am|Im|we're|we\s+are)\s+)(?:(?:definitely|just)\s+)?(?:going\s+to|"
          r"gonna)\s+" + _DECIDE_VERBS + _OBJ, build_decision),
    _rule("switched|migrated",
          r"\b(?:I|we)(?:'ve|\s+have)?\s+(?:just\s+|recently\s+|finally\s+)?(?:switched|migrated)"
          r"\s+(?:(?:from|over\s+from)\s+(?P<src>\S.*?)\s+)?to" + _OBJ, build_switch),
    # habits
    _rule("always|usually|never|often|typically|generally|normally|rarely|seldom|frequently|"
          "regularly|sometimes|tend",
          r"\bI(?P<be>'m|\s+am)?\s+(?:(?:almost|nearly|pretty\s+much|basically)\s+)?"
          r"(?P<adv>always|usually|never|often|typically|generally|normally|rarely|seldom|"
          r"frequently|regularly|sometimes|tend\s+to)" + _OBJ, build_habit),
    # identity
    # "My name isn't Dana, it's Dara": the name after the one denied (a negation, so not positive)
    _rule("name", r"\bmy\s+name(?:\s+isn'?t|\s+is\s+not|'s\s+not)\s+[^\s,;.]+(?:\s+[^\s,;.]+)?"
          r"\s*[,;]?\s*(?:it'?s|it\s+is|but|rather)\s+(?P<obj>\S.*)", build_name, positive=False),
    _rule("name", r"\bmy\s+(?:first\s+|full\s+|real\s+)?name(?:'s|\s+is)\s*:?" + _OBJ, build_name),
    _rule("called", I_AM + r"called" + _OBJ, build_name),
    _rule("call me", r"\bcall\s+me" + _OBJ, build_nickname),
    _rule("live|reside", r"\bI\s+(?:currently\s+|now\s+|still\s+|actually\s+)?(?P<verb>live|reside)"
          r"\s+in" + _OBJ, build_location),
    _rule("based|located|living", I_AM + r"(?:currently\s+|now\s+)?(?P<verb>based|located|living)"
          r"\s+(?:in|out\s+of)" + _OBJ, build_location),
    _rule("moved|relocated", r"\bI(?:'ve|\s+have)?\s+(?:just\s+|recently\s+)?(?P<verb>moved|"
          r"relocated)\s+to" + _OBJ, build_location),
    _rule("from", I_AM + r"(?:originally\s+)?from" + _OBJ, build_origin),
    _rule("come from", r"\bI\s+(?:originally\s+)?come\s+from" + _OBJ, build_origin),
    _rule("work as", r"\bI\s+(?:currently\s+|now\s+)?work\s+as" + _OBJ, build_work_as),
    # "I work at Google as an engineer": the job starts at "as", so the employer is read too
    _rule("work at|work for", r"\bI\s+(?:currently\s+|now\s+)?work\s+(?:at|for)\s+\S.*?\s+"
          r"(?P<as>as)" + _OBJ, build_job_at, anchor="as"),
    _rule("work at|work for", r"\bI\s+(?:currently\s+|now\s+)?work\s+(?P<prep>at|for)" + _OBJ,
          build_employer),
    _rule("i'm a|i am a|im a", I_AM + r"(?P<art>an?)" + _OBJ, build_im_a),
    _rule("working on|building", r"\b(?:I'm|I\s+am|Im|we're|we\s+are)\s+(?:currently\s+|now\s+)?"
          r"(?:working\s+on|building)" + _OBJ, build_context),
    _rule("work on", r"\bI\s+(?:currently\s+)?work\s+on" + _OBJ, build_context),
    # pets and family
    _rule("have|own|got", r"\bI\s+(?:also\s+)?(?:have|own|got)\s+(?P<count>an?|one|two|three|four|"
          r"five|\d{1,2})\s+(?:(?P<adj>[\w-]+)\s+)?(?P<species>" + SPECIES + r")\b(?:\s*,?\s*"
          r"(?:named|called)\s+(?P<name>\S.*))?", build_have_pet),
    _rule("my", r"\bmy\s+(?:(?:little|old|new|sweet)\s+)?(?P<species>" + SPECIES + r")"
          + _NAMING + "?" + _OBJ, build_my_pet),
    _rule("my", r"\bmy\s+(?:(?P<mod>older|younger|little|big|baby|twin|eldest|oldest|youngest)\s+)?"
          r"(?P<rel>" + RELATIONS + r")(?P<naming>'s\s+name\s+is(?:\s+actually)?|\s+is\s+"
          r"(?:actually\s+)?(?:named|called)|\s*,?\s+(?:named|called)|\s+is)?" + _OBJ,
          build_family),
    # tools
    _rule("use", r"\b(?:I|we)\s+(?:(?:mostly|mainly|primarily|currently|now|still|also|only|just|"
          r"exclusively|daily|personally)\s+)?use" + _OBJ, build_tool),
    _rule("using", I_AM + r"(?:currently\s+|now\s+|still\s+)?(?P<ing>using)" + _OBJ, build_tool),
)  # fmt: skip


# A sentence that corrects what the user said before: a correcting lead ("No, ...", "Sorry, ...",
# "Oops, ...", "Correction: ...", "I meant ...", "My bad, ..."), "actually" anywhere ("My dog is
# actually called Max"), or a name set against another ("..., not Rex").
_CORRECTING_RE = re.compile(
    r"^\W*(?:no|nope|nah|sorry|oops|correction|wait|my\s+bad|i\s+meant|i\s+mean|"
    r"to\s+correct\s+(?:that|myself))\b|\bactually\b|,\s*not\s+\w",
    IGNORE_CASE,
)


def _clause_facts(
    orig: str,
    norm: str,
    lowercase_ok: bool,
    out: dict[str, ExtractedFact],
    correcting: bool = False,
    written: str = "",
) -> None:
    lower = norm.lower()
    taken: list[tuple[int, int]] = []
    found: list[tuple[int, ExtractedFact]] = []
    for rule in _RULES:
        if not any(n in lower for n in rule.needles):
            continue
        m = rule.regex.search(norm)
        if m is None:
            continue
        start = m.start(rule.anchor) if rule.anchor else m.start()
        if any(a <= start < b for a, b in taken):
            continue
        if rule.positive and NEGATION_RE.search(norm, 0, start) is not None:
            continue
        fact = rule.build(RuleContext(m, orig, lowercase_ok, correcting, written))
        if fact is None:
            continue
        taken.append((start, m.end()))
        found.append((start, fact))
    for _start, fact in sorted(found, key=lambda item: item[0]):
        out.pop(fact.key, None)  # a later statement of the same key wins, in message order
        out[fact.key] = fact


def extract_facts(text: str) -> list[ExtractedFact]:
    """Facts the user states about themselves in one message ``text`` (may be empty).

    Returns the facts in message order, at most one per key (a later statement of the same key
    replaces an earlier one). Returns ``[]`` for do-not-remember messages, questions, hedges,
    hypotheticals, quoted or pasted material. Only the first :data:`MAX_INPUT_CHARS` characters
    are examined. Control characters other than newline and tab are read as spaces, as the
    stored turn shows them, but a name is read from the text as written (a name holding one is
    none: :func:`~shared.extraction.fact_objects.person_name`). Pure; never raises for any
    ``str``.
    """
    spaced = control_chars_as_spaces(text)
    if not text or is_do_not_remember(spaced):
        return []
    written = text[:MAX_INPUT_CHARS]
    orig = spaced[:MAX_INPUT_CHARS]
    norm = prepare(orig)
    lowercase_ok = not any("A" <= ch <= "Z" for ch in orig)
    out: dict[str, ExtractedFact] = {}
    for s_start, s_end in sentences(norm):
        sentence = norm[s_start:s_end]
        if not sentence.strip() or QUESTION_END_RE.search(sentence):
            continue
        if INTERROGATIVE_RE.match(sentence) or HYPOTHETICAL_RE.search(sentence):
            continue
        if is_question_sentence(sentence.strip()):  # "hey what is my dog called lol"
            continue
        if AI_SELF_RE.search(sentence):
            continue
        hedged = False  # a hedge also covers the clauses after it ("I'm not sure, I'll use X")
        correcting = _CORRECTING_RE.search(sentence) is not None
        for c_start, c_end in clauses(norm, s_start, s_end):
            clause = norm[c_start:c_end]
            hedged = hedged or HEDGE_RE.search(clause) is not None
            if hedged:
                continue
            exact = written[c_start:c_end]
            _clause_facts(orig[c_start:c_end], clause, lowercase_ok, out, correcting, exact)
    return list(out.values())
