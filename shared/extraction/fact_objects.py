"""The objects of extracted facts: cleaned phrases, person and place names, job titles.

Objects keep the user's spelling and case (trailing punctuation trimmed, at most
:data:`~shared.extraction.patterns.MAX_OBJECT_CHARS`); first-person pronouns inside them become
third person ("my" → "their").
"""

from __future__ import annotations

import re

from shared.extraction.patterns import (
    IGNORE_CASE,
    MAX_NAME_TOKENS,
    MAX_OBJECT_CHARS,
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


def person_name(raw: str, *, lenient_first: bool, lowercase_ok: bool) -> str | None:
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


PLACE_CUT_RE = re.compile(
    r"\s+(?:with|since|for|because|but|where|which|who|and|now|these\s+days|currently|"
    r"right\s+now|at\s+the\s+moment|though|although|so|when|while|as|to|until|after|before)\b.*",
    IGNORE_CASE | re.DOTALL,
)
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
