"""Neighbour context of captured turns (pure functions of :mod:`shared.turn_context`)."""

from __future__ import annotations

from shared.injection import all_user_texts
from shared.turn_context import assistant_replies, chat_sequence, neighbour_context


def test_two_before_and_two_after_whoever_spoke():
    texts = ["t0", "t1", "t2", "t3", "t4", "t5", "t6"]
    assert neighbour_context(texts, 3) == "t1\nt2\nt4\nt5"
    assert neighbour_context(texts, 0) == "t1\nt2"
    assert neighbour_context(texts, 6) == "t4\nt5"
    assert neighbour_context(texts, 3, before=1, after=0) == "t2"


def test_empty_turns_take_no_slot_and_bad_index_gives_nothing():
    texts = ["a", " ", "b", "", "c", "d"]
    assert neighbour_context(texts, 4) == "a\nb\nd"
    assert neighbour_context(texts, 9) == "" and neighbour_context(texts, -1) == ""
    assert neighbour_context(["only"], 0) == ""


def test_neighbours_are_collapsed_and_cut():
    texts = ["x  y\n z", "mid", "w" * 5000]
    assert neighbour_context(texts, 1, max_chars=10) == "x y z\n" + "w" * 10


def test_chat_sequence_interleaves_replies_and_final_answer():
    texts, positions = chat_sequence(["u0", "u1", "u2"], ["a0", "", "ignored"], "final")
    assert texts == ["u0", "a0", "u1", "u2", "final"]
    assert positions == [0, 2, 3]
    assert neighbour_context(texts, positions[1]) == "u0\na0\nu2\nfinal"
    # no replies known (older payloads): user turns only
    texts, positions = chat_sequence(["u0", "u1"], [])
    assert texts == ["u0", "u1"] and positions == [0, 1]


def test_assistant_replies_align_with_user_texts():
    messages = [
        {"role": "system", "content": "be brief"},
        {"role": "assistant", "content": "greeting before any user turn"},
        {"role": "user", "content": "The marketing plan needs a new date."},
        {"role": "assistant", "content": [{"type": "text", "text": "Which date?"}]},
        {"role": "tool", "content": "tool output"},
        {"role": "assistant", "content": "Maybe March?"},
        {"role": "user", "content": ""},  # skipped by all_user_texts: no slot
        {"role": "user", "content": "I decided to move the launch to March."},
    ]
    users = all_user_texts(messages)
    replies = assistant_replies(messages)
    assert len(replies) == len(users) == 2
    assert replies == ["Which date?\nMaybe March?", ""]


def test_assistant_replies_keep_only_the_last_entries():
    messages = []
    for i in range(5):
        messages += [
            {"role": "user", "content": f"u{i}"},
            {"role": "assistant", "content": f"a{i}"},
        ]
    assert assistant_replies(messages) == ["a0", "a1", "a2", "a3", "a4"]
    assert assistant_replies(messages, keep_last=2) == ["", "", "", "a3", "a4"]
    assert assistant_replies(messages, keep_last=0) == [""] * 5


def test_without_turns_removes_only_the_forgotten_lines() -> None:
    from shared.turn_context import without_turns

    context = "My sister Chiara lives in Valparaiso.\nGot it.\nI  bought a kayak\tlast summer."
    assert without_turns(context, ["I bought a kayak last summer."]) == (
        "My sister Chiara lives in Valparaiso.\nGot it."
    )
    assert without_turns(context, ["kayak"]) == context  # whole lines only
    assert without_turns(context, []) == context


def test_a_line_quoting_a_forgotten_turn_whole_goes_too() -> None:
    from shared.turn_context import without_turns

    context = (
        "My dog is called Biscuit\n"
        'Noted! You said: "I work at a   bakery called Crumbs" earlier.\n'
        "Bakeries open early."
    )
    assert without_turns(context, ["I work at a bakery called Crumbs"]) == (
        "My dog is called Biscuit\nBakeries open early."
    )
    # a short turn is quoted by chance: only its own line goes
    assert without_turns("Ok\nOk, thanks for the tip", ["Ok"]) == "Ok, thanks for the tip"
