"""What a chat turn says: only a question, a request or a pleasantry, or a statement (pure).

A turn that only asks ("What is my dog called?", also typed as "what is my dog called"), makes a
request to the assistant ("Write a poem about the sea") or exchanges pleasantries ("ok thanks")
carries nothing to remember: learning does not capture it (:func:`states_nothing`), and recall
treats a stored one as a possible echo of the query (:mod:`shared.echo`). English rules; another
language's question without ``?`` counts as a statement. docs/ARCHITECTURE.md, "Recall".
"""

from __future__ import annotations

import functools
import re

from shared.fts_query import MEMO_CHARS

__all__ = [
    "NON_ANSWER_WORDS",
    "SENTENCE_RE",
    "asks_about_the_user",
    "is_question_or_request",
    "is_question_sentence",
    "says_one_thing",
    "states_nothing",
]

#: One sentence: split after ``. ! ? 。！？`` (closing quotes and brackets kept) and at newlines.
SENTENCE_RE = re.compile(r"[^.!?。！？\n]+[.!?。！？]*[\"')\]]*")
_QUESTION_END_RE = re.compile(r"[?？][?？!！\s\"')\]]*$")  # "called?", "called?!", "name??"
#: A question this short asks even with a first-person word: "my dog's name?", "my birthday?".
FRAGMENT_WORDS = 3
# A clause in which the user states something about themselves ("I moved to Berlin, any tips?").
_FIRST_PERSON_CLAUSE_RE = re.compile(
    r"(?:^|[,;:]\s*|\b(?:and|but|so|because)\s+)(?:I|I'm|Im|I've|I'll|I'd|my|we|we're|we've|our)\b",
    re.IGNORECASE,
)
# Hesitations and fillers before a question or request ("hmm ok what is my cat's name", "wait,
# what is my dog called again", "Quick question: where do I live").
_LEAD = (
    r"^\W*(?:(?:hmm+|hm+|um+|uh+|ok|okay|so|well|oh|ah|anyway|btw|hey|wait|sorry|and|also|"
    r"actually|(?:quick|random|silly|dumb|one|another|a)?\s*question|remind\s+me|real\s+quick)"
    r"\b[\s,.:;!-]*)*"
)
_WH = r"(?:what|where|when|who|whom|whose|which|why|how|if|whether)"
# A request addressed to the assistant: polite forms and common imperative verbs, at the start.
_REQUEST_RE = re.compile(
    _LEAD + r"(?:please\b|(?:can|could|would|will)\s+you\b|help\s+me\b|let\s+me\s+know\b|"
    r"(?:tell|show|give|send|teach|remind)\s+me\b|"
    # indirect questions: "I wonder what my dog is called", "do you know where I parked"
    r"i\s+(?:wonder|was\s+wondering)\s+(?:what|where|when|who|whom|whose|which|why|how|if|"
    r"whether)\b|i'?d\s+like\s+to\s+know\b|do\s+you\s+(?:know|remember)\s+(?:what|where|when|"
    r"who|whom|whose|which|why|how|if|whether)\b|"
    # "I need to know what my dog is called", "not sure what my dog is called", "I forgot
    # where I parked": the user asks for what they do not know
    rf"i\s+(?:need|want|would\s+like)\s+to\s+know\s+(?:{_WH}|my|the|your)\b|(?:i'?m\s+|i\s+am\s+)?not\s+sure\s+"
    rf"{_WH}\b|i\s+(?:forgot|forget|can'?t\s+remember|cannot\s+remember|don'?t\s+remember|"
    rf"can'?t\s+recall|don'?t\s+recall)\s+{_WH}\b|"
    r"(?:write|explain|summari[sz]e|translate|list|describe|generate|create|draft|rewrite|"
    r"refactor|debug|fix|compare|suggest|recommend|find|calculate|convert|review|outline|define|"
    r"brainstorm|compose|proofread|paraphrase|continue|elaborate|implement|solve)\b)",
    re.IGNORECASE,
)

