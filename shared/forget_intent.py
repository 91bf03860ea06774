"""Recognising a request to forget something, in English, German, French and Spanish.

:func:`detect_forget` is pure and cheap (a few anchored regular expressions over at most
:data:`MAX_MESSAGE_CHARS` characters), so the gateway runs it on every request. Precision comes
first: a message counts only when one of its sentences *starts* with a forget command (after an
optional interjection or politeness prefix such as "actually", "hmm", "please", "can you",
"eigentlich", "bitte", "en fait", "peux-tu", "la verdad", "¿puedes") and the
command names the user's own information. Phrase families (docs/ARCHITECTURE.md, "Forget"):

=====================  ==========================================================================
family                 examples
=====================  ==========================================================================
``forget``             "forget my phone number", "please forget where I work", "vergiss meine
                       Adresse", "oublie où je travaille", "olvida mi número", "olvídate de mi
                       dieta"; the target must start with a possessive ("my", "mein", "mon",
                       "mi") or a clause about the user ("where I", "what I told you about",
                       "that I", "everything you know about")
``delete``             "delete what you know about my address", "erase everything about my
                       diet", "remove my address from your memory", "lösche, was du über meine
                       Adresse weißt", "supprime ce que tu sais sur mon adresse", "borra lo que
                       sabes de mi dirección": delete/erase/remove/clear need "what you know
                       about" or "from your memory" (so "delete my account" is not one)
``stop_remembering``   "stop remembering my diet", "don't remember my address anymore", "hör
                       auf, dir meine Adresse zu merken", "merk dir meine Adresse nicht mehr",
                       "arrête de te souvenir de mon adresse", "deja de recordar mi dirección"
``dont_keep``          "don't keep my travel plans anymore", "stop storing my address",
                       "speichere meine Adresse nicht mehr", "ne garde plus mon adresse",
                       "no guardes más mi dirección"
``can_you_forget``     "kannst du meine Adresse vergessen?", "peux-tu oublier mon adresse ?"
=====================  ==========================================================================

Not requests (the negative list of the tests): statements ("I always forget my passwords",
"I forgot my umbrella on the train", "ich vergesse immer ..."), reminders ("don't forget my
birthday", "n'oublie pas ..."), dismissals ("forget about the report, let's plan the trip",
"never mind that, what's the time in Tokyo?", "forget it"), questions about forgetting ("did you
forget my name?") and deletes of things that are not memories ("delete my account").
"""

from __future__ import annotations

import re

import msgspec

from shared.forget_terms import target_stems

#: Longer messages are never treated as forget requests (a command is short).
MAX_MESSAGE_CHARS = 400
#: Characters of the target kept.
MAX_TARGET_CHARS = 200

_I = re.IGNORECASE
_APOSTROPHES = str.maketrans({"\u2019": "'", "\u2018": "'", "\u02bc": "'", "\uff07": "'"})


class ForgetIntent(msgspec.Struct, frozen=True, kw_only=True):
    """A recognised forget request.

    Attributes:
        target: the words naming what to forget, as written (at most 200 characters).
        stems: the target's topic stems (:func:`shared.forget_terms.target_stems`), never empty.
        family: the phrase family (module docstring table).
        language: ``en``, ``de``, ``fr`` or ``es``.
    """

    target: str
    stems: tuple[str, ...]
    family: str
    language: str


