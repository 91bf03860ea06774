"""BERT uncased WordPiece for plain ASCII text in Python: a query's ids without a tokenizer call.

The ``tokenizers`` call for one short text costs ~20-35 µs here, mostly fixed cost; the static
embedding of a query (:meth:`shared.embedding.static.StaticEmbeddingSource.embed_sync`) is a few
microseconds of table lookups besides. For text of printable ASCII, tab, line feed and carriage
return only, BERT's pipeline reduces to steps that are a few lines of Python, and this module
gives the same ids as the tokenizer (``add_special_tokens=False``):

* ``BertNormalizer`` (clean text, Chinese characters, accents, lowercase): on such text only the
  lowercasing and the mapping of tab, line feed and carriage return to a space do anything;
* ``BertPreTokenizer``: split on whitespace, and every punctuation character (ASCII 33-47,
  58-64, 91-96, 123-126, BERT's ``_is_punctuation``) is a word of its own;
* ``WordPiece``: greedy longest match first, continuation pieces prefixed ``##``, a word with no
  match or longer than ``max_input_chars_per_word`` becomes ``[UNK]`` (Wu et al. 2016, "Google's
  Neural Machine Translation System", section 4.1; the algorithm of BERT's ``tokenization.py``
  and of ``tokenizers``' ``WordPiece``).

Text holding any other character, or an added token's text (``[MASK]``: the tokenizer matches
those before normalising), is left to the tokenizer (:meth:`AsciiWordPiece.ids` returns None).
Built only for a tokenizer whose configuration is exactly this pipeline
(:func:`ascii_wordpiece`). No text is kept.
"""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tokenizers import Tokenizer

__all__ = ["AsciiWordPiece", "ascii_wordpiece"]

_PLAIN = re.compile(r"[\t\n\r -~]*")
"""Text this module tokenizes: printable ASCII, tab, line feed, carriage return."""
_WORDS = re.compile(r"[a-z0-9]+|[!-/:-@\[-`{-~]")
"""BertPreTokenizer's words of lowercased plain text: runs of letters and digits, and single
punctuation characters (whitespace separates and is dropped)."""


class AsciiWordPiece:
    """WordPiece ids of plain ASCII text, as the BERT uncased tokenizer gives them.

    ``vocab``: token → id; ``unk_id``: the ``[UNK]`` id; ``added``: the texts of added tokens
    (text holding one goes to the tokenizer); ``max_chars``: ``max_input_chars_per_word``;
    ``prefix``: ``continuing_subword_prefix``.
    """

    def __init__(
        self,
        vocab: dict[str, int],
        unk_id: int,
        added: list[str],
        max_chars: int = 100,
        prefix: str = "##",
    ) -> None:
        self._vocab = vocab
        self._unk = unk_id
        self._added = added
        self._max_chars = max_chars
        self._prefix = prefix

    def ids(self, text: str) -> list[int] | None:
        """The token ids of ``text`` (no ``[CLS]``/``[SEP]``), or None: ask the tokenizer.

        None when ``text`` holds a character outside printable ASCII, tab, line feed and
        carriage return, or an added token's text. CPU: one regular-expression pass and a
        dictionary look-up per word (more for a word the vocabulary holds only in pieces).
        """
        if not _PLAIN.fullmatch(text) or any(a in text for a in self._added):
            return None
        vocab = self._vocab
        out: list[int] = []
        for word in _WORDS.findall(text.lower()):
            whole = vocab.get(word)
            if whole is not None:
                out.append(whole)
            else:
                out.extend(self._pieces(word))
        return out

    def _pieces(self, word: str) -> list[int]:
        """Greedy longest-match-first pieces of ``word``, or ``[UNK]`` alone."""
        if len(word) > self._max_chars:
            return [self._unk]
        pieces: list[int] = []
        start = 0
        while start < len(word):
            end = len(word)
            while end > start:
                piece = word[start:end] if start == 0 else self._prefix + word[start:end]
                found = self._vocab.get(piece)
                if found is not None:
                    pieces.append(found)
                    break
                end -= 1
            else:
                return [self._unk]
            start = end
        return pieces


def _is_bert_uncased(config: dict[str, Any]) -> bool:
    """True when ``config`` (a tokenizer's JSON) is the pipeline this module reproduces."""
    norm = config.get("normalizer") or {}
    model = config.get("model") or {}
    return (
        norm.get("type") == "BertNormalizer"
        and norm.get("lowercase") is True
        and norm.get("clean_text") is True
        and norm.get("strip_accents") in (None, True)
        and (config.get("pre_tokenizer") or {}).get("type") == "BertPreTokenizer"
        and model.get("type") == "WordPiece"
        and isinstance(model.get("unk_token"), str)
        and isinstance(model.get("continuing_subword_prefix"), str)
        and isinstance(model.get("max_input_chars_per_word"), int)
    )


def ascii_wordpiece(tokenizer: Tokenizer) -> AsciiWordPiece | None:
    """The Python WordPiece of ``tokenizer``, or None when its pipeline is not BERT uncased's.

    Reads the tokenizer's JSON once (a few milliseconds for a 30k vocabulary).
    """
    config = json.loads(tokenizer.to_str())
    if not _is_bert_uncased(config):
        return None
    model = config["model"]
    vocab = tokenizer.get_vocab(with_added_tokens=False)
    unk = vocab.get(model["unk_token"])
    if unk is None:
        return None
    added = [str(a["content"]) for a in config.get("added_tokens") or []]
    return AsciiWordPiece(
        vocab, unk, added, model["max_input_chars_per_word"], model["continuing_subword_prefix"]
    )
