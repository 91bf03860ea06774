"""A question that names what a fact is about finds the fact (docs/ARCHITECTURE.md, "Learning").

The user states a fact in their own words; the question later names the thing itself and shares
no word with it. Learned through the real pipeline on an embedded gateway (learning in-process,
real SQLite), asked in a new session; the fake upstream shows what was injected.
"""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from tests.e2e.test_recall_echo_cases import SLOW_OK, injected_block, send, user
from tests.fakes.upstream import FakeUpstream
from tests.harness import GatewayHarness

EXAMPLES = [
    ("I work at a bakery called Crumbs", "What is my job?", "Crumbs"),
    ("I work as a nurse", "What is my occupation?", "nurse"),
    ("My favourite hobby is hiking", "What do I do for fun?", "hiking"),
    ("I prefer tea", "What do I drink in the morning?", "tea"),
    ("I like coffee", "What do I drink?", "coffee"),
    ("I love sushi", "What food do I enjoy?", "sushi"),
    ("I live in Munich", "Where is my home?", "Munich"),
    ("Please call me Dee", "What is my name?", "Dee"),
]


def leaks(
    gw: GatewayHarness, upstream: FakeUpstream, secret: str, questions: Sequence[str]
) -> dict[str, str]:
    """The block injected for each of ``questions`` (a new session each) that got one."""
    leaked = {}
    for question in questions:
        upstream.requests.clear()
        resp = send(gw, secret, [user(question)], session="s-other")
        if resp.headers["x-mnemogate-memory-injected"] != "0":
            leaked[question] = injected_block(upstream)
    return leaked


def learn(gw: GatewayHarness, upstream: FakeUpstream, secret: str, key_id: str, said: str) -> None:
    upstream.reply_text = "Noted."
    send(gw, secret, [user(said)], session="s-learn")
    gw.wait_for_memories(
        lambda ms: any(m.category != "turn" for m in ms), owner_id=key_id
    )  # the fact, not only the captured turn


@pytest.mark.parametrize("strategy", ["exact", "hybrid"])
@pytest.mark.parametrize(("said", "asked", "answer"), EXAMPLES, ids=[c[1] for c in EXAMPLES])
def test_the_question_names_the_slot(gateway_factory, upstream, strategy, said, asked, answer):
    gw: GatewayHarness = gateway_factory(retrieval_strategy=strategy, **SLOW_OK)
    key_id, secret = gw.create_key()
    learn(gw, upstream, secret, key_id, said)
    upstream.requests.clear()
    resp = send(gw, secret, [user(asked)], session="s-ask")
    assert answer in injected_block(upstream), (dict(resp.headers), gw.memories(key_id))


def test_slot_words_are_never_injected_and_unrelated_questions_stay_empty(
    gateway_factory, upstream
):
    gw: GatewayHarness = gateway_factory(**SLOW_OK)
    key_id, secret = gw.create_key()
    learn(gw, upstream, secret, key_id, "I work at a bakery called Crumbs")
    upstream.requests.clear()
    send(gw, secret, [user("What is my job?")], session="s-ask")
    block = injected_block(upstream)
    assert "Crumbs" in block and "employer" not in block and "workplace" not in block, block
    for unrelated in ("Write a poem about the sea", "What is my dog called?", "What is my name?"):
        resp = send(gw, secret, [user(unrelated)], session="s-other")
        assert resp.headers["x-mnemogate-memory-injected"] == "0", (
            unrelated,
            injected_block(upstream),
        )


UNRELATED = [
    "What's the weather like today?",
    "Tell me a fun fact about space",
    "What time is it in Tokyo?",
    "Where is the Eiffel Tower?",
    "How do I use git rebase?",
    "What is the name of the capital of France?",
    "Write a story like Hemingway would",
    "How does a company raise money?",
    "Which animal is the fastest?",
    "What does this word look like in French?",
    "How do I play the piano?",
    "What music genre is this song?",
    "Where do penguins live?",
    "Where does the queen live?",
    "Who called the meeting?",
]


