"""Forget targets as term sets, and the pure rule deciding which memories a target names.

A forget target ("which gym I go to", "meine Telefonnummer") is reduced to *target stems*:
:func:`shared.fts_query.query_terms` of the target, minus :data:`TARGET_STOP_WORDS` (function
words of English, German, French and Spanish, and generic words such as "know", "said",
"everything"), each reduced by :func:`stem`. A memory's stems are the stems of every search term
of its content and key.

Matching rule (docs/ARCHITECTURE.md, "Forget"), precision first:

- *coverage* of a memory = share of the target stems found among the memory's stems (0..1);
- a memory is *named* by the target when its coverage is 1 (every target stem is in it);
- the decision is *clear* only when at least one memory is named, no more than ``max_matches``
  are (a broader target is refused as too broad), and every memory that is not named has a
  coverage of at most ``1 - MARGIN`` (0.5): a memory sharing most but not all of the target
  makes the target ambiguous, and then nothing is deleted.

Stems, not raw terms, are compared, so that "work" names "User works at a bakery"; the same
stems, hashed (:func:`hash_stems`), are what a forget tombstone keeps: the learning guard can then
recognise forgotten content without the tombstone holding the forgotten words.
"""

from __future__ import annotations

import functools
import hashlib
import re
import unicodedata
from collections.abc import Callable, Iterable, Sequence
from typing import Protocol, TypeVar

from shared.fts_query import query_terms
from shared.personal_subjects import SUBJECT_WORDS, words_after_subjects
from shared.slot_terms import KIND_TERMS, SLOT_TERMS, slot_terms
from shared.spelling import american

#: Lead of named memories over every other candidate, in coverage (0..1): a candidate that is
#: not named may cover at most ``1 - MARGIN`` of the target.
MARGIN = 0.5
#: Suffixes stripped by :func:`stem`, longest first (English, German, French and Spanish
#: inflections, and the noun endings that pair a noun with its verb: "preference" / "prefer",
#: "employment" / "employed"; a crude, deterministic Porter-like rule, see Porter 1980 "An
#: algorithm for suffix stripping").
_SUFFIXES = (
    "ences", "ances", "ments", "ions", "ence", "ance", "ment", "ing", "ion",
    "ed", "es", "en", "er", "os", "as", "s", "e", "n", "o", "a",
)  # fmt: skip
#: Words that name someone, one stem ("forget my dog's name" names "My dog is called Biscuit").
_NAMING = frozenset(["name", "names", "named", "naming", "call", "calls", "called", "calling"])
#: Shortest stem :func:`stem` leaves.
_MIN_STEM = 3
#: Most terms taken from a memory's text (content + key).
_MAX_MEMORY_TERMS = 4000

_TARGET_STOP_TEXT = """
    user users my mine me myself i i'm im your you yours we our us the a an this that these those
    it its
    about of on in at to for from with by and or as is are was were be been am do does did
    what where which who whom whose when why how whether there here
    know knew known said say says told tell wrote write mentioned mention
    everything anything something all any stuff thing things info information details detail fact
    memory memories remember remembering recall anymore longer more please just also again
    go goes going went get gets got have has had keep kept store stored save saved
    forget forgetting delete erase remove clear wipe purge stop quit don't dont
    vergiss vergessen lösche lösch entferne oublie oublier supprime efface olvida olvidar borra
    elimina
    mein meine meinen meinem meiner meines mich mir ich du dir dich dein deine deinem deinen
    der die das den dem des ein eine einen einem einer eines und oder was wo welche welcher
    welches wer wie dass ueber über von zu im am ist sind bin war hast hat habe gesagt weisst
    weißt alles bitte nicht mehr gedächtnis gedaechtnis speicher
    mon ma mes moi je tu te toi ton ta tes le la les un une des du de et ou que qui quoi où
    ou sur ce ça ca cela est suis sais dit tout toute tous plus mémoire memoire stp
    mi mis me yo tu te ti tus el la los las un una unos unas del de y o que qué quien dónde
    donde cual sobre lo es soy estoy sabes dije todo toda más mas memoria ya favor por
"""
#: Words never counted as target terms (they name no topic).
TARGET_STOP_WORDS: frozenset[str] = frozenset(_TARGET_STOP_TEXT.split())


