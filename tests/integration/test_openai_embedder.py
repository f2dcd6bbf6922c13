"""OpenAIEmbedder against ScriptedOpenAIServer: a real HTTP server on 127.0.0.1, no mocks.

The server answers HashEmbedder vectors, so every vector the embedder returns can be checked against an
independent computation of the same texts.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import numpy as np
import pytest

from reverie.embed.base import Embedder
from reverie.embed.hashing import HashEmbedder
from reverie.embed.openai import OpenAIEmbedder
from reverie.errors import EmbeddingError
from reverie.testing import ScriptedOpenAIServer

DIM = 64
SCALE = 2.5  # the server's vectors have this norm, so unit output proves the embedder normalises
TEXTS = ["The user lives in Lisbon", "Deploys happen on Fridays", "Prefers tea over coffee", "Uses vim"]

MakeEmbedder = Callable[..., OpenAIEmbedder]


def expected(texts: list[str], dim: int = DIM) -> np.ndarray[Any, Any]:
    return HashEmbedder(dim).embed(texts)


@pytest.fixture
def server() -> Iterator[ScriptedOpenAIServer]:
    with ScriptedOpenAIServer(dim=DIM, scale=SCALE) as running:
        yield running


@pytest.fixture
def make_embedder(server: ScriptedOpenAIServer) -> Iterator[MakeEmbedder]:
    made: list[OpenAIEmbedder] = []

    def make(endpoint: str | None = None, model: str = "test-model", **options: Any) -> OpenAIEmbedder:
        embedder = OpenAIEmbedder(server.url if endpoint is None else endpoint, model, **options)
        made.append(embedder)
        return embedder

    yield make
    for embedder in made:
        embedder.close()


def embedding_requests(server: ScriptedOpenAIServer) -> list[Any]:
    return [request.body for request in server.requests if request.path == "/v1/embeddings"]


# -- the happy path ---------------------------------------------------------------------------------------


def test_returns_unit_norm_float32_rows_of_the_right_shape(
    server: ScriptedOpenAIServer, make_embedder: MakeEmbedder
) -> None:
    with httpx.Client() as client:
        raw = client.post(f"{server.url}/embeddings", json={"model": "m", "input": TEXTS}).json()
    assert np.linalg.norm(raw["data"][0]["embedding"]) == pytest.approx(SCALE, rel=1e-5)

    vectors = make_embedder().embed(TEXTS)

    assert vectors.dtype == np.float32
    assert vectors.shape == (len(TEXTS), DIM)
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-6)
    assert np.allclose(vectors, expected(TEXTS), atol=1e-6)


def test_satisfies_the_embedder_port(make_embedder: MakeEmbedder) -> None:
    embedder = make_embedder(model="nomic-embed-text", dim=DIM)
    assert isinstance(embedder, Embedder)
    assert embedder.model_id == "openai:nomic-embed-text"
    assert embedder.dim == DIM


def test_sends_the_model_and_the_inputs(server: ScriptedOpenAIServer, make_embedder: MakeEmbedder) -> None:
    make_embedder(model="nomic-embed-text").embed(TEXTS)
    assert embedding_requests(server) == [{"model": "nomic-embed-text", "input": TEXTS}]


def test_rows_follow_the_response_index_not_its_order(make_embedder: MakeEmbedder) -> None:
    with ScriptedOpenAIServer(dim=DIM, reverse_data=True) as reversing:
        with httpx.Client() as client:
            raw = client.post(f"{reversing.url}/embeddings", json={"model": "m", "input": TEXTS}).json()
        assert [item["index"] for item in raw["data"]] == [3, 2, 1, 0]

        vectors = make_embedder(endpoint=reversing.url).embed(TEXTS)

    assert np.allclose(vectors, expected(TEXTS), atol=1e-6)


def test_batches_requests_and_keeps_the_order_across_batches(
    server: ScriptedOpenAIServer, make_embedder: MakeEmbedder
) -> None:
    texts = [f"fact number {i} about topic {i * 7}" for i in range(7)]
    vectors = make_embedder(batch_size=3).embed(texts)

    bodies = embedding_requests(server)
    assert [body["input"] for body in bodies] == [texts[0:3], texts[3:6], texts[6:7]]
    assert np.allclose(vectors, expected(texts), atol=1e-6)


def test_long_inputs_are_truncated_not_refused(server: ScriptedOpenAIServer, make_embedder: MakeEmbedder) -> None:
    vectors = make_embedder(max_input_chars=10).embed(["abcdefghij-and-more", "short"])

    assert embedding_requests(server)[0]["input"] == ["abcdefghij", "short"]
    assert vectors.shape == (2, DIM)


def test_default_truncation_is_30000_characters(server: ScriptedOpenAIServer, make_embedder: MakeEmbedder) -> None:
    make_embedder().embed(["word " * 6001, "x" * 30_000])  # 30,005 and exactly 30,000 characters

    sent = embedding_requests(server)[0]["input"]
    assert [len(text) for text in sent] == [30_000, 30_000]
    assert sent[0] == ("word " * 6001)[:30_000]


@pytest.mark.parametrize(("api_key", "header"), [("sk-test", "Bearer sk-test"), (None, None), ("", None)])
def test_authorization_header_only_with_a_key(
    server: ScriptedOpenAIServer, make_embedder: MakeEmbedder, api_key: str | None, header: str | None
) -> None:
    make_embedder(api_key=api_key).embed(["hello"])
    assert server.requests[0].headers.get("authorization") == header


def test_endpoint_with_a_trailing_slash(server: ScriptedOpenAIServer, make_embedder: MakeEmbedder) -> None:
    vectors = make_embedder(endpoint=server.url + "/").embed(["hello"])
    assert [request.path for request in server.requests] == ["/v1/embeddings"]
    assert np.allclose(vectors, expected(["hello"]), atol=1e-6)


def test_endpoint_is_used_as_given_without_guessing_v1(
    server: ScriptedOpenAIServer, make_embedder: MakeEmbedder
) -> None:
    bare = server.url.removesuffix("/v1")
    with pytest.raises(EmbeddingError, match="404"):
        make_embedder(endpoint=bare).embed(["hello"])
    assert [request.path for request in server.requests] == ["/embeddings"]


# -- the dimension ----------------------------------------------------------------------------------------


def test_dim_probes_once_when_not_given(server: ScriptedOpenAIServer, make_embedder: MakeEmbedder) -> None:
    embedder = make_embedder()
    assert embedder.dim == DIM
    assert embedder.dim == DIM
    assert embedding_requests(server) == [{"model": "test-model", "input": ["dimension probe"]}]


def test_dim_is_learned_from_the_first_embedding(server: ScriptedOpenAIServer, make_embedder: MakeEmbedder) -> None:
    embedder = make_embedder()
    embedder.embed(["hello"])
    assert embedder.dim == DIM
    assert len(server.requests) == 1


def test_given_dim_needs_no_request(server: ScriptedOpenAIServer, make_embedder: MakeEmbedder) -> None:
    embedder = make_embedder(dim=DIM)
    assert embedder.dim == DIM
    empty = embedder.embed([])
    assert empty.shape == (0, DIM)
    assert empty.dtype == np.float32
    assert server.requests == []


def test_empty_batch_with_unknown_dim_probes(server: ScriptedOpenAIServer, make_embedder: MakeEmbedder) -> None:
    empty = make_embedder().embed([])
    assert empty.shape == (0, DIM)
    assert empty.dtype == np.float32
    assert [body["input"] for body in embedding_requests(server)] == [["dimension probe"]]


def test_a_dimension_other_than_the_given_one_fails(make_embedder: MakeEmbedder) -> None:
    with pytest.raises(EmbeddingError, match=r"64-dimensional embeddings; expected 128"):
        make_embedder(dim=128).embed(["hello"])


def test_a_dimension_other_than_the_first_response_fails(
    server: ScriptedOpenAIServer, make_embedder: MakeEmbedder
) -> None:
    embedder = make_embedder()
    embedder.embed(["hello"])
    server.malform_next("dim")  # one input, so its only vector is one component longer: 65
    with pytest.raises(EmbeddingError, match=r"65-dimensional embeddings; expected 64"):
        embedder.embed(["again"])


# -- failures ---------------------------------------------------------------------------------------------


def test_http_error_names_status_and_body_excerpt(server: ScriptedOpenAIServer, make_embedder: MakeEmbedder) -> None:
    server.fail_next(503, '{"error": {"message": "model is loading"}}')
    with pytest.raises(EmbeddingError, match="HTTP 503") as caught:
        make_embedder().embed(["hello"])
    assert "model is loading" in str(caught.value)


def test_long_error_bodies_are_cut_to_an_excerpt(server: ScriptedOpenAIServer, make_embedder: MakeEmbedder) -> None:
    server.fail_next(400, "bad request " + "x" * 5000)
    with pytest.raises(EmbeddingError, match="HTTP 400: bad request x") as caught:
        make_embedder().embed(["hello"])
    assert len(str(caught.value)) < 400


def test_a_failure_is_not_sticky(server: ScriptedOpenAIServer, make_embedder: MakeEmbedder) -> None:
    embedder = make_embedder()
    server.fail_next(500)
    with pytest.raises(EmbeddingError):
        embedder.embed(["hello"])
    assert np.allclose(embedder.embed(["hello"]), expected(["hello"]), atol=1e-6)


def test_wrong_count_fails(server: ScriptedOpenAIServer, make_embedder: MakeEmbedder) -> None:
    server.malform_next("count")
    with pytest.raises(EmbeddingError, match="3 embeddings for 2 inputs"):
        make_embedder().embed(["one", "two"])


def test_inconsistent_dimensions_fail(server: ScriptedOpenAIServer, make_embedder: MakeEmbedder) -> None:
    server.malform_next("dim")
    with pytest.raises(EmbeddingError, match=r"mixes dimensions \[64, 65\]"):
        make_embedder().embed(["one", "two"])


def test_invalid_json_fails(server: ScriptedOpenAIServer, make_embedder: MakeEmbedder) -> None:
    server.malform_next("json")
    with pytest.raises(EmbeddingError, match="not JSON"):
        make_embedder().embed(["one"])


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ("[]", "no 'data' list"),
        ('{"data": {"index": 0}}', "no 'data' list"),
        ('{"object": "list"}', "no 'data' list"),
        ('{"data": [{"index": 0}]}', "embedding 0 is missing"),
        ('{"data": [{"index": 0, "embedding": null}]}', "embedding 0 is missing"),
        ('{"data": [{"index": 0, "embedding": []}]}', "embedding 0 is missing"),
        ('{"data": [{"index": 0, "embedding": "AAAAAA=="}]}', "embedding 0 is missing"),
        ('{"data": [{"index": 0, "embedding": [0.1, "0.2"]}]}', "non-numeric"),
        ('{"data": [{"index": 0, "embedding": [0.1, null]}]}', "non-numeric"),
        ('{"data": [{"index": 0, "embedding": [true, false]}]}', "non-numeric"),
        ('{"data": [{"index": 0, "embedding": [[0.1, 0.2]]}]}', "non-numeric"),
        ('{"data": [{"index": 0, "embedding": [0.1, NaN]}]}', "non-finite"),
        ('{"data": [{"index": 0, "embedding": [0, 0.0]}]}', "all zeros"),
        ('{"data": [{"embedding": [0.1, 0.2]}]}', "bad index"),
        ('{"data": [{"index": 1, "embedding": [0.1, 0.2]}]}', "bad index"),
        ('{"data": [{"index": "0", "embedding": [0.1, 0.2]}]}', "bad index"),
        ('{"data": ["not an object"]}', "bad index"),
    ],
)
def test_malformed_responses_fail(
    server: ScriptedOpenAIServer, make_embedder: MakeEmbedder, body: str, message: str
) -> None:
    server.fail_next(200, body)
    with pytest.raises(EmbeddingError, match=message):
        make_embedder().embed(["one"])


def test_repeated_index_fails(server: ScriptedOpenAIServer, make_embedder: MakeEmbedder) -> None:
    server.fail_next(200, '{"data": [{"index": 0, "embedding": [0.1]}, {"index": 0, "embedding": [0.2]}]}')
    with pytest.raises(EmbeddingError, match="item 1 has a missing, repeated or bad index"):
        make_embedder().embed(["one", "two"])


def test_timeout_fails(server: ScriptedOpenAIServer, make_embedder: MakeEmbedder) -> None:
    server.delay_next(5.0)
    started = time.monotonic()
    with pytest.raises(EmbeddingError, match="timed out"):
        make_embedder(timeout=0.2).embed(["hello"])
    assert time.monotonic() - started < 3.0


def test_connection_refused_fails(make_embedder: MakeEmbedder) -> None:
    with ScriptedOpenAIServer() as stopped:
        url = stopped.url
    with pytest.raises(EmbeddingError, match="ConnectError"):
        make_embedder(endpoint=url, connect_timeout=2.0).embed(["hello"])


def test_an_unusable_endpoint_fails(make_embedder: MakeEmbedder) -> None:
    with pytest.raises(EmbeddingError, match="failed"):
        make_embedder(endpoint="ollama:11434").embed(["hello"])


def test_dim_probe_failure_is_an_embedding_error(server: ScriptedOpenAIServer, make_embedder: MakeEmbedder) -> None:
    server.fail_next(502, "bad gateway")
    embedder = make_embedder()
    with pytest.raises(EmbeddingError, match="HTTP 502"):
        _ = embedder.dim


@pytest.mark.parametrize("options", [{"dim": 0}, {"batch_size": 0}, {"max_input_chars": 0}])
def test_nonsense_options_are_refused(options: dict[str, int]) -> None:
    with pytest.raises(ValueError, match="must be positive"):
        OpenAIEmbedder("http://127.0.0.1:1/v1", "m", **options)
