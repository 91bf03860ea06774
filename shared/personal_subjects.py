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

import functools
import re
from collections.abc import Callable, Mapping, Sequence
from typing import TypeVar

from shared.question_form import asks_about_the_user
from shared.recall_index.analysis import analyse, query_tokens
from shared.recall_index.prepared import Prepared
from shared.spelling import american

__all__ = [
    "SUBJECT_WORDS",
    "Features",
    "about_someone_else",
    "asked_subjects",
    "drop_other_subjects",
    "features_of",
    "is_someone_elses",
    "prepared_features",
    "subjects_of",
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
#: "my dog", "our kids", "my little sister's", "my two cats": a possessive, then at most two
#: modifiers, then a listed word.
_ASKED_RE = re.compile(rf"\b(?:my|our)\s+(?:[\w-]+\s+){{0,2}}?({_WORDS})\b(?!-)", re.IGNORECASE)
#: A word of a memory text, with its possessive "'s" (letters only: "sister's", "Biscuit").
_TOKEN_RE = re.compile(r"[^\W\d_]+(?:['\u2019][sS]\b)?")
_POSSESSIVE = ("'s", "\u2019s", "'S", "\u2019S")
_LINKS = frozenset({"is", "was"})
#: Memory texts whose tokens are kept (recalled texts repeat request after request).
TEXT_MEMO = 4096
#: Words whose index terms are kept.
WORD_MEMO = 16_384


def asked_subjects(query: str) -> frozenset[Subject]:
    """The user's people and pets ``query`` names with "my"/"our" ("my dog" → ``{("pet", "dog")}``).

    Empty when it names none ("Is a hot dog a sandwich?", "What did Caroline's dog eat?").
    """
    if "my" not in query.lower() and "our" not in query.lower():
        return frozenset()
    return frozenset(_SUBJECT_OF[m.lower()] for m in _ASKED_RE.findall(query))


@functools.lru_cache(maxsize=TEXT_MEMO)
def _tokens(content: str) -> tuple[tuple[str, int, int], ...]:
    """``(word, start, end)`` of each word of ``content``, possessive "'s" included."""
    return tuple((m.group(), m.start(), m.end()) for m in _TOKEN_RE.finditer(content))


def _base(word: str) -> str:
    """A token lower-cased, without its possessive ("Sister's" → "sister")."""
    return (word[:-2] if word.endswith(_POSSESSIVE) else word).lower()


@functools.lru_cache(maxsize=TEXT_MEMO)
def _after(content: str) -> tuple[str, ...]:
    return tuple(words_after_subjects(content))


def words_after_subjects(content: str) -> list[str]:
    """The words of ``content`` that say something of one of its people or pets, in order.

    A lower-case word right after a listed word, with only spaces between ("dog named",
    "sister's birthday"); after "is"/"was", a participle ("sister is named"; the "Rex" of "my
    dog is Rex", or "rex" typed in lower case, is not one). "User has a dog named Biscuit" →
    ``["named"]``; "My sister's birthday is May 2" → ``["birthday"]``; "My dog is Rex" →
    ``[]``. What they say is about that one, not the user.
    """
    tokens = _tokens(content)
    out: list[str] = []
    for i, (word, _start, end) in enumerate(tokens[:-1]):
        if _base(word) not in _SUBJECT_OF:
            continue
        nxt, at, nxt_end = tokens[i + 1]
        if not content[end:at].isspace():
            continue
        if nxt.lower() in _LINKS and i + 2 < len(tokens):
            word2, at2, _ = tokens[i + 2]
            if content[nxt_end:at2].isspace() and word2[0].islower() and word2.endswith("ed"):
                out.append(word2)
        elif nxt[0].islower() and nxt.lower() not in _LINKS:
            out.append(nxt)
    return out


def _same_one(a: Subject, b: Subject) -> bool:
    return a[0] == b[0] and (not a[1] or not b[1] or a[1] == b[1])


_LOWER_WORD_RE = re.compile(r"[^\W\d_]+")


@functools.lru_cache(maxsize=TEXT_MEMO)
def _words(content: str) -> frozenset[str]:
    """The distinct lower-cased words of ``content`` ("sister's" gives "sister" and "s")."""
    return frozenset(_LOWER_WORD_RE.findall(content.lower()))


@functools.lru_cache(maxsize=TEXT_MEMO)
def _named(content: str) -> frozenset[Subject]:
    """The listed people and pets ``content`` names."""
    return frozenset(_SUBJECT_OF[w] for w in SUBJECT_WORDS.intersection(_words(content)))


def about_someone_else(content: str, subjects: frozenset[Subject]) -> bool:
    """Whether ``content`` names people or pets of the list, none of them one of ``subjects``.

    "My sister is called Anna" for ``{("pet", "dog")}`` → True; "My pet is called Rex", "Rex is
    my sister's dog" and "I have a golden retriever" → False. False when ``subjects`` is empty.
    """
    return bool(subjects) and _about_another(_named(content), subjects)


def _about_another(named: frozenset[Subject], subjects: frozenset[Subject]) -> bool:
    """Whether ``named`` holds someone and nobody who can be one of ``subjects``."""
    return bool(named) and not any(_same_one(n, s) for n in named for s in subjects)


#: Index terms of the words that name someone ("name", "named", "called"): said of anyone.
_NAMING_TERMS = frozenset({"name", "call"})
#: Index terms that say which of the user's things a query means, never what it is ("my
#: favourite book", "my new job"): naming words, and these.
_GENERIC_TERMS = frozenset({"name", "favourit", "favorit", "new", "current", "usual", "main"})


@functools.lru_cache(maxsize=WORD_MEMO)
def _word_terms(word: str) -> tuple[str, ...]:
    """:func:`analyse` of one word, every naming word as one ("called" names as "name" does).

    British "-our" spellings are read as American ones (:func:`shared.spelling.american`), so
    "my favourite book" and "User's favorite hobby" share their generic word.
    """
    return tuple("name" if t in _NAMING_TERMS else t for t in analyse(american(word)))


@functools.lru_cache(maxsize=TEXT_MEMO)
def _term_set(content: str) -> frozenset[str]:
    """The distinct index terms of ``content``'s words (naming words as one)."""
    return frozenset(t for w in _words(content) for t in _word_terms(w))


@functools.lru_cache(maxsize=TEXT_MEMO)
def _terms(content: str) -> tuple[str, ...]:
    """The index terms of ``content``'s words, in order, with repeats (naming words as one)."""
    return tuple(t for w, _, _ in _tokens(content) for t in _word_terms(_base(w)))


def _code(subject: Subject) -> str:
    return f"{subject[0]}:{subject[1]}"


def _decoded(code: str) -> Subject:
    kind, _, one = code.partition(":")
    return kind, one


def subjects_of(content: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """What the rules need of a memory text: its people and pets, and what it says only of them.

    ``(codes, terms)``: the ``kind:one`` code of each listed person or pet ``content`` names
    (``"pet:dog"``; ``"pet:"`` for "pet"), sorted; and the index terms it holds only right after
    one of them (:func:`words_after_subjects`: "named" in "User has a dog named Biscuit", as
    ``name``), sorted. Both empty for most texts. Prepared when a memory is indexed
    (:class:`shared.recall_index.prepared.Prepared`); pure.
    """
    named = _named(content)
    if not named:
        return (), ()
    after = [t for w in _after(content) for t in _word_terms(w)]
    every = _terms(content)
    others = {t for t in after if every.count(t) == after.count(t)}
    return tuple(sorted(_code(n) for n in named)), tuple(sorted(others))


Features = tuple[frozenset[Subject], frozenset[str]]
"""A memory's listed people and pets and the terms it says only of them."""


_NO_FEATURES: Features = (frozenset(), frozenset())


def prepared_features(codes: Sequence[str], others: Sequence[str]) -> Features:
    """The features of a memory from its prepared :func:`subjects_of` (codes and terms)."""
    if not codes:
        return _NO_FEATURES
    return frozenset(_decoded(c) for c in codes), frozenset(others)


def features_of(ready: Mapping[int, Prepared], memory_id: int) -> Features | None:
    """The features prepared for memory ``memory_id`` in ``ready`` (by rowid), None without any.

    :attr:`shared.recall_index.prepared.Prepared.subjects` and ``others``, decoded.
    """
    p = ready.get(memory_id)
    return None if p is None else prepared_features(p.subjects, p.others)


def _features_of_text(content: str) -> Features:
    return prepared_features(*subjects_of(content))


class _Asked:
    """What the rules need of one query, computed once for all its hits."""

    def __init__(self, query: str, subjects: frozenset[Subject]) -> None:
        self.subjects = subjects
        self.terms = list(dict.fromkeys(t for q in query_tokens(query) for t in _word_terms(q)))
        self.term_set = frozenset(self.terms)
        self.about_user = bool(subjects) or asks_about_the_user(query)
        # generic words beside a thing they qualify ("my favourite book")
        self.generic = not _GENERIC_TERMS.issuperset(self.terms) and not _GENERIC_TERMS.isdisjoint(
            self.terms
        )
        # what the query says of its subject ("my sister's birthday"), said of another
        self.said = {"name"}.union(t for w in words_after_subjects(query) for t in _word_terms(w))
        self.says = not self.said.isdisjoint(self.terms)

    def held(self, content: str) -> list[str]:
        """The query's terms that ``content`` holds."""
        terms = _term_set(content)
        return [t for t in self.terms if t in terms]

    def someone_elses(self, content: str, features: Features | None = None) -> bool:
        """:func:`is_someone_elses` for this query; ``features`` prepared, else from the text.

        A text is analysed only when a rule can apply to it: when it names a listed person or
        pet of the query's kind, or says something of one that the query asks, or when the
        query holds a generic word or what it says of its subject.
        """
        if not self.about_user:
            return False
        named, others = _features_of_text(content) if features is None else features
        if self.subjects:
            return self._of_another_subject(content, named)
        if named and not self.term_set.isdisjoint(others):
            held = self.held(content)  # said only of its people or pets ("dog named Biscuit")
            if held and others.issuperset(held):
                return True
        return self.generic and self._only_generic(self.held(content))

    def _of_another_subject(self, content: str, named: frozenset[Subject]) -> bool:
        """The rules of a query naming subjects, for a text naming ``named``."""
        if named:
            if _about_another(named, self.subjects):
                return True
            return self.generic and self._only_generic(self.held(content))
        if not (self.generic or self.says):  # it shares no word the rules could judge
            return False
        held = self.held(content)  # sharing only what the query says of its subject
        return self._only_generic(held) or (bool(held) and self.said.issuperset(held))

    def _only_generic(self, held: Sequence[str]) -> bool:
        return self.generic and bool(held) and _GENERIC_TERMS.issuperset(held)


#: :class:`_Asked`, memoised per query: the keyword and the vector leg judge the same query.
_asked = functools.lru_cache(maxsize=256)(_Asked)


def is_someone_elses(query: str, content: str, subjects: frozenset[Subject]) -> bool:
    """Whether ``content`` answers ``query`` only as it would be said of someone else.

    Only for a query about the user (it names one of the user's people or pets, or has a
    first-person word: :func:`shared.question_form.asks_about_the_user`). First, the memory
    shares with it only generic words that say which thing is meant ("favourite", "new",
    naming words) while the query names the thing too ("My favourite hobby is hiking" for
    "What is my favourite book?").

    With ``subjects`` (:func:`asked_subjects` of ``query``): the memory is
    :func:`about_someone_else`, or it names none of them and shares with the query only naming
    words or what the query says of its subject ("I work at a bakery called Crumbs" and "User's
    name is Dana" for "What is my dog called?" and "What should I name my cat?"; "My birthday is
    June 3" for "When is my sister's birthday?"). Without: the query words it holds are said
    only of one of its people or pets ("User has a dog named Biscuit", "My sister's birthday is
    May 2" for "What is my name?", "When is my birthday?"; naming words count as one: "My sister
    is called Anna" for "What is my name?"). Pure; the words of a text and the terms of a word
    are memoised (:data:`TEXT_MEMO`, :data:`WORD_MEMO`).
    """
    return _asked(query, subjects).someone_elses(content)


def drop_other_subjects(
    query: str,
    hits: Sequence[T],
    content_of: Callable[[T], str],
    features_of: Callable[[T], Features | None] | None = None,
) -> list[T]:
    """``hits`` without the memories :func:`is_someone_elses` for ``query``.

    ``hits`` in any order (kept); ``content_of``: a hit's memory text; ``features_of``: its
    prepared features (:func:`prepared_features`), None where there are none (then the text
    is analysed, memoised). English words only: a query of another language keeps every hit.
    """
    if not hits or not asks_about_the_user(query):  # "my"/"our" of a subject count too
        return list(hits)
    asked = _asked(query, asked_subjects(query))
    if features_of is None:
        return [h for h in hits if not asked.someone_elses(content_of(h))]
    return [h for h in hits if not asked.someone_elses(content_of(h), features_of(h))]
