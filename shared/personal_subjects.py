"""The user's people and pets a query asks about, and memories about someone else.

A small store has no statistics to tell a question's subject from its predicate: for "What is my
dog called?" the best keyword match of a store holding "My sister is called Anna" is that memory
(it shares "called"), and the relative floor, set by it, keeps it; an embedding rates the two
sentences alike for the same reason. A query that names one of the user's people or pets ("my
dog", "my sister's birthday", "our kids") asks about that one, so a recalled memory that names
other people or pets of the same kind of list and not this one is about someone else and is not
injected (docs/ARCHITECTURE.md, "Recall and ranking"). A memory naming nobody of the list ("The
wedding is on June 5", "I have a golden retriever named Rex") is kept: it may be the answer.

English words only (another language names no subject, so nothing is dropped). Each word maps to
its kind (``pet``, ``child``, ``parent``, ``sibling``, ``partner``, ...) and to what it names
within the kind (``dog``, ``mother``); a kind's own word ("pet", "kids", "parents") names any of
the kind. Two words can name the same one when they are of one kind and either is the kind's own
word or both name the same ("mum" and "mother", "puppy" and "dog"). Pure functions.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import TypeVar

__all__ = ["about_someone_else", "asked_subjects", "drop_other_subjects"]

T = TypeVar("T")

Subject = tuple[str, str]
"""(kind, one): ``("pet", "dog")``; ``one`` is ``""`` for the kind's own word ("pet")."""

_KINDS: dict[str, dict[str, str]] = {
    "pet": {
        "pet pets": "",
        "dog dogs puppy puppies pup doggo": "dog",
        "cat cats kitten kittens kitty": "cat",
        "parrot parrots budgie budgies cockatiel cockatiels bird birds": "bird",
        "rabbit rabbits bunny bunnies": "rabbit",
        "hamster hamsters": "hamster",
        "fish goldfish": "fish",
        "turtle turtles tortoise tortoises": "turtle",
        "snake snakes": "snake",
        "horse horses pony": "horse",
        "lizard lizards gecko geckos": "lizard",
        "ferret ferrets": "ferret",
    },
    "child": {
        "kid kids child children baby babies": "",
        "son sons": "son",
        "daughter daughters": "daughter",
    },
    "parent": {
        "parent parents": "",
        "mother mom mum mommy mummy mama": "mother",
        "father dad daddy papa": "father",
    },
    "sibling": {
        "sibling siblings": "",
        "sister sisters": "sister",
        "brother brothers": "brother",
    },
    "partner": {
        "partner spouse": "",
        "wife": "wife",
        "husband": "husband",
        "girlfriend": "girlfriend",
        "boyfriend": "boyfriend",
        "fiance fiancee fiancé fiancée": "fiance",
    },
    "grandparent": {
        "grandparent grandparents": "",
        "grandmother grandma granny nana": "grandmother",
        "grandfather grandpa granddad": "grandfather",
    },
    "aunt": {"aunt aunts auntie": "aunt"},
    "uncle": {"uncle uncles": "uncle"},
    "cousin": {"cousin cousins": "cousin"},
    "niece": {"niece nieces": "niece"},
    "nephew": {"nephew nephews": "nephew"},
}

_SUBJECT_OF: dict[str, Subject] = {
    word: (kind, one)
    for kind, ones in _KINDS.items()
    for words, one in ones.items()
    for word in words.split()
}

_WORDS = "|".join(sorted((re.escape(w) for w in _SUBJECT_OF), key=len, reverse=True))
_WORD_RE = re.compile(rf"\b({_WORDS})\b", re.IGNORECASE)
#: "my dog", "our kids", "my little sister's", "my two cats": a possessive, then at most two
#: modifiers, then a listed word.
_ASKED_RE = re.compile(rf"\b(?:my|our)\s+(?:[\w-]+\s+){{0,2}}?({_WORDS})\b(?!-)", re.IGNORECASE)
_APOSTROPHES = str.maketrans({"\u2019": "'", "\u2018": "'"})


def asked_subjects(query: str) -> frozenset[Subject]:
    """The user's people and pets ``query`` names with "my"/"our" ("my dog" → ``{("pet", "dog")}``).

    Empty when it names none ("Is a hot dog a sandwich?", "What did Caroline's dog eat?").
    """
    if "my" not in query.lower() and "our" not in query.lower():
        return frozenset()
    return frozenset(_SUBJECT_OF[m.lower()] for m in _ASKED_RE.findall(query))


def _same_one(a: Subject, b: Subject) -> bool:
    return a[0] == b[0] and (not a[1] or not b[1] or a[1] == b[1])


def about_someone_else(content: str, subjects: frozenset[Subject]) -> bool:
    """Whether ``content`` names people or pets of the list, none of them one of ``subjects``.

    "My sister is called Anna" for ``{("pet", "dog")}`` → True; "My pet is called Rex", "Rex is
    my sister's dog" and "I have a golden retriever" → False. False when ``subjects`` is empty.
    """
    if not subjects:
        return False
    named = {_SUBJECT_OF[w.lower()] for w in _WORD_RE.findall(content.translate(_APOSTROPHES))}
    if not named:
        return False
    return not any(_same_one(n, s) for n in named for s in subjects)


def drop_other_subjects(query: str, hits: Sequence[T], content_of: Callable[[T], str]) -> list[T]:
    """``hits`` without the memories :func:`about_someone_else` for the query's subjects.

    ``hits`` in any order (kept); ``content_of``: a hit's memory text. A query naming none of
    the user's people or pets keeps every hit.
    """
    subjects = asked_subjects(query)
    if not subjects:
        return list(hits)
    return [h for h in hits if not about_someone_else(content_of(h), subjects)]
