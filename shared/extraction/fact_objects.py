"""The objects of extracted facts: cleaned phrases, person and place names, job titles.

Objects keep the user's spelling and case (trailing punctuation trimmed, at most
:data:`~shared.extraction.patterns.MAX_OBJECT_CHARS`); first-person pronouns inside them become
third person ("my" → "their").
"""

from __future__ import annotations

import itertools
import re
import unicodedata

from shared.control_chars import control_chars_as_spaces
from shared.extraction.patterns import (
    IGNORE_CASE,
    MAX_NAME_TOKENS,
    MAX_OBJECT_CHARS,
    MAX_OBJECT_WORDS,
    WS_RE,
    word_set,
)
from shared.question_form import NON_ANSWER_WORDS

# ---- objects ----------------------------------------------------------------------------------

_TRAIL_RE = re.compile(r"[\s.,;:!?。！？、…\"'“”«»)\]}]+$")
_LEAD_RE = re.compile(r"^[\s\"'“«(\[{]+")
_NON_OBJECT_FIRST = word_set(
    "it it's its this that these those them they you your yours him her us how what when where "
    "why which who whom one something anything everything nothing some any all both either "
    "neither here there not no none so such doing being"
)
_PRONOUN_RE = re.compile(
    r"\b(?:I'm|I\s+am|I've|I'll|I'd|I|my|mine|myself|me|our|ours|ourselves|we)\b", IGNORE_CASE
)
_PRONOUN_MAP = {
    "i'm": "they're", "i am": "they are", "i've": "they've", "i'll": "they'll", "i'd": "they'd",
    "i": "they", "my": "their", "mine": "theirs", "myself": "themselves", "me": "them",
    "our": "their", "ours": "theirs", "ourselves": "themselves", "we": "they",
}  # fmt: skip


def third_person_pronouns(text: str) -> str:
    """``text`` with first-person pronouns in third person ("my" → "their", "me" → "them")."""

    def swap(m: re.Match[str]) -> str:
        return _PRONOUN_MAP[WS_RE.sub(" ", m.group().lower())]

    return _PRONOUN_RE.sub(swap, text.replace("\u2019", "'")) if _PRONOUN_RE.search(text) else text


def clean_object(raw: str) -> str | None:
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


_TOKEN_RE = re.compile(r"\S+")
_PARTICLES = word_set("van von de da del der di du le la bin al ibn ben mc st")
_NAME_STOP = word_set(
    "on at back later when if a an the not so maybe anytime tomorrow today now please sometime "
    "is was has had and or but to in for by from with me you him her it that this "
    # adverbs that end a question typed without its "?" ("what is my dog called again")
    "again anyway though too then already yet still either "
    # a question or a refusal in the name's slot ("my dog is called what", "my name is idk")
    f"{NON_ANSWER_WORDS} whom whose which why how whoever something someone somebody anything "
    "anyone uh uhh um umm hmm er erm lol lmao haha private classified irrelevant"
)


#: Characters around a name word that end the name after it, unless closing (``Sam,`` ends it).
_NAME_PUNCT = ",.;:!?\"'()[]"
_NAME_CLOSERS = "'\")]"
#: Unicode categories of the emoji and symbols a name may be decorated with ("🎉Sam🎉"): other
#: symbols (emoji, ✨), modifier symbols (skin tones), enclosing marks (keycap), format
#: characters (zero width joiner, emoji tags).
_DECORATION_CATEGORIES = frozenset({"So", "Sk", "Me", "Cf"})
#: Control characters (Unicode ``Cc``) and the line and paragraph separators.
_CONTROLS = "\x00-\x1f\x7f-\x9f\u2028\u2029"
#: A run of them that joins two pieces of text with no space beside it ("Sa\x00m").
_GLUED_CONTROL_RE = re.compile(f"(?<=[^\\s{_CONTROLS}])[{_CONTROLS}]+(?=[^\\s{_CONTROLS}])")


