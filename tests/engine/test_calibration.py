"""A cosine scale per embedding model (engine/calibration, core/cosine_scale.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fake_embedding import FakeEmbeddings
from helpers import Cli, FixedClock, open_memory
from memlane.core.cosine_scale import REFERENCE_SCALE, CosineScale
from memlane.core.settings import EmbeddingSettings
from memlane.embed.factory import make_embedder
from memlane.engine.calibration import load_scale, measure, scale_path
from memlane.index.legs.relevance import Evidence, evidence_ranking


def test_the_reference_is_the_bundled_model_measured_on_the_probes() -> None:
    embedder = make_embedder(EmbeddingSettings())
    assert embedder is not None
    measured = measure(embedder)
    assert measured.unrelated_mean == pytest.approx(REFERENCE_SCALE.unrelated_mean, abs=2e-3)
    assert measured.unrelated_std == pytest.approx(REFERENCE_SCALE.unrelated_std, abs=2e-3)
    assert measured.related_mean == pytest.approx(REFERENCE_SCALE.related_mean, abs=2e-3)
    assert load_scale(EmbeddingSettings()).source == "bundled"


def test_a_cosine_keeps_how_unusual_it_is_for_its_model() -> None:
    assert REFERENCE_SCALE.to_reference(0.37) == 0.37
    # A model packing every text into a narrow cone (e5-like): unrelated 0.78 +- 0.02.
    cone = CosineScale(unrelated_mean=0.78, unrelated_std=0.02, related_mean=0.84)
    two_spreads = REFERENCE_SCALE.unrelated_mean + 2 * REFERENCE_SCALE.unrelated_std
    assert cone.to_reference(0.82) == pytest.approx(two_spreads)
    # An unrelated query's best match in such a store scores low once placed, high without.
    evidence = Evidence({1: 0.81, 2: 0.78, 3: 0.77}, {}, 0.78, 300)
    assert evidence_ranking(evidence, "semantic", cone)[0][1] < 0.1
    assert evidence_ranking(evidence, "semantic")[0][1] > 0.9


def test_another_model_is_measured_at_its_first_index_run(
    project: Path, clock: FixedClock, fake_embeddings: FakeEmbeddings
) -> None:
    env = {
        "MEMLANE_EMBEDDING_PROVIDER": "openai",
        "MEMLANE_EMBEDDING_BASE_URL": fake_embeddings.base_url,
        "MEMLANE_EMBEDDING_MODEL": "fake-embed",
    }
    mem = open_memory(project, clock=clock, lexical=False, **env)
    try:
        mem.write("The hot cache runs on Redis.")
        status = mem.status()
        assert status.calibration is not None and status.calibration["source"] == "none"
        assert any(line.startswith("calibration:") for line in status.missing)
        mem.sync()
        assert mem.internals.model_scale.source == "derived"
        assert mem.index.settings.cosine_scale == mem.internals.model_scale.scale
        assert not any(line.startswith("calibration:") for line in mem.status().missing)
    finally:
        mem.close()
    again = open_memory(project, clock=clock, lexical=False, **env)
    try:
        kept = json.loads(scale_path(again.internals.model_scale.space).read_text(encoding="utf-8"))
        assert again.internals.model_scale.source == "derived" and kept["measured_at"]
    finally:
        again.close()


def test_calibrate_says_what_it_measured_and_refuses_without_a_model(cli: Cli) -> None:
    done = cli("calibrate")
    assert done.returncode == 0, done.stderr
    assert "bundled model" in done.stdout and "40 probe pairs" in done.stdout
    measured = json.loads(cli("calibrate", "--json").stdout)
    assert measured["source"] == "bundled" and measured["probe_pairs"] == 40
    refused = cli("calibrate", env={"MEMLANE_EMBEDDING_PROVIDER": "none"})
    assert refused.returncode != 0 and "Traceback" not in refused.stderr
    assert "embedding.provider is none" in refused.stderr
