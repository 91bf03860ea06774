"""RemoteEmbeddingSource against a real HTTP server (FakeUpstream), and URL validation."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import httpx
import numpy as np
import pytest

from shared.embedding import RemoteEmbeddingSource, validate_endpoint_url
from shared.errors import ConfigurationError, EmbeddingError
from tests.fakes.upstream import FakeUpstream, hashed_embedding


@pytest.fixture(scope="module")
def upstream() -> Iterator[FakeUpstream]:
    fake = FakeUpstream().start()
    yield fake
    fake.stop()


@pytest.fixture
def fake(upstream: FakeUpstream) -> Iterator[FakeUpstream]:
    upstream.reset()
    upstream.embedding_dim = 16
    yield upstream
    upstream.reset()


@pytest.fixture
async def client() -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient() as c:
        yield c


def _source(
    client: httpx.AsyncClient, fake: FakeUpstream, dim: int | None = 16, timeout_s: float = 2.0
) -> RemoteEmbeddingSource:
    return RemoteEmbeddingSource(client, fake.base_url, "sk-secret", "embed-small", dim, timeout_s)


async def test_success_shape_order_and_request(
    client: httpx.AsyncClient, fake: FakeUpstream
) -> None:
    src = _source(client, fake)
    texts = ["the cat sat", "tax deadline", "the cat sat"]
    vecs = await src.embed(texts)
    assert vecs.shape == (3, 16) and vecs.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vecs, axis=1), 1.0, atol=1e-5)
    np.testing.assert_allclose(vecs[1], hashed_embedding("tax deadline", 16), atol=1e-6)
    np.testing.assert_allclose(vecs[0], vecs[2])
    assert fake.embedding_requests == [
        {"model": "embed-small", "input": texts, "encoding_format": "float"}
    ]
    assert src.signature == "remote:embed-small:16"


async def test_empty_input_makes_no_request(client: httpx.AsyncClient, fake: FakeUpstream) -> None:
    vecs = await _source(client, fake).embed([])
    assert vecs.shape == (0, 16)
    assert fake.embedding_requests == []


async def test_batches_large_inputs(client: httpx.AsyncClient, fake: FakeUpstream) -> None:
    src = RemoteEmbeddingSource(client, fake.base_url, "", "m", 16, 2.0, max_batch=4)
    vecs = await src.embed([f"text {i}" for i in range(10)])
    assert vecs.shape == (10, 16)
    assert [len(r["input"]) for r in fake.embedding_requests] == [4, 4, 2]
    np.testing.assert_allclose(vecs[9], hashed_embedding("text 9", 16), atol=1e-6)


async def test_dim_learned_from_first_response(
    client: httpx.AsyncClient, fake: FakeUpstream
) -> None:
    src = _source(client, fake, dim=None)
    assert src.dim == 0
    await src.embed(["hello"])
    assert src.dim == 16 and src.signature == "remote:embed-small:16"
    fake.embedding_dim = 32
    with pytest.raises(EmbeddingError) as err:
        await src.embed(["hello"])
    assert err.value.code == "embedding_dimension_mismatch"


async def test_configured_dimension_mismatch(client: httpx.AsyncClient, fake: FakeUpstream) -> None:
    fake.embedding_dim = 8
    with pytest.raises(EmbeddingError) as err:
        await _source(client, fake, dim=16).embed(["hello"])
    assert err.value.code == "embedding_dimension_mismatch"


@pytest.mark.parametrize(
    ("status", "code"),
    [
        (429, "embedding_rate_limited"),
        (500, "embedding_http_error"),
        (503, "embedding_http_error"),
        (401, "embedding_http_error"),
    ],
)
async def test_http_errors(
    client: httpx.AsyncClient, fake: FakeUpstream, status: int, code: str
) -> None:
    fake.embeddings_status = status
    with pytest.raises(EmbeddingError) as err:
        await _source(client, fake).embed(["hello"])
    assert err.value.code == code
    assert "sk-secret" not in str(err.value)


async def test_timeout(client: httpx.AsyncClient, fake: FakeUpstream) -> None:
    fake.embeddings_delay_s = 1.0
    with pytest.raises(EmbeddingError) as err:
        await _source(client, fake, timeout_s=0.2).embed(["hello"])
    assert err.value.code == "embedding_timeout"


async def test_unreachable(client: httpx.AsyncClient) -> None:
    from tests.fakes.upstream import free_port

    src = RemoteEmbeddingSource(client, f"http://127.0.0.1:{free_port()}/v1", "k", "m", 16, 2.0)
    with pytest.raises(EmbeddingError) as err:
        await src.embed(["hello"])
    assert err.value.code == "embedding_unreachable"


async def test_malformed_body(client: httpx.AsyncClient, fake: FakeUpstream) -> None:
    # The chat route answers JSON of another shape: point the source's base URL at it.
    src = _source(client, fake)
    src.base_url = fake.base_url + "/chat/completions#"  # -> POST .../chat/completions#/embeddings
    with pytest.raises(EmbeddingError) as err:
        await src.embed(["hello"])
    assert err.value.code == "embedding_bad_response"


def test_api_key_not_in_repr(client: httpx.AsyncClient, fake: FakeUpstream) -> None:
    src = _source(client, fake)
    assert "sk-secret" not in repr(src)


def test_invalid_constructor_arguments(client: httpx.AsyncClient) -> None:
    with pytest.raises(ConfigurationError):
        RemoteEmbeddingSource(client, "http://127.0.0.1:1/v1", "", "", 16, 1.0)
    with pytest.raises(ConfigurationError):
        RemoteEmbeddingSource(client, "http://127.0.0.1:1/v1", "", "m", 16, 0.0)
    with pytest.raises(ConfigurationError):
        RemoteEmbeddingSource(client, "http://169.254.169.254/v1", "", "m", 16, 1.0)


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1:8080/v1",
        "https://api.openai.com/v1",
        "http://localhost:11434/v1/",
        "http://10.0.0.5/v1",
        "http://192.168.1.20:8000",
        "http://[::1]:8080/v1",
        "HTTPS://Embeddings.Example.com/v1",
    ],
)
def test_url_allowed(url: str) -> None:
    assert validate_endpoint_url(url) == url.rstrip("/")


@pytest.mark.parametrize(
    "url",
    [
        "http://169.254.169.254/latest/meta-data",  # AWS/GCP/Azure metadata
        "http://169.254.10.1/v1",  # link-local
        "http://[fe80::1]/v1",  # IPv6 link-local
        "http://[fe80::1%25eth0]/v1",  # with a zone id
        "http://[::ffff:169.254.169.254]/v1",  # IPv4-mapped
        "http://2852039166/v1",  # 169.254.169.254 as one decimal number
        "http://0xA9.0xFE.0xA9.0xFE/v1",  # hex dotted
        "http://metadata.google.internal/computeMetadata/v1",
        "http://METADATA.google.internal./v1",
        "http://100.100.100.200/latest",  # Alibaba Cloud metadata
        "http://[fd00:ec2::254]/latest",  # AWS IMDS IPv6
        "http://user:pass@example.com/v1",  # credentials
        "http://token@example.com/v1",
        "https://example.com/v1?api_key=x",  # query string
        "https://example.com/v1?",
        "https://example.com/v1#frag",
        "ftp://example.com/v1",
        "file:///etc/passwd",
        "example.com/v1",
        "http:///v1",
        "http://example.com:99999/v1",
        "",
    ],
)
def test_url_refused(url: str) -> None:
    with pytest.raises(ConfigurationError):
        validate_endpoint_url(url)