# Greetings and thanks around a question or request ("Hi! Can you ...? Thanks.") state nothing.
_PLEASANTRY_RE = re.compile(
    r"^\W*(?:hi|hello|hey|thanks|thank\s+you|thx|cheers|ok|okay|great|cool|sure)\b\W*(?:\w+\W*)?$",
    re.IGNORECASE,
)
# Asides around a question that say nothing about the user: laughter and hesitation ("lol",
# "haha", "hmm"), remarks about the asking itself ("I forgot.", "just curious", "(asking for a
# friend)"), hashtags, and sentences without a letter or digit (":)", emoji).
_ASIDE_WORDS = (
    r"(?:lol|lmao|rofl|haha\w*|hehe\w*|xd|jk|pls|plz|please|hmm+|hm+|um+|uh+|oh|ah|so|well|"
    r"anyway|again|then|just\s+(?:curious|wondering|asking)|curious|asking\s+for\s+a\s+friend|"
    r"no\s+rush|thanks\s+in\s+advance|i\s+(?:forgot|forget|can'?t\s+remember|cannot\s+remember|"
    r"don'?t\s+remember|do\s+not\s+remember|can'?t\s+recall|don'?t\s+recall|am\s+curious|"
    r"'?m\s+curious|was\s+wondering|wonder)(?:\s+(?:it|again|already|now))?|#\w+)"
)
_ASIDE_RE = re.compile(rf"^\W*(?:{_ASIDE_WORDS}(?:\W+|$))+$", re.IGNORECASE)
# An aside after a comma at the end of a question ("what is my dog called, I can't recall").
_TRAILING_ASIDE_RE = re.compile(rf",\s*(?:{_ASIDE_WORDS}(?:\W+|$))+$", re.IGNORECASE)


# A slot filled with a non-answer ("My name is idk", "my dog is called whatever", "my job is
# none of your business"): the sentence says the user will not or cannot say.
NON_ANSWER_WORDS = "idk dunno whatever unknown secret none nothing nobody tbd what who where"
"""One word in a slot that answers nothing: never a name (:mod:`shared.extraction`), and a
sentence that fills a slot with it states nothing (:func:`states_nothing`)."""
_NON_ANSWER_RE = re.compile(
    r"^\W*(?:my|our)\s+(?:[\w'-]+\s+){1,3}?(?:is|are|'s)\s+(?:called\s+|named\s+)?"
    rf"(?:{'|'.join(NON_ANSWER_WORDS.split())}|a\s+secret|none\s+of\s+your\s+business|"
    r"no\s+one|n/?a)\b(?:\s+(?:lol|haha\w*|again))*\W*$",
    re.IGNORECASE,
)


def _aside(sentence: str) -> bool:
    """A greeting, thanks, aside (:data:`_ASIDE_RE`) or non-answer: it states nothing by itself."""
    return (
        _PLEASANTRY_RE.match(sentence) is not None
        or _ASIDE_RE.match(sentence) is not None
        or _NON_ANSWER_RE.match(sentence) is not None
        or not any(c.isalnum() for c in sentence)
    )


