"""What each regex extraction rule builds from its match: one :class:`ExtractedFact` or nothing.

A builder gets a :class:`RuleContext` (the match on the normalised clause and the original
clause) and returns a third-person fact with its category, key and confidence, or None when the
match is not a fact after all; the rule table is in :mod:`shared.extraction.regex`.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import NamedTuple

from shared.extraction.corrections import corrected_name, with_rejected_preference
from shared.extraction.fact_objects import (
    PLACE_CUT_RE,
    clean_object,
    conjugate,
    described_name,
    job_phrase,
    job_title,
    person_name,
    place_name,
    split_move_time,
    third_person_pronouns,
)
from shared.extraction.facts import CATEGORY_TYPES, ExtractedFact, head, slug
from shared.extraction.patterns import WS_RE, word_set

# ---- rules ------------------------------------------------------------------------------------


class RuleContext(NamedTuple):
    """What a rule builder sees: the match (on the normalised clause) and the original clause."""

    m: re.Match[str]
    orig: str  # original text of the clause, same offsets as the normalised clause
    lowercase_ok: bool  # the message has no upper-case ASCII letter at all
    correcting: bool = False  # the sentence corrects what was said ("Actually, ...", "No, ...")
    written: str = ""  # ``orig`` with its control characters, which ``orig`` has as spaces

    def raw(self, group: str) -> str:
        """The group's original text (user's spelling and case)."""
        return self.orig[self.m.start(group) : self.m.end(group)]

    def as_written(self, group: str) -> str:
        """The group's text as written, control characters in (see :func:`person_name`)."""
        return (self.written or self.orig)[self.m.start(group) : self.m.end(group)]

    def g(self, group: str) -> str | None:
        """The group's (normalised) text, or None if absent from this rule or unmatched."""
        return self.m.group(group) if group in self.m.re.groupindex else None


Builder = Callable[[RuleContext], "ExtractedFact | None"]


class Rule(NamedTuple):
    """One extraction rule: cheap substring pre-check, pattern, builder, negation handling."""

    needles: tuple[str, ...]  # lower-case substrings; the rule runs only if one occurs
    regex: re.Pattern[str]
    build: Builder
    positive: bool  # ignore the match when a negation precedes it in the clause
    anchor: str = ""  # the group where the fact starts in the clause, if not the match's start


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


def _obj(c: RuleContext, group: str = "obj") -> str | None:
    return clean_object(c.raw(group))


ADVERBS = (
    r"(?:(?:really|also|just|absolutely|totally|truly|definitely|still|generally|much|very\s+much|"
    r"actually|honestly|personally|strongly|mostly|always|do|kinda|so|genuinely)\s+){0,3}"
)
I_AM = r"\b(?:I'm|I\s+am|Im)\s+"

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


def build_correction(c: RuleContext) -> ExtractedFact | None:
    """A correction ("I no longer like X") → "User no longer likes X"."""
    verb = WS_RE.sub(" ", (c.g("verb") or "").lower())
    obj = _obj(c)
    if obj is None:
        return None
    prefix, third, type_ = _CORRECTION_KEYS[verb]
    key = prefix if prefix.startswith("identity:") else prefix + slug(head(obj))
    return _fact(
        f"User no longer {third} {third_person_pronouns(obj)}", "correction", key, 0.9, type_
    )


def build_dislike(c: RuleContext) -> ExtractedFact | None:
    """A dislike ("I don't like X", "I hate X") → "User dislikes X"."""
    obj = _obj(c)
    if obj is None:
        return None
    verb = (c.g("verb") or "").lower()
    word = "hates" if verb in {"hate", "detest", "loathe"} else "dislikes"
    content = f"User {word} {third_person_pronouns(obj)}"
    return _fact(content, "preference", "preference:dislike:" + slug(head(obj)), 0.9)


_LIKE_WORDS = {"prefer": "prefers", "like": "likes", "love": "loves", "enjoy": "enjoys",
               "adore": "loves"}  # fmt: skip


