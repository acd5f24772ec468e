"""The package's import graph has no cycle and its layers point one way.

Every ``import`` counts: at module level, inside functions (a lazy import is
for start-up speed, never to hide a cycle) and under ``TYPE_CHECKING`` (a
type is a dependency too). The graph is built from the source with ``ast``,
so nothing is imported to test it.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path

import memlane

PACKAGE_DIR = Path(memlane.__file__).parent
#: hosts → engine → (store, index, llm, embed, transcripts) → core; cli sits with hosts.
LAYER_OF = {
    "cli": 3,
    "hosts": 3,
    "demo": 3,
    "engine": 2,
    "store": 1,
    "index": 1,
    "llm": 1,
    "embed": 1,
    "transcripts": 1,
    "core": 0,
}
#: Packages of one layer that must not import each other.
SIBLINGS_APART = {("store", "index"), ("index", "store")}
#: A module does one job in at most this many lines: enough for a job with
#: its docstring and comments (most modules are under 300), short enough to
#: read in one sitting. Longer ones are the exceptions below, each with why
#: it is still one job; the test fails when a listed module is no longer over.
MAX_MODULE_LINES = 500
LONG_MODULES = {
    "memlane/index/milvus/connection.py": (
        "opening Milvus: Lite's process-wide server table (refcount, linger, hold, "
        "let-go across processes) and the remote client's open and retry share one "
        "set of lock and backoff rules"
    ),
    "memlane/hosts/server/process.py": (
        "the warm engine's process: one loop owning the socket, the flock, the idle "
        "exit and the shutdown of every session, whose exit conditions read that state"
    ),
    "memlane/hosts/server/rpc.py": (
        "the sidecar protocol's one dispatcher: the method table in its docstring "
        "and the handlers it names, side by side"
    ),
    "memlane/store/redaction.py": (
        "secret redaction as one ordered pass over a text: the rules' order is the "
        "behaviour, and each rule is a few lines"
    ),
    "memlane/engine/project.py": (
        "Memory, the library's one facade (open, search, write, sync, close) and its "
        "internals view, which reads Memory's private state and so lives beside it"
    ),
    "memlane/engine/live/capture.py": (
        "one exchange's way into the daily file exactly once: queue, distil, append, "
        "mark done, flush; one background thread's states"
    ),
}
#: Inside the engine, lowest first: a unit (a sub-package of engine/ or a module
#: at its root) imports only units of lower tiers, never one of its own tier or
#: above, so no two of them import each other. ``memlane.engine`` itself (the
#: lazy ``Memory``) stands above them all. docs/architecture.md draws it.
ENGINE_TIERS: list[set[str]] = [
    {"shared"},  # results, request, ports, parts, embedding, the tool spec: imports no other
    {"calibration", "index_backend", "lock_waits", "warm_engine"},
    {"journal"},
    {"sessions"},
    {"recall"},
    {"topics"},
    {"migrate", "reports", "status", "timeline"},
    {"project"},  # Memory
    {"live"},  # Session
    {"tools"},  # Tools.call
]


def _modules() -> dict[str, Path]:
    found: dict[str, Path] = {}
    for path in PACKAGE_DIR.rglob("*.py"):
        parts = list(path.relative_to(PACKAGE_DIR.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        found[".".join(parts)] = path
    return found


def _imported_names(tree: ast.Module, module: str, is_package: bool) -> Iterator[str]:
    """Every memlane module name *tree* imports, wherever the import statement is."""
    base = module if is_package else module.rpartition(".")[0]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                anchor = base.split(".")[: len(base.split(".")) - (node.level - 1)]
                target = ".".join([*anchor, *([node.module] if node.module else [])])
            else:
                target = node.module or ""
            for alias in node.names:
                # A submodule when there is one, else (a name in it) the module.
                yield f"{target}.{alias.name}"


def import_graph() -> dict[str, set[str]]:
    """Module → the memlane modules it imports (submodules resolved, parents not implied)."""
    modules = _modules()
    graph: dict[str, set[str]] = defaultdict(set)
    for name, path in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for target in _imported_names(tree, name, path.name == "__init__.py"):
            if not target.startswith("memlane"):
                continue
            while target not in modules and "." in target:
                target = target.rpartition(".")[0]
            if target in modules and target != name:
                graph[name].add(target)
    for name in modules:
        graph.setdefault(name, set())
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0
    for root in sorted(graph):
        if root in index:
            continue
        work: list[tuple[str, Iterator[str]]] = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def _describe(component: list[str], graph: dict[str, set[str]]) -> str:
    members = set(component)
    lines = [f"cycle of {len(component)} modules:"]
    for name in component:
        inside = sorted(graph[name] & members)
        path = _modules()[name].relative_to(PACKAGE_DIR.parent.parent)
        lines.append(f"  {path} imports {', '.join(inside)}")
    return "\n".join(lines)


def test_no_import_cycle() -> None:
    graph = import_graph()
    found = cycles(graph)
    assert not found, "\n".join(_describe(component, graph) for component in found)


def test_cycle_finder_reports_a_cycle() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": set()}
    assert cycles(graph) == [["a", "b", "c"]]


def test_layers_point_one_way() -> None:
    wrong = []
    for name, targets in import_graph().items():
        source = name.split(".")[1] if "." in name else ""
        for target in targets:
            aimed = target.split(".")[1] if "." in target else ""
            if source not in LAYER_OF or aimed not in LAYER_OF or source == aimed:
                continue
            if LAYER_OF[aimed] > LAYER_OF[source] or (source, aimed) in SIBLINGS_APART:
                wrong.append(f"{name} imports {target}")
    assert not wrong, "imports against the layering:\n  " + "\n  ".join(sorted(wrong))


def test_no_module_is_too_long() -> None:
    long = {
        path.relative_to(PACKAGE_DIR.parent).as_posix(): lines
        for path in PACKAGE_DIR.rglob("*.py")
        if (lines := len(path.read_text(encoding="utf-8").splitlines())) > MAX_MODULE_LINES
    }
    unlisted = {name: lines for name, lines in long.items() if name not in LONG_MODULES}
    assert not unlisted, (
        f"modules over {MAX_MODULE_LINES} lines: {unlisted}; split one by its jobs, or "
        "list it in LONG_MODULES with why it is one job"
    )
    stale = sorted(set(LONG_MODULES) - set(long))
    assert not stale, f"listed in LONG_MODULES but no longer over {MAX_MODULE_LINES}: {stale}"


def _engine_unit(module: str) -> str | None:
    """The engine's sub-package or root module *module* belongs to."""
    parts = module.split(".")
    return parts[2] if len(parts) > 2 and parts[1] == "engine" else None


