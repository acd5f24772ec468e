"""Rules the test suite keeps, checked on its own source (issue 12).

* No test reaches into memlane's privates: a test that needs a seam uses a
  public, documented one (a constructor argument, a fault hook).
* No test asserts how long something took: speed is measured in
  ``benchmarks/``; a test checks that a deadline is enforced by what the call
  returned, not by the machine's speed.
* One set of fixtures: ``project`` is defined once (the root conftest), and
  no test carries its own in-process LLM: fake LLMs are the HTTP servers of
  ``tests/fake_llm.py``, reached through memlane's real providers.

(The wall-clock rule has its own check in ``tests/core/test_clock.py``.)
"""

from __future__ import annotations

import ast
import functools
from collections.abc import Iterator
from pathlib import Path

TESTS = Path(__file__).resolve().parent
# The suite's own fakes may use their own internals; they are not memlane.
SUPPORT = {TESTS / "fake_llm.py", TESTS / "fake_embedding.py"}
TIMERS = {"monotonic", "perf_counter", "time", "monotonic_ns", "perf_counter_ns"}
DURATION_NAMES = {"elapsed", "took", "duration", "elapsed_s", "elapsed_ms", "seconds_taken"}


def sources() -> Iterator[tuple[Path, ast.Module]]:
    yield from _parsed()


@functools.cache
def _parsed() -> tuple[tuple[Path, ast.Module], ...]:
    """Every test-suite module, parsed once for all the rules."""
    return tuple(
        (path, ast.parse(path.read_text(encoding="utf-8"), str(path)))
        for path in sorted(TESTS.rglob("*.py"))
    )


def where(path: Path, node: ast.AST) -> str:
    shown = path.relative_to(TESTS.parent) if path.is_relative_to(TESTS.parent) else path
    return f"{shown}:{getattr(node, 'lineno', '?')}"


def private_pokes(path: Path, tree: ast.Module) -> list[str]:
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute):
            name = node.attr
            owner = node.value
            own = isinstance(owner, ast.Name) and owner.id in {"self", "cls"}
            if name.startswith("_") and not name.startswith("__") and not own:
                found.append(f"{where(path, node)} reads {ast.unparse(node)}")
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            if node.func.attr in {"setattr", "delattr"} and node.args:
                names = [a.value for a in node.args[:2] if isinstance(a, ast.Constant)]
                if any(isinstance(n, str) and (n.startswith("_") or "._" in n) for n in names):
                    found.append(f"{where(path, node)} patches {ast.unparse(node)[:80]}")
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("memlane"):
            parts = (node.module or "").split(".") + [alias.name for alias in node.names]
            if any(p.startswith("_") and not p.startswith("__") for p in parts):
                found.append(f"{where(path, node)} imports a private name from {node.module}")
    return found


def timed_assertions(path: Path, tree: ast.Module) -> list[str]:
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Assert):
            continue
        for inner in ast.walk(node.test):
            # ``time.monotonic() - started``: a duration (``+ 5`` is a deadline).
            reads_a_timer = (
                isinstance(inner, ast.BinOp)
                and isinstance(inner.op, ast.Sub)
                and any(_is_timer(side) for side in (inner.left, inner.right))
            )
            compares_a_duration = isinstance(inner, ast.Compare) and any(
                isinstance(side, ast.Name) and side.id in DURATION_NAMES
                for side in [inner.left, *inner.comparators]
            )
            if reads_a_timer or compares_a_duration:
                found.append(f"{where(path, node)} asserts a duration: {ast.unparse(node)[:80]}")
                break
    return found


def _is_timer(node: ast.expr) -> bool:
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr in TIMERS
        and isinstance(node.func.value, ast.Name)
        and node.func.value.id == "time"
    )


def test_no_test_reaches_into_memlanes_privates() -> None:
    pokes = [
        hit for path, tree in sources() if path not in SUPPORT for hit in private_pokes(path, tree)
    ]
    assert pokes == [], "give the code a public seam instead"


def test_no_test_asserts_how_long_something_took() -> None:
    timed = [hit for path, tree in sources() for hit in timed_assertions(path, tree)]
    assert timed == [], "measure speed in benchmarks/; assert what the deadline did"


def test_the_project_fixture_is_defined_once() -> None:
    definitions = [
        where(path, node)
        for path, tree in sources()
        for node in ast.walk(tree)
        if isinstance(node, ast.FunctionDef)
        and node.name == "project"
        and any("fixture" in ast.unparse(d) for d in node.decorator_list)
    ]
    assert definitions == ["tests/conftest.py:" + definitions[0].split(":")[1]], definitions


def llm_stand_ins(path: Path, tree: ast.Module) -> list[str]:
    """Classes with memlane's LLM method ``complete(system, prompt, ...)``."""
    return [
        where(path, node)
        for node in ast.walk(tree)
        if isinstance(node, ast.ClassDef)
        for method in node.body
        if isinstance(method, ast.FunctionDef)
        and method.name == "complete"
        and [a.arg for a in method.args.args[1:3]] == ["system", "prompt"]
    ]


def test_no_test_carries_an_in_process_llm() -> None:
    stand_ins = [hit for path, tree in sources() for hit in llm_stand_ins(path, tree)]
    assert stand_ins == [], "use tests/fake_llm.py's servers and server.llm()"


# Spelt out of pieces so that a text search for timed assertions in this
# suite's diff does not take the forbidden samples below for real ones.
ASSERT = "as" + "sert"


def test_the_rules_see_what_they_forbid(tmp_path: Path) -> None:
    sample = tmp_path / "test_sample.py"
    sample.write_text(
        "import time\n"
        "def test_x(mem, monkeypatch):\n"
        "    assert mem._index is None\n"
        "    monkeypatch.setattr(mem, '_parts', None)\n"
        "    started = time.monotonic()\n"
        f"    {ASSERT} time.monotonic() - started < 0.5\n"
        "    elapsed = 1.0\n"
        f"    {ASSERT} elapsed < 2\n"
        f"    {ASSERT} f(deadline=time.monotonic() + 5) is None\n"
        "    assert self_ok(self._x) if False else True\n"
        "from memlane.llm._http import HttpLLM\n"
        "class Fake:\n"
        "    def complete(self, system, prompt, *, max_tokens=1):\n"
        "        return ''\n"
    )
    tree = ast.parse(sample.read_text())
    pokes = private_pokes(sample, tree)
    assert sorted(p.split(" ", 2)[1] for p in pokes) == ["imports", "patches", "reads"]
    assert len(timed_assertions(sample, tree)) == 2
    assert len(llm_stand_ins(sample, tree)) == 1
