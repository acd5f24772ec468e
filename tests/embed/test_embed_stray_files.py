"""Loading the bundled model writes nothing outside MEMLANE_HOME.

onnxruntime's telemetry creates ``~/.cache/Microsoft/DeveloperTools/`` when
its library loads (embed/onnx_runtime.py). A fresh interpreter is needed: in
this one onnxruntime is loaded already, and the files appear only at load.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

LOAD_AND_EMBED = """
from memlane.embed.onnx import OnnxEmbedder
vectors = OnnxEmbedder.bundled().embed(["hello world"])
assert vectors.shape == (1, 384), vectors.shape
print("ORT_DISABLE_TELEMETRY" in __import__("os").environ)
"""


def _files_under(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*") if not p.is_dir())


@pytest.mark.subprocess
def test_loading_the_bundled_model_writes_only_under_memlane_home(tmp_path: Path) -> None:
    home, memlane_home, work, scratch = (tmp_path / n for n in ("home", "mh", "work", "tmp"))
    for directory in (home, memlane_home, work, scratch):
        directory.mkdir()
    env = {
        name: value
        for name, value in os.environ.items()
        if not name.startswith(("MEMLANE_", "XDG_", "ORT_")) and name not in ("HOME", "TMPDIR")
    }
    # No MEMLANE_CACHE_DIR: the int8 model is derived afresh, in its own child
    # process, which loads onnxruntime too.
    env.update(HOME=str(home), MEMLANE_HOME=str(memlane_home), TMPDIR=str(scratch))
    proc = subprocess.run(
        [sys.executable, "-c", LOAD_AND_EMBED],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    # The variable was set for onnxruntime's load only, not left behind.
    assert proc.stdout.strip() == "False"
    assert _files_under(home) == []
    stray = [p for p in _files_under(tmp_path) if memlane_home not in p.parents]
    assert stray == []
    assert _files_under(memlane_home / "cache")  # the derived model, where it belongs