def _is_decoration(ch: str) -> bool:
    """Whether ``ch`` is an emoji or symbol around a name (never an ASCII character)."""
    if ch.isascii():
        return False
    return unicodedata.category(ch) in _DECORATION_CATEGORIES or "\ufe00" <= ch <= "\ufe0f"


def _name_word(tok: str) -> tuple[str, bool]:
    """``(word, ends)``: ``tok`` without the punctuation and decorations around it.

    ``ends``: punctuation around it ends the name after it ("Sam," and "(Sam" do; "Sam)",
    "Sam'" and "🎉Sam🎉" do not).
    """
    start, end = 0, len(tok)
    while start < end and (tok[start] in _NAME_PUNCT or _is_decoration(tok[start])):
        start += 1
    while end > start and (tok[end - 1] in _NAME_PUNCT or _is_decoration(tok[end - 1])):
        end -= 1
    ends = any(ch in _NAME_PUNCT for ch in tok[:start]) or any(
        ch in _NAME_PUNCT and ch not in _NAME_CLOSERS for ch in tok[end:]
    )
    return tok[start:end], ends


def _name_like(word: str) -> bool:
    """Whether ``word`` can be a word of a name: starts with a letter, no digit, no emoji."""
    if not word or not word[0].isalpha() or any(ch.isdigit() for ch in word):
        return False
    return word.isascii() or not any(unicodedata.category(ch) == "So" for ch in word)


def person_name(raw: str, *, lenient_first: bool, lowercase_ok: bool) -> str | None:
    r"""Leading name words of ``raw`` (1..4, joined by a space), or None if it starts with none.

    The first word must be capitalised unless ``lenient_first`` or ``lowercase_ok``, and not a
    stop word ("what", "idk", "on"); later words are capitalised or particles ("de", "van").
    Emoji and symbols around a word are not part of it ("🎉Sam🎉", "✨Ana✨" → ``Sam``, ``Ana``;
    a lone "🎉" before the name is skipped); a word with one inside ("Sa🎉m") is no name word.

    ``raw`` is the text as written. A control character (NUL, tab, escape, ...) or a line or
    paragraph separator with no space beside it, inside the words read or right after them
    ("Sa\x00m", "Sa\tm", "Sam\x00Smith", "Sam\x00."), gives None: never a name cut short
    ("Sa") nor one joined ("Sam"). The captured turn and the stored fact show a control
    character as a space (:mod:`shared.control_chars`, "Sa m"), so a joined name would be one
    its turn does not hold, and which of the two was meant cannot be told. A name is one slot
    (``identity:name``, the name in a pet's key): a wrong one replaces the right one stored
    before, while no fact loses nothing (the turn is still captured). One with a space beside
    it, before the name or at the end ("\x00Sam", "Ana\x00 Maria", "Sam\x00") separates
    words like a space.
    """
    tokens: list[str] = []
    first = seen = 0
    for m in itertools.islice(_TOKEN_RE.finditer(control_chars_as_spaces(raw)), 6):
        seen = m.end()
        word, ends = _name_word(m.group())
        if not tokens and not word and all(map(_is_decoration, m.group())):
            continue
        if not _name_like(word):
            break
        capital = word[0].isupper() or not word[0].isascii()
        if not tokens:
            if word.lower() in _NAME_STOP or not (capital or lenient_first or lowercase_ok):
                return None
        elif not (capital or word.lower() in _PARTICLES):
            break
        first = first if tokens else m.start()
        tokens.append(word)
        if len(tokens) == MAX_NAME_TOKENS or ends:
            break
    glued = _GLUED_CONTROL_RE.search(raw, first) if tokens else None
    if not tokens or (glued is not None and glued.start() <= seen):
        return None
    return " ".join(tokens)


PLACE_CUT_RE = re.compile(
    r"\s+(?:with|since|for|because|but|where|which|who|and|now|these\s+days|currently|"
    r"right\s+now|at\s+the\s+moment|though|although|so|when|while|as|to|until|after|before)\b.*",
    IGNORE_CASE | re.DOTALL,
)
# A place named after its kind: "a bakery called Crumbs", "a small café, named Le Petit".
_DESCRIBED_RE = re.compile(
    r"(?:an?|the)\s+[^\W\d_][\w'&-]*(?:\s+[^\W\d_][\w'&-]*){0,3}?,?\s+(?:called|named)\s+",
    IGNORE_CASE,
)


