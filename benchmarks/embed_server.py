"""An OpenAI-compatible ``POST /v1/embeddings`` endpoint on 127.0.0.1 that
answers with memlane's bundled embedder (or any object with ``embed(texts)``
returning an ``(n, d)`` float array).

Used by ``compare_memsearch.py`` so memsearch (provider ``openai``) and
memlane (provider ``openai``) embed with exactly the same model. Requests are
served one at a time (the model already uses every core), so concurrent
clients queue instead of fighting over the cores.

    python benchmarks/embed_server.py [--port 0]    # prints the base URL

``GET /v1/stats`` answers the request, text and embedding-time counters.
"""

from __future__ import annotations

import argparse
import base64
import json
import signal
import threading
import time
from collections.abc import Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Protocol

import numpy as np


class _Embedder(Protocol):
    def embed(self, texts: Sequence[str]) -> Any: ...


class EmbedServer:
    """Background ``ThreadingHTTPServer``; ``base_url`` ends in ``/v1``."""

    def __init__(
        self, embedder: _Embedder, model: str, host: str = "127.0.0.1", port: int = 0
    ) -> None:
        self.embedder = embedder
        self.model = model
        self.requests = 0
        self.texts = 0
        self.embed_s = 0.0
        self._lock = threading.Lock()
        self._httpd = ThreadingHTTPServer((host, port), _handler_for(self))
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(
            target=self._httpd.serve_forever,
            kwargs={"poll_interval": 0.05},  # close() waits up to one interval
            name="embed-server",
            daemon=True,
        )

    @property
    def base_url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}/v1"

    def start(self) -> EmbedServer:
        self._thread.start()
        return self

    def close(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=5)

    def __enter__(self) -> EmbedServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    def stats(self) -> dict[str, Any]:
        return {"requests": self.requests, "texts": self.texts, "embed_s": round(self.embed_s, 3)}

    def answer(self, body: dict[str, Any]) -> dict[str, Any]:
        """The response body for one request body (raises ValueError on bad input)."""
        raw = body.get("input")
        texts = [raw] if isinstance(raw, str) else raw
        if not isinstance(texts, list) or not all(isinstance(t, str) for t in texts):
            raise ValueError("input must be a string or a list of strings")
        if not texts:
            raise ValueError("input must not be empty")
        fmt = body.get("encoding_format") or "float"
        if fmt not in ("float", "base64"):
            raise ValueError(f"unsupported encoding_format {fmt!r}")
        with self._lock:
            t0 = time.perf_counter()
            vectors = np.asarray(self.embedder.embed(texts), dtype=np.float32)
            self.embed_s += time.perf_counter() - t0
            self.requests += 1
            self.texts += len(texts)
        data = []
        for i, row in enumerate(vectors):
            emb: Any = (
                base64.b64encode(row.astype("<f4").tobytes()).decode("ascii")
                if fmt == "base64"
                else row.tolist()
            )
            data.append({"object": "embedding", "index": i, "embedding": emb})
        tokens = sum(len(t.split()) for t in texts)
        return {
            "object": "list",
            "data": data,
            "model": body.get("model") or self.model,
            "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
        }


def _handler_for(server: EmbedServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"  # keep-alive: clients pool connections
        # Headers and body go out in two writes; with Nagle on, the second
        # waits for the client's delayed ACK (~40 ms per request).
        disable_nagle_algorithm = True

        def log_message(self, format: str, *args: Any) -> None:
            pass

        def _send(self, status: int, payload: dict[str, Any]) -> None:
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self) -> None:
            if self.path.rstrip("/") in ("/v1/stats", "/stats"):
                self._send(200, server.stats())
            else:
                self._send(404, {"error": {"message": f"no route {self.path}"}})

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length)
            if self.path.rstrip("/") not in ("/v1/embeddings", "/embeddings"):
                self._send(404, {"error": {"message": f"no route {self.path}"}})
                return
            try:
                body = json.loads(raw)
                if not isinstance(body, dict):
                    raise ValueError("body must be a JSON object")
                payload = server.answer(body)
            except ValueError as exc:
                self._send(400, {"error": {"message": str(exc), "type": "invalid_request_error"}})
                return
            except Exception as exc:  # the client should see why, not a dropped socket
                self._send(500, {"error": {"message": f"{type(exc).__name__}: {exc}"}})
                return
            self._send(200, payload)

    return Handler


def bundled_server(port: int = 0) -> EmbedServer:
    """A server (not started) for memlane's bundled all-MiniLM-L6-v2 int8 model."""
    from memlane.core.settings import BUNDLED_MODEL_NAME
    from memlane.embed.onnx import OnnxEmbedder

    embedder = OnnxEmbedder.bundled()
    embedder.embed(["warm up"])  # load the model before the first client waits on it
    return EmbedServer(embedder, BUNDLED_MODEL_NAME, port=port)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument(
        "--exit-on-eof", action="store_true", help="stop when stdin closes (the parent is gone)"
    )
    args = parser.parse_args()
    server = bundled_server(args.port).start()
    print(server.base_url, flush=True)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    if args.exit_on_eof:
        import sys

        def watch() -> None:
            sys.stdin.read()
            stop.set()

        threading.Thread(target=watch, daemon=True).start()
    try:
        while not stop.wait(0.5):
            pass
    except KeyboardInterrupt:
        pass
    finally:
        server.close()


if __name__ == "__main__":
    main()