def build_like(c: RuleContext) -> ExtractedFact | None:
    """A preference ("I prefer X", "I love X") → "User prefers X"."""
    obj = _obj(c)
    if obj is None:
        return None
    verb = WS_RE.sub(" ", (c.g("verb") or "").lower())
    if verb.startswith("fan"):
        phrase = "is a fan of"
    elif verb.startswith("into"):
        phrase = "is into"
    else:
        phrase = _LIKE_WORDS.get(verb.split()[-1], "prefers")
    content = f"User {phrase} {third_person_pronouns(obj)}"
    fact = _fact(content, "preference", "preference:like:" + slug(head(obj)), 0.9)
    return with_rejected_preference(fact, obj, verb)


def build_favorite(c: RuleContext) -> ExtractedFact | None:
    """A favourite ("my favorite editor is X") → "User's favorite editor is X"."""
    what = clean_object(c.raw("what"))
    obj = _obj(c)
    if obj is None or what is None:
        return None
    obj = obj.rsplit(",", 1)[-1].strip()
    if not obj or obj.lower().startswith("not "):
        return None
    content = f"User's favorite {third_person_pronouns(what)} is {third_person_pronouns(obj)}"
    return _fact(content, "preference", "preference:favorite:" + slug(what), 0.9)


def build_decision(c: RuleContext) -> ExtractedFact | None:
    """A decision ("I'll use X", "we decided on X", "let's use X")."""
    obj = _obj(c)
    if obj is None:
        return None
    verb = WS_RE.sub(" ", (c.g("verb") or "use").lower())
    if verb in {"chose", "chosen", "picked", "opted for", "went with", "selected"}:
        phrase = "chose"
    else:
        phrase = f"decided to {verb}"
    content = f"User {phrase} {third_person_pronouns(obj)}"
    return _fact(content, "decision", "decision:" + slug(head(obj)), 0.85)


def build_switch(c: RuleContext) -> ExtractedFact | None:
    """A switch ("I switched from X to Y") → "User switched from X to Y"."""
    obj = _obj(c)
    if obj is None:
        return None
    src = clean_object(c.raw("src")) if c.g("src") else None
    frm = f" from {third_person_pronouns(src)}" if src else ""
    content = f"User switched{frm} to {third_person_pronouns(obj)}"
    return _fact(content, "decision", "decision:" + slug(head(obj)), 0.85)


_HABIT_CONF = {"sometimes": 0.6, "often": 0.75, "rarely": 0.7, "seldom": 0.7}


def build_habit(c: RuleContext) -> ExtractedFact | None:
    """A habit ("I always/usually/never X") → "User always X"."""
    obj = _obj(c)
    if obj is None:
        return None
    adv = WS_RE.sub(" ", (c.g("adv") or "").lower())
    if adv == "tend to":
        shown = "tends to " + third_person_pronouns(obj)
        key_adv = "usually"
    elif c.g("be"):
        shown = f"is {adv} {third_person_pronouns(obj)}"
        key_adv = adv
    else:
        parts = obj.split(None, 1)
        verb = conjugate(parts[0])
        rest = third_person_pronouns(parts[1]) if len(parts) > 1 else ""
        shown = f"{adv} {verb} {rest}".rstrip()
        key_adv = adv
    content = f"User {shown}"
    return _fact(
        content, "pattern", f"pattern:{key_adv}:{slug(head(obj))}", _HABIT_CONF.get(adv, 0.8)
    )


def build_name(c: RuleContext) -> ExtractedFact | None:
    """The user's name ("my name is X", "I'm called X") → "User's name is X"."""
    name = person_name(c.as_written("obj"), lenient_first=True, lowercase_ok=c.lowercase_ok)
    if name is None:
        return None
    return _fact(f"User's name is {name}", "fact", "identity:name", 0.95)


