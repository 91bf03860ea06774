"""The local-embeddings extra needs no side install: all-MiniLM-L6-v2's tokenizer.json ships in
the package (with its Apache-2.0 licence), is declared as package data, and is the one loaded."""

from __future__ import annotations

import hashlib
import importlib.resources
import tomllib
from pathlib import Path

import pytest

from shared.embedding.onnx_minilm import (
    TOKENIZER_RESOURCES,
    load_tokenizer,
    tokenizer_available,
    tokenizer_json,
)

SHA256 = "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"
ROOT = Path(__file__).resolve().parents[3]


def test_the_bundled_tokenizer_is_the_models_own():
    package, resource = TOKENIZER_RESOURCES[0]
    assert package == "shared.embedding"
    folder = Path(str(importlib.resources.files(package).joinpath(resource))).parent
    data = folder.joinpath("tokenizer.json").read_bytes()
    assert hashlib.sha256(data).hexdigest() == SHA256
    assert tokenizer_json().encode("utf-8") == data
    licence = folder.joinpath("LICENSE").read_text(encoding="utf-8")
    assert "Apache License" in licence and "Version 2.0" in licence
    assert "all-MiniLM-L6-v2" in folder.joinpath("NOTICE").read_text(encoding="utf-8")


def test_the_tokenizer_files_are_package_data():
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    globs = config["tool"]["setuptools"]["package-data"]["shared.embedding"]
    base = ROOT / "shared" / "embedding"
    shipped = {p.relative_to(base).as_posix() for g in globs for p in base.glob(g)}
    assert {
        "models/all-MiniLM-L6-v2/tokenizer.json",
        "models/all-MiniLM-L6-v2/LICENSE",
        "models/all-MiniLM-L6-v2/NOTICE",
    } <= shipped


def test_the_extra_alone_tokenizes():
    pytest.importorskip("tokenizers")
    assert tokenizer_available()
    tok = load_tokenizer()
    assert tok.encode("hello world").ids == [101, 7592, 2088, 102]  # [CLS] hello world [SEP]
    extra = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    deps = " ".join(extra["project"]["optional-dependencies"]["local-embeddings"])
    assert "pyduck" not in deps and "pyduck" not in (ROOT / "scripts" / "test").read_text()
