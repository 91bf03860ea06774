"""Acceptance cases for learning (extraction, sensitive content, failed requests) through HTTP.

Each case runs twice: in embedded mode (jobs in-process in the gateway) and in worker mode (jobs
through real Redis to a real ``mnemogate worker`` subprocess). One gateway (and one worker) per
mode serves the whole module; every test uses its own client key, so owners never mix.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import httpx
import pytest
import redis

from services.gateway.state import state_of_app
from shared.learning import prefix_ids
from shared.models import Memory, NewMemory
from shared.store import Store
from tests.conftest import REDIS_URL
from tests.fakes.upstream import FakeUpstream
from tests.harness import TEST_QUEUE_NAME, GatewayHarness
from tests.waiting import READY_TIMEOUT_S


@dataclass
class Env:
    mode: str
    gw: GatewayHarness
    redis: redis.Redis | None

    def pending(self) -> int:
        """Jobs queued or running (Redis queue + in-progress keys, or in-process tasks)."""
        if self.redis is not None:
            running = cast(list[bytes], self.redis.keys("arq:in-progress:*"))
            jobs = [k for k in running if not k.startswith(b"arq:in-progress:cron:")]  # not cron
            return cast(int, self.redis.zcard(TEST_QUEUE_NAME)) + len(jobs)
        return len(state_of_app(self.gw.app).queue._tasks)  # type: ignore[attr-defined]

    def settle(self, timeout_s: float = 15.0) -> None:
        """Wait until no job is queued or running, twice in a row 100 ms apart."""
        deadline = time.monotonic() + max(timeout_s, READY_TIMEOUT_S)
        quiet = 0
        while quiet < 2:
            assert time.monotonic() < deadline, "jobs did not drain"
            quiet = quiet + 1 if self.pending() == 0 else 0
            time.sleep(0.1)


async def _noop(store: Store) -> None:
    return None


@pytest.fixture(scope="module", params=["embedded", "worker"])
def env(request, tmp_path_factory, upstream_server: FakeUpstream) -> Iterator[Env]:
    tmp: Path = tmp_path_factory.mktemp(request.param)
    db = str(tmp / "learning.db")
    overrides: dict[str, Any] = {
        "db_path": db,
        "upstream_base_url": upstream_server.base_url,
        "upstream_api_key": "sk-upstream-test",
        "queue_name": TEST_QUEUE_NAME,
    }
    client: redis.Redis | None = None
    worker: subprocess.Popen[bytes] | None = None
    if request.param == "worker":
        client = redis.Redis.from_url(REDIS_URL)
        client.flushdb()
        overrides["redis_url"] = REDIS_URL
    gw = GatewayHarness(overrides).start()
    gw.with_store(_noop)  # migrate (serve does not migrate in worker mode)
    if client is not None:
        env_vars = {
            **os.environ,
            "MNEMOGATE_DB_PATH": db,
            "MNEMOGATE_REDIS_URL": REDIS_URL,
            "MNEMOGATE_QUEUE_NAME": TEST_QUEUE_NAME,
        }
        worker = subprocess.Popen(
            [sys.executable, "-m", "services.cli", "worker"],
            env=env_vars,
            stdout=subprocess.DEVNULL,
            stderr=open(tmp / "worker.log", "wb"),  # noqa: SIM115
        )
    yield Env(request.param, gw, client)
    gw.stop()
    if worker is not None:
        worker.terminate()
        worker.wait(timeout=READY_TIMEOUT_S)
    if client is not None:
        client.flushdb()
        client.close()


# ---- helpers -----------------------------------------------------------------------------------


def post(
    env: Env,
    secret: str,
    messages: list[dict[str, str]],
    *,
    stream: bool = False,
    user: str | None = None,
    session: str | None = None,
) -> httpx.Response:
    body: dict[str, Any] = {"model": "fake-model", "messages": messages}
    if stream:
        body["stream"] = True
    if user:
        body["user"] = user
    headers = {"authorization": f"Bearer {secret}"}
    if session:
        headers["x-mnemogate-session-id"] = session
    return httpx.post(
        env.gw.base_url + "/v1/chat/completions",
        json=body,
        headers=headers,
        timeout=READY_TIMEOUT_S,
    )


def say(env: Env, secret: str, *texts: str, stream: bool = False, user: str = "") -> None:
    """One request holding ``texts`` as user turns; asserts it succeeded."""
    messages = [{"role": "user", "content": t} for t in texts]
    resp = post(env, secret, messages, stream=stream, user=user or None)
    assert resp.status_code == 200, resp.text


def wait_learned(env: Env, owner: str, turns: list[str], user: str = "") -> None:
    """Poll until the learning cursor covers ``turns`` for ``owner``/``user``."""
    ids = prefix_ids(turns)

    async def learned(store: Store) -> int:
        return await store.cursors.learned_prefix(owner, user, ids)

    deadline = time.monotonic() + READY_TIMEOUT_S
    while env.gw.with_store(learned) < len(turns):
        assert time.monotonic() < deadline, f"not learned: {turns}"
        time.sleep(0.05)


def learn_one(env: Env, secret: str, owner: str, text: str, **kw: Any) -> None:
    say(env, secret, text, **kw)
    wait_learned(env, owner, [text], kw.get("user", ""))


def facts(env: Env, owner: str) -> list[Memory]:
    return [m for m in env.gw.memories(owner) if m.category != "turn"]


def turns(env: Env, owner: str) -> list[Memory]:
    return [m for m in env.gw.memories(owner) if m.category == "turn"]


def key(env: Env, name: str) -> tuple[str, str]:
    return env.gw.create_key(f"{name}-{env.mode}")


# ---- extraction -------------------------------------------------------------------------------


def test_e1_preference_decision_habit_and_dislike(env, upstream):
    owner, secret = key(env, "e1")
    learn_one(
        env,
        secret,
        owner,
        "I prefer TypeScript. I'll use Postgres for this project. "
        "I always commit before pushing. I don't like Python.",
    )
    got = {(m.category, m.key): m.content for m in facts(env, owner)}
    assert got == {
        ("preference", "preference:like:typescript"): "User prefers TypeScript",
        ("decision", "decision:postgres"): "User decided to use Postgres for this project",
        ("pattern", "pattern:always:commit-before-pushing"): "User always commits before pushing",
        ("preference", "preference:dislike:python"): "User dislikes Python",
    }


def test_e1_like_and_dislike_of_one_thing_stay_apart(env, upstream):
    owner, secret = key(env, "e1b")
    learn_one(env, secret, owner, "I like Python")
    assert [(m.key, m.content) for m in facts(env, owner)] == [
        ("preference:like:python", "User likes Python")
    ]
    # never the same key or text; the newer statement replaces the one it contradicts
    learn_one(env, secret, owner, "I don't like Python")
    assert [(m.key, m.content) for m in facts(env, owner)] == [
        ("preference:dislike:python", "User dislikes Python")
    ]
    learn_one(env, secret, owner, "I love Python")
    assert [m.key for m in facts(env, owner)] == ["preference:like:python"]


def test_a_negative_habit_replaces_the_positive_one(env, upstream):
    owner, secret = key(env, "e1c")
    learn_one(env, secret, owner, "I always use tabs")
    learn_one(env, secret, owner, "I never use tabs")
    assert [m.content for m in facts(env, owner)] == ["User never uses tabs"]


def test_a_corrected_pet_name_replaces_the_old_one_and_a_second_pet_does_not(env, upstream):
    owner, secret = key(env, "e1d")
    learn_one(env, secret, owner, "My dog is called Rex")
    learn_one(env, secret, owner, "Actually my dog is called Max")
    assert [(m.key, m.content) for m in facts(env, owner)] == [
        ("pet:dog:max", "User has a dog named Max")
    ]
    # the turn that said only what was corrected goes with its fact: the model never reads Rex
    assert [m.content for m in turns(env, owner)] == ["Actually my dog is called Max"]
    # another end user of the same key keeps their own dog
    learn_one(env, secret, owner, "My dog is called Bo", user="ann")
    learn_one(env, secret, owner, "I also have a dog named Rex")  # a second dog, no correction
    assert sorted(m.key for m in facts(env, owner)) == ["pet:dog:bo", "pet:dog:max", "pet:dog:rex"]
    # with two dogs a correction that names neither is ambiguous: nothing is deleted; one that
    # names the wrong one replaces it
    learn_one(env, secret, owner, "Actually my dog is called Fido")
    learn_one(env, secret, owner, "My dog is called Rocky, not Fido")
    assert sorted(m.key for m in facts(env, owner) if m.user_id == "" and m.key[:4] == "pet:") == [
        "pet:dog:max",
        "pet:dog:rex",
        "pet:dog:rocky",
    ]
    learn_one(env, secret, owner, "No, my sister is called Anna")
    learn_one(env, secret, owner, "Sorry, my sister is called Eva, not Anna")
    assert sorted(m.key for m in facts(env, owner) if m.user_id == "") == [
        "family:sister:eva",
        "pet:dog:max",
        "pet:dog:rex",
        "pet:dog:rocky",
    ]


def test_a_preference_chosen_against_another_replaces_it(env, upstream):
    owner, secret = key(env, "e1f")
    learn_one(env, secret, owner, "I prefer Emacs")
    learn_one(env, secret, owner, "I like Go")
    learn_one(env, secret, owner, "I prefer Vim, not Emacs")
    learn_one(env, secret, owner, "I like Rust more than Go")  # a comparison rejects nothing
    assert sorted(m.key for m in facts(env, owner)) == [
        "preference:like:go",
        "preference:like:rust",
        "preference:like:vim",
    ]


def test_a_turn_saying_more_than_the_corrected_fact_stays(env, upstream):
    owner, secret = key(env, "e1g")
    learn_one(env, secret, owner, "I prefer Emacs. It runs on my old laptop too.")
    learn_one(env, secret, owner, "I prefer Vim, not Emacs")
    assert [m.key for m in facts(env, owner)] == ["preference:like:vim"]
    assert sorted(m.content for m in turns(env, owner)) == [
        "I prefer Emacs. It runs on my old laptop too.",
        "I prefer Vim, not Emacs",
    ]


def test_a_non_answer_never_overwrites_the_users_name(env, upstream):
    owner, secret = key(env, "e1e")
    learn_one(env, secret, owner, "My name is Alice")
    for text in ("My name is idk", "My name is what again", "my name is none of your business"):
        learn_one(env, secret, owner, text)
    learn_one(env, secret, owner, "I live in Berlin")
    assert {m.key: m.content for m in facts(env, owner)} == {
        "identity:name": "User's name is Alice",
        "identity:location": "User lives in Berlin",
    }


def test_a_new_value_of_a_slot_takes_its_old_turn_with_it(env, upstream):
    owner, secret = key(env, "e1h")
    learn_one(env, secret, owner, "I live in Berlin")
    learn_one(env, secret, owner, "My name is Dana")
    learn_one(env, secret, owner, "I moved to Munich last month")
    learn_one(env, secret, owner, "My name isn't Dana, it's Dara")
    assert {m.key: m.content for m in facts(env, owner)} == {
        "identity:location": "User lives in Munich (moved there last month)",
        "identity:name": "User's name is Dara",
    }
    # the turns that stated the old values are gone: the model never reads both
    assert sorted(m.content for m in turns(env, owner)) == [
        "I moved to Munich last month",
        "My name isn't Dana, it's Dara",
    ]
    # the same value said again deletes nothing
    learn_one(env, secret, owner, "I moved to Munich last month!")
    assert "I moved to Munich last month" in [m.content for m in turns(env, owner)]


def test_e2_dots_inside_tokens_are_kept(env, upstream):
    owner, secret = key(env, "e2")
    learn_one(env, secret, owner, "I prefer Next.js for frontend")
    learn_one(env, secret, owner, "I use Python 3.12 for scripts")
    contents = sorted(m.content for m in facts(env, owner))
    assert contents == ["User prefers Next.js for frontend", "User uses Python 3.12 for scripts"]


@pytest.mark.parametrize("text", ["I will use Redis", "I’ll use Redis"], ids=["will", "curly"])
def test_e3_decision_with_either_apostrophe(env, upstream, text):
    owner, secret = key(env, "e3")
    learn_one(env, secret, owner, text)
    assert [(m.category, m.content) for m in facts(env, owner)] == [
        ("decision", "User decided to use Redis")
    ]


def test_e4_question_is_not_a_fact(env, upstream):
    owner, secret = key(env, "e4")
    learn_one(env, secret, owner, "Should I always use tabs here?")
    assert facts(env, owner) == []
    assert turns(env, owner) == []  # a turn that only asks is not captured either


def test_e5_do_not_remember_stores_nothing(env, upstream):
    owner, secret = key(env, "e5")
    learn_one(env, secret, owner, "Don't remember this: my locker code is 4411")
    assert env.gw.memories(owner) == []


def test_e6_non_latin_facts_do_not_overwrite_each_other(env, upstream):
    owner, secret = key(env, "e6")
    learn_one(env, secret, owner, "I prefer 咖啡和茶")
    learn_one(env, secret, owner, "I prefer 绿茶饮料")
    got = facts(env, owner)
    assert sorted(m.content for m in got) == ["User prefers 咖啡和茶", "User prefers 绿茶饮料"]
    assert len({m.key for m in got}) == 2


def test_e7_assistant_reply_never_becomes_a_user_fact(env, upstream):
    owner, secret = key(env, "e7")
    upstream.reply_text = "As an AI, I usually recommend Python"
    learn_one(env, secret, owner, "Which language should I learn first?")
    # and when the assistant's words are in the history the client sends back
    history = [
        {"role": "user", "content": "Which language should I learn first?"},
        {"role": "assistant", "content": "As an AI, I usually recommend Python"},
        {"role": "user", "content": "Thanks, noted"},
    ]
    assert post(env, secret, history).status_code == 200
    wait_learned(env, owner, ["Which language should I learn first?", "Thanks, noted"])
    env.settle()
    everything = env.gw.memories(owner)
    assert facts(env, owner) == []
    assert not any("recommend" in m.content for m in everything)
    assert everything == []  # neither the question nor the thanks states anything to keep


def test_e8_name_and_city(env, upstream):
    owner, secret = key(env, "e8")
    learn_one(env, secret, owner, "My name is Alice and I live in Berlin")
    got = {m.key: m.content for m in facts(env, owner)}
    assert got == {
        "identity:name": "User's name is Alice",
        "identity:location": "User lives in Berlin",
    }


def test_e8b_a_workplace_named_after_its_kind(env, upstream):
    owner, secret = key(env, "e8b")
    learn_one(env, secret, owner, "I work at a bakery called Crumbs")
    assert [(m.key, m.content) for m in facts(env, owner)] == [
        ("identity:employer", "User works at a bakery called Crumbs")
    ]
    learn_one(env, secret, owner, "I work for a startup named Zentri")  # one employer slot
    assert [(m.key, m.content) for m in facts(env, owner)] == [
        ("identity:employer", "User works for a startup named Zentri")
    ]


def test_e9_four_turn_chat_replayed_twice_gives_one_memory(env, upstream):
    owner, secret = key(env, "e9")
    user_turns = [
        "Hi! I'm planning a new service.",
        "I prefer Rust for systems work.",
        "What should we call it?",
        "Great, thanks.",
    ]
    replies = ["Sounds fun.", "Noted.", "How about Ferrous?", "You're welcome."]

    def play(session: str) -> None:
        messages: list[dict[str, str]] = []
        for text, reply in zip(user_turns, replies, strict=True):
            messages.append({"role": "user", "content": text})
            assert post(env, secret, list(messages), session=session).status_code == 200
            messages.append({"role": "assistant", "content": reply})

    for session in ("original", "replay-1", "replay-2"):
        play(session)
        wait_learned(env, owner, user_turns)
    env.settle()
    assert [(m.key, m.content) for m in facts(env, owner)] == [
        ("preference:like:rust", "User prefers Rust for systems work")
    ]
    # every turn but the question and the thanks (they state nothing), once
    assert sorted(m.content for m in turns(env, owner)) == sorted(user_turns[:2])


# ---- one request, many turns ---------------------------------------------------------------------


def test_50k_identical_user_messages_capture_one_turn(env, upstream):
    owner, secret = key(env, "flood")
    texts = ["x"] * 50_000
    say(env, secret, *texts)
    wait_learned(env, owner, texts)
    env.settle()
    assert [m.content for m in env.gw.memories(owner)] == ["x"]
    say(env, secret, *texts)  # a replay learns nothing new
    wait_learned(env, owner, texts)
    env.settle()
    assert len(env.gw.memories(owner)) == 1


def test_only_the_newest_learn_max_turns_turns_are_learned(env, upstream):
    owner, secret = key(env, "window")
    texts = [f"I prefer Tool{i} for builds" for i in range(30)]
    say(env, secret, *texts)
    wait_learned(env, owner, texts)
    env.settle()
    assert sorted(m.content for m in turns(env, owner)) == sorted(texts[22:])
    assert len(facts(env, owner)) == 8


def test_turns_without_letters_or_digits_are_proxied_not_captured(env, upstream):
    owner, secret = key(env, "junk")
    for text in ("\x00", "\u200b", "\ufeff", "*", "-", "'"):
        upstream.requests.clear()
        say(env, secret, text)
        assert upstream.requests[-1]["messages"][-1]["content"] == text  # proxied unchanged
        wait_learned(env, owner, [text])
    env.settle()
    assert env.gw.memories(owner) == []


def test_control_characters_are_not_stored(env, upstream):
    owner, secret = key(env, "controls")
    texts = [
        "\u0000 I prefer nulls\u0000",
        "I use Vim\r\n\tand\x1b[1m tmux\x7f\x85\x9b daily",
        "I prefer 👩\u200d💻 emoji\u200b",  # format characters (ZWJ, ZWSP) are kept
    ]
    upstream.requests.clear()
    say(env, secret, *texts)
    assert [m["content"] for m in upstream.requests[-1]["messages"]] == texts  # proxied as is
    wait_learned(env, owner, texts)
    env.settle()
    assert sorted(m.content for m in turns(env, owner)) == sorted(
        [
            "I prefer nulls",
            "I use Vim\n\tand [1m tmux    daily",
            "I prefer 👩\u200d💻 emoji\u200b",
        ]
    )
    stored = "".join(m.content for m in env.gw.memories(owner))
    assert "User prefers nulls" in [m.content for m in facts(env, owner)]
    assert not any(ch in stored for ch in "\x00\r\x1b\x7f\x85\x9b")


# ---- sensitive content ---------------------------------------------------------------------------

GHP = "ghp_" + "aB3dE6gH9jK2mN5pQ8sT1vW4yZ7bC0eF3hJ6"
JWT = (
    "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0."
    "dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U"
)
PEM = (
    "-----BEGIN PRIVATE KEY-----\n"
    "MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7\n"
    "-----END PRIVATE KEY-----"
)
SENSITIVE = [
    ("email", "my email is jane.doe@example.com", "jane.doe@example.com", "[email]"),
    ("phone", "call me on +1 415 555 0100", "415 555 0100", "[phone]"),
    ("ssn", "SSN 123-45-6789", "123-45-6789", "[ssn]"),
    ("card", "card 4111 1111 1111 1111", "4111 1111 1111 1111", "[card]"),
    (
        "openai",
        "key sk-proj-AbCdEfGhIjKlMnOpQrStUvWx0123",
        "sk-proj-AbCdEfGhIjKlMnOpQrStUvWx0123",
        "[",
    ),
    ("github", f"token {GHP}", GHP, "["),
    ("jwt", f"jwt {JWT}", JWT, "["),
    ("pem", PEM, "-----BEGIN PRIVATE KEY-----", "["),
]


@pytest.mark.parametrize(
    ("text", "secret_text", "placeholder"),
    [item[1:] for item in SENSITIVE],
    ids=[item[0] for item in SENSITIVE],
)
def test_sensitive_content_is_never_stored_verbatim(env, upstream, text, secret_text, placeholder):
    owner, secret = key(env, "pii")
    # one turn with a fact next to the secret, one where the secret is inside a fact
    first = f"My name is Jane and {text}"
    second = f"I prefer {secret_text.splitlines()[0]} for everything"
    learn_one(env, secret, owner, first)
    learn_one(env, secret, owner, second)
    stored = env.gw.memories(owner)
    assert not any(secret_text in m.content for m in stored)
    assert not any(secret_text.replace(" ", "") in m.content.replace(" ", "") for m in stored)
    assert [m.content for m in facts(env, owner)] == ["User's name is Jane"]
    captured = turns(env, owner)
    assert len(captured) == 2 and all(placeholder in m.content for m in captured)


def test_secret_that_reached_the_store_is_not_injected_verbatim(env, upstream):
    owner, secret = key(env, "import")
    raw = "User's API key is sk-proj-AbCdEfGhIjKlMnOpQrStUvWx0123"

    async def admin_import(store: Store) -> None:
        await store.writes.upsert(NewMemory(owner_id=owner, content=raw, key="import:api-key"))

    env.gw.with_store(admin_import)
    resp = post(env, secret, [{"role": "user", "content": "What is my API key?"}])
    assert resp.status_code == 200 and int(resp.headers["x-mnemogate-memory-injected"]) == 1
    sent = str(upstream.requests[-1]["messages"])
    assert "sk-proj-AbCdEfGhIjKlMnOpQrStUvWx0123" not in sent and "User's API key is" in sent


# ---- streaming ---------------------------------------------------------------------------------


def test_s1_failed_stream_learns_nothing(env, upstream):
    owner, secret = key(env, "s1")
    upstream.fail_status = 500
    resp = post(env, secret, [{"role": "user", "content": "I prefer Haskell"}], stream=True)
    assert resp.status_code == 500 and "upstream exploded" in resp.text
    upstream.fail_status = None
    learn_one(env, secret, owner, "I prefer Elixir", stream=True)  # the queue is alive
    env.settle()
    contents = sorted(m.content for m in env.gw.memories(owner))
    assert contents == ["I prefer Elixir", "User prefers Elixir"]
    assert not any("Haskell" in m.content for m in env.gw.memories(owner))


@pytest.mark.parametrize(
    ("content", "media_type"),
    [
        (b"<html>not json</html>", "text/html"),
        (b'{"choices": [', "application/json"),
        (b"", "application/json"),
        (
            b'{"error": {"message": "quota exceeded", "type": "insufficient_quota"}}',
            "application/json",
        ),
        (b'{"type": "error", "error": {"type": "overloaded_error"}}', "application/json"),
    ],
    ids=["html", "cut", "empty", "openai-error", "anthropic-error"],
)
@pytest.mark.parametrize("stream", [False, True], ids=["json", "stream-request"])
def test_a_broken_2xx_answer_is_relayed_and_learns_nothing(
    env, upstream, content, media_type, stream
):
    owner, secret = key(env, f"s1b-{media_type}-{len(content)}-{stream}")
    upstream.raw_reply = (200, content, media_type)
    try:
        resp = post(env, secret, [{"role": "user", "content": "I prefer Haskell"}], stream=stream)
    finally:
        upstream.raw_reply = None
    assert resp.status_code == 200 and resp.content == content  # relayed as it came
    learn_one(env, secret, owner, "I prefer Elixir")  # the next exchange is learned
    env.settle()
    assert not any("Haskell" in m.content for m in env.gw.memories(owner))


def test_s2_stream_learns_exactly_like_json(env, upstream):
    text = "My name is Bob. I prefer Vim for editing and I always write tests first."
    shapes = []
    for stream in (False, True):
        owner, secret = key(env, f"s2-{stream}")
        upstream.reply_text = "Hello Bob, noted your Vim preference"
        learn_one(env, secret, owner, text, stream=stream)
        env.settle()
        shapes.append(sorted((m.category, m.key, m.content) for m in env.gw.memories(owner)))
    assert shapes[0] == shapes[1]
    assert len(shapes[0]) == 4  # name, preference, habit, captured turn