def build_nickname(c: RuleContext) -> ExtractedFact | None:
    """A nickname ("call me X") → "User likes to be called X"."""
    name = person_name(c.as_written("obj"), lenient_first=False, lowercase_ok=c.lowercase_ok)
    if name is None:
        return None
    return _fact(f"User likes to be called {name}", "fact", "identity:nickname", 0.85)


def build_location(c: RuleContext) -> ExtractedFact | None:
    """Where the user lives ("I live in X") → "User lives in X".

    A move ("I moved to Munich last month") → "User lives in Munich (moved there last month)":
    a question of where the user lives finds it by its words.
    """
    place = place_name(c.raw("obj"), lowercase_ok=c.lowercase_ok)
    if place is None:
        return None
    verb = WS_RE.sub(" ", (c.g("verb") or "").lower())
    if verb in ("moved", "relocated"):
        place, when = split_move_time(place)
        return _fact(f"User lives in {place} (moved there{when})", "fact", "identity:location", 0.9)
    shown = "is based in" if verb in ("based", "located") else "lives in"
    return _fact(f"User {shown} {place}", "fact", "identity:location", 0.9)


def build_origin(c: RuleContext) -> ExtractedFact | None:
    """Where the user is from ("I'm from X") → "User is from X"."""
    place = place_name(c.raw("obj"), lowercase_ok=c.lowercase_ok)
    if place is None:
        return None
    return _fact(f"User is from {place}", "fact", "identity:origin", 0.85)


def build_work_as(c: RuleContext) -> ExtractedFact | None:
    """The user's job ("I work as X") → "User works as X"."""
    job = job_phrase(c.raw("obj"))
    if job is None:
        return None
    return _fact(f"User works as {third_person_pronouns(job)}", "fact", "identity:job", 0.9)


def build_im_a(c: RuleContext) -> ExtractedFact | None:
    """The user's job ("I'm a X" with a job-like X) → "User is a X"."""
    job = job_title(c.raw("obj"))
    if job is None:
        return None
    art = (c.g("art") or "").lower()
    return _fact(f"User is {art} {job}", "fact", "identity:job", 0.75)


def build_job_at(c: RuleContext) -> ExtractedFact | None:
    """The job named with the employer ("I work at X as an engineer") → "User works as X".

    Only a phrase that reads as a job title: "as well", "as of May" are none.
    """
    job = job_title(c.raw("obj"))
    if job is None:
        return None
    return _fact(f"User works as {third_person_pronouns(job)}", "fact", "identity:job", 0.85)


_EMPLOYER_STOP = word_set("home night weekends the myself me my a an it this that")


def build_employer(c: RuleContext) -> ExtractedFact | None:
    """The user's employer ("I work at X") → "User works at X".

    A place named after its kind keeps the kind: "I work at a bakery called Crumbs" → "User
    works at a bakery called Crumbs"; the name after "called"/"named" is held to the rules of a
    bare employer name (capitalised unless the message is all lower case, not "it", "my", ...).
    """
    org = clean_object(PLACE_CUT_RE.sub("", c.raw("obj")))
    if org is None:
        return None
    kind, name = described_name(org)
    if name.split()[0].lower() in _EMPLOYER_STOP:
        return None
    if not (name[0].isupper() or not name[0].isascii() or c.lowercase_ok):
        return None
    prep = (c.g("prep") or "").lower()
    shown = f"{third_person_pronouns(kind)}{name}"
    return _fact(f"User works {prep} {shown}", "fact", "identity:employer", 0.85)


def build_context(c: RuleContext) -> ExtractedFact | None:
    """What the user is working on ("I'm working on X") → context memory."""
    obj = _obj(c)
    if obj is None:
        return None
    content = f"User is working on {third_person_pronouns(obj)}"
    return _fact(content, "context", "context:working-on:" + slug(head(obj)), 0.7)