def _fold(term: str) -> str:
    """Case-fold a term and remove its combining marks.

    ``term`` case-folded with combining marks removed (``Adresse`` → ``adresse``, ``où`` → ``ou``),
    matching the FTS5 tokenizer's ``remove_diacritics 2``.
    """
    decomposed = unicodedata.normalize("NFKD", term.casefold())
    return "".join(ch for ch in decomposed if not unicodedata.combining(ch))


_FOLDED_STOPS = frozenset(_fold(w) for w in TARGET_STOP_WORDS)


def stem(term: str) -> str:
    """Crude multilingual stem of one term.

    Crude multilingual stem: folded (:func:`_fold`), then :data:`_SUFFIXES` stripped repeatedly
    while at least :data:`_MIN_STEM` characters remain.

    British "-our" spellings fold first (:func:`shared.spelling.american`: ``favourite`` →
    ``favorit``);
    a naming word ("called", "named") is ``nam``, as "name" is.
    ``works``/``working``/``worked`` → ``work``; ``numbers``/``number`` → ``numb``. Both sides of
    a comparison use it, so over-stemming only merges words, never splits one. Pure.
    """
    word = american(_fold(term))
    if word in _NAMING:
        return "nam"
    changed = True
    while changed:
        changed = False
        for suffix in _SUFFIXES:
            if word.endswith(suffix) and len(word) - len(suffix) >= _MIN_STEM:
                word = word[: -len(suffix)]
                changed = True
                break
    return word


def target_stems(target: str) -> tuple[str, ...]:
    """Distinct stems of the topic words of ``target``, in order of appearance.

    Topic words are :func:`~shared.fts_query.query_terms` minus :data:`TARGET_STOP_WORDS`
    (compared folded). ``()`` when nothing names a topic ("that", "everything"). Pure.
    """
    out: list[str] = []
    for term in query_terms(target, max_terms=64):
        if term in TARGET_STOP_WORDS or _fold(term) in _FOLDED_STOPS:
            continue
        stemmed = stem(term)
        if stemmed not in out:
            out.append(stemmed)
    return tuple(out)


#: Member of :func:`text_stems` when the text holds a digit (no stem has this form).
HAS_NUMBER = "#number"


def text_stems(text: str) -> frozenset[str]:
    """Stems of every search term of a text.

    Stems of every search term of ``text`` (stop words included: coverage only looks up the target's
    stems in this set), plus :data:`HAS_NUMBER` when the text holds a digit. Pure.
    """
    stems = {stem(t) for t in query_terms(text, max_terms=_MAX_MEMORY_TERMS)}
    if any(ch.isdigit() for ch in text):
        stems.add(HAS_NUMBER)
    return frozenset(stems)


def memory_stems(content: str, key: str) -> frozenset[str]:
    """Stems of a memory: its content, its upsert key and the key's slot words.

    The key reads as words (``fact:works_at`` → works, at); the slot words are
    :func:`shared.slot_terms.slot_terms`' ("forget my job" names the fact keyed
    ``identity:employer``, as "What is my job?" finds it). Pure.
    """
    words = key.replace(":", " ").replace("_", " ")
    return text_stems(f"{content} {words} {slot_terms(key)}")


def slot_key_patterns(target: Sequence[str]) -> tuple[str, ...]:
    """SQL ``LIKE`` patterns of the keys whose slot words hold a stem of ``target``. Pure.

    A listed key prefix whose words (:data:`shared.slot_terms.SLOT_TERMS`) hold one gives
    ``<prefix>%``; a kind of liked thing whose words do (:data:`shared.slot_terms.KIND_TERMS`:
    "drink") gives ``preference:%:<thing>`` per thing of that kind. The forget flow fetches
    those memories as candidates besides its full-text ones: their text need not hold the word.
    """
    wanted = set(target)
    out = [prefix + "%" for prefix, stems in _slot_stems().items() if stems & wanted]
    out += [f"preference:%:{thing}" for thing, stems in _kind_stems().items() if stems & wanted]
    return tuple(out)