def described_name(obj: str) -> tuple[str, str]:
    """``(kind, name)`` of an object naming a place after its kind, else ``("", obj)``.

    ``"a bakery called Crumbs"`` → ``("a bakery called ", "Crumbs")``: the kind is an article
    and one to four words, then "called" or "named", and something after it. Pure.
    """
    m = _DESCRIBED_RE.match(obj)
    if m is None or m.end() == len(obj):
        return "", obj
    return obj[: m.end()], obj[m.end() :]


_PLACE_STOP = word_set("fear hope home peace the a an my your denial")


def place_name(raw: str, *, lowercase_ok: bool) -> str | None:
    """The place name at the start of ``raw`` (capitalised unless ``lowercase_ok``), or None."""
    obj = clean_object(PLACE_CUT_RE.sub("", raw))
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


JOB_CUT_RE = re.compile(
    r"\s+(?:at|in|for|with|and|but|since|from|who|which|that|so|because|working|by|on)\b.*",
    IGNORE_CASE | re.DOTALL,
)
JOB_LAST_RE = re.compile(
    r"(?:er|or|ist|ian|ant|ent|eer|ect|ic|man|woman|person|student|nurse|chef|pilot|dev|lead|"
    r"intern|pm|cto|ceo|cfo|coo|vp|founder|owner|parent|mom|dad|analyst|artist|scientist|"
    r"architect|consultant|freelancer|tutor|clerk|cook|coach|guard|agent|medic|ops|sre|editor)$",
    IGNORE_CASE,
)
JOB_BAD_FIRST = word_set("bit little lot big huge real total fan kind sort fan of")


def job_phrase(raw: str) -> str | None:
    """The job phrase at the start of ``raw``, or None.

    Cut before "at", "for", "with", ...; None past
    :data:`~shared.extraction.patterns.MAX_OBJECT_WORDS` words.
    """
    obj = clean_object(JOB_CUT_RE.sub("", raw))
    if obj is None or len(obj.split()) > MAX_OBJECT_WORDS:
        return None
    return obj


def job_title(raw: str) -> str | None:
    """:func:`job_phrase` of ``raw`` when it reads as a job title, else None.

    "a senior engineer", "an intern" are; "a bit tired", "a fan of jazz", "well" are not.
    """
    job = job_phrase(raw)
    if job is None:
        return None
    words = job.lower().split()
    if words[0] in JOB_BAD_FIRST or "fan" in words or not JOB_LAST_RE.search(words[-1]):
        return None
    return job


def conjugate(verb: str) -> str:
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


#: When a move happened, after the place: "last month", "in March", "two years ago".
_MOVE_TIME_RE = re.compile(
    r"\s+(?P<when>(?:(?:last|this|past)\s+(?:week|month|year|summer|winter|spring|fall|autumn)"
    r"|(?:in|during)\s+(?:january|february|march|april|may|june|july|august|september|"
    r"october|november|december|\d{4}|the\s+(?:summer|spring|winter|fall|autumn))"
    r"|(?:an?|one|two|three|four|five|six|seven|eight|nine|ten|\d{1,2})\s+"
    r"(?:days?|weeks?|months?|years?)\s+ago|recently|yesterday|today|lately)\b.*)$",
    re.IGNORECASE | re.DOTALL,
)


def split_move_time(place: str) -> tuple[str, str]:
    """``place`` without the time of a move after it, and that time (``" last month"`` or ``""``).

    "Munich last month" → ("Munich", " last month"); "Rio de Janeiro" → ("Rio de Janeiro", "").
    """
    timed = _MOVE_TIME_RE.search(place)
    if timed is None or timed.start() == 0:
        return place, ""
    return place[: timed.start()], f" {timed.group('when')}"
