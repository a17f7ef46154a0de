"""The house has no import circles and no upward imports into the CLI.

Every module's imports are read from its syntax tree (function-level and TYPE_CHECKING imports
included: a circle closed inside a function still ties the two modules together), and the graph
among rsr's modules must be acyclic. Only rsr/cli may import rsr.cli: the CLI sits on top and
imports the modules it drives, never the reverse.
"""

from __future__ import annotations

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
PACKAGE = REPO / "rsr"


def module_name(path: Path) -> str:
    parts = list(path.relative_to(REPO).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def modules() -> dict[str, Path]:
    return {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))
            if "_bundled" not in p.parts and "templates" not in p.parts}


def imports_of(name: str, path: Path, known: set[str]) -> set[str]:
    """The rsr modules `path` imports anywhere in its body (the module itself, not a package's
    `__init__` unless that is what is named)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        targets: list[str] = []
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")
                anchor = anchor[:len(anchor) - (node.level - 1)]
                base = ".".join([*anchor, base] if base else anchor)
            # `from rsr.x import y` names the module rsr.x.y when y is one, else a name of rsr.x.
            targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in known else base for a in node.names]
        for target in targets:
            while target and target not in known:
                target = target.rpartition(".")[0]
            if target and target != name and target != "rsr":
                found.add(target)
    return found


def graph() -> dict[str, set[str]]:
    mods = modules()
    known = set(mods)
    return {name: imports_of(name, path, known) for name, path in mods.items()}


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """One circle per strongly connected component of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(edges.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return found


def test_rsr_modules_do_not_import_each_other_in_a_circle() -> None:
    found = cycles(graph())
    assert not found, "import circles among rsr modules:\n" + "\n".join(" <-> ".join(c) for c in found)


def test_only_the_cli_does_import_rsr_cli() -> None:
    upward = sorted(f"{name} imports {target}" for name, targets in graph().items()
                    if not name.startswith("rsr.cli") for target in targets if target.startswith("rsr.cli"))
    assert not upward, "modules below the CLI import it:\n" + "\n".join(upward)


def test_import_graph_does_see_function_level_and_relative_imports(tmp_path: Path) -> None:
    # The checker itself: a circle closed inside a function is found.
    edges = {"rsr.a": {"rsr.b"}, "rsr.b": {"rsr.c"}, "rsr.c": {"rsr.a"}, "rsr.d": {"rsr.a"}}
    assert cycles(edges) == [["rsr.a", "rsr.b", "rsr.c"]]
    src = tmp_path / "m.py"
    src.write_text("def f():\n    from rsr.tasks import load\n    from . import parity\n")
    known = {"rsr.tasks.load", "rsr.tasks.parity", "rsr.tasks"}
    assert imports_of("rsr.tasks.m", src, known) == {"rsr.tasks.load", "rsr.tasks.parity"}
