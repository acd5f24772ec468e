"""The OpenAI-compatible embedder against a real HTTP server on 127.0.0.1."""

from __future__ import annotations

import hashlib
import json
import math
import socket
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import numpy as np
import pytest

from memlane.core.errors import EmbedderError
from memlane.embed.base import Embedder
from memlane.embed.http import DEFAULT_BACKOFF_MS, OpenAIEmbedder

DIM = 8
FAST = (1, 1, 1)  # backoff in ms: the retry logic without the waiting


def raw_vector(text: str, dim: int = DIM) -> list[float]:
    """Deterministic, not normalised (so the client's normalisation shows)."""
    digest = hashlib.sha256(text.encode()).digest()
    return [float(digest[i] - 128) / 7 for i in range(dim)]


def unit(text: str) -> np.ndarray:
    vector = np.asarray(raw_vector(text), dtype=np.float32)
    return vector / np.linalg.norm(vector)


@dataclass
class Reply:
    status: int = 200
    body: Any = None  # JSON-encoded unless bytes; None = the normal answer
    delay_s: float = 0.0


# A scripted reply, or a function of the request's inputs for the normal path.
Script = Reply | Callable[[list[str]], Reply]


@dataclass
class FakeServer:
    url: str
    requests: list[dict[str, Any]] = field(default_factory=list)
    script: list[Script] = field(default_factory=list)  # consumed in order
    lock: threading.Lock = field(default_factory=threading.Lock)

    def then(self, *replies: Script) -> FakeServer:
        self.script.extend(replies)
        return self

    def next_reply(self, inputs: list[str]) -> Reply:
        with self.lock:
            scripted = self.script.pop(0) if self.script else None
        if scripted is None:
            return Reply(body=normal_body(inputs))
        return scripted(inputs) if callable(scripted) else scripted


def normal_body(inputs: list[str], order: list[int] | None = None) -> dict[str, Any]:
    indices = order if order is not None else list(range(len(inputs)))
    return {
        "object": "list",
        "data": [
            {"object": "embedding", "index": i, "embedding": raw_vector(inputs[i])} for i in indices
        ],
        "model": "fake",
    }


