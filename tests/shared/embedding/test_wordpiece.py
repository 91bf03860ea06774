"""The Python WordPiece of plain ASCII text (shared/embedding/wordpiece.py) against the tokenizer.

Wherever it answers, its ids must be the bundled tokenizer's; and the static embedding of one
text, which uses it, must be bit-identical to the same text's row in a batch (tokenizer path).
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

pytest.importorskip("tokenizers")

from shared.embedding.onnx_minilm import load_tokenizer
from shared.embedding.static import StaticEmbeddingSource
from shared.embedding.wordpiece import ascii_wordpiece

TOKENIZER = load_tokenizer()
WORDPIECE = ascii_wordpiece(TOKENIZER)

FRAGMENTS = [
    "When did Caroline go to the LGBTQ support group?",
    "unaffable",
    "[MASK]",
    "[cls]",
    "[UNK]x",
    "a" * 99,
    "b" * 101,
    "x" * 40 + "!" + "y" * 70,
    "C++/C#",
    "e-mail@home.com",
    "3.14159",
    "don't",
    "\t\n\r",
    "\x0b",
    "\x00",
    "\x7f",
    "café",
    "’",
    "中文",
    "##ing",
    "Zürich",
]
TEXTS = st.lists(
    st.one_of(
        st.sampled_from(FRAGMENTS),
        st.text(alphabet=st.characters(min_codepoint=0, max_codepoint=127), max_size=30),
        st.text(max_size=8),
    ),
    max_size=8,
).map(" ".join)


def _tokenizer_ids(text: str) -> list[int]:
    return list(TOKENIZER.encode(text, add_special_tokens=False).ids)


def test_the_bundled_tokenizer_gets_the_python_wordpiece() -> None:
    assert WORDPIECE is not None
    assert WORDPIECE.ids("") == []
    assert WORDPIECE.ids("Hello, World!") == _tokenizer_ids("Hello, World!")


@settings(max_examples=400, deadline=None)
@given(text=TEXTS)
def test_ids_are_the_tokenizers(text: str) -> None:
    assert WORDPIECE is not None
    got = WORDPIECE.ids(text)
    plain = all(c in "\t\n\r" or " " <= c <= "~" for c in text)
    special = any(s in text for s in ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"))
    assert (got is None) == (not plain or special)
    if got is not None:
        assert got == _tokenizer_ids(text)


def test_every_fragment_alone_and_joined() -> None:
    assert WORDPIECE is not None
    for text in [*FRAGMENTS, " ".join(FRAGMENTS), "".join(FRAGMENTS)]:
        got = WORDPIECE.ids(text)
        assert got is None or got == _tokenizer_ids(text), text


@settings(max_examples=200, deadline=None)
@given(text=TEXTS, seed=st.integers(0, 2**32 - 1))
def test_one_texts_vector_is_its_batch_row_bit_for_bit(text: str, seed: int) -> None:
    rng = np.random.default_rng(seed)
    table = rng.standard_normal((TOKENIZER.get_vocab_size(), 16)).astype(np.float32)
    src = StaticEmbeddingSource(table, TOKENIZER, "test")
    one = src.embed_sync([text])
    batch = src.embed_sync([text, "another text", ""])
    assert one.shape == (1, 16) and one.dtype == np.float32
    assert one.tobytes() == batch[:1].tobytes()