def engine_arrows_against(graph: dict[str, set[str]], tiers: list[set[str]]) -> list[str]:
    """Imports between the engine's units that do not point to a lower tier."""
    tier_of = {unit: number for number, units in enumerate(tiers) for unit in units}
    wrong = []
    for name, targets in graph.items():
        source = _engine_unit(name)
        for target in targets:
            aimed = _engine_unit(target)
            if source is None or aimed is None or source == aimed:
                continue
            if source not in tier_of or aimed not in tier_of:
                wrong.append(f"{name} imports {target}: place both units in ENGINE_TIERS")
            elif tier_of[aimed] >= tier_of[source]:
                wrong.append(f"{name} imports {target}")
    return sorted(wrong)


def test_every_engine_unit_has_a_tier() -> None:
    declared = set().union(*ENGINE_TIERS)
    units = {unit for name in _modules() if (unit := _engine_unit(name)) is not None}
    assert units == declared, (
        f"not in ENGINE_TIERS: {sorted(units - declared)}; gone: {sorted(declared - units)}"
    )


def test_engine_units_point_one_way() -> None:
    wrong = engine_arrows_against(import_graph(), ENGINE_TIERS)
    assert not wrong, "imports against the engine's order (ENGINE_TIERS):\n  " + "\n  ".join(wrong)


def test_engine_order_check_reports_a_two_way_pair() -> None:
    graph = {
        "memlane.engine.a.x": {"memlane.engine.b.y"},
        "memlane.engine.b.y": {"memlane.engine.a.z", "memlane.core.types"},
        "memlane.engine.a.z": set(),
    }
    assert engine_arrows_against(graph, [{"a"}, {"b"}]) == [
        "memlane.engine.a.x imports memlane.engine.b.y"
    ]
    assert engine_arrows_against(graph, [{"a", "b"}]) == [
        "memlane.engine.a.x imports memlane.engine.b.y",
        "memlane.engine.b.y imports memlane.engine.a.z",
    ]


def _runtime_imports(tree: ast.Module) -> Iterator[tuple[int, str]]:
    """(line, module) of each import run when the module is loaded or a function
    runs, in source order; imports under ``if TYPE_CHECKING:`` are left out."""
    skipped: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            skipped.update(id(child) for child in ast.walk(node))
    found = []
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            found.append((node.lineno, node.module))
    yield from sorted(found)


def test_numpy_is_imported_whole_before_any_of_its_submodules() -> None:
    """A thread that imports ``numpy.typing`` (or any submodule) while another
    thread is still running numpy's ``__init__`` finds numpy half initialised
    (``ImportError: ... partially initialized module``): the session's own
    threads load numpy at the same moment. ``import numpy`` waits for the
    other thread instead, so it comes first in every module."""
    wrong = []
    for name, path in _modules().items():
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for line, module in _runtime_imports(tree):
            if module == "numpy":
                break
            if module.startswith("numpy."):
                wrong.append(f"{name}:{line} imports {module} before numpy")
                break
    assert not wrong, "\n".join(wrong)
