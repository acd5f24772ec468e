"""A fake OpenAI-compatible embedding server on 127.0.0.1: real HTTP, no mocks.

``FakeEmbeddings`` answers ``POST /v1/embeddings`` (``base_url`` ends in
``/v1``, as memlane's ``embedding.base_url`` does) from a ``ThreadingHTTPServer``
on port 0 in a daemon thread::

    from fake_embedding import FakeEmbeddings, unit

    with FakeEmbeddings() as server:
        embedder = OpenAIEmbedder(server.base_url, "fake-embed")
        assert np.allclose(embedder.embed_query("hi"), unit("hi"))
        assert server.requests[0]["json"]["input"] == ["hi"]

The normal answer gives every input a deterministic vector of ``DIM``
numbers (``raw_vector``: not normalised, so a client's normalisation shows;
``unit`` is the normalised one). ``server.then(*replies)`` scripts the next
responses, one per request, in order; a reply is a ``Reply`` (status, JSON
or raw body, a delay before answering) or a function of the request's
inputs returning one. ``server.requests`` records every request (path,
headers, parsed JSON body) before any delay.

The tests/conftest.py fixture ``fake_embeddings`` yields a running server.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler
from typing import Any, ClassVar

import numpy as np

from loopback import LoopbackServer

__all__ = ["DIM", "FakeEmbeddings", "Reply", "Script", "normal_body", "raw_vector", "unit"]

DIM = 8


def raw_vector(text: str, dim: int = DIM) -> list[float]:
    """Deterministic, not normalised (so the client's normalisation shows)."""
    digest = hashlib.sha256(text.encode()).digest()
    return [float(digest[i] - 128) / 7 for i in range(dim)]


def unit(text: str, dim: int = DIM) -> np.ndarray:
    """``raw_vector(text)`` normalised: what a client should return for *text*."""
    vector = np.asarray(raw_vector(text, dim), dtype=np.float32)
    return vector / np.linalg.norm(vector)


def normal_body(inputs: list[str], order: list[int] | None = None) -> dict[str, Any]:
    """The OpenAI answer for *inputs*; ``order`` lists the items' indices as sent."""
    indices = order if order is not None else list(range(len(inputs)))
    return {
        "object": "list",
        "data": [
            {"object": "embedding", "index": i, "embedding": raw_vector(inputs[i])} for i in indices
        ],
        "model": "fake",
    }


@dataclass
class Reply:
    status: int = 200
    body: Any = None  # JSON-encoded unless bytes; None = the normal answer
    delay_s: float = 0.0


# A scripted reply, or a function of the request's inputs.
Script = Reply | Callable[[list[str]], Reply]


class FakeEmbeddings:
    """``POST {base_url}/embeddings``; use as a context manager."""

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self.script: list[Script] = []  # consumed in order
        self.lock = threading.Lock()
        self._stopping = threading.Event()
        self._server: LoopbackServer | None = None

    def then(self, *replies: Script) -> FakeEmbeddings:
        """Queue replies, one per coming request (then the normal answer again)."""
        with self.lock:
            self.script.extend(replies)
        return self

    @property
    def base_url(self) -> str:
        assert self._server is not None, "use the server as a context manager"
        return f"http://127.0.0.1:{self._server.port}/v1"

    url = base_url  # the name the embedding tests grew up with

    def next_reply(self, inputs: list[str]) -> Reply:
        with self.lock:
            scripted = self.script.pop(0) if self.script else None
        if scripted is None:
            return Reply(body=normal_body(inputs))
        return scripted(inputs) if callable(scripted) else scripted

    def __enter__(self) -> FakeEmbeddings:
        self._server = LoopbackServer(_Handler, server_fake=self)
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._stopping.set()  # wakes delaying handlers
        if self._server is not None:
            self._server.close()


class _Handler(BaseHTTPRequestHandler):
    server_fake: ClassVar[FakeEmbeddings]

    def do_POST(self) -> None:
        fake = self.server_fake
        length = int(self.headers.get("Content-Length", "0"))
        payload = json.loads(self.rfile.read(length))
        with fake.lock:
            fake.requests.append(
                {"path": self.path, "headers": dict(self.headers), "json": payload}
            )
        reply = fake.next_reply(payload.get("input", []))
        if reply.delay_s and fake._stopping.wait(reply.delay_s):
            return  # the server is stopping: never answer
        body = reply.body if isinstance(reply.body, bytes) else json.dumps(reply.body).encode()
        try:
            self.send_response(reply.status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up (its timeout): expected in tests

    def log_message(self, format: str, *args: Any) -> None:  # keep test output clean
        pass