# A question typed without its "?" ("what laptop do I have", "whats my sisters job"): an
# interrogative word, then (after at most one word: "what laptop") an auxiliary or copula
# ("is", "do", "did", ...), or "how" with a degree word ("how old", "how many"), or an inverted
# auxiliary before a pronoun or determiner first ("do I have a dog", "is my flight on Monday").
# An interrogative followed by a subject is a clause of a statement ("When the weather is bad I
# work from home", "What the vet told me is ...", "What I love most is hiking"), as is "which is
# why ..." and "do/did you know/remember that ...". Only for a sentence with no closing
# punctuation at all.
_AUX = r"(?:is|are|was|were|am|do|does|did|can|could|should|would|will|shall|have|has|had)"
_SUBJECT = r"(?:i|you|we|he|she|it|they|the|my|our|his|her|their|this|that|these|those)"
_UNMARKED_QUESTION_RE = re.compile(
    rf"{_LEAD}(?:(?:what|where|when|who|whom|whose|which|why|how)(?:\s+(?!{_SUBJECT}\b)\w+)?\s+{_AUX}\b"
    r"(?<!which is)|(?:what|where|when|who|how|why)['\u2019]?s\b|"
    rf"how\s+(?:old|many|much|long|far|often|come)\b|{_AUX}\s+(?:i|you|we|my|our|your|the|it|there|this|that|they|he|she)\b"
    r"(?!\s+(?:know|remember|recall)\b)|do\s+you\s+(?:know|remember|recall)\b(?!\s+that\b)"
    # "do you remember my dog's name" asks; "do you know Rex is my dog" tells (a clause follows)
    r"(?![^.?!]*\b(?:is|are|was|were|am|has|have|had|'re)\s)|"
    r"any\s+idea\s+(?:what|where|when|who|whom|whose|which|why|how|if|whether)\b)",
    re.IGNORECASE,
)
# A note to remember ("Please note that I am allergic to peanuts", "Can you remember that my bike
# is a Brompton?") is worded as a request or a question but carries the fact: it is a statement.
_NOTE_RE = re.compile(
    r"\b(?:note|remember|keep\s+in\s+mind|don'?t\s+forget|do\s+not\s+forget)\s+(?:that\b|:)",
    re.IGNORECASE,
)
_UNPUNCTUATED_RE = re.compile(r"[^.!?。！？\s]\s*$")
# A question asked in place ("My dog is called what?", "my name is what again", "I live where
# again lol"): the sentence ends in an interrogative word after a verb, then at most an adverb
# of asking again. It asks even with a first-person clause: the slot of the answer is empty.
# Not after a verb of knowing ("I know what", "guess what", "no matter what").
_IN_SITU_RE = re.compile(
    r"\b(?!(?:know|knew|knows|guess|matter|wonder|care|remember|forgot|see|tell|ask)\b)[a-z']+"
    r"\s+(?:what|who|whom|where|when|which|how\s+(?:old|many|much|long))"
    r"(?:\s+(?:again|exactly|now|then|anyway|already|though|lol|lmao|haha\w*))*"
    r"[\s?？!！.\"')\]]*$",
    re.IGNORECASE,
)


# A first-person word: the user speaks of themselves ("my parrot", "am I", "for me"); "how do I
# ..." (and can/should/would/could) asks for instructions and "tell me ..." addresses the
# assistant, neither about the user.
_FIRST_PERSON_RE = re.compile(
    r"\b(?:my|mine|myself|me|our|ours|ourselves|we|us|i'?m|i'?ve|i'?d|i'?ll|i)\b", re.IGNORECASE
)
_HOW_DO_I_RE = re.compile(
    r"\bhow\s+(?:do|can|should|would|could|to)\s+i\b|\b(?:tell|show|give|teach|help)\s+me\b",
    re.IGNORECASE,
)


def asks_about_the_user(query: str) -> bool:
    """Whether ``query`` speaks of the user: a first-person word outside "how do I", "tell me".

    "Write a short poem about my parrot", "Which city am I living in?", "Suggest a gift for
    me" → True; "Is a hot dog a sandwich?", "How do I call a function in Rust?" → False.
    English rules (another language → False). Pure; queries of at most :data:`MEMO_CHARS`
    characters are memoised, as :func:`shared.fts_query.query_terms` memoises them (recall asks
    it of one query three times: the subject rules, the shared-terms rule and the vector leg's).
    """
    if len(query) <= MEMO_CHARS:
        return _memo_asks(query)
    return _asks(query)


def _asks(query: str) -> bool:
    return _FIRST_PERSON_RE.search(_HOW_DO_I_RE.sub(" ", query)) is not None


_memo_asks = functools.lru_cache(maxsize=256)(_asks)


