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

from shared.question_form import asks_about_the_user
from shared.recall_index.analysis import analyse, query_tokens

__all__ = [
    "SUBJECT_WORDS",
    "about_someone_else",
    "asked_subjects",
    "drop_other_subjects",
    "is_someone_elses",
    "words_after_subjects",
]

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

#: Every word of the list, lower-case.
SUBJECT_WORDS: frozenset[str] = frozenset(_SUBJECT_OF)

_WORDS = "|".join(sorted((re.escape(w) for w in _SUBJECT_OF), key=len, reverse=True))
_WORD_RE = re.compile(rf"\b({_WORDS})\b", re.IGNORECASE)
#: "my dog", "our kids", "my little sister's", "my two cats": a possessive, then at most two
#: modifiers, then a listed word.
_ASKED_RE = re.compile(rf"\b(?:my|our)\s+(?:[\w-]+\s+){{0,2}}?({_WORDS})\b(?!-)", re.IGNORECASE)
#: "dog named", "sister's birthday", "sister is named": a lower-case word right after a listed
#: word; after "is"/"was" a participle (the "Rex" of "my dog is Rex", or "rex" typed in lower
#: case, is not one).
_AFTER_RE = re.compile(
    rf"\b(?i:{_WORDS})(?:['\u2019]s)?\s+"
    r"(?:(?i:is|was)\s+(?=[a-z]\w*ed\b)|(?!(?i:is|was)\b))([a-z]\w*)"
)
_APOSTROPHES = str.maketrans({"\u2019": "'", "\u2018": "'"})


def asked_subjects(query: str) -> frozenset[Subject]:
    """The user's people and pets ``query`` names with "my"/"our" ("my dog" → ``{("pet", "dog")}``).

    Empty when it names none ("Is a hot dog a sandwich?", "What did Caroline's dog eat?").
    """
    if "my" not in query.lower() and "our" not in query.lower():
        return frozenset()
    return frozenset(_SUBJECT_OF[m.lower()] for m in _ASKED_RE.findall(query))


def words_after_subjects(content: str) -> list[str]:
    """The words of ``content`` that say something of one of its people or pets, in order.

    "User has a dog named Biscuit" → ``["named"]``; "My sister's birthday is May 2" →
    ``["birthday"]``; "My dog is Rex" → ``[]``. What they say is about that one, not the user.
    """
    return _AFTER_RE.findall(content)


def _same_one(a: Subject, b: Subject) -> bool:
    return a[0] == b[0] and (not a[1] or not b[1] or a[1] == b[1])


def about_someone_else(content: str, subjects: frozenset[Subject]) -> bool:
    """Whether ``content`` names people or pets of the list, none of them one of ``subjects``.

    "My sister is called Anna" for ``{("pet", "dog")}`` → True; "My pet is called Rex", "Rex is
    my sister's dog" and "I have a golden retriever" → False. False when ``subjects`` is empty.
    """
    if not subjects:
        return False
    named = _named(content)
    return bool(named) and not any(_same_one(n, s) for n in named for s in subjects)


#: Index terms of the words that name someone ("name", "named", "called"): said of anyone.
_NAMING_TERMS = frozenset({"name", "call"})
#: Index terms that say which of the user's things a query means, never what it is ("my
#: favourite book", "my new job"): naming words, and these.
_GENERIC_TERMS = frozenset({"name", "favourit", "favorit", "new", "current", "usual", "main"})


def _named(content: str) -> set[Subject]:
    return {_SUBJECT_OF[w.lower()] for w in _WORD_RE.findall(content.translate(_APOSTROPHES))}


def _mentions(content: str, subjects: frozenset[Subject]) -> bool:
    return any(_same_one(n, s) for n in _named(content) for s in subjects)


def _terms(text: str) -> list[str]:
    """:func:`analyse` of ``text``, every naming word as one ("called" names as "name" does)."""
    return ["name" if t in _NAMING_TERMS else t for t in analyse(text)]


def _held(terms: Sequence[str], content: str) -> list[str]:
    """The ``terms`` (index terms) that ``content`` holds, naming words as one."""
    words = set(_terms(content))
    asked = dict.fromkeys("name" if t in _NAMING_TERMS else t for t in terms)
    return [t for t in asked if t in words]


def _only_generic(asked: Sequence[str], held: Sequence[str]) -> bool:
    """Whether a memory holding ``held`` of the query's terms ``asked`` shares only generic ones.

    "My favourite hobby is hiking" for "What is my favourite book?"; never when the query has
    nothing but generic terms ("What is my name?").
    """
    terms = {"name" if t in _NAMING_TERMS else t for t in asked}
    return bool(held) and _GENERIC_TERMS.issuperset(held) and not _GENERIC_TERMS.issuperset(terms)


def _said_of_others(held: Sequence[str], content: str) -> bool:
    """Whether each of ``held`` is said in ``content`` only of one of its people or pets."""
    after = [t for w in words_after_subjects(content) for t in _terms(w)]
    if not held or not after:
        return False
    every = _terms(content)
    return all(every.count(t) == after.count(t) for t in held)


def is_someone_elses(query: str, content: str, subjects: frozenset[Subject]) -> bool:
    """Whether ``content`` answers ``query`` only as it would be said of someone else.

    First, for any query that names the user: the memory shares with it only generic words
    that say which thing is meant ("favourite", "new", naming words) while the query names the
    thing too ("My favourite hobby is hiking" for "What is my favourite book?").

    With ``subjects`` (:func:`asked_subjects` of ``query``): the memory is
    :func:`about_someone_else`, or it names none of them and shares with the query only naming
    words or what the query says of its subject ("I work at a bakery called Crumbs" and "User's
    name is Dana" for "What is my dog called?" and "What should I name my cat?"; "My birthday is
    June 3" for "When is my sister's birthday?"). Without: for a query about the user ("What is my
    name?", "When is my birthday?"), the query words it holds are said only of one of its people
    or pets ("User has a dog named Biscuit", "My sister's birthday is May 2"; naming words count
    as one: "My sister is called Anna" for "What is my name?"). Pure.
    """
    asked = query_tokens(query)
    about_user = bool(subjects) or asks_about_the_user(query)
    if about_user and _only_generic(asked, _held(asked, content)):
        return True
    if subjects:
        if about_someone_else(content, subjects):
            return True
        if _mentions(content, subjects):
            return False
        held = _held(asked, content)
        # what the query says of its subject ("my sister's birthday"), said of another
        said = {"name"}.union(t for w in words_after_subjects(query) for t in _terms(w))
        return bool(held) and said.issuperset(held)
    return about_user and _said_of_others(_held(asked, content), content)


def drop_other_subjects(query: str, hits: Sequence[T], content_of: Callable[[T], str]) -> list[T]:
    """``hits`` without the memories :func:`is_someone_elses` for ``query``.

    ``hits`` in any order (kept); ``content_of``: a hit's memory text. English words only: a
    query of another language keeps every hit.
    """
    lower = query.lower()
    if "my" not in lower and "our" not in lower and "i" not in lower.split():
        return list(hits)
    subjects = asked_subjects(query)
    return [h for h in hits if not is_someone_elses(query, content_of(h), subjects)]
