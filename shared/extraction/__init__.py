"""Fact extraction from user messages: the regex extractor (default) and the LLM extractor.

Both produce :class:`ExtractedFact` values with keys from one scheme (see
:mod:`shared.extraction.facts`), so the learning pipeline (see "Learning" in
``docs/ARCHITECTURE.md``) dedupes across them.
"""

from shared.extraction.facts import (
    CATEGORIES,
    CATEGORY_TYPES,
    MAX_CONTENT_CHARS,
    TYPES,
    ExtractedFact,
    contradicted_keys,
    head,
    key_for_statement,
    slug,
)
from shared.extraction.llm import (
    EXTRACTION_PROMPT,
    EXTRACTION_TEMPERATURE,
    ParseResult,
    extract_with_llm,
    parse_llm_facts,
)
from shared.extraction.regex import extract_facts, is_do_not_remember

__all__ = [
    "CATEGORIES",
    "CATEGORY_TYPES",
    "EXTRACTION_PROMPT",
    "EXTRACTION_TEMPERATURE",
    "MAX_CONTENT_CHARS",
    "TYPES",
    "ExtractedFact",
    "ParseResult",
    "contradicted_keys",
    "extract_facts",
    "extract_with_llm",
    "head",
    "is_do_not_remember",
    "key_for_statement",
    "parse_llm_facts",
    "slug",
]