# Interjections and politeness before the command, per language (optional, repeatable).
_PREFIX = {
    "en": r"(?:(?:hey|hi|ok|okay|so|and|also|now|please|pls|kindly|actually|hmm+|hm|well|oh|"
    r"ah|um+|uh+|right|alright|oops|sorry|wait|btw|by\s+the\s+way|on\s+second\s+thoughts?|"
    r"thanks|thank\s+you)[\s,.!]+)*"
    r"(?:(?:can|could|would|will)\s+you\s+(?:please\s+)?|i\s+(?:want|need|would\s+like|'d\s+like)"
    r"\s+you\s+to\s+|i'd\s+like\s+you\s+to\s+)?(?:please\s+)?",
    "de": r"(?:(?:hey|hallo|ok|okay|also|und|jetzt|bitte|eigentlich|hmm+|hm|ach|oh|na|ähm|"
    r"übrigens|danke|moment)[\s,.!]+)*",
    "fr": r"(?:(?:hé|hey|ok|okay|alors|et|maintenant|stp|svp|s'il\s+te\s+pla[iî]t|"
    r"s'il\s+vous\s+pla[iî]t|en\s+fait|au\s+fait|finalement|euh|bon|ah|oh|hmm+|merci)"
    r"[\s,.!]+)*"
    r"(?:(?:peux|pourrais|pouvez|pourriez)[\s-]+(?:tu|vous)\s+|tu\s+peux\s+)?",
    "es": r"(?:(?:oye|hola|ok|vale|y|ahora|por\s+favor|la\s+verdad|en\s+realidad|"
    r"por\s+cierto|bueno|pues|eh|ah|oh|hmm+|gracias)[\s,.!]+)*"
    r"(?:¿?\s*(?:puedes|podrías|podrias|podéis|puede)\s+)?",
}
# What a target must start with: the user's own information.
# "I" as a target's subject, contracted too ("that I'm a nurse", "where I've lived").
_EN_I = r"i(?:['’](?:m|ve|d|ll))?\s"
_OWN = {
    "en": rf"(?:my\s|where\s+(?:{_EN_I}|my\s)|which\s+\w+\s+{_EN_I}|what\s+(?:{_EN_I}|my\s)|"
    rf"(?:the\s+fact\s+)?that\s+(?:{_EN_I}|my\s)|"
    r"(?:what|everything|anything|all)\s+(?:that\s+)?(?:you\s+know|i\s+(?:said|told\s+you|"
    r"mentioned))\s+about\s|(?:everything|all)\s+about\s+my\s|about\s+my\s)",
    "de": r"(?:mein|meine|meinen|meinem|meiner|meines|wo\s+ich\s|was\s+ich\s|dass\s+(?:ich|mein)|"
    r"welche[nmrs]?\s+\w+\s+ich\s|alles,?\s+was\s+du\s+über\s|(?:alles\s+)?über\s+mein)",
    "fr": r"(?:mon\s|ma\s|mes\s|où\s+je\s|ou\s+je\s|que\s+je\s|quel(?:le)?s?\s+\w+\s+je\s|"
    r"ce\s+que\s+(?:je\s+t'ai\s+dit|tu\s+sais)\s+(?:sur|de)\s|tout\s+ce\s+que\s+tu\s+sais\s+"
    r"(?:sur|de)\s|(?:que\s+)?j'|(?:de|du)\s+(?:mon|ma|mes)\s)",
    "es": r"(?:mi\s|mis\s|dónde\s|donde\s|que\s+(?:yo\s+)?\w+\s|qué\s+\w+\s|lo\s+que\s+"
    r"(?:te\s+dije|sabes)\s+(?:sobre|de)\s|todo\s+lo\s+que\s+sabes\s+(?:sobre|de)\s|"
    r"(?:de\s+)?(?:mi|mis)\s)",
}
_MEMORY_REF = {
    "en": r"(?:what|everything|anything|all)\s+(?:that\s+)?you\s+(?:know|remember|have|stored|"
    r"saved)\s+about\s",
    "de": r",?\s*(?:alles,?\s+)?was\s+du\s+über\s",
    "fr": r"(?:tout\s+)?ce\s+que\s+tu\s+sais\s+(?:sur|de)\s",
    "es": r"(?:todo\s+)?lo\s+que\s+sabes\s+(?:sobre|de)\s",
}
_FROM_MEMORY = {
    "en": r"\s+from\s+(?:your\s+)?memory\b",
    "de": r"\s+aus\s+deinem\s+(?:gedächtnis|speicher)\b",
    "fr": r"\s+de\s+ta\s+mémoire\b",
    "es": r"\s+de\s+tu\s+memoria\b",
}

_T = r"(?P<target>.+)"