@functools.cache
def _slot_stems() -> dict[str, frozenset[str]]:
    return {prefix: text_stems(words) for prefix, words in SLOT_TERMS.items()}


@functools.cache
def _kind_stems() -> dict[str, frozenset[str]]:
    return {thing: text_stems(words) for thing, words in KIND_TERMS.items()}


def hash_stem(value: str) -> str:
    """16 hex characters of the SHA-256 of one stem (what a tombstone stores)."""
    return hashlib.sha256(value.encode("utf-8")).hexdigest()[:16]


def hash_stems(stems: Iterable[str]) -> tuple[str, ...]:
    """:func:`hash_stem` of each of ``stems``, sorted and distinct."""
    return tuple(sorted({hash_stem(s) for s in stems}))


#: Topic words that a memory about the topic rarely says, with words that show the topic instead
#: ("forget my address" names "I live at 42 Baker Street", which never says "address"). Only
#: signs specific enough to delete by: a street word next to a number is an address ("Wall
#: Street", "Abbey Road" alone are not); "live" is not ("my sister lives in Oslo"), nor a word
#: whose stem is an everyday word elsewhere (Spanish "calle" stems to "call", German "Gasse" to
#: "gas"). Compounds ("Hauptstraße") are not recognised.
_TOPIC_SIGNS_TEXT: dict[str, str] = {
    "address adresse anschrift dirección direccion indirizzo": (
        "street road avenue boulevard straße strasse rue avenida postcode postleitzahl"
    ),
}
_TOPIC_SIGNS: dict[str, frozenset[str]] = {
    stem(topic): frozenset(stem(sign) for sign in signs.split())
    for topics, signs in _TOPIC_SIGNS_TEXT.items()
    for topic in topics.split()
}


def search_stems(target: Sequence[str]) -> tuple[str, ...]:
    """The stems to search forget candidates by: ``target`` and the signs of its topic words.

    A superset for the full-text candidate query only; which candidates are named is decided by
    :func:`coverage` over ``target``. Distinct, in order. Pure.
    """
    out = list(dict.fromkeys(target))
    for t in target:
        out.extend(e for e in sorted(_TOPIC_SIGNS.get(t, ())) if e not in out)
    return tuple(out)


def _present(target_stem: str, stems: frozenset[str]) -> bool:
    """True when ``stems`` hold ``target_stem`` or, for a topic word, one of its signs.

    A sign counts only beside a number (a house number, a postcode): "42 Baker Street".
    """
    if target_stem in stems:
        return True
    signs = _TOPIC_SIGNS.get(target_stem)
    if signs is None or signs.isdisjoint(stems):
        return False
    return HAS_NUMBER in stems


def coverage(target: Sequence[str], stems: frozenset[str]) -> float:
    """Share (0..1) of ``target`` stems present in ``stems``; 0.0 for an empty target.

    A topic stem of :data:`_TOPIC_SIGNS_TEXT` ("address") also counts as present when one of its
    signs is ("street", "rue").
    """
    if not target:
        return 0.0
    return sum(1 for t in target if _present(t, stems)) / len(target)


def covers_hashed(target_hashes: Sequence[str], content: str, key: str) -> bool:
    """True when the memory text (``content``, ``key``) holds every hashed stem of a tombstone.

    The memory's stems as :func:`target_stems_of` counts them ("forget my name" does not cover
    "User has a dog named Bo"). An empty ``target_hashes`` never covers anything. Pure.
    """
    if not target_hashes:
        return False
    stems = memory_stems(content, key)
    if _SUBJECT_HASHES.isdisjoint(target_hashes):  # as :func:`target_stems_of` counts them
        stems = stems - _only_after_subjects(content, key)
    present = {hash_stem(s) for s in stems}
    return all(h in present for h in target_hashes)


