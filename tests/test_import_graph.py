"""The modules of xuqcal import each other without a circle.

The graph is built from the source (``ast``): an edge ``a -> b`` for every import of ``b`` by
``a``, at module level and inside functions (a deferred import is still a dependency, and a
circle through one is only hidden until the function runs). ``from package import name``
points to the submodule ``package.name`` when there is one, else to ``package``. Edges to a
package from its own submodules are left out: a package's ``__init__`` importing its
submodules (and them importing nothing back but siblings) is the layout, not a circle.
"""

from __future__ import annotations

import ast
from pathlib import Path

import xuqcal

ROOT = Path(xuqcal.__file__).resolve().parent


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules() -> dict[str, Path]:
    return {module_name(path): path for path in sorted(ROOT.rglob("*.py"))}


def resolve(name: str, level: int, current: str, is_package: bool) -> str:
    """The absolute name of ``from <level dots><name> import ...`` in module ``current``."""
    if level == 0:
        return name
    base = current.split(".") if is_package else current.split(".")[:-1]
    base = base[: len(base) - (level - 1)]
    return ".".join([*base, name] if name else base)


def imports(name: str, path: Path, known: set[str]) -> set[str]:
    """The xuqcal modules that module ``name`` imports, anywhere in its source."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    targets: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                targets.add(alias.name)
        elif isinstance(node, ast.ImportFrom):
            source = resolve(node.module or "", node.level, name, path.name == "__init__.py")
            for alias in node.names:
                sub = f"{source}.{alias.name}"
                targets.add(sub if sub in known else source)
    found = set()
    for target in targets:
        while target and target not in known:  # "xuqcal.core.x.y" -> nearest module
            target = target.rpartition(".")[0]
        if target and target != name and not name.startswith(target + "."):
            found.add(target)
    return found


def import_graph() -> dict[str, set[str]]:
    known = modules()
    return {name: imports(name, path, set(known)) for name, path in known.items()}


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One circle of ``graph`` (its modules, the first repeated at the end), or ``None``."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return [*path[path.index(nxt):], nxt]
            if nxt not in state and (cycle := visit(nxt)):
                return cycle
        path.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state and (cycle := visit(node)):
            return cycle
    return None


def test_find_cycle_finds_a_circle_and_none_in_a_tree():
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b", "c"}, "b": {"c"}, "c": set()}) is None


def test_imports_reads_function_level_and_relative_imports(tmp_path):
    source = tmp_path / "m.py"
    source.write_text("import xuqcal.core.checks\n"
                      "def f():\n    from xuqcal.analysis import slices\n"
                      "    from ..io import schema\n")
    known = {"xuqcal.core.checks", "xuqcal.analysis", "xuqcal.analysis.slices", "xuqcal.io",
             "xuqcal.io.schema", "xuqcal.plot.m"}
    assert imports("xuqcal.plot.m", source, known) == {
        "xuqcal.core.checks", "xuqcal.analysis.slices", "xuqcal.io.schema"}


def test_xuqcal_has_no_import_cycle():
    graph = import_graph()
    assert len(graph) > 50 and "xuqcal.core.checks" in graph["xuqcal.core.generators"] | {
        "xuqcal.core.checks"}
    cycle = find_cycle(graph)
    assert cycle is None, "import cycle: " + " -> ".join(cycle)