_FORGET_VERB = {
    "en": r"forget\s+(?:about\s+)?",
    "de": r"vergiss[\s,]+(?:bitte[\s,]+)?",
    "fr": r"oublie[zs]?\s+(?:s'il\s+te\s+pla[iî]t\s+)?",
    "es": r"(?:olvida|olvide|olvídate|olvidate)\s+(?:de\s+)?",
}
_DELETE_VERB = {
    "en": r"(?:delete|erase|remove|clear|wipe|purge)\s+",
    "de": r"(?:lösche|lösch|entferne)[\s,]+(?:bitte[\s,]+)?",
    "fr": r"(?:efface|supprime|effacez|supprimez)\s+",
    "es": r"(?:borra|elimina|borre|elimine)\s+",
}
# (language, family, whether the politeness prefix may precede it, pattern)
_OTHER_FAMILIES: tuple[tuple[str, str, bool, str], ...] = (
    ("en", "stop_remembering", True, r"(?:stop|quit)\s+remembering\s+" + _T),
    (
        "en",
        "stop_remembering",
        True,
        r"(?:don't|do\s+not|no\s+longer)\s+remember\s+"
        r"(?P<target>.+?)\s+(?:anymore|any\s+more|any\s+longer)\b",
    ),
    (
        "en",
        "dont_keep",
        True,
        r"(?:don't|do\s+not)\s+(?:keep|store|save)\s+(?P<target>.+?)\s+"
        r"(?:anymore|any\s+more|any\s+longer)\b",
    ),
    ("en", "dont_keep", True, r"stop\s+(?:keeping|storing|saving)\s+" + _T),
    ("de", "stop_remembering", True, r"hör\s+auf,?\s+dir\s+(?P<target>.+?)\s+zu\s+merken\b"),
    ("de", "stop_remembering", True, r"merk(?:e)?\s+dir\s+(?P<target>.+?)\s+nicht\s+mehr\b"),
    (
        "de",
        "dont_keep",
        True,
        r"(?:speichere|speicher|behalte|behalt)\s+(?P<target>.+?)\s+"
        r"nicht\s+mehr\b",
    ),
    (
        "de",
        "can_you_forget",
        True,
        r"(?:kannst|könntest)\s+du\s+(?:bitte\s+)?"
        r"(?P<target>.+?)\s+vergessen\b",
    ),
    ("fr", "stop_remembering", True, r"arr[eê]te[sz]?\s+de\s+te\s+souvenir\s+(?:de\s+|d')" + _T),
    ("fr", "stop_remembering", True, r"ne\s+te\s+souviens\s+plus\s+(?:de\s+|d')" + _T),
    ("fr", "dont_keep", True, r"ne\s+(?:garde|retiens|conserve|mémorise)\s+plus\s+" + _T),
    ("fr", "can_you_forget", True, r"oublier\s+(?P<target>(?:mon|ma|mes)\s.+)"),
    ("es", "stop_remembering", True, r"deja\s+de\s+recordar\s+" + _T),
    ("es", "stop_remembering", False, r"(?:ya\s+)?no\s+recuerdes\s+(?:más\s+|mas\s+)?" + _T),
    ("es", "dont_keep", False, r"no\s+(?:guardes|almacenes|conserves)\s+(?:más\s+|mas\s+)?" + _T),
    ("es", "can_you_forget", True, r"olvidar\s+(?P<target>(?:mi|mis)\s.+)"),
)


def _families() -> list[tuple[str, str, re.Pattern[str]]]:
    """Compile every phrase family, in the order they are tried.

    (language, family, compiled pattern) in the order they are tried: per language ``forget`` and
    both ``delete`` forms, then :data:`_OTHER_FAMILIES`.
    """
    raw: list[tuple[str, str, str]] = []
    for lang, own in _OWN.items():
        pre, delete = _PREFIX[lang], _DELETE_VERB[lang]
        raw.append((lang, "forget", pre + _FORGET_VERB[lang] + rf"(?P<target>{own}.+)"))
        raw.append((lang, "delete", pre + delete + _MEMORY_REF[lang] + _T))
        raw.append((lang, "delete", pre + delete + rf"(?P<target>{own}.+?){_FROM_MEMORY[lang]}"))
    for lang, family, prefixed, pattern in _OTHER_FAMILIES:
        raw.append((lang, family, (_PREFIX[lang] if prefixed else "") + pattern))
    return [(lang, fam, re.compile(r"^\s*" + pat, _I)) for lang, fam, pat in raw]


