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
4. Sentences are dropped when they are questions (end in ``?``/``？`` or start with an
   interrogative or auxiliary: "Should I…", "Do you…", "What…"), hypotheticals ("if I…",
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
from collections.abc import Callable
from typing import NamedTuple

from shared.extraction.facts import CATEGORY_TYPES, ExtractedFact, head, slug

__all__ = ["MAX_INPUT_CHARS", "MAX_OBJECT_CHARS", "extract_facts", "is_do_not_remember"]

#: Longest object kept (characters); longer objects are cut at a word boundary.
MAX_OBJECT_CHARS = 200
#: Only the first this-many characters of a message are examined (pastes beyond are not facts).
MAX_INPUT_CHARS = 20_000
#: A quoted span of this many words or more is a clause someone said, not a name: blanked.
CLAUSE_MIN_WORDS = 3
#: Most words a person or place name is taken to have ("Mary Ann de la Cruz" stops at four).
MAX_NAME_TOKENS = 4
#: Most words of a job title ("senior backend engineer at a bank" is cut before "at").
MAX_OBJECT_WORDS = 5

_I = re.IGNORECASE
_WS_RE = re.compile(r"\s+")


def _words(text: str) -> frozenset[str]:
    """Set of the whitespace-separated words of a literal word list."""
    return frozenset(text.split())


_APOSTROPHES = str.maketrans({"\u2019": "'", "\u2018": "'", "\u02bc": "'", "\uff07": "'"})

# ---- do-not-remember --------------------------------------------------------------------------

_VERBS_DNR = r"(?:remember|save|store|memori[sz]e|record|keep|log|persist)"
_DNR_RE = re.compile(
    # imperative at the start of a clause: "Don't remember this", "please do not save"
    r"(?:^|[.!?;:,\n(\[\"]\s*|\b(?:please|pls|plz|and|but|just|so|ok|okay)\s+)"
    r"(?:do\s+not|don't|dont|never)\s+(?:ever\s+)?" + _VERBS_DNR + r"\b"
    # "... don't save this", not "I don't remember it"
    r"|(?<![Ii] )(?<![Ww]e )(?<![Yy]ou )(?:do\s+not|don't|dont)\s+(?:ever\s+)?"
    r"(?:remember|save|store|memori[sz]e|record)\s+(?:this|that|it|any\s+of\s+(?:this|that|it)"
    r"|anything)\b"
    r"|\b(?:don't|do\s+not|dont)\s+want\s+(?:you\s+)?to\s+(?:remember|save|store|memori[sz]e|record)"
    r"\b"
    r"|\bforget\s+(?:this|that|it|about\s+(?:this|that|it)|(?:what|everything)\s+I\s+(?:just\s+)?"
    r"(?:said|told\s+you|wrote))\b"
    r"|\boff[\s-]the[\s-]record\b"
    r"|\b(?:do\s+not|don't|dont)\s+(?:add|put)\s+(?:this|that|it)\s+(?:to|in|into)\s+"
    r"(?:your\s+)?memory\b",
    _I,
)


def is_do_not_remember(text: str) -> bool:
    """True if the message asks not to be remembered (nothing of it may be stored or captured).

    Recognises "don't remember this", "do not remember", "don't save/store/record this",
    "please don't save", "I don't want you to remember", "forget this/that/what I said",
    "off the record", "don't add this to your memory" (either apostrophe). "I don't remember the
    command" does not count. Pure; never raises.
    """
    return _DNR_RE.search(text.translate(_APOSTROPHES)) is not None


# ---- preparation ------------------------------------------------------------------------------

_FENCE_RE = re.compile(r"```.*?(?:```|\Z)|~~~.*?(?:~~~|\Z)", re.DOTALL)
_INLINE_CODE_RE = re.compile(r"`[^`\n]*`")
_BLOCKQUOTE_RE = re.compile(r"^[ \t]*>.*$", re.MULTILINE)
_QUOTE_RE = re.compile(
    r"\"[^\"\n]{1,2000}\"|“[^”\n]{1,2000}”|«[^»\n]{1,2000}»|「[^」]{1,2000}」|『[^』]{1,2000}』"
)
_FIRST_PERSON_RE = re.compile(r"\b(?:I|me|my|mine|we|our)\b", _I)
_QUOTE_MARKER_RE = re.compile(
    r"\b(?:says?|said|wrote|writes|reads|replied|answered|told\s+me|outputs?|printed|prints|"
    r"shows|returned|returns|error|exception|traceback|warning|stderr|stdout|logs?)\s*:",
    _I,
)


def _blank_text(text: str) -> str:
    """Same-length blank keeping newlines, so offsets stay aligned with the original."""
    return "".join("\n" if ch == "\n" else " " for ch in text)


def _blank(match: re.Match[str]) -> str:
    return _blank_text(match.group())


def _blank_quote(match: re.Match[str]) -> str:
    inner = match.group()[1:-1]
    if len(inner.split()) >= CLAUSE_MIN_WORDS or _FIRST_PERSON_RE.search(inner):
        return " " * len(match.group())
    return match.group()


def _prepare(text: str) -> str:
    """Blank out pasted/quoted material (same length as ``text``); normalise apostrophes."""
    out = text.translate(_APOSTROPHES)
    if "```" in out or "~~~" in out:
        out = _FENCE_RE.sub(_blank, out)
    if "`" in out:
        out = _INLINE_CODE_RE.sub(_blank, out)
    if ">" in out:
        out = _BLOCKQUOTE_RE.sub(_blank, out)
    out = _QUOTE_RE.sub(_blank_quote, out)
    m = _QUOTE_MARKER_RE.search(out)
    if m is not None:
        out = out[: m.start()] + _blank_text(out[m.start() :])
    return out


# ---- sentences and clauses --------------------------------------------------------------------

_BOUNDARY_RE = re.compile(r"[.!?]+(?=[\s\"')\]]*(?:\s|$))[\"')\]]*|[。！？]+|\n")
_ABBREVIATIONS = _words(
    "e.g i.e etc vs mr mrs ms dr prof st jr sr approx no cf fig inc ltd co al viz resp"
)
_INTERROGATIVE_RE = re.compile(
    r"^\W*(?:what|what's|whats|how|how's|why|when|where|who|whom|whose|which|should|shall|can|"
    r"could|would|will|do|does|did|is|are|am|was|were|have|has|had|may|might|must|isn't|aren't|"
    r"doesn't|didn't|shouldn't|wouldn't|can't|won't|any\s+idea|anyone)\b",
    _I,
)
_QUESTION_END_RE = re.compile(r"[?？][\s\"')\]]*$")
_HYPOTHETICAL_RE = re.compile(
    r"\b(?:if|unless|suppose|supposing|imagine|assuming|whether|in\s+case|even\s+if|what\s+if)"
    r"\s+(?:I|we|I'm|I'd|my)\b|\bhypothetically\b|\bI\s+wish\b|\bwould\s+I\b",
    _I,
)
_AI_SELF_RE = re.compile(
    r"\bas\s+(?:an?\s+)?(?:ai|a\.i\.|ai\s+(?:language\s+model|assistant|model)|"
    r"(?:large\s+)?language\s+model|llm|assistant|chatbot|virtual\s+assistant)\b",
    _I,
)
_PRONOUN_AHEAD = r"(?=(?:I|I'm|I've|I'll|I'd|Im|my|we|we're|we'll|we've|let's|lets)\b)"
_CLAUSE_SPLIT_RE = re.compile(
    r"\s*[,;:]\s*(?:(?:and|but|so|then|also|because|plus|though|although)\s+)?"
    + _PRONOUN_AHEAD
    + r"|\s+(?:and|but|so|because|while|although|though|whereas|plus|then)\s+"
    r"(?:(?:then|also|now)\s+)?" + _PRONOUN_AHEAD,
    _I,
)
_HEDGE_RE = re.compile(
    r"\b(?:maybe|perhaps|possibly|probably|might|not\s+sure|unsure|undecided|considering|"
    r"thinking\s+(?:about|of)|wondering|I\s+guess|I\s+suppose|not\s+certain|no\s+idea|"
    r"could|may\s+be|I\s+may|we\s+may|not\s+decided|haven't\s+decided|tempted)\b",
    _I,
)
_NEGATION_RE = re.compile(r"\b(?:not|never|no|neither|nor)\b|n't\b", _I)


def _sentences(text: str) -> list[tuple[int, int]]:
    spans: list[tuple[int, int]] = []
    start = 0
    for m in _BOUNDARY_RE.finditer(text):
        if m.group().startswith(".") and m.group().rstrip("\"')]") == ".":
            before = text[start : m.start()]
            token = before[before.rfind(" ") + 1 :].lower()
            if token in _ABBREVIATIONS:
                continue
        spans.append((start, m.end()))
        start = m.end()
    if start < len(text):
        spans.append((start, len(text)))
    return spans


def _clauses(text: str, start: int, end: int) -> list[tuple[int, int]]:
    spans: list[tuple[int, int]] = []
    pos = start
    for m in _CLAUSE_SPLIT_RE.finditer(text, start, end):
        if m.start() > pos:
            spans.append((pos, m.start()))
        pos = m.end()
    if pos < end:
        spans.append((pos, end))
    return spans


# ---- objects ----------------------------------------------------------------------------------

_TRAIL_RE = re.compile(r"[\s.,;:!?。！？、…\"'“”«»)\]}]+$")
_LEAD_RE = re.compile(r"^[\s\"'“«(\[{]+")
_NON_OBJECT_FIRST = _words(
    "it it's its this that these those them they you your yours him her us how what when where "
    "why which who whom one something anything everything nothing some any all both either "
    "neither here there not no none so such doing being"
)
_PRONOUN_RE = re.compile(
    r"\b(?:I'm|I\s+am|I've|I'll|I'd|I|my|mine|myself|me|our|ours|ourselves|we)\b", _I
)
_PRONOUN_MAP = {
    "i'm": "they're", "i am": "they are", "i've": "they've", "i'll": "they'll", "i'd": "they'd",
    "i": "they", "my": "their", "mine": "theirs", "myself": "themselves", "me": "them",
    "our": "their", "ours": "theirs", "ourselves": "themselves", "we": "they",
}  # fmt: skip


def _third_person_pronouns(text: str) -> str:
    def swap(m: re.Match[str]) -> str:
        return _PRONOUN_MAP[_WS_RE.sub(" ", m.group().lower())]

    return _PRONOUN_RE.sub(swap, text.replace("\u2019", "'")) if _PRONOUN_RE.search(text) else text


def _clean_object(raw: str) -> str | None:
    """Trim, cap, reject pronoun/empty objects. Returns the display object or None."""
    obj = _LEAD_RE.sub("", _TRAIL_RE.sub("", raw))
    if not obj:
        return None
    if len(obj) > MAX_OBJECT_CHARS:
        cut = obj.rfind(" ", 0, MAX_OBJECT_CHARS)
        obj = obj[: cut if cut > MAX_OBJECT_CHARS // 2 else MAX_OBJECT_CHARS].rstrip(" ,;:")
    first = obj.split(None, 1)[0].lower().rstrip(",.;:")
    if first in _NON_OBJECT_FIRST:
        return None
    return obj


_PARTICLES = _words("van von de da del der di du le la bin al ibn ben mc st")
_NAME_STOP = _words(
    "on at back later when if a an the not so maybe anytime tomorrow today now please sometime "
    "is was has had and or but to in for by from with me you him her it that this"
)


def _name(raw: str, *, lenient_first: bool, lowercase_ok: bool) -> str | None:
    """Leading name tokens of ``raw`` (1..4), or None if it does not start with a name."""
    tokens: list[str] = []
    for i, tok in enumerate(raw.split()[:6]):
        word = tok.strip(",.;:!?\"'()[]")
        if not word or any(ch.isdigit() for ch in word) or not word[0].isalpha():
            break
        lower = word.lower()
        capital = word[0].isupper() or not word[0].isascii()
        if i == 0:
            if lower in _NAME_STOP or not (capital or lenient_first or lowercase_ok):
                return None
        elif not (capital or lower in _PARTICLES):
            break
        tokens.append(word)
        if len(tokens) == MAX_NAME_TOKENS or (tok != word and tok.rstrip("'\")]") != word):
            break
    return " ".join(tokens) or None


_PLACE_CUT_RE = re.compile(
    r"\s+(?:with|since|for|because|but|where|which|who|and|now|these\s+days|currently|"
    r"right\s+now|at\s+the\s+moment|though|although|so|when|while|as|to|until|after|before)\b.*",
    _I | re.DOTALL,
)
_PLACE_STOP = _words("fear hope home peace the a an my your denial")


def _place(raw: str, *, lowercase_ok: bool) -> str | None:
    obj = _clean_object(_PLACE_CUT_RE.sub("", raw))
    if obj is None:
        return None
    words = obj.split()
    first = words[0]
    rest_first = words[1] if first.lower() == "the" and len(words) > 1 else first
    if first.lower() in _PLACE_STOP and first.lower() != "the":
        return None
    if not (rest_first[0].isupper() or not rest_first[0].isascii() or lowercase_ok):
        return None
    return " ".join(words[:6])


_JOB_CUT_RE = re.compile(
    r"\s+(?:at|in|for|with|and|but|since|from|who|which|that|so|because|working|by|on)\b.*",
    _I | re.DOTALL,
)
_JOB_LAST_RE = re.compile(
    r"(?:er|or|ist|ian|ant|ent|eer|ect|ic|man|woman|person|student|nurse|chef|pilot|dev|lead|"
    r"intern|pm|cto|ceo|cfo|coo|vp|founder|owner|parent|mom|dad|analyst|artist|scientist|"
    r"architect|consultant|freelancer|tutor|clerk|cook|coach|guard|agent|medic|ops|sre|editor)$",
    _I,
)
_JOB_BAD_FIRST = _words("bit little lot big huge real total fan kind sort fan of")


def _conjugate(verb: str) -> str:
    """Third-person singular of an English base-form verb ("commit" → "commits")."""
    lower = verb.lower()
    irregular = {"be": "is", "am": "is", "are": "is", "have": "has", "do": "does", "go": "goes"}
    if lower in irregular:
        return irregular[lower]
    if lower in {"can", "will", "should", "must", "would", "could", "may", "might", "shall"}:
        return verb
    if not verb.isascii() or not verb.isalpha():
        return verb
    if lower.endswith(("s", "sh", "ch", "x", "z", "o")):
        return verb + "es"
    if lower.endswith("y") and len(lower) > 1 and lower[-2] not in "aeiou":
        return verb[:-1] + "ies"
    return verb + "s"


# ---- rules ------------------------------------------------------------------------------------


class _Ctx(NamedTuple):
    """What a rule builder sees: the match (on the normalised clause) and the original clause."""

    m: re.Match[str]
    orig: str  # original text of the clause, same offsets as the normalised clause
    lowercase_ok: bool  # the message has no upper-case ASCII letter at all

    def raw(self, group: str) -> str:
        return self.orig[self.m.start(group) : self.m.end(group)]

    def g(self, group: str) -> str | None:
        """The group's (normalised) text, or None if absent from this rule or unmatched."""
        return self.m.group(group) if group in self.m.re.groupindex else None


_Builder = Callable[[_Ctx], "ExtractedFact | None"]


class _Rule(NamedTuple):
    needles: tuple[str, ...]  # lower-case substrings; the rule runs only if one occurs
    regex: re.Pattern[str]
    build: _Builder
    positive: bool  # ignore the match when a negation precedes it in the clause


def _fact(
    content: str, category: str, key: str, confidence: float, type_: str = ""
) -> ExtractedFact:
    return ExtractedFact(
        content=content,
        category=category,
        type=type_ or CATEGORY_TYPES[category],
        key=key,
        confidence=confidence,
    )


def _obj(c: _Ctx, group: str = "obj") -> str | None:
    return _clean_object(c.raw(group))


_ADV = (
    r"(?:(?:really|also|just|absolutely|totally|truly|definitely|still|generally|much|very\s+much|"
    r"actually|honestly|personally|strongly|mostly|always|do|kinda|so|genuinely)\s+){0,3}"
)
_IM = r"\b(?:I'm|I\s+am|Im)\s+"

_CORRECTION_KEYS = {
    "like": ("preference:like:", "likes", "semantic"),
    "love": ("preference:like:", "loves", "semantic"),
    "enjoy": ("preference:like:", "enjoys", "semantic"),
    "prefer": ("preference:like:", "prefers", "semantic"),
    "use": ("tool:", "uses", "semantic"),
    "live in": ("identity:location", "lives in", "factual"),
    "work at": ("identity:employer", "works at", "factual"),
    "work for": ("identity:employer", "works for", "factual"),
}


def _b_correction(c: _Ctx) -> ExtractedFact | None:
    verb = _WS_RE.sub(" ", (c.g("verb") or "").lower())
    obj = _obj(c)
    if obj is None:
        return None
    prefix, third, type_ = _CORRECTION_KEYS[verb]
    key = prefix if prefix.startswith("identity:") else prefix + slug(head(obj))
    return _fact(
        f"User no longer {third} {_third_person_pronouns(obj)}", "correction", key, 0.9, type_
    )


def _b_dislike(c: _Ctx) -> ExtractedFact | None:
    obj = _obj(c)
    if obj is None:
        return None
    verb = (c.g("verb") or "").lower()
    word = "hates" if verb in {"hate", "detest", "loathe"} else "dislikes"
    content = f"User {word} {_third_person_pronouns(obj)}"
    return _fact(content, "preference", "preference:dislike:" + slug(head(obj)), 0.9)


_LIKE_WORDS = {"prefer": "prefers", "like": "likes", "love": "loves", "enjoy": "enjoys",
               "adore": "loves"}  # fmt: skip


def _b_like(c: _Ctx) -> ExtractedFact | None:
    obj = _obj(c)
    if obj is None:
        return None
    verb = _WS_RE.sub(" ", (c.g("verb") or "").lower())
    if verb.startswith("fan"):
        phrase = "is a fan of"
    elif verb.startswith("into"):
        phrase = "is into"
    else:
        phrase = _LIKE_WORDS.get(verb.split()[-1], "prefers")
    content = f"User {phrase} {_third_person_pronouns(obj)}"
    return _fact(content, "preference", "preference:like:" + slug(head(obj)), 0.9)


def _b_favorite(c: _Ctx) -> ExtractedFact | None:
    what = _clean_object(c.raw("what"))
    obj = _obj(c)
    if obj is None or what is None:
        return None
    obj = obj.rsplit(",", 1)[-1].strip()
    if not obj or obj.lower().startswith("not "):
        return None
    content = f"User's favorite {_third_person_pronouns(what)} is {_third_person_pronouns(obj)}"
    return _fact(content, "preference", "preference:favorite:" + slug(what), 0.9)


def _b_decision(c: _Ctx) -> ExtractedFact | None:
    obj = _obj(c)
    if obj is None:
        return None
    verb = _WS_RE.sub(" ", (c.g("verb") or "use").lower())
    if verb in {"chose", "chosen", "picked", "opted for", "went with", "selected"}:
        phrase = "chose"
    else:
        phrase = f"decided to {verb}"
    content = f"User {phrase} {_third_person_pronouns(obj)}"
    return _fact(content, "decision", "decision:" + slug(head(obj)), 0.85)


def _b_switch(c: _Ctx) -> ExtractedFact | None:
    obj = _obj(c)
    if obj is None:
        return None
    src = _clean_object(c.raw("src")) if c.g("src") else None
    frm = f" from {_third_person_pronouns(src)}" if src else ""
    content = f"User switched{frm} to {_third_person_pronouns(obj)}"
    return _fact(content, "decision", "decision:" + slug(head(obj)), 0.85)


_HABIT_CONF = {"sometimes": 0.6, "often": 0.75, "rarely": 0.7, "seldom": 0.7}


def _b_habit(c: _Ctx) -> ExtractedFact | None:
    obj = _obj(c)
    if obj is None:
        return None
    adv = _WS_RE.sub(" ", (c.g("adv") or "").lower())
    if adv == "tend to":
        shown = "tends to " + _third_person_pronouns(obj)
        key_adv = "usually"
    elif c.g("be"):
        shown = f"is {adv} {_third_person_pronouns(obj)}"
        key_adv = adv
    else:
        parts = obj.split(None, 1)
        verb = _conjugate(parts[0])
        rest = _third_person_pronouns(parts[1]) if len(parts) > 1 else ""
        shown = f"{adv} {verb} {rest}".rstrip()
        key_adv = adv
    content = f"User {shown}"
    return _fact(
        content, "pattern", f"pattern:{key_adv}:{slug(head(obj))}", _HABIT_CONF.get(adv, 0.8)
    )


def _b_name(c: _Ctx) -> ExtractedFact | None:
    name = _name(c.raw("obj"), lenient_first=True, lowercase_ok=c.lowercase_ok)
    if name is None:
        return None
    return _fact(f"User's name is {name}", "fact", "identity:name", 0.95)


def _b_nickname(c: _Ctx) -> ExtractedFact | None:
    name = _name(c.raw("obj"), lenient_first=False, lowercase_ok=c.lowercase_ok)
    if name is None:
        return None
    return _fact(f"User likes to be called {name}", "fact", "identity:nickname", 0.85)


def _b_location(c: _Ctx) -> ExtractedFact | None:
    place = _place(c.raw("obj"), lowercase_ok=c.lowercase_ok)
    if place is None:
        return None
    verb = _WS_RE.sub(" ", (c.g("verb") or "").lower())
    shown = {"based": "is based in", "located": "is based in", "moved": "moved to",
             "relocated": "moved to"}.get(verb, "lives in")  # fmt: skip
    return _fact(f"User {shown} {place}", "fact", "identity:location", 0.9)


def _b_origin(c: _Ctx) -> ExtractedFact | None:
    place = _place(c.raw("obj"), lowercase_ok=c.lowercase_ok)
    if place is None:
        return None
    return _fact(f"User is from {place}", "fact", "identity:origin", 0.85)


def _job_phrase(raw: str) -> str | None:
    obj = _clean_object(_JOB_CUT_RE.sub("", raw))
    if obj is None or len(obj.split()) > MAX_OBJECT_WORDS:
        return None
    return obj


def _b_work_as(c: _Ctx) -> ExtractedFact | None:
    job = _job_phrase(c.raw("obj"))
    if job is None:
        return None
    return _fact(f"User works as {_third_person_pronouns(job)}", "fact", "identity:job", 0.9)


def _b_im_a(c: _Ctx) -> ExtractedFact | None:
    job = _job_phrase(c.raw("obj"))
    if job is None:
        return None
    words = job.lower().split()
    if words[0] in _JOB_BAD_FIRST or "fan" in words or not _JOB_LAST_RE.search(words[-1]):
        return None
    art = (c.g("art") or "").lower()
    return _fact(f"User is {art} {job}", "fact", "identity:job", 0.75)


_EMPLOYER_STOP = _words("home night weekends the myself me my a an it this that")


def _b_employer(c: _Ctx) -> ExtractedFact | None:
    org = _clean_object(_PLACE_CUT_RE.sub("", c.raw("obj")))
    if org is None or org.split()[0].lower() in _EMPLOYER_STOP:
        return None
    if not (org[0].isupper() or not org[0].isascii() or c.lowercase_ok):
        return None
    prep = (c.g("prep") or "").lower()
    return _fact(f"User works {prep} {org}", "fact", "identity:employer", 0.85)


def _b_context(c: _Ctx) -> ExtractedFact | None:
    obj = _obj(c)
    if obj is None:
        return None
    content = f"User is working on {_third_person_pronouns(obj)}"
    return _fact(content, "context", "context:working-on:" + slug(head(obj)), 0.7)


_SPECIES = (
    r"cats?|dogs?|kittens?|kitty|pupp(?:y|ies)|parrots?|birds?|rabbits?|bunn(?:y|ies)|"
    r"hamsters?|goldfish|fish|turtles?|tortoises?|snakes?|horses?|guinea\s+pigs?|lizards?|"
    r"ferrets?|geckos?|chickens?|budgies?|cockatiels?"
)


def _singular(word: str) -> str:
    w = _WS_RE.sub(" ", word.lower())
    if w.endswith("ies"):
        return w[:-3] + "y"
    if w.endswith("s") and not w.endswith("ss"):
        return w[:-1]
    return w


def _b_have_pet(c: _Ctx) -> ExtractedFact | None:
    species = _singular(c.g("species") or "")
    count = c.raw("count")
    noun = c.raw("species")
    adj = c.raw("adj") + " " if c.g("adj") else ""
    name = None
    if c.g("name"):
        name = _name(c.raw("name"), lenient_first=True, lowercase_ok=c.lowercase_ok)
        if name is None:
            return None
    if adj.strip().lower() in {"named", "called"}:
        return None
    named = f" named {name}" if name else ""
    key = f"pet:{species}" + (f":{slug(name)}" if name else "")
    return _fact(f"User has {count.lower()} {adj}{noun}{named}", "fact", key, 0.85)


def _b_my_pet(c: _Ctx) -> ExtractedFact | None:
    explicit = bool(c.g("naming"))
    name = _name(c.raw("obj"), lenient_first=explicit, lowercase_ok=c.lowercase_ok and explicit)
    if name is None:
        return None
    species = _singular(c.g("species") or "")
    return _fact(f"User has a {species} named {name}", "fact", f"pet:{species}:{slug(name)}", 0.85)


_UNIQUE_RELATIONS = _words(
    "wife husband spouse partner girlfriend boyfriend fiance fiancee fiancé fiancée mother father "
    "mom mum dad"
)
_RELATIONS = (
    r"wife|husband|spouse|partner|girlfriend|boyfriend|fianc[eé]e?|mother|father|mom|mum|dad|"
    r"sons?|daughters?|sisters?|brothers?|kids?|child|baby|grandmother|grandfather|grandma|"
    r"grandpa|aunt|uncle|cousin|niece|nephew|best\s+friend"
)


def _b_family(c: _Ctx) -> ExtractedFact | None:
    explicit = bool(c.g("naming"))
    name = _name(c.raw("obj"), lenient_first=explicit, lowercase_ok=c.lowercase_ok and explicit)
    if name is None:
        return None
    rel = _WS_RE.sub(" ", (c.g("rel") or "").lower())
    mod = c.g("mod")
    shown = f"{mod.lower()} {rel}" if mod else rel
    key = f"family:{slug(rel)}" + ("" if rel in _UNIQUE_RELATIONS else f":{slug(name)}")
    return _fact(f"User's {shown} is named {name}", "fact", key, 0.85)


def _b_tool(c: _Ctx) -> ExtractedFact | None:
    obj = _obj(c)
    if obj is None:
        return None
    verb = "is using" if c.g("ing") else "uses"
    content = f"User {verb} {_third_person_pronouns(obj)}"
    return _fact(content, "fact", "tool:" + slug(head(obj)), 0.75, "semantic")


def _rule(needles: str, pattern: str, build: _Builder, *, positive: bool = True) -> _Rule:
    return _Rule(tuple(needles.split("|")), re.compile(pattern, _I), build, positive)


_OBJ = r"\s+(?P<obj>\S.*)"
_CORR_VERBS = r"(?P<verb>like|love|enjoy|prefer|use|live\s+in|work\s+at|work\s+for)"
_DECIDE_VERBS = (
    r"(?P<verb>use|go\s+with|stick\s+with|switch\s+to|adopt|pick|choose|migrate\s+to|move\s+to)"
)
_NAMING = r"(?P<naming>'s\s+name\s+is|\s+is\s+(?:named|called)|\s*,?\s+(?:named|called))"

# Order matters: a later rule is ignored where an earlier one matched (corrections before
# dislikes before likes; "I'm a fan of" before "I'm a <job>").
_RULES: tuple[_Rule, ...] = (
    # corrections: overwrite the key of the statement they correct
    _rule("no longer", r"\bI\s+no\s+longer\s+" + _CORR_VERBS + _OBJ, _b_correction,
          positive=False),
    _rule("anymore|any more", r"\bI\s+(?:don't|do\s+not|dont)\s+" + _CORR_VERBS
          + r"\s+(?P<obj>\S.*?)\s+any\s?more\b", _b_correction, positive=False),
    _rule("stopped|quit", r"\bI(?:'ve|\s+have)?\s+(?:stopped|quit)\s+(?P<verb>use)ing" + _OBJ,
          _b_correction, positive=False),
    # dislikes
    _rule("n't|not|dont|dislike|hate|detest|loathe|stand",
          r"\bI\s+(?:(?:really|just|absolutely|totally|truly|honestly|still|genuinely|kinda)\s+)"
          r"{0,2}(?:(?:don't|do\s+not|dont|didn't|did\s+not)\s+(?:really\s+|much\s+|particularly\s+)?"
          r"(?:like|love|enjoy|care\s+for)|(?P<verb>dislike|hate|detest|loathe)|can't\s+stand|"
          r"cannot\s+stand|can\s+not\s+stand|can't\s+bear)" + _OBJ, _b_dislike, positive=False),
    _rule("not", _IM + r"not\s+(?:a\s+(?:big\s+|huge\s+|great\s+)?fan\s+of|into|fond\s+of)" + _OBJ,
          _b_dislike, positive=False),
    # likes
    _rule("prefer|like|love|enjoy|adore",
          r"\bI\s+" + _ADV + r"(?P<verb>prefer|like|love|enjoy|adore)\b" + _OBJ, _b_like),
    _rule("prefer|rather", r"\bI(?:'d|\s+would)\s+(?P<verb>prefer|rather)" + _OBJ, _b_like),
    _rule("fan", _IM + r"(?:really\s+|also\s+|such\s+|totally\s+)?an?\s+(?:big\s+|huge\s+|"
          r"massive\s+|real\s+|great\s+)?(?P<verb>fan)\s+of" + _OBJ, _b_like),
    _rule("into", _IM + r"(?:really\s+|also\s+|totally\s+)?(?P<verb>into)" + _OBJ, _b_like),
    _rule("favorite|favourite|fav",
          r"\bmy\s+(?:all[\s-]time\s+|absolute\s+|personal\s+)?(?:favou?rite|fave?)\s+"
          r"(?P<what>[^,;:!?]{1,60}?)\s+(?:is|are|was|=)" + _OBJ, _b_favorite),
    _rule("favorite|favourite|fav",
          r"^\s*(?P<obj>[^;:!?]{1,80}?)\s+(?:is|are)\s+my\s+(?:all[\s-]time\s+|absolute\s+)?"
          r"(?:favou?rite|fave?)\s+(?P<what>\S.*)", _b_favorite),
    # decisions
    _rule("'ll|will|shall",
          r"\b(?:I|we)(?:'ll|\s+will|\s+shall)\s+(?:(?:just|definitely|now|then|also|still|go\s+"
          r"ahead\s+and)\s+){0,2}" + _DECIDE_VERBS + _OBJ, _b_decision),
    _rule("decided", r"\b(?:I|we)(?:'ve|\s+have)?\s+(?:(?:finally|just|now|already)\s+)?decided\s+"
          r"to\s+" + _DECIDE_VERBS + _OBJ, _b_decision),
    _rule("chose|chosen|picked|opted|went with|selected|decided on",
          r"\b(?:I|we)(?:'ve|\s+have)?\s+(?:(?:finally|just|now|already)\s+)?(?P<verb>chose|chosen|"
          r"picked|opted\s+for|went\s+with|selected|decided\s+on)" + _OBJ, _b_decision),
    _rule("let", r"\blet'?s\s+(?:just\s+|definitely\s+)?" + _DECIDE_VERBS + _OBJ, _b_decision),
    _rule("going to|gonna",
          r"(?:^\s*|\b(?:I'm|I\s+am|Im|we're|we\s+are)\s+)(?:(?:definitely|just)\s+)?(?:going\s+to|"
          r"gonna)\s+" + _DECIDE_VERBS + _OBJ, _b_decision),
    _rule("switched|migrated",
          r"\b(?:I|we)(?:'ve|\s+have)?\s+(?:just\s+|recently\s+|finally\s+)?(?:switched|migrated)"
          r"\s+(?:(?:from|over\s+from)\s+(?P<src>\S.*?)\s+)?to" + _OBJ, _b_switch),
    # habits
    _rule("always|usually|never|often|typically|generally|normally|rarely|seldom|frequently|"
          "regularly|sometimes|tend",
          r"\bI(?P<be>'m|\s+am)?\s+(?:(?:almost|nearly|pretty\s+much|basically)\s+)?"
          r"(?P<adv>always|usually|never|often|typically|generally|normally|rarely|seldom|"
          r"frequently|regularly|sometimes|tend\s+to)" + _OBJ, _b_habit),
    # identity
    _rule("name", r"\bmy\s+(?:first\s+|full\s+|real\s+)?name(?:'s|\s+is)\s*:?" + _OBJ, _b_name),
    _rule("called", _IM + r"called" + _OBJ, _b_name),
    _rule("call me", r"\bcall\s+me" + _OBJ, _b_nickname),
    _rule("live|reside", r"\bI\s+(?:currently\s+|now\s+|still\s+|actually\s+)?(?P<verb>live|reside)"
          r"\s+in" + _OBJ, _b_location),
    _rule("based|located|living", _IM + r"(?:currently\s+|now\s+)?(?P<verb>based|located|living)"
          r"\s+(?:in|out\s+of)" + _OBJ, _b_location),
    _rule("moved|relocated", r"\bI(?:'ve|\s+have)?\s+(?:just\s+|recently\s+)?(?P<verb>moved|"
          r"relocated)\s+to" + _OBJ, _b_location),
    _rule("from", _IM + r"(?:originally\s+)?from" + _OBJ, _b_origin),
    _rule("come from", r"\bI\s+(?:originally\s+)?come\s+from" + _OBJ, _b_origin),
    _rule("work as", r"\bI\s+(?:currently\s+|now\s+)?work\s+as" + _OBJ, _b_work_as),
    _rule("work at|work for", r"\bI\s+(?:currently\s+|now\s+)?work\s+(?P<prep>at|for)" + _OBJ,
          _b_employer),
    _rule("i'm a|i am a|im a", _IM + r"(?P<art>an?)" + _OBJ, _b_im_a),
    _rule("working on|building", r"\b(?:I'm|I\s+am|Im|we're|we\s+are)\s+(?:currently\s+|now\s+)?"
          r"(?:working\s+on|building)" + _OBJ, _b_context),
    _rule("work on", r"\bI\s+(?:currently\s+)?work\s+on" + _OBJ, _b_context),
    # pets and family
    _rule("have|own|got", r"\bI\s+(?:also\s+)?(?:have|own|got)\s+(?P<count>an?|one|two|three|four|"
          r"five|\d{1,2})\s+(?:(?P<adj>[\w-]+)\s+)?(?P<species>" + _SPECIES + r")\b(?:\s*,?\s*"
          r"(?:named|called)\s+(?P<name>\S.*))?", _b_have_pet),
    _rule("my", r"\bmy\s+(?:(?:little|old|new|sweet)\s+)?(?P<species>" + _SPECIES + r")"
          + _NAMING + "?" + _OBJ, _b_my_pet),
    _rule("my", r"\bmy\s+(?:(?P<mod>older|younger|little|big|baby|twin|eldest|oldest|youngest)\s+)?"
          r"(?P<rel>" + _RELATIONS + r")(?P<naming>'s\s+name\s+is|\s+is\s+(?:named|called)|\s*,?\s+"
          r"(?:named|called)|\s+is)?" + _OBJ, _b_family),
    # tools
    _rule("use", r"\b(?:I|we)\s+(?:(?:mostly|mainly|primarily|currently|now|still|also|only|just|"
          r"exclusively|daily|personally)\s+)?use" + _OBJ, _b_tool),
    _rule("using", _IM + r"(?:currently\s+|now\s+|still\s+)?(?P<ing>using)" + _OBJ, _b_tool),
)  # fmt: skip


def _clause_facts(orig: str, norm: str, lowercase_ok: bool, out: dict[str, ExtractedFact]) -> None:
    lower = norm.lower()
    taken: list[tuple[int, int]] = []
    for rule in _RULES:
        if not any(n in lower for n in rule.needles):
            continue
        m = rule.regex.search(norm)
        if m is None:
            continue
        start = m.start()
        if any(a <= start < b for a, b in taken):
            continue
        if rule.positive and _NEGATION_RE.search(norm, 0, start) is not None:
            continue
        fact = rule.build(_Ctx(m, orig, lowercase_ok))
        if fact is None:
            continue
        taken.append((start, m.end()))
        out.pop(fact.key, None)  # a later statement of the same key wins, in message order
        out[fact.key] = fact


def extract_facts(text: str) -> list[ExtractedFact]:
    """Facts the user states about themselves in one message ``text`` (may be empty).

    Returns the facts in message order, at most one per key (a later statement of the same key
    replaces an earlier one). Returns ``[]`` for do-not-remember messages, questions, hedges,
    hypotheticals, quoted or pasted material. Only the first :data:`MAX_INPUT_CHARS` characters
    are examined. Pure; never raises for any ``str``.
    """
    if not text or is_do_not_remember(text):
        return []
    orig = text[:MAX_INPUT_CHARS]
    norm = _prepare(orig)
    lowercase_ok = not any("A" <= ch <= "Z" for ch in orig)
    out: dict[str, ExtractedFact] = {}
    for s_start, s_end in _sentences(norm):
        sentence = norm[s_start:s_end]
        if not sentence.strip() or _QUESTION_END_RE.search(sentence):
            continue
        if _INTERROGATIVE_RE.match(sentence) or _HYPOTHETICAL_RE.search(sentence):
            continue
        if _AI_SELF_RE.search(sentence):
            continue
        hedged = False  # a hedge also covers the clauses after it ("I'm not sure, I'll use X")
        for c_start, c_end in _clauses(norm, s_start, s_end):
            clause = norm[c_start:c_end]
            hedged = hedged or _HEDGE_RE.search(clause) is not None
            if hedged:
                continue
            _clause_facts(orig[c_start:c_end], clause, lowercase_ok, out)
    return list(out.values())
