"""The side-by-side benchmark's own parts: the embedding server and the scoring.

No model and no memsearch here: a fake embedder stands in for the bundled one.
"""

from __future__ import annotations

import base64
import json
import sys
import urllib.error
import urllib.request
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest

BENCH = Path(__file__).resolve().parents[2] / "benchmarks"
sys.path.insert(0, str(BENCH))

from compare_memsearch import parse_evidence, quality  # noqa: E402
from embed_server import EmbedServer  # noqa: E402


class FakeEmbedder:
    """Row i is a fixed function of the text, so answers can be checked."""

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        rows = np.zeros((len(texts), 4), dtype=np.float32)
        for i, text in enumerate(texts):
            rows[i] = [len(text), 1.0, 0.5, -1.0]
        return rows


@pytest.fixture
def server() -> Iterator[EmbedServer]:
    with EmbedServer(FakeEmbedder(), "fake-model") as srv:
        yield srv


def _post(url: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    req = urllib.request.Request(
        url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"}
    )
    try:
        with urllib.request.urlopen(req, timeout=10) as resp:
            return resp.status, json.loads(resp.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def test_server_answers_like_openai(server: EmbedServer) -> None:
    status, body = _post(f"{server.base_url}/embeddings", {"model": "m", "input": ["ab", "abcd"]})
    assert status == 200
    assert body["model"] == "m"
    assert [d["index"] for d in body["data"]] == [0, 1]
    assert body["data"][1]["embedding"] == [4.0, 1.0, 0.5, -1.0]
    assert set(body["usage"]) == {"prompt_tokens", "total_tokens"}
    assert server.stats()["requests"] == 1 and server.stats()["texts"] == 2


def test_server_single_string_and_base64(server: EmbedServer) -> None:
    status, body = _post(
        f"{server.base_url}/embeddings",
        {"model": "m", "input": "abc", "encoding_format": "base64"},
    )
    assert status == 200
    row = np.frombuffer(base64.b64decode(body["data"][0]["embedding"]), dtype="<f4")
    assert row.tolist() == [3.0, 1.0, 0.5, -1.0]


def test_server_rejects_bad_input_and_routes(server: EmbedServer) -> None:
    assert _post(f"{server.base_url}/embeddings", {"input": [1, 2]})[0] == 400
    assert _post(f"{server.base_url}/embeddings", {"input": []})[0] == 400
    assert _post(f"{server.base_url}/nothing", {"input": ["x"]})[0] == 404


def test_memlane_http_embedder_reads_the_server(server: EmbedServer) -> None:
    from memlane.embed.http import OpenAIEmbedder

    with OpenAIEmbedder(server.base_url, "fake-model") as embedder:
        vectors = embedder.embed(["abc", "a"])
    assert vectors.shape == (2, 4)
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0)


def test_parse_evidence_repairs_what_is_unambiguous() -> None:
    got = parse_evidence(["D8:6; D9:17", "D:11:26", "D30:05", "D", "D1:3"])
    assert got == {"D8:6", "D9:17", "D11:26", "D30:5", "D1:3"}


def test_quality_turn_recall_and_session_hit() -> None:
    hits = [["D2:1", "D1:3"], ["D5:1"], []]
    gold = [{"D1:3"}, {"D5:9"}, {"D1:1"}]
    q = quality(hits, gold)
    assert q["recall_any@10"] == pytest.approx(1 / 3)
    assert q["session_hit@1"] == pytest.approx(1 / 3)  # only the 2nd: D5 is the gold session
