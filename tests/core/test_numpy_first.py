"""numpy is imported whole before onnxruntime, wherever memlane imports it.

onnxruntime's native start imports numpy's C extension; a thread doing that
while another thread imports numpy can leave numpy half-initialized for the
whole process (core/native.py, ``import_numpy_first``). The rule is checked
on the source, so it holds for every import site, whichever thread runs it,
and once in a fresh interpreter with the two imports raced on purpose.
"""

from __future__ import annotations

import ast
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import memlane

SRC = Path(memlane.__file__).parent


def _imports_onnxruntime(node: ast.stmt) -> bool:
    if isinstance(node, ast.Import):
        return any(a.name.split(".")[0] == "onnxruntime" for a in node.names)
    if isinstance(node, ast.ImportFrom):
        return (node.module or "").split(".")[0] == "onnxruntime"
    return False


def _calls(node: ast.stmt, *names: str) -> bool:
    return (
        isinstance(node, ast.Expr)
        and isinstance(node.value, ast.Call)
        and isinstance(node.value.func, ast.Name)
        and node.value.func.id in names
    )


def _calls_numpy_first(node: ast.stmt) -> bool:
    # import_onnxruntime (embed/onnx_runtime.py) imports numpy first itself.
    return _calls(node, "import_numpy_first", "import_onnxruntime")


def _bodies(tree: ast.AST) -> list[list[ast.stmt]]:
    bodies = []
    for node in ast.walk(tree):
        for field in ("body", "orelse", "finalbody"):
            body = getattr(node, field, None)
            if isinstance(body, list) and body and isinstance(body[0], ast.stmt):
                bodies.append(body)
    return bodies


def test_every_onnxruntime_import_follows_import_numpy_first() -> None:
    sites = []
    late = []
    for path in sorted(SRC.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for body in _bodies(tree):
            for index, node in enumerate(body):
                if not _imports_onnxruntime(node):
                    continue
                sites.append(f"{path.relative_to(SRC)}:{node.lineno}")
                if not any(_calls_numpy_first(before) for before in body[:index]):
                    late.append(f"{path.relative_to(SRC)}:{node.lineno}")
    assert sites, "no import of onnxruntime found: the rule checks nothing"
    assert late == [], f"onnxruntime imported without import_numpy_first() before it: {late}"


def test_onnxruntime_is_loaded_only_through_import_onnxruntime() -> None:
    # Whichever import runs first loads the library, and with it onnxruntime's
    # telemetry, which writes into ~/.cache unless it is switched off at that
    # moment (embed/onnx_runtime.py): so no import statement may come first.
    first = []
    for path in sorted(SRC.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for body in _bodies(tree):
            for index, node in enumerate(body):
                if _imports_onnxruntime(node) and not any(
                    _calls(before, "import_onnxruntime") for before in body[:index]
                ):
                    first.append(f"{path.relative_to(SRC)}:{node.lineno}")
    assert first == [], f"onnxruntime imported without import_onnxruntime() before it: {first}"


@pytest.mark.subprocess
def test_numpy_and_onnxruntime_imported_at_once_on_two_threads() -> None:
    """The race itself, widened: the numpy thread starts while the other is
    already inside memlane's onnxruntime import path."""
    code = textwrap.dedent(
        """
        import threading
        from memlane.embed.onnx_runtime import import_onnxruntime

        errors = []
        started = threading.Event()

        def runtime():
            started.set()
            try:
                import_onnxruntime()
            except Exception as exc:
                errors.append(repr(exc))

        def numpy_alone():
            started.wait()
            try:
                import numpy  # noqa: F401
            except Exception as exc:
                errors.append(repr(exc))

        threads = [threading.Thread(target=runtime), threading.Thread(target=numpy_alone)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        import numpy
        numpy.zeros(2)
        print("errors:", errors)
        """
    )
    for _ in range(3):
        done = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, timeout=120
        )
        assert done.returncode == 0, done.stderr
        assert "errors: []" in done.stdout, done.stdout + done.stderr