SPECIES = (
    r"cats?|dogs?|kittens?|kitty|pupp(?:y|ies)|parrots?|birds?|rabbits?|bunn(?:y|ies)|"
    r"hamsters?|goldfish|fish|turtles?|tortoises?|snakes?|horses?|guinea\s+pigs?|lizards?|"
    r"ferrets?|geckos?|chickens?|budgies?|cockatiels?"
)


def _singular(word: str) -> str:
    w = WS_RE.sub(" ", word.lower())
    if w.endswith("ies"):
        return w[:-3] + "y"
    if w.endswith("s") and not w.endswith("ss"):
        return w[:-1]
    return w


def build_have_pet(c: RuleContext) -> ExtractedFact | None:
    """A pet ("I have a dog named X") → "User has a dog named X"."""
    species = _singular(c.g("species") or "")
    count = c.raw("count")
    noun = c.raw("species")
    adj = c.raw("adj") + " " if c.g("adj") else ""
    name = None
    if c.g("name"):
        name = person_name(c.as_written("name"), lenient_first=True, lowercase_ok=c.lowercase_ok)
        if name is None:
            return None
    if adj.strip().lower() in {"named", "called"}:
        return None
    named = f" named {name}" if name else ""
    key = f"pet:{species}" + (f":{slug(name)}" if name else "")
    return _fact(f"User has {count.lower()} {adj}{noun}{named}", "fact", key, 0.85)


def build_my_pet(c: RuleContext) -> ExtractedFact | None:
    """A named pet ("my dog X") → "User has a dog named X"."""
    explicit = bool(c.g("naming"))
    name = person_name(
        c.as_written("obj"), lenient_first=explicit, lowercase_ok=c.lowercase_ok and explicit
    )
    if name is None:
        return None
    species = _singular(c.g("species") or "")
    fact = _fact(f"User has a {species} named {name}", "fact", f"pet:{species}:{slug(name)}", 0.85)
    # "Actually my dog is called Max": the dog named before is this one, not a second dog
    return (
        corrected_name(fact, c.orig, c.m.start("obj"), f"pet:{species}:") if c.correcting else fact
    )


_UNIQUE_RELATIONS = word_set(
    "wife husband spouse partner girlfriend boyfriend fiance fiancee fiancé fiancée mother father "
    "mom mum dad"
)
RELATIONS = (
    r"wife|husband|spouse|partner|girlfriend|boyfriend|fianc[eé]e?|mother|father|mom|mum|dad|"
    r"sons?|daughters?|sisters?|brothers?|kids?|child|baby|grandmother|grandfather|grandma|"
    r"grandpa|aunt|uncle|cousin|niece|nephew|best\s+friend"
)


def build_family(c: RuleContext) -> ExtractedFact | None:
    """A family member ("my sister is called X") → "User's sister is named X"."""
    explicit = bool(c.g("naming"))
    name = person_name(
        c.as_written("obj"), lenient_first=explicit, lowercase_ok=c.lowercase_ok and explicit
    )
    if name is None:
        return None
    rel = WS_RE.sub(" ", (c.g("rel") or "").lower())
    mod = c.g("mod")
    shown = f"{mod.lower()} {rel}" if mod else rel
    named = rel not in _UNIQUE_RELATIONS  # two sisters are two keys; a wife is one
    key = f"family:{slug(rel)}" + (f":{slug(name)}" if named else "")
    fact = _fact(f"User's {shown} is named {name}", "fact", key, 0.85)
    if named and c.correcting:  # "No, my sister is called Anna": the sister named before
        return corrected_name(fact, c.orig, c.m.start("obj"), f"family:{slug(rel)}:")
    return fact


def build_tool(c: RuleContext) -> ExtractedFact | None:
    """A tool the user uses ("I mostly use X") → "User uses X" (semantic)."""
    obj = _obj(c)
    if obj is None:
        return None
    verb = "is using" if c.g("ing") else "uses"
    content = f"User {verb} {third_person_pronouns(obj)}"
    return _fact(content, "fact", "tool:" + slug(head(obj)), 0.75, "semantic")