class HasText(Protocol):
    """Anything with ``content`` and ``key`` (a stored memory, a memory about to be written)."""

    @property
    def content(self) -> str:
        """The memory text."""
        ...

    @property
    def key(self) -> str | None:
        """The upsert key (``None`` for a keyless write)."""
        ...


T = TypeVar("T", bound=HasText)


_SUBJECT_STEMS = frozenset(stem(w) for w in SUBJECT_WORDS)
_SUBJECT_HASHES = frozenset(hash_stem(s) for s in _SUBJECT_STEMS)
_WORD_RE = re.compile(r"\w+")


def _only_after_subjects(content: str, key: str) -> set[str]:
    """Stems ``content`` holds only right after one of the user's people or pets, not in ``key``."""
    after = [stem(w) for w in words_after_subjects(content)]
    if not after:
        return set()
    every = [stem(w) for w in _WORD_RE.findall(content)]
    key_stems = text_stems(key.replace(":", " ").replace("_", " "))
    return {t for t in set(after) if t not in key_stems and every.count(t) == after.count(t)}


def target_stems_of(target: Sequence[str], content: str, key: str) -> frozenset[str]:
    """The stems of a memory that can name ``target``: :func:`memory_stems`, but for one thing.

    When ``target`` names none of the user's people or pets ("my name"), a stem that the content
    holds only right after one of them ("User has a dog named Biscuit", "User's sister is named
    Lea", "my sister's birthday") and its key does not hold is left out: it is about that one,
    not the user's own ("forget my name" never deletes the dog). "forget my dog's name" keeps
    it. Pure.
    """
    stems = memory_stems(content, key)
    if _SUBJECT_STEMS.intersection(target):
        return stems
    return stems - _only_after_subjects(content, key)


def _coverage_of(target: Sequence[str], item: HasText) -> float:
    return coverage(target, target_stems_of(target, item.content, item.key or ""))


def is_named(target: Sequence[str], item: HasText) -> bool:
    """True when ``item`` holds every stem of ``target`` (coverage 1); False for an empty target.

    The item's stems as :func:`target_stems_of` counts them.
    """
    return bool(target) and _coverage_of(target, item) == 1.0


def named_by(target: Sequence[str], items: Sequence[T]) -> list[T]:
    """The ``items`` a forget target names (coverage 1), in order."""
    return [item for item in items if is_named(target, item)]


def clear_matches(
    target: Sequence[str],
    items: Sequence[T],
    max_matches: int,
    copy_of: Callable[[T, T], bool] | None = None,
) -> tuple[list[T], str]:
    """The memories to delete for ``target`` among candidate ``items``, with the reason.

    Returns ``(named, "ok")`` when the decision is clear (rule in the module docstring), else
    ``([], reason)`` with reason ``no_target`` (no topic word), ``no_match``, ``too_broad`` (more
    than ``max_matches`` named) or ``ambiguous`` (a candidate not named covers more than
    ``1 - MARGIN``). ``copy_of(named, other)``: True when ``other`` is a copy of a named memory
    (a fact and the turn it was learned from); a copy is deleted with what it copies, so it is
    never a rival that makes the target ambiguous ("forget that my dog is called Rex" names the
    turn, and the fact "User has a dog named Rex" learned from it holds two of its three words).
    Pure (``copy_of`` must be too).
    """
    if not target:
        return [], "no_target"
    scored = [(item, _coverage_of(target, item)) for item in items]
    named = [item for item, score in scored if score == 1.0]
    if not named:
        return [], "no_match"
    if len(named) > max_matches:
        return [], "too_broad"
    rivals = [
        score
        for item, score in scored
        if score < 1.0 and not (copy_of and any(copy_of(n, item) for n in named))
    ]
    if max(rivals, default=0.0) > 1.0 - MARGIN:
        return [], "ambiguous"
    return named, "ok"
