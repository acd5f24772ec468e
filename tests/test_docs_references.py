"""What the docs point at exists: every test a doc names, every source file it cites.

The same holds for the code's own comments and docstrings, which name the
module a rule lives in: a module moved must take its mentions along.

The conformance map (docs/conformance.md) proves each reference rule by
naming tests; a test renamed or moved would leave a rule proved by nothing
while the page still reads complete.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = sorted([ROOT / "README.md", *(ROOT / "docs").rglob("*.md")])
TEST_ID_RE = re.compile(r"(tests/[\w/]+\.py)::(\w+)")
SOURCE_RE = re.compile(
    r"(?<![\w/.-])((?:src/memlane|integrations|benchmarks)/[\w/.-]+\.(?:py|ts|mjs|md))"
)
# A module named from inside the package, as the docs usually do: engine/recall/router.py.
PACKAGE_PATH_RE = re.compile(
    r"(?<![\w/.-])((?:core|store|transcripts|index|embed|llm|engine|hosts|cli)/[\w/]+\.py)\b"
)


def _cited(pattern: re.Pattern[str]) -> list[tuple[str, tuple[str, ...]]]:
    found = []
    for doc in DOCS:
        for match in pattern.finditer(doc.read_text(encoding="utf-8")):
            found.append((str(doc.relative_to(ROOT)), match.groups()))
    return found


def test_docs_name_tests() -> None:
    assert any(doc == "docs/conformance.md" for doc, _ in _cited(TEST_ID_RE))


@pytest.mark.parametrize("doc", [str(d.relative_to(ROOT)) for d in DOCS])
def test_every_test_a_doc_names_exists(doc: str) -> None:
    missing = []
    for cited_in, (path, name) in _cited(TEST_ID_RE):
        if cited_in != doc:
            continue
        file = ROOT / path
        if not file.is_file() or not re.search(
            rf"^(?:async )?def {name}\(", file.read_text(encoding="utf-8"), re.M
        ):
            missing.append(f"{path}::{name}")
    assert not missing, f"{doc} names tests that do not exist: {missing}"


@pytest.mark.parametrize("doc", [str(d.relative_to(ROOT)) for d in DOCS])
def test_every_file_a_doc_cites_exists(doc: str) -> None:
    missing = sorted(
        {path for cited_in, (path,) in _cited(SOURCE_RE) if cited_in == doc}
        - {path for cited_in, (path,) in _cited(SOURCE_RE) if (ROOT / path).exists()}
    )
    assert not missing, f"{doc} cites files that do not exist: {missing}"


@pytest.mark.parametrize("doc", [str(d.relative_to(ROOT)) for d in DOCS])
def test_every_module_a_doc_names_exists(doc: str) -> None:
    package = ROOT / "src" / "memlane"
    missing = sorted(
        {path for cited_in, (path,) in _cited(PACKAGE_PATH_RE) if cited_in == doc}
        - {path for _, (path,) in _cited(PACKAGE_PATH_RE) if (package / path).exists()}
    )
    assert not missing, f"{doc} names modules that do not exist under src/memlane: {missing}"


def test_every_module_the_code_names_exists() -> None:
    package = ROOT / "src" / "memlane"
    sources = [
        *package.rglob("*.py"),
        *(ROOT / "tests").rglob("*.py"),
        *(ROOT / "benchmarks").rglob("*.py"),
    ]
    missing = sorted(
        f"{path.relative_to(ROOT)} names {match.group(1)}"
        for path in sources
        for match in PACKAGE_PATH_RE.finditer(path.read_text(encoding="utf-8"))
        if not (package / match.group(1)).exists()
    )
    assert not missing, "modules named in the code that do not exist:\n  " + "\n  ".join(missing)
