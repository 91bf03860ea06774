"""Names decorated with emoji or cut by a control character, and workplaces named after their
kind, through the regex extractor (``docs/ARCHITECTURE.md`` "Learning")."""

from __future__ import annotations

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from shared.extraction import extract_facts, key_for_statement


def facts_of(text: str) -> list[tuple[str, str]]:
    return [(f.key, f.content) for f in extract_facts(text)]


# ---- a workplace named after its kind -----------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "content"),
    [
        ("I work at Crumbs", "User works at Crumbs"),
        ("I work at a bakery called Crumbs", "User works at a bakery called Crumbs"),
        ("I work for a startup named Zentri", "User works for a startup named Zentri"),
        ("I work at a café called Le Petit", "User works at a café called Le Petit"),
        ("I work at the bakery called Crumbs.", "User works at the bakery called Crumbs"),
        ("I work at a small family bakery, called Crumbs",
         "User works at a small family bakery, called Crumbs"),
        ("I currently work at a bakery called Crumbs since May",
         "User works at a bakery called Crumbs"),
        ("i work at a bakery called crumbs", "User works at a bakery called crumbs"),
        ("I work at a bakery called 麦香", "User works at a bakery called 麦香"),
        ("I work at a company my dad owns called Zentri",
         "User works at a company their dad owns called Zentri"),
    ],
)  # fmt: skip
def test_a_workplace_named_after_its_kind_is_the_employer(text: str, content: str) -> None:
    assert facts_of(text) == [("identity:employer", content)]
    [fact] = extract_facts(text)
    assert (fact.category, fact.type, fact.confidence) == ("fact", "factual", 0.85)
    assert key_for_statement(fact.category, fact.content) == "identity:employer"


@pytest.mark.parametrize(
    "text",
    [
        "I work at a bakery",  # no name: nothing to remember it by
        "I work at a bakery called it",
        "I work at a bakery called my house",
        "I work at a bakery called the best one in town",
        "I work at a bakery called crumbs",  # a lower-case name in a message with capitals
        "I work at a bakery called",
        "I work at bakery called Crumbs",  # no article before the kind
    ],
)
def test_a_kind_without_a_name_is_no_employer(text: str) -> None:
    assert facts_of(text) == []


def test_a_correction_of_a_described_workplace_overwrites_the_employer() -> None:
    [fact] = extract_facts("I no longer work at a bakery called Crumbs")
    assert (fact.key, fact.category) == ("identity:employer", "correction")
    assert fact.content == "User no longer works at a bakery called Crumbs"


# ---- the job named with the employer ------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("I work at Google as an engineer", [("identity:employer", "User works at Google"),
                                             ("identity:job", "User works as an engineer")]),
        ("I work for Acme as a senior designer on the web team",
         [("identity:employer", "User works for Acme"),
          ("identity:job", "User works as a senior designer")]),
        ("I work at a bakery called Crumbs as a baker",
         [("identity:employer", "User works at a bakery called Crumbs"),
          ("identity:job", "User works as a baker")]),
        ("I work for myself as a freelancer", [("identity:job", "User works as a freelancer")]),
        ("I work at Google as well", [("identity:employer", "User works at Google")]),
        ("I work at Google as of March", [("identity:employer", "User works at Google")]),
        ("I work at Google as a fan of search", [("identity:employer", "User works at Google")]),
        # unchanged: the job first, the employer after it is not read
        ("I work as a data scientist at Spotify", [("identity:job",
                                                    "User works as a data scientist")]),
    ],
)  # fmt: skip
def test_the_job_named_with_the_employer(text: str, expected: list[tuple[str, str]]) -> None:
    assert facts_of(text) == expected
    for fact in extract_facts(text):
        assert key_for_statement(fact.category, fact.content) == fact.key


def test_a_negated_job_with_the_employer_is_no_job() -> None:
    assert facts_of("I don't work at Google as an engineer") == []
    assert facts_of("It's not that I work at Google as an engineer") == []


# ---- names decorated with emoji ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("My name is 🎉Sam🎉", ("identity:name", "User's name is Sam")),
        ("My name is Sam 🎉", ("identity:name", "User's name is Sam")),
        ("My name is 🎉 Sam", ("identity:name", "User's name is Sam")),
        ("I'm called ✨Ana Maria✨", ("identity:name", "User's name is Ana Maria")),
        ("my name is 🎉sam🎉", ("identity:name", "User's name is sam")),
        ("Call me ✨Ana✨", ("identity:nickname", "User likes to be called Ana")),
        ("My dog is called 🐶Rex", ("pet:dog:rex", "User has a dog named Rex")),
        ("My dog is called Rex🐶🐶!", ("pet:dog:rex", "User has a dog named Rex")),
        ("I have a dog named 🐕\u200d🦺Rex", ("pet:dog:rex", "User has a dog named Rex")),
        ("my cat Miso😺 hates baths", ("pet:cat:miso", "User has a cat named Miso")),
        ("My sister is called 🌸Lily🌸", ("family:sister:lily", "User's sister is named Lily")),
        ("My wife is named 👩🏽Ana", ("family:wife", "User's wife is named Ana")),
        ("My name is ❤️José❤️", ("identity:name", "User's name is José")),
    ],
)
def test_emoji_around_a_name_are_not_part_of_it(text: str, expected: tuple[str, str]) -> None:
    assert facts_of(text) == [expected]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("My name is Sa🎉m", []),
        ("My name is 🎉", []),
        ("Call me 🎉🎉", []),
        ("My dog is called 🐶", []),
        ("My name is Sam Sm🎉ith", [("identity:name", "User's name is Sam")]),
    ],
)
def test_an_emoji_inside_a_word_is_no_name(text: str, expected: list[tuple[str, str]]) -> None:
    assert facts_of(text) == expected