_PATTERNS = _families()
# Every family has a word starting with one of these (lower-case): a message without such a word
# is rejected after one split (most chat messages never reach the family patterns).
_TRIGGERS = (
    "forget",
    "vergiss",
    "vergessen",
    "oubli",
    "olv",
    "delete",
    "erase",
    "remove",
    "clear",
    "wipe",
    "purge",
    "lösch",
    "entfern",
    "efface",
    "supprim",
    "borr",
    "elimin",
    "remember",
    "merk",
    "speicher",
    "behalt",
    "souv",
    "garde",
    "retien",
    "conserv",
    "mémoris",
    "record",
    "recuerd",
    "guard",
    "almacen",
    "keep",
    "stor",
    "sav",
)
#: A word (a run of ``\w``, as ``re.split(r"\W+")`` would cut it) that starts with a trigger:
#: one search instead of splitting every message into words (about 3 µs against 5 µs per
#: LoCoMo question).
_TRIGGER_WORD = re.compile(r"(?<!\w)(?:" + "|".join(map(re.escape, _TRIGGERS)) + ")")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n+")
# Where a target ends: a clause boundary.
_TARGET_END = re.compile(r"[,;:.!?¿¡\n]|\s(?:and\s+then|but|und\s+dann|aber|mais|pero)\s", _I)
# A second request after the target makes the forget clause a dismissal ("..., let's plan").
_NEW_REQUEST = re.compile(
    r"^\s*(?:let's|let\s+us|lass\s+uns|lasst\s+uns|allons|on\s+va|vamos|now|then|jetzt|dann|"
    r"maintenant|ahora|what|how|wie|was|comment|quoi|cómo|como|qué)\b",
    _I,
)
_TRAILING = re.compile(
    r"\s+(?:anymore|any\s+more|any\s+longer|please|now|forever|for\s+good|nicht\s+mehr|bitte|"
    r"für\s+immer|plus|s'il\s+te\s+pla[iî]t|stp|pour\s+toujours|por\s+favor|para\s+siempre|"
    r"ya|más)\s*$",
    _I,
)


def _clean_target(raw: str) -> str:
    """``raw`` cut at the first clause boundary, trailing adverbs ("anymore", "bitte") removed."""
    cut = _TARGET_END.search(raw)
    target = (raw[: cut.start()] if cut else raw).strip()
    previous = None
    while previous != target:
        previous = target
        target = _TRAILING.sub("", target).strip()
    return target[:MAX_TARGET_CHARS]


def _rest_is_new_request(sentence: str, match: re.Match[str]) -> bool:
    """True when the sentence goes on, after the target's clause, with another request."""
    raw = match.group("target")
    cut = _TARGET_END.search(raw)
    if cut is None:
        return False
    rest = raw[cut.end() :]
    return "?" in rest or _NEW_REQUEST.search(rest) is not None


def detect_forget(text: str) -> ForgetIntent | None:
    """The forget request in ``text`` (a user message), else ``None``.

    Sentences are tried in order; the first one that starts with a phrase of a family (module
    docstring) and has a target with at least one topic word wins, unless the message is longer
    than :data:`MAX_MESSAGE_CHARS` or another request follows the target in the same sentence
    ("forget about my diet, what's for dinner?"), which makes it a dismissal. Pure; never
    raises.
    """
    if not text or len(text) > MAX_MESSAGE_CHARS:
        return None
    if _TRIGGER_WORD.search(text.lower()) is None:
        return None
    normalized = " ".join(text.translate(_APOSTROPHES).split(" "))
    for sentence in _SENTENCE_END.split(normalized):
        for lang, family, pattern in _PATTERNS:
            match = pattern.match(sentence)
            if match is None or _rest_is_new_request(sentence, match):
                continue
            target = _clean_target(match.group("target"))
            stems = target_stems(target)
            if stems:
                return ForgetIntent(target=target, stems=stems, family=family, language=lang)
    return None