def is_question_sentence(sentence: str) -> bool:
    """A question that states nothing about the user in a clause of its own.

    It ends in ``?`` (``?!`` and ``??`` too), or it has no closing punctuation and is worded as
    a question (:data:`_UNMARKED_QUESTION_RE`: "what laptop do I have", "do I have a dog"), after
    any lead ("wait,", "quick question:") and without a trailing aside after a comma ("..., I
    can't recall"). A marked question of at most :data:`FRAGMENT_WORDS` words asks whatever its
    words ("my dog's name?"), and so does a question asked in place, ending in its interrogative
    word (:data:`_IN_SITU_RE`: "My dog is called what?", "my name is what again").
    """
    core = _TRAILING_ASIDE_RE.sub("", sentence)
    if core and core != sentence and _QUESTION_END_RE.search(sentence) is None:
        sentence = core  # "what is my dog called, I forgot": the question without its aside
    marked = _QUESTION_END_RE.search(sentence) is not None
    if (marked or _UNPUNCTUATED_RE.search(sentence)) and _IN_SITU_RE.search(sentence):
        return True  # "My dog is called what?", "my name is what again"
    if not marked and not (
        _UNPUNCTUATED_RE.search(sentence) and _UNMARKED_QUESTION_RE.match(sentence)
    ):
        return False
    if marked and len(sentence.split()) <= FRAGMENT_WORDS:
        return True
    return not _FIRST_PERSON_CLAUSE_RE.search(sentence)


def is_question_or_request(text: str) -> bool:
    """True when every sentence of ``text`` is a question or a request to the assistant.

    A question sentence ends in ``?``/``？`` (or, typed without it and with no closing
    punctuation, starts like a question: "what laptop do I have") with no clause of its own
    starting with a first-person word ("What is my dog called?" is one; "I moved to Berlin, any
    tips?" is not). A sentence asking to note or remember something ("Please note that ...",
    "Can you remember that ...?") states it, and is never only a request. A request starts
    with a polite form or an imperative verb addressed to the assistant ("Please ...", "Can you
    ...", "Tell me ...", "Write ...", "Explain ..."), after any hesitation ("hmm ok ...").
    Greetings and thanks of at most two words ("Hi!", "Thanks a lot.") and asides ("lol", ":)",
    an emoji, "#tag", "I forgot.", "(asking for a friend)") are ignored; a text with any other
    sentence (a statement) is not. English rules: another language's question without ``?``
    counts as a statement (it is captured, as before). Empty text → False. Pure; never raises.
    """
    seen = False  # sentences: split after ``. ! ? 。！？`` and at newlines
    for match in SENTENCE_RE.finditer(text):  # stops at the first statement
        sentence = match.group().strip()
        if not sentence or _aside(sentence):
            continue
        if _NOTE_RE.search(sentence) or not (
            is_question_sentence(sentence) or _REQUEST_RE.search(sentence)
        ):
            return False
        seen = True
    return seen


def states_nothing(text: str) -> bool:
    """True when ``text`` carries nothing to remember: only asks, requests or pleasantries.

    :func:`is_question_or_request`, or every sentence a greeting or thanks of at most two words
    ("hi", "hello", "ok thanks", "Thanks a lot!"), or no word at all. What learning never
    captures as a turn (it still serves as the context of its neighbours). Pure; never raises.
    """
    if is_question_or_request(text):
        return True
    for match in SENTENCE_RE.finditer(text):
        sentence = match.group().strip()
        if sentence and not _aside(sentence):
            return False
    return True


def says_one_thing(text: str) -> bool:
    """True when ``text`` holds exactly one sentence that is not a greeting, thanks or aside.

    "My dog is called Rex." and "ok, my dog is called Rex lol" → True; "My dog is called Rex. He
    loves the beach." → False. What a turn must be to go with the one fact it taught when that
    fact is corrected (:func:`shared.memory_writes.supersede`). Pure; never raises.
    """
    said = 0
    for match in SENTENCE_RE.finditer(text):
        sentence = match.group().strip()
        if sentence and not _aside(sentence):
            said += 1
            if said > 1:
                return False
    return said == 1