# ---- control characters in a name ---------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "My name is Sa\x00m",
        "My name is Sa\tm",
        "My name is Sa\x1bm",
        "My name is Sa\x7fm",
        "My name is Sa\x85m",
        "My name is Sa\rm",
        "My name is Sa\u2028m",
        "My name is Sam\x00Smith",
        "My name is Jean\x00-Luc",
        "My name is Mary Ann de L\x00ee",  # past the fourth word read
        "My name is Sam\x1b.",  # glued to what follows: which was meant cannot be told
        "Call me Jean-Lu\x1fc",
        "My dog is called Re\x00x",
        "I have a dog named Re\x0bx",
        "My sister is called An\x00na",
    ],
)
def test_a_name_cut_by_a_control_character_is_no_name(text: str) -> None:
    """Never the part before it ("Sa"), never the parts joined ("Sam"): no fact at all."""
    assert facts_of(text) == []


def test_the_other_facts_of_the_message_are_still_learned() -> None:
    assert facts_of("My name is Sa\x00m and I live in Berlin") == [
        ("identity:location", "User lives in Berlin")
    ]
    assert facts_of("My name is Sa\x00m. I prefer Vim") == [
        ("preference:like:vim", "User prefers Vim")
    ]
    assert facts_of("My name is Sam\rI live in Rome") == [
        ("identity:location", "User lives in Rome")
    ]


@pytest.mark.parametrize(
    ("text", "name"),
    [
        ("My name is \x00Sam", "Sam"),
        ("My name is Sam\x00", "Sam"),
        ("My name is Sam\r\n", "Sam"),
        ("My name is Ana\x00 Maria", "Ana Maria"),
        ("My name is Dana\x7f and I live in Lisbon", "Dana"),
    ],
)
def test_a_control_character_beside_a_space_separates_like_one(text: str, name: str) -> None:
    assert facts_of(text)[0] == ("identity:name", f"User's name is {name}")


def test_control_characters_elsewhere_read_as_spaces() -> None:
    """As the stored turn shows them (``shared/control_chars.py``)."""
    assert facts_of("I\x00prefer\x1bVim") == [("preference:like:vim", "User prefers Vim")]
    assert facts_of("Don't\x00remember this: my name is Sam") == []


_NAMES = ["Sam", "Alice", "Jean-Luc", "José", "Mary Ann", "O'Brien"]
_CONTROLS = [chr(c) for c in [*range(0x00, 0x0A), *range(0x0B, 0x20), *range(0x7F, 0xA0)]]


@settings(max_examples=300, deadline=None)
@given(
    st.sampled_from(_NAMES),
    st.integers(min_value=1),
    st.sampled_from([*_CONTROLS, "\u2028", "\u2029"]),
    st.sampled_from(["My name is ", "I'm called ", "Call me ", "My dog is called ", "my sister "]),
)
def test_no_name_is_ever_read_from_a_part_of_a_name(
    name: str, at: int, control: str, lead: str
) -> None:
    cut = 1 + at % (len(name) - 1)
    assume(" " not in name[cut - 1 : cut + 1])  # beside a space it separates like one
    text = lead + name[:cut] + control + name[cut:]
    shown = [content for _key, content in facts_of(text)]
    assert shown == [], text


@pytest.mark.parametrize(
    ("text", "content"),
    [
        ("I moved to Munich last month", "User lives in Munich (moved there last month)"),
        ("I just moved to Berlin in March", "User lives in Berlin (moved there in March)"),
        ("I relocated to Lisbon two years ago", "User lives in Lisbon (moved there two years ago)"),
        ("I moved to Rio de Janeiro.", "User lives in Rio de Janeiro (moved there)"),
    ],
)
def test_a_move_says_where_the_user_lives(text: str, content: str) -> None:
    assert [(f.key, f.content) for f in extract_facts(text)] == [("identity:location", content)]


@pytest.mark.parametrize(
    "text",
    [
        "My name isn't Dana, it's Dara",
        "My name is not Dana, it is Dara.",
        "my name's not Dana but Dara",
    ],
)
def test_a_denied_name_gives_the_name_after_it(text: str) -> None:
    assert [(f.key, f.content) for f in extract_facts(text)] == [
        ("identity:name", "User's name is Dara")
    ]


@pytest.mark.parametrize("text", ["My name isn't Dana", "My name isn't important"])
def test_a_denied_name_alone_is_no_name(text: str) -> None:
    assert extract_facts(text) == []
