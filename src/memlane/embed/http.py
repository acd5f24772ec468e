"""Embeddings from any OpenAI-compatible HTTP endpoint (OpenAI, Ollama,
llama.cpp, vLLM, LM Studio, text-embeddings-inference, ...).

The URL is ``{base_url}/embeddings``, exactly as the OpenAI clients build it,
so ``base_url`` is given with its version segment: ``https://api.openai.com/v1``,
``http://127.0.0.1:11434/v1`` (Ollama). A trailing slash is ignored; nothing
else is guessed, because a guessed ``/v1`` would break servers mounted
elsewhere.

httpx is imported lazily so that importing ``memlane.embed`` stays cheap.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from memlane.core.errors import EmbedderError
from memlane.core.settings import DEFAULT_EMBED_BATCH_SIZE, EmbeddingSettings
from memlane.embed.base import empty_vectors, l2_normalize

if TYPE_CHECKING:
    import httpx

    from memlane.embed.base import Vectors

#: Waits before the 2nd, 3rd and 4th attempt of a request that failed with a
#: retryable error (429, 5xx, connection failure).
DEFAULT_BACKOFF_MS: tuple[int, ...] = (200, 500, 1000)

# How much of an error body goes into a message: enough for the server's
# explanation, short enough for one log line.
_ERROR_BODY_CHARS = 300


def _is_retryable_status(status: int) -> bool:
    return status == 429 or 500 <= status <= 599


def _status_advice(status: int, base_url: str) -> str:
    if status in (401, 403):
        return 'check embedding.api_key (e.g. api_key = "env:OPENAI_API_KEY") is set and valid'
    if status == 404:
        return (
            f"check embedding.base_url ({base_url}): memlane POSTs to base_url + '/embeddings', "
            "so it usually ends in /v1; also check embedding.model exists on the server"
        )
    if status == 429:
        return "the server is rate limiting; try again later or lower embedding.batch_size"
    if status >= 500:
        return "the embedding server failed; check its logs and that embedding.model is loaded"
    return "check embedding.model and that the server supports the embeddings API"


class OpenAIEmbedder:
    """POST ``{"model", "input": [...]}`` batches to ``{base_url}/embeddings``.

    Responses are reordered by their ``index``, checked (count, numbers,
    dimensions) and L2-normalised. Retryable failures (429, 5xx, connect
    errors) are retried after ``backoff_ms``; then, or on any other failure,
    ``EmbedderError`` says which URL failed, how, and what to check.
    Thread-safe: one pooled ``httpx.Client`` is shared.
    """

    def __init__(
        self,
        base_url: str,
        model: str,
        *,
        api_key: str | None = None,
        batch_size: int = DEFAULT_EMBED_BATCH_SIZE,
        timeout_s: float = 30.0,
        dimension: int | None = None,
        backoff_ms: Sequence[int] = DEFAULT_BACKOFF_MS,
        transport: httpx.BaseTransport | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        """``backoff_ms``: the waits before the 2nd, 3rd... attempt of a
        retryable failure. ``transport``: httpx's transport (a proxy, a
        unix socket...). ``sleep``: how a backoff wait is spent, given
        seconds (default ``time.sleep``; a caller with its own scheduling,
        or a test recording the waits, passes another)."""
        if batch_size < 1:
            raise EmbedderError(f"embedding.batch_size must be at least 1, got {batch_size}")
        if not base_url.startswith(("http://", "https://")):
            raise EmbedderError(
                f"embedding.base_url {base_url!r} must start with http:// or https://, "
                "e.g. http://127.0.0.1:11434/v1"
            )
        self.base_url = base_url.rstrip("/")
        self.url = f"{self.base_url}/embeddings"
        self.model = model
        self.batch_size = batch_size
        self.timeout_s = timeout_s
        self.backoff_ms = tuple(backoff_ms)
        self._api_key = api_key
        self._dimension = dimension
        self._transport = transport
        self._sleep = sleep
        self._client: httpx.Client | None = None
        self._client_lock = threading.Lock()

    def __repr__(self) -> str:  # never show the key
        return f"OpenAIEmbedder(url={self.url!r}, model={self.model!r})"

    # ---- protocol ------------------------------------------------------

    @property
    def name(self) -> str:
        return self.model

    @property
    def dimension(self) -> int | None:
        return self._dimension

    def embed(self, texts: Sequence[str]) -> Vectors:
        if isinstance(texts, str):
            raise TypeError("embed() takes a sequence of texts; use embed_query() for one")
        if not texts:
            return empty_vectors(self._dimension)
        import numpy as np

        parts = [
            self._embed_batch(list(texts[start : start + self.batch_size]))
            for start in range(0, len(texts), self.batch_size)
        ]
        return l2_normalize(np.concatenate(parts, axis=0))

    def embed_query(self, text: str) -> Vectors:
        vector: Vectors = self.embed([text])[0]
        return vector

    def close(self) -> None:
        with self._client_lock:
            if self._client is not None:
                self._client.close()
                self._client = None

    def __enter__(self) -> OpenAIEmbedder:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # ---- internals -----------------------------------------------------

    def _http(self) -> httpx.Client:
        with self._client_lock:
            if self._client is None:
                import httpx

                headers = {"Content-Type": "application/json"}
                if self._api_key:
                    headers["Authorization"] = f"Bearer {self._api_key}"
                self._client = httpx.Client(
                    timeout=self.timeout_s, headers=headers, transport=self._transport
                )
            return self._client

    def _embed_batch(self, texts: list[str]) -> Vectors:
        # OpenAI rejects an empty string input (400) and would fail the whole
        # batch; a single space embeds as "nothing" on every server we know.
        payload = {"model": self.model, "input": [text if text else " " for text in texts]}
        body = self._post(payload)
        return self._parse(body, len(texts))

    def _post(self, payload: dict[str, Any]) -> Any:
        import httpx

        client = self._http()
        attempts = len(self.backoff_ms) + 1
        problem = ""
        status: int | None = None  # of the last failed attempt; None: no connection
        for attempt in range(attempts):
            if attempt:
                self._sleep(self.backoff_ms[attempt - 1] / 1000)
            try:
                response = client.post(self.url, json=payload)
            except (httpx.ConnectError, httpx.ConnectTimeout, httpx.RemoteProtocolError) as exc:
                # The request never reached a handler (or the connection was
                # dropped mid-flight): safe and worth retrying.
                status = None
                problem = f"cannot connect ({type(exc).__name__}: {exc or 'no detail'})"
                continue
            except httpx.TimeoutException as exc:
                # The server took the request and sat on it for timeout_s;
                # three more waits that long would block the caller for minutes.
                raise EmbedderError(
                    f"embedding request to {self.url} timed out after {self.timeout_s:g} s "
                    f"({type(exc).__name__}); check the server is not overloaded, or raise "
                    "embedding.timeout_s"
                ) from exc
            except httpx.HTTPError as exc:
                raise EmbedderError(
                    f"embedding request to {self.url} failed ({type(exc).__name__}: {exc}); "
                    "check embedding.base_url"
                ) from exc
            if response.status_code == 200:
                try:
                    return response.json()
                except ValueError as exc:
                    raise self._malformed(
                        f"the body is not JSON: {response.text[:_ERROR_BODY_CHARS]!r}"
                    ) from exc
            status = response.status_code
            problem = f"HTTP {status}{_error_detail(response)}"
            if not _is_retryable_status(status):
                raise EmbedderError(
                    f"embedding request to {self.url} failed: {problem}; "
                    f"{_status_advice(status, self.base_url)}"
                )
        advice = (
            f"check the server is running and embedding.base_url ({self.base_url}) is right"
            if status is None
            else _status_advice(status, self.base_url)
        )
        raise EmbedderError(
            f"embedding request to {self.url} failed after {attempts} attempts: {problem}; {advice}"
        )

    def _parse(self, body: Any, expected: int) -> Vectors:
        import numpy as np

        data = body.get("data") if isinstance(body, dict) else None
        if not isinstance(data, list):
            raise self._malformed("no 'data' list in the response")
        if len(data) != expected:
            raise self._malformed(f"{len(data)} embeddings for {expected} inputs")
        if not all(isinstance(item, dict) for item in data):
            raise self._malformed("'data' items must be objects")
        raw_indices = [item.get("index") for item in data]
        if all(index is None for index in raw_indices):
            # Tolerated: a few servers omit index and answer in input order.
            ordered = data
        else:
            indices = [index for index in raw_indices if type(index) is int]
            if sorted(indices) != list(range(expected)):
                raise self._malformed(
                    f"'index' values must be 0..{expected - 1}, each once; got {raw_indices[:10]}"
                )
            ordered = [item for _, item in sorted(zip(indices, data, strict=True))]
        rows = []
        for position, item in enumerate(ordered):
            raw = item.get("embedding")
            if not isinstance(raw, list) or not raw:
                raise self._malformed(f"embedding {position} is not a non-empty list of numbers")
            vector = np.asarray(raw)
            if vector.ndim != 1 or vector.dtype.kind not in "iuf":
                raise self._malformed(f"embedding {position} is not a flat list of numbers")
            if not np.isfinite(vector).all():
                raise self._malformed(f"embedding {position} contains NaN or infinity")
            rows.append(vector.astype(np.float32))
        dimensions = {row.shape[0] for row in rows}
        if len(dimensions) != 1:
            raise self._malformed(f"embeddings have mixed dimensions {sorted(dimensions)}")
        dimension = dimensions.pop()
        if self._dimension is not None and dimension != self._dimension:
            raise self._malformed(
                f"embeddings have dimension {dimension}, expected {self._dimension} "
                "(did embedding.model change? run `memlane reindex` after changing models)"
            )
        self._dimension = dimension
        return np.stack(rows)

    def _malformed(self, problem: str) -> EmbedderError:
        return EmbedderError(
            f"malformed embeddings response from {self.url}: {problem}; check that the server "
            "implements the OpenAI embeddings API and that embedding.model is an embedding model"
        )


def _error_detail(response: httpx.Response) -> str:
    """`` Reason: server message`` from an error response, best effort."""
    reason = f" {response.reason_phrase}" if response.reason_phrase else ""
    message: Any = None
    try:
        body = response.json()
    except ValueError:
        body = None
    if isinstance(body, dict):
        error = body.get("error")
        if isinstance(error, dict):
            message = error.get("message")
        elif error:
            message = error
        else:
            message = body.get("detail") or body.get("message")
    if message is None:
        message = response.text.strip()
    text = str(message).strip()[:_ERROR_BODY_CHARS]
    return f"{reason}: {text}" if text else reason


# --------------------------------------------------------------------------
# provider ``openai`` of the embedder registry (embed/factory.py)

OPENAI_BASE_URL = "https://api.openai.com/v1"


def make_embedder(settings: EmbeddingSettings) -> OpenAIEmbedder:
    base_url = settings.base_url
    if not base_url:
        if not settings.api_key:
            raise EmbedderError(
                "embedding.provider is openai but embedding.base_url is not set; set it to "
                "your server's OpenAI-compatible root (e.g. http://127.0.0.1:11434/v1 for "
                f"Ollama), or set embedding.api_key to use {OPENAI_BASE_URL}"
            )
        # Only with a key: without one, api.openai.com would just answer 401,
        # and a local-server user who forgot base_url would leak texts to a
        # third party the moment they add any key-like setting by mistake.
        base_url = OPENAI_BASE_URL
    return OpenAIEmbedder(
        base_url,
        settings.model,
        api_key=settings.api_key,
        batch_size=settings.batch_size,
        timeout_s=settings.timeout_s,
    )


def vector_space(settings: EmbeddingSettings, input_rule: str) -> str:
    """The model at its endpoint: another server's model of the same name is
    another space."""
    return f"{settings.model}|openai:{settings.base_url or OPENAI_BASE_URL}{input_rule}"


def unreachable(settings: EmbeddingSettings, timeout_s: float) -> str | None:
    """Why the embedding endpoint cannot be reached, or None: one TCP connect,
    bounded by *timeout_s* (what ``memlane status`` can afford to ask)."""
    import socket
    from urllib.parse import urlsplit

    base_url = settings.base_url or (OPENAI_BASE_URL if settings.api_key else None)
    if not base_url:
        return None  # make_embedder says what is missing
    parts = urlsplit(base_url)
    host = parts.hostname
    if not host:
        return f"embedding.base_url {base_url} names no host"
    try:
        port = parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError:
        return f"embedding.base_url {base_url} has an invalid port"
    try:
        with socket.create_connection((host, port), timeout=timeout_s):
            return None
    except OSError as exc:
        reason = exc.strerror or str(exc) or type(exc).__name__
        return (
            f"cannot reach the embedding endpoint {base_url} ({reason}); check the server "
            "is running and embedding.base_url is right"
        )
