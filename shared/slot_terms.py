"""Search-only words of a learned fact: how a question names what the fact states.

A fact says what the user said ("User works at a bakery called Crumbs"); a later question names
the thing itself ("What is my job?", "What do I do for fun?", "What do I drink?"), and shares no
word with it, so the keyword leg cannot find it and an embedding of such short texts rates them
below the vector floor. The extractor knows what the fact is about (its upsert key,
:mod:`shared.extraction.facts`), so the learning pipeline adds the words of that slot, and of the
kind of thing liked ("tea" is a drink), to the fact's search context: a lower-weighted field that
helps finding it and is never injected (docs/ARCHITECTURE.md, "Recall engine"). Captured turns
get none: only a fact's key says what it is about.

English words only, chosen by hand for the slots the rule-based extractor fills; the lists are
short on purpose: each word is one a question about that slot would use, and none a question
about something else commonly does ("time", "animal", "like", "where", "use" and "living" were
tried and pulled facts into questions about the time in Tokyo, the fastest animal or where
penguins live: terms are stemmed, so "living" is "live"). Pure.
"""

from __future__ import annotations

__all__ = ["KIND_TERMS", "SLOT_TERMS", "slot_terms", "with_slot_terms"]

SLOT_TERMS: dict[str, str] = {
    "identity:nickname": "name nickname",
    "identity:job": "job occupation profession career",
    "identity:employer": "job employer workplace",
    "identity:location": "home hometown city",
    "identity:origin": "hometown origin",
    "pet:": "pet pets",
    "family:": "family relatives",
    "preference:favorite:hobby": "hobby hobbies fun pastime leisure",
    "preference:like:": "enjoy favorite",
    "preference:dislike:": "dislike hate",
    "pattern:": "habit routine",
    "context:working-on:": "project",
}
"""Words added per key prefix (the longest prefix of the fact's key that is listed wins; a key
and its ``:``-ended prefixes are tried, so ``pet:dog:rex`` takes ``pet:``)."""

#: Kinds of things a preference names: the words a question about that kind uses, by the
#: object's slug (the last part of a ``preference:``, ``pattern:`` or ``tool:`` key).
_KINDS: dict[str, tuple[str, ...]] = {
    "drink beverage": (
        "tea",
        "coffee",
        "espresso",
        "latte",
        "cappuccino",
        "beer",
        "wine",
        "water",
        "juice",
        "milk",
        "soda",
        "cola",
        "lemonade",
        "whisky",
        "whiskey",
        "vodka",
        "gin",
        "rum",
        "cocoa",
        "smoothie",
        "kombucha",
        "matcha",
        "chai",
        "cider",
        "sake",
    ),
    "food eat dish meal": (
        "pizza",
        "pasta",
        "sushi",
        "ramen",
        "curry",
        "tacos",
        "burgers",
        "burger",
        "salad",
        "steak",
        "chocolate",
        "cheese",
        "bread",
        "rice",
        "noodles",
        "soup",
        "chicken",
        "fish",
        "seafood",
        "ice-cream",
        "cake",
        "pancakes",
        "dumplings",
        "falafel",
        "hummus",
    ),
    "sport sports exercise": (
        "football",
        "soccer",
        "tennis",
        "basketball",
        "baseball",
        "golf",
        "running",
        "swimming",
        "cycling",
        "hiking",
        "climbing",
        "skiing",
        "yoga",
        "boxing",
        "rugby",
        "cricket",
        "volleyball",
        "surfing",
        "badminton",
        "hockey",
        "chess",
    ),
    "music genre": (
        "jazz",
        "rock",
        "pop",
        "classical",
        "hip-hop",
        "rap",
        "blues",
        "metal",
        "techno",
        "country",
        "reggae",
        "opera",
        "punk",
        "folk",
        "house",
    ),
}
KIND_TERMS: dict[str, str] = {thing: words for words, things in _KINDS.items() for thing in things}
"""The kind words of a liked thing, by its slug (``tea`` → ``drink beverage``)."""

_OBJECT_PREFIXES = ("preference:", "pattern:", "tool:")


def slot_terms(key: str) -> str:
    """The search-only words of a fact with upsert ``key``; ``""`` when none apply. Pure.

    The words of the longest listed prefix of ``key`` (:data:`SLOT_TERMS`), then, for a
    preference, habit or tool, the kind words of its object (:data:`KIND_TERMS`, by the key's
    last part, a slug; a hashed slug ``…~0123456789`` is looked up without its hash).
    """
    words: list[str] = []
    for end in range(len(key), 0, -1):
        if end == len(key) or key[end - 1] == ":":
            found = SLOT_TERMS.get(key[:end])
            if found is not None:
                words.append(found)
                break
    if key.startswith(_OBJECT_PREFIXES):
        thing = key.rsplit(":", 1)[-1].split("~", 1)[0]
        kind = KIND_TERMS.get(thing)
        if kind is not None:
            words.append(kind)
    return " ".join(words)


def with_slot_terms(key: str, context: str) -> str:
    """``context`` (a fact's search context) after the words :func:`slot_terms` gives ``key``.

    One line of slot words first, then ``context``; ``context`` unchanged when there are none.
    Pure.
    """
    words = slot_terms(key)
    if not words:
        return context
    return f"{words}\n{context}" if context else words
