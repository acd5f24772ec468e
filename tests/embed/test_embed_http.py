"""The OpenAI-compatible embedder against a real HTTP server on 127.0.0.1
(tests/fake_embedding.py)."""

from __future__ import annotations

import math
from typing import Any

import httpx
import numpy as np
import pytest

from fake_embedding import DIM, FakeEmbeddings, Reply, Script, normal_body, raw_vector, unit
from fake_llm import closed_port_url
from memlane.core.errors import EmbedderError
from memlane.embed.base import Embedder
from memlane.embed.http import DEFAULT_BACKOFF_MS, OpenAIEmbedder

FAST = (1, 1, 1)  # backoff in ms: the retry logic without the waiting


@pytest.fixture
def server(fake_embeddings: FakeEmbeddings) -> FakeEmbeddings:
    return fake_embeddings


def make(server: FakeEmbeddings, **kwargs: Any) -> OpenAIEmbedder:
    kwargs.setdefault("backoff_ms", FAST)
    return OpenAIEmbedder(server.url, "fake-embed", **kwargs)


class CountingTransport(httpx.HTTPTransport):
    """httpx's real transport, counting the requests it tries to send."""

    def __init__(self) -> None:
        super().__init__()
        self.attempts = 0

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        self.attempts += 1
        return super().handle_request(request)


# ---- happy paths ----------------------------------------------------------


def test_embeds_in_batches_with_auth_and_normalises(server: FakeEmbeddings) -> None:
    texts = [f"text number {i}" for i in range(5)]
    with make(server, api_key="sk-test", batch_size=2) as embedder:
        vectors = embedder.embed(texts)
    assert isinstance(embedder, Embedder)
    assert vectors.shape == (5, DIM)
    assert vectors.dtype == np.float32
    np.testing.assert_allclose(vectors, np.stack([unit(t) for t in texts]), atol=1e-6)
    assert embedder.dimension == DIM
    assert embedder.name == "fake-embed"
    assert [r["json"]["input"] for r in server.requests] == [texts[0:2], texts[2:4], texts[4:]]
    for request in server.requests:
        assert request["path"] == "/v1/embeddings"
        assert request["json"]["model"] == "fake-embed"
        assert request["headers"]["Authorization"] == "Bearer sk-test"


def test_no_auth_header_without_key_and_trailing_slash(server: FakeEmbeddings) -> None:
    embedder = OpenAIEmbedder(server.url + "/", "fake-embed")
    embedder.embed_query("hello")
    assert server.requests[0]["path"] == "/v1/embeddings"
    assert "Authorization" not in server.requests[0]["headers"]


def test_out_of_order_indices_are_reordered(server: FakeEmbeddings) -> None:
    texts = ["alpha", "beta", "gamma", "delta"]
    server.then(lambda inputs: Reply(body=normal_body(inputs, order=[2, 0, 3, 1])))
    vectors = make(server).embed(texts)
    np.testing.assert_allclose(vectors, np.stack([unit(t) for t in texts]), atol=1e-6)


def test_missing_indices_mean_input_order(server: FakeEmbeddings) -> None:
    def no_index(inputs: list[str]) -> Reply:
        return Reply(body={"data": [{"embedding": raw_vector(t)} for t in inputs]})

    vectors = make(server).embed(["one", "two"]).tolist()
    server.then(no_index)
    np.testing.assert_allclose(make(server).embed(["one", "two"]), vectors, atol=1e-6)


def test_embed_query_shape(server: FakeEmbeddings) -> None:
    vector = make(server).embed_query("what did we decide?")
    assert vector.shape == (DIM,)
    np.testing.assert_allclose(vector, unit("what did we decide?"), atol=1e-6)


def test_empty_input_sends_nothing(server: FakeEmbeddings) -> None:
    embedder = make(server)
    assert embedder.embed([]).shape == (0, 0)
    assert server.requests == []
    embedder.embed(["x"])
    assert embedder.embed([]).shape == (0, DIM)


def test_empty_string_is_sent_as_a_space(server: FakeEmbeddings) -> None:
    make(server).embed(["", "text"])
    assert server.requests[0]["json"]["input"] == [" ", "text"]


# ---- retries --------------------------------------------------------------


@pytest.mark.parametrize("status", [500, 502, 503, 429])
def test_retryable_status_then_success(server: FakeEmbeddings, status: int) -> None:
    server.then(Reply(status=status, body={"error": {"message": "busy"}}))
    vectors = make(server).embed(["retry me"])
    np.testing.assert_allclose(vectors[0], unit("retry me"), atol=1e-6)
    assert len(server.requests) == 2


def test_persistent_failure_gives_a_clear_error(server: FakeEmbeddings) -> None:
    failure = Reply(status=503, body={"error": {"message": "model is loading"}})
    server.then(failure, failure, failure, failure)
    with pytest.raises(EmbedderError) as info:
        make(server).embed(["never"])
    message = info.value.message
    assert f"{server.url}/embeddings" in message
    assert "HTTP 503" in message
    assert "model is loading" in message
    assert "after 4 attempts" in message
    assert "check" in message
    assert len(server.requests) == 4


