"""Module-level import scan of the ``rexmle`` package: import circles and upward imports.

Reads every module under ``rexmle/`` as text (nothing is imported) and keeps the imports made at
module level: statements of the module body, including those under ``if`` / ``try`` (and so
``if TYPE_CHECKING:``), but not those inside a function or a class, which run only when called.

It prints

- **import circles**: the strongly connected groups of two or more modules in that graph, and
  the same for the packages (``rexmle.<name>``) the modules belong to;
- **upward imports**: an import from a package into a package of a higher layer of ``LAYERS``
  (the order of ``pyproject.toml``'s layers contract, top first), one row per pair of packages
  with the modules that make it.

Run: ``.venv/bin/python bench/imports.py`` (``--root DIR`` for another checkout).
"""

from __future__ import annotations

import argparse
import ast
from collections import defaultdict
from pathlib import Path

LAYERS: tuple[tuple[str, ...], ...] = (
    ("cli",),
    ("runner",),
    ("report",),
    ("analysis",),
    ("records", "results"),
    ("llm", "agents", "scaffold"),
    ("envs",),
    ("preparation",),
    ("grading", "sources"),
    ("challenges",),
    ("tasks",),
    (
        "metrics",
        "io",
        "split",
        "ranking",
        "config",
        "terminal",
        "processes",
        "declarations",
        "names",
    ),
    ("errors",),
)
"""The layers, top first: a package may import one of a lower layer, never one of a higher."""


def module_name(root: Path, path: Path) -> str:
    """The dotted name of the module at ``path`` (a package's ``__init__`` is the package)."""
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _module_level(body: list[ast.stmt]) -> list[ast.Import | ast.ImportFrom]:
    found: list[ast.Import | ast.ImportFrom] = []
    for node in body:
        if isinstance(node, ast.Import | ast.ImportFrom):
            found.append(node)
        elif isinstance(node, ast.If):
            found += _module_level(node.body) + _module_level(node.orelse)
        elif isinstance(node, ast.Try):
            found += _module_level(node.body) + _module_level(node.orelse)
            found += _module_level(node.finalbody)
            for handler in node.handlers:
                found += _module_level(handler.body)
        elif isinstance(node, ast.With):
            found += _module_level(node.body)
    return found


def import_graph(root: Path) -> dict[str, set[str]]:
    """Module -> the ``rexmle`` modules it imports at module level (resolved to known modules)."""
    files = {module_name(root, p): p for p in sorted((root / "rexmle").rglob("*.py"))}
    known = set(files)
    graph: dict[str, set[str]] = {}
    for name, path in files.items():
        is_package = path.name == "__init__.py"
        targets: set[str] = set()
        for node in _module_level(ast.parse(path.read_text(encoding="utf-8")).body):
            if isinstance(node, ast.Import):
                candidates = [alias.name for alias in node.names]
            else:
                base = node.module or ""
                if node.level:
                    anchor = name.split(".")
                    anchor = anchor if is_package else anchor[:-1]
                    anchor = anchor[: len(anchor) - (node.level - 1)]
                    base = ".".join([*anchor, base] if base else anchor)
                candidates = [f"{base}.{alias.name}" for alias in node.names] + [base]
            for candidate in candidates:
                while candidate and candidate not in known:
                    candidate = candidate.rpartition(".")[0]
                if candidate.startswith("rexmle.") and candidate != name:
                    targets.add(candidate)
                    break
        graph[name] = targets
    return graph


def package_of(module: str) -> str:
    """``rexmle.runner.sandbox.bwrap`` -> ``runner``; ``rexmle`` itself -> ``rexmle``."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else parts[0]


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected groups of two or more nodes (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph.get(node, ())):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            group = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                group.append(top)
                if top == node:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return sorted(found)


def upward_imports(graph: dict[str, set[str]]) -> dict[tuple[str, str], list[str]]:
    """(importing package, imported package of a higher layer) -> the module edges."""
    rank = {pkg: i for i, layer in enumerate(LAYERS) for pkg in layer}
    found: dict[tuple[str, str], list[str]] = defaultdict(list)
    for source, targets in graph.items():
        for target in targets:
            low, high = package_of(source), package_of(target)
            if low in rank and high in rank and rank[high] < rank[low]:
                found[(low, high)].append(f"{source} -> {target}")
    return dict(found)


def main() -> None:
    """Print the circles and the upward imports of the checkout at ``--root``."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=Path, default=Path(__file__).resolve().parents[1])
    root = parser.parse_args().root.resolve()
    graph = import_graph(root)
    packages: dict[str, set[str]] = defaultdict(set)
    for source, targets in graph.items():
        for target in targets:
            if package_of(source) != package_of(target):
                packages[package_of(source)].add(package_of(target))
    module_circles, package_circles = circles(graph), circles(dict(packages))
    upward = upward_imports(graph)
    print(f"modules scanned: {len(graph)}")
    print(f"module import circles: {len(module_circles)}")
    for group in module_circles:
        print("  " + " <-> ".join(group))
    print(f"package import circles: {len(package_circles)}")
    for group in package_circles:
        print("  " + " <-> ".join(group))
    edges = sum(len(v) for v in upward.values())
    print(f"upward imports: {len(upward)} package pairs ({edges} module imports)")
    for (low, high), rows in sorted(upward.items()):
        print(f"  {low} -> {high}")
        for row in sorted(rows):
            print(f"    {row}")


if __name__ == "__main__":
    main()