@pytest.fixture
def server() -> Iterator[FakeServer]:
    state: FakeServer | None = None

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            assert state is not None
            length = int(self.headers.get("Content-Length", "0"))
            payload = json.loads(self.rfile.read(length))
            with state.lock:
                state.requests.append(
                    {"path": self.path, "headers": dict(self.headers), "json": payload}
                )
            reply = state.next_reply(payload.get("input", []))
            if reply.delay_s:
                time.sleep(reply.delay_s)
            body = reply.body if isinstance(reply.body, bytes) else json.dumps(reply.body).encode()
            self.send_response(reply.status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:  # keep test output clean
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    httpd.daemon_threads = True
    state = FakeServer(url=f"http://127.0.0.1:{httpd.server_address[1]}/v1")
    # A short poll interval: shutdown() waits up to one interval.
    thread = threading.Thread(target=httpd.serve_forever, args=(0.02,), daemon=True)
    thread.start()
    try:
        yield state
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(timeout=5)


def make(server: FakeServer, **kwargs: Any) -> OpenAIEmbedder:
    kwargs.setdefault("backoff_ms", FAST)
    return OpenAIEmbedder(server.url, "fake-embed", **kwargs)


# ---- happy paths ----------------------------------------------------------


def test_embeds_in_batches_with_auth_and_normalises(server: FakeServer) -> None:
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


def test_no_auth_header_without_key_and_trailing_slash(server: FakeServer) -> None:
    embedder = OpenAIEmbedder(server.url + "/", "fake-embed")
    embedder.embed_query("hello")
    assert server.requests[0]["path"] == "/v1/embeddings"
    assert "Authorization" not in server.requests[0]["headers"]


def test_out_of_order_indices_are_reordered(server: FakeServer) -> None:
    texts = ["alpha", "beta", "gamma", "delta"]
    server.then(lambda inputs: Reply(body=normal_body(inputs, order=[2, 0, 3, 1])))
    vectors = make(server).embed(texts)
    np.testing.assert_allclose(vectors, np.stack([unit(t) for t in texts]), atol=1e-6)


def test_missing_indices_mean_input_order(server: FakeServer) -> None:
    def no_index(inputs: list[str]) -> Reply:
        return Reply(body={"data": [{"embedding": raw_vector(t)} for t in inputs]})

    vectors = make(server).embed(["one", "two"]).tolist()
    server.then(no_index)
    np.testing.assert_allclose(make(server).embed(["one", "two"]), vectors, atol=1e-6)


def test_embed_query_shape(server: FakeServer) -> None:
    vector = make(server).embed_query("what did we decide?")
    assert vector.shape == (DIM,)
    np.testing.assert_allclose(vector, unit("what did we decide?"), atol=1e-6)


def test_empty_input_sends_nothing(server: FakeServer) -> None:
    embedder = make(server)
    assert embedder.embed([]).shape == (0, 0)
    assert server.requests == []
    embedder.embed(["x"])
    assert embedder.embed([]).shape == (0, DIM)


def test_empty_string_is_sent_as_a_space(server: FakeServer) -> None:
    make(server).embed(["", "text"])
    assert server.requests[0]["json"]["input"] == [" ", "text"]


# ---- retries --------------------------------------------------------------


@pytest.mark.parametrize("status", [500, 502, 503, 429])
def test_retryable_status_then_success(server: FakeServer, status: int) -> None:
    server.then(Reply(status=status, body={"error": {"message": "busy"}}))
    vectors = make(server).embed(["retry me"])
    np.testing.assert_allclose(vectors[0], unit("retry me"), atol=1e-6)
    assert len(server.requests) == 2


def test_persistent_failure_gives_a_clear_error(server: FakeServer) -> None:
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


def test_client_errors_are_not_retried(server: FakeServer) -> None:
    server.then(Reply(status=401, body={"error": {"message": "Incorrect API key provided"}}))
    with pytest.raises(EmbedderError) as info:
        make(server, api_key="sk-wrong").embed(["x"])
    assert "HTTP 401" in info.value.message
    assert "Incorrect API key provided" in info.value.message
    assert "embedding.api_key" in info.value.message
    assert len(server.requests) == 1


def test_not_found_points_at_base_url(server: FakeServer) -> None:
    server.then(Reply(status=404, body=b"404 page not found"))
    with pytest.raises(EmbedderError) as info:
        make(server).embed(["x"])
    assert "HTTP 404" in info.value.message
    assert "embedding.base_url" in info.value.message
    assert "/v1" in info.value.message


def test_connection_refused_is_retried_then_explained() -> None:
    with socket.socket() as sock:  # a port nobody listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    url = f"http://127.0.0.1:{port}/v1"
    embedder = OpenAIEmbedder(url, "m", backoff_ms=FAST)
    started = time.monotonic()
    with pytest.raises(EmbedderError) as info:
        embedder.embed(["x"])
    assert time.monotonic() - started < 5
    assert f"{url}/embeddings" in info.value.message
    assert "cannot connect" in info.value.message
    assert "server is running" in info.value.message


def test_read_timeout_is_not_retried(server: FakeServer) -> None:
    server.then(lambda inputs: Reply(body=normal_body(inputs), delay_s=1.0))
    with pytest.raises(EmbedderError, match=r"timed out after 0\.2 s"):
        make(server, timeout_s=0.2).embed(["slow"])
    assert len(server.requests) == 1


def test_default_backoff_schedule() -> None:
    assert DEFAULT_BACKOFF_MS == (200, 500, 1000)


def test_backoff_waits_between_attempts(server: FakeServer) -> None:
    server.then(Reply(status=500, body={}), Reply(status=500, body={}))
    started = time.monotonic()
    make(server, backoff_ms=(100, 150)).embed(["x"])
    assert time.monotonic() - started >= 0.25


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
def test_malformed_responses(server: FakeServer, reply: Reply, problem: str) -> None:
    server.then(reply)
    with pytest.raises(EmbedderError) as info:
        make(server).embed(["a", "b"])
    assert problem in info.value.message
    assert "malformed embeddings response" in info.value.message
    assert server.url in info.value.message


def test_dimension_change_between_calls_is_caught(server: FakeServer) -> None:
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