@pytest.mark.parametrize("strategy", ["exact", "hybrid"])
def test_slot_words_do_not_pull_facts_into_unrelated_questions(gateway_factory, upstream, strategy):
    gw: GatewayHarness = gateway_factory(retrieval_strategy=strategy, **SLOW_OK)
    key_id, secret = gw.create_key()
    for said, _, _ in EXAMPLES:
        learn(gw, upstream, secret, key_id, said)
    learn(gw, upstream, secret, key_id, "I use Neovim for coding")
    learn(gw, upstream, secret, key_id, "I usually go running in the evening")
    send(gw, secret, [user("My dog is called Rex")], session="s-learn")
    gw.wait_for_memories(lambda ms: any("Rex" in m.content for m in ms), owner_id=key_id)
    leaked = leaks(gw, upstream, secret, UNRELATED)
    assert not leaked, leaked


def test_forget_names_a_fact_by_its_slot(gateway_factory, upstream):
    gw: GatewayHarness = gateway_factory(**SLOW_OK)
    key_id, secret = gw.create_key()
    for said in ("I work at a bakery called Crumbs", "I prefer tea", "I live in Munich"):
        learn(gw, upstream, secret, key_id, said)

    def texts() -> list[str]:
        return [m.content for m in gw.memories(key_id)]

    send(gw, secret, [user("Please forget my job")], session="s-forget")
    gw.wait_for_memories(lambda ms: not any("Crumbs" in m.content for m in ms), owner_id=key_id)
    assert any("tea" in t for t in texts()) and any("Munich" in t for t in texts()), texts()
    send(gw, secret, [user("Please forget what I drink")], session="s-forget")
    gw.wait_for_memories(lambda ms: not any("tea" in m.content for m in ms), owner_id=key_id)
    assert any("Munich" in t for t in texts()), texts()
    upstream.requests.clear()
    send(gw, secret, [user("What is my job?")], session="s-ask")
    assert "Crumbs" not in injected_block(upstream)


ONE_CHAT = [
    "I work at a bakery called Crumbs",
    "My favourite hobby is hiking",
    "I prefer tea",
    "Please call me Dee",
    "I live in Munich",
    "My dog is called Rex",
    "My sister is called Anna",
]


@pytest.mark.parametrize("strategy", ["exact", "hybrid"])
def test_facts_stated_in_one_chat_do_not_ride_on_each_other(gateway_factory, upstream, strategy):
    # each turn's search context holds its neighbours: a memory about someone else that the
    # question screens out must not leave its neighbours to be injected in its place
    gw: GatewayHarness = gateway_factory(retrieval_strategy=strategy, **SLOW_OK)
    key_id, secret = gw.create_key()
    upstream.reply_text = "Noted."
    history: list[dict[str, str]] = []
    for said in ONE_CHAT:
        history.append(user(said))
        send(gw, secret, history, session="s-one")
        history.append({"role": "assistant", "content": "Noted."})
    # a fact of every statement and a turn of each but the request ("Please call me Dee")
    gw.wait_for_memories(lambda ms: len(ms) == 2 * len(ONE_CHAT) - 1, owner_id=key_id)
    never_told = (
        "What is my brother called?",
        "What is my cat called?",
        "What is my mother called?",
        "What is my favourite colour?",
    )
    leaked = leaks(gw, upstream, secret, never_told)
    assert not leaked, leaked
    send(gw, secret, [user("What is my dog called?")], session="s-ask")
    block = injected_block(upstream)
    assert "Rex" in block and "Anna" not in block, block
    # the nickname matches by its slot words, which are its own: no rider
    send(gw, secret, [user("What is my name?")], session="s-ask")
    block = injected_block(upstream)
    assert "Dee" in block and "Rex" not in block and "Anna" not in block, block
    # a fact that answers the question itself leaves out the statements beside it, which
    # match only through their context (each turn's context holds its neighbours)
    for asked, answer, beside in (
        ("Where do I live?", "Munich", ("Rex", "Anna", "tea")),
        ("Where do I work?", "Crumbs", ("hiking", "tea")),
        ("What should you call me?", "Dee", ("Munich", "tea", "hiking", "Rex", "Anna")),
    ):
        send(gw, secret, [user(asked)], session="s-ask")
        block = injected_block(upstream)
        assert answer in block and not any(b in block for b in beside), (asked, block)