def test_client_errors_are_not_retried(server: FakeEmbeddings) -> None:
    server.then(Reply(status=401, body={"error": {"message": "Incorrect API key provided"}}))
    with pytest.raises(EmbedderError) as info:
        make(server, api_key="sk-wrong").embed(["x"])
    assert "HTTP 401" in info.value.message
    assert "Incorrect API key provided" in info.value.message
    assert "embedding.api_key" in info.value.message
    assert len(server.requests) == 1


def test_not_found_points_at_base_url(server: FakeEmbeddings) -> None:
    server.then(Reply(status=404, body=b"404 page not found"))
    with pytest.raises(EmbedderError) as info:
        make(server).embed(["x"])
    assert "HTTP 404" in info.value.message
    assert "embedding.base_url" in info.value.message
    assert "/v1" in info.value.message


def test_connection_refused_is_retried_then_explained() -> None:
    url = closed_port_url()  # a port nobody listens on
    transport = CountingTransport()
    embedder = OpenAIEmbedder(url, "m", backoff_ms=FAST, transport=transport)
    with pytest.raises(EmbedderError) as info:
        embedder.embed(["x"])
    assert transport.attempts == 1 + len(FAST)  # every attempt, then the explanation
    assert f"{url}/embeddings" in info.value.message
    assert "cannot connect" in info.value.message
    assert f"after {1 + len(FAST)} attempts" in info.value.message
    assert "server is running" in info.value.message


def test_read_timeout_is_not_retried(server: FakeEmbeddings) -> None:
    # The server would answer only after the client's timeout (or never: it
    # gives up when the test ends), so only the timeout can end the call.
    server.then(lambda inputs: Reply(body=normal_body(inputs), delay_s=30.0))
    with pytest.raises(EmbedderError, match=r"timed out after 0\.2 s") as info:
        make(server, timeout_s=0.2).embed(["slow"])
    assert "embedding.timeout_s" in info.value.message
    assert len(server.requests) == 1  # seen once, not retried


def test_default_backoff_schedule() -> None:
    assert DEFAULT_BACKOFF_MS == (200, 500, 1000)


def test_backoff_waits_between_attempts(server: FakeEmbeddings) -> None:
    server.then(Reply(status=500, body={}), Reply(status=500, body={}))
    waits: list[float] = []
    vectors = make(server, backoff_ms=(100, 150, 400), sleep=waits.append).embed(["x"])
    assert waits == [0.1, 0.15]  # one wait before each retry, on the schedule
    assert len(server.requests) == 3
    np.testing.assert_allclose(vectors[0], unit("x"), atol=1e-6)


# ---- malformed responses --------------------------------------------------


def _body(data: Any) -> Script:
    return Reply(body=data)


@pytest.mark.parametrize(
    ("reply", "problem"),
    [
        (Reply(body=b"<html>oops</html>"), "not JSON"),
        (_body({"object": "list"}), "no 'data' list"),
        (_body({"data": [{"index": 0, "embedding": [1.0, 2.0]}]}), "1 embeddings for 2 inputs"),
        (
            _body(
                {
                    "data": [
                        {"index": 0, "embedding": [1.0, "x"]},
                        {"index": 1, "embedding": [1.0, 2.0]},
                    ]
                }
            ),
            "not a flat list of numbers",
        ),
        (
            _body(
                {
                    "data": [
                        {"index": 0, "embedding": [1.0, 2.0, 3.0]},
                        {"index": 1, "embedding": [1.0, 2.0]},
                    ]
                }
            ),
            "mixed dimensions",
        ),
        (
            _body({"data": [{"index": 0, "embedding": [1.0]}, {"index": 0, "embedding": [2.0]}]}),
            "each once",
        ),
        (
            _body({"data": [{"index": 0, "embedding": []}, {"index": 1, "embedding": [1.0]}]}),
            "non-empty list",
        ),
        (
            _body({"data": [{"index": 0, "embedding": "AAAA"}, {"index": 1, "embedding": [1]}]}),
            "non-empty list",
        ),
        (
            _body(
                {
                    "data": [
                        {"index": 0, "embedding": [math.nan, 1.0]},
                        {"index": 1, "embedding": [1.0, 1.0]},
                    ]
                }
            ),
            "NaN",
        ),
        (_body([1, 2]), "no 'data' list"),
    ],
)
def test_malformed_responses(server: FakeEmbeddings, reply: Reply, problem: str) -> None:
    server.then(reply)
    with pytest.raises(EmbedderError) as info:
        make(server).embed(["a", "b"])
    assert problem in info.value.message
    assert "malformed embeddings response" in info.value.message
    assert server.url in info.value.message


def test_dimension_change_between_calls_is_caught(server: FakeEmbeddings) -> None:
    embedder = make(server)
    embedder.embed(["first"])
    server.then(lambda inputs: Reply(body={"data": [{"index": 0, "embedding": [1.0, 2.0]}]}))
    with pytest.raises(EmbedderError, match=f"dimension 2, expected {DIM}"):
        embedder.embed(["second"])


# ---- construction ---------------------------------------------------------


def test_bad_base_url_and_key_hidden_in_repr() -> None:
    with pytest.raises(EmbedderError, match="http:// or https://"):
        OpenAIEmbedder("127.0.0.1:11434/v1", "m")
    embedder = OpenAIEmbedder("http://127.0.0.1:1/v1", "m", api_key="sk-secret")
    assert "sk-secret" not in repr(embedder)
    assert embedder.url == "http://127.0.0.1:1/v1/embeddings"
