"""pista's own imports: the import statements inside functions (deferred imports), and the cycles among
pista's modules, with and without them.

    python scripts/imports.py            # counts, cycles, and each deferred import with its comment
    python scripts/imports.py --list     # ... every deferred import, one a line

An edge is "module A imports module B" (B one of pista's modules, `from pista.x import name` an edge to
pista.x.name where that is a module, else to pista.x). Top-level edges are those that run when A is
imported (not under `if TYPE_CHECKING:`); deferred edges are the imports inside functions, which run
when the function is called. A cycle among the top-level edges is an import-time cycle; a cycle that
needs a deferred edge is one that the deferral breaks.
"""

from __future__ import annotations

import argparse
import ast
import sys
from pathlib import Path

SRC = Path(__file__).resolve().parent.parent / "src"


def module_name(path: Path) -> str:
    parts = list(path.relative_to(SRC).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _targets(node: ast.Import | ast.ImportFrom, here: str, is_package: bool, modules: set[str]) -> list[str]:
    """pista's modules an import statement names."""
    if isinstance(node, ast.Import):
        names = [a.name for a in node.names]
    else:
        base = node.module or ""
        if node.level:
            package = here.split(".") if is_package else here.split(".")[:-1]
            package = package[: len(package) - node.level + 1]
            base = ".".join([*package, base] if base else package)
        names = [f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base for a in node.names]
    return sorted({n for n in names if n in modules})


def _walk(tree: ast.AST, in_function: bool = False, type_only: bool = False):
    """(import node, inside a function, under TYPE_CHECKING) for every import statement."""
    for child in ast.iter_child_nodes(tree):
        if isinstance(child, ast.Import | ast.ImportFrom):
            yield child, in_function, type_only
        elif isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
            yield from _walk(child, True, type_only)
        elif isinstance(child, ast.If) and _is_type_checking(child.test):
            for stmt in child.body:
                yield from _walk(ast.Module(body=[stmt], type_ignores=[]), in_function, True)
            for stmt in child.orelse:
                yield from _walk(ast.Module(body=[stmt], type_ignores=[]), in_function, type_only)
        else:
            yield from _walk(child, in_function, type_only)


def _comment(lines: list[str], i: int, import_lines: set[int]) -> str:
    """The import's own comment, or the one on the line above its block of imports."""
    if "#" in lines[i]:
        return lines[i].split("#", 1)[1].strip()
    # back over the imports above it, and the blank line between two groups of them (the standard library's, pista's)
    while i > 0 and "#" not in lines[i - 1] and (i - 1 in import_lines or (not lines[i - 1].strip() and i - 2 in import_lines)):
        i -= 1
    above = lines[i - 1].strip() if i > 0 else ""
    return above.lstrip("# ") if above.startswith("#") else ""


def scan() -> tuple[dict[str, set[str]], dict[str, set[str]], list[tuple[str, int, str, list[str], str]]]:
    files = {module_name(p): p for p in sorted(SRC.rglob("*.py"))}
    modules = set(files)
    top: dict[str, set[str]] = {m: set() for m in modules}
    deferred: dict[str, set[str]] = {m: set() for m in modules}
    local: list[tuple[str, int, str, list[str], str]] = []  # (module, line, statement, targets, comment)
    for name, path in files.items():
        text = path.read_text()
        lines = text.splitlines()
        found = list(_walk(ast.parse(text)))
        import_lines = {n for node, _, _ in found for n in range(node.lineno - 1, (node.end_lineno or node.lineno))}
        for node, in_function, type_only in found:
            targets = _targets(node, name, path.name == "__init__.py", modules)
            if in_function:
                comment = _comment(lines, node.lineno - 1, import_lines)
                local.append((name, node.lineno, ast.unparse(node), targets, comment))
                deferred[name].update(targets)
            elif not type_only:
                top[name].update(targets)
    return top, deferred, local


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan's, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    out: list[list[str]] = []
    counter = 0
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is None:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        out.append(sorted(component))
            elif child not in index:
                index[child] = low[child] = counter
                counter += 1
                stack.append(child)
                on_stack.add(child)
                work.append((child, iter(sorted(graph[child]))))
            elif child in on_stack:
                low[node] = min(low[node], index[child])
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--list", action="store_true", help="every deferred import, one a line")
    args = parser.parse_args(argv)
    top, deferred, local = scan()
    both = {m: top[m] | deferred[m] for m in top}
    print(f"deferred imports (inside functions): {len(local)}, in {len({m for m, *_ in local})} modules; "
          f"{sum(1 for *_, t, _ in local if t)} of them import pista's own modules")
    print(f"uncommented: {sum(1 for *_, c in local if not c)}")
    for title, graph in (("import-time cycles (top-level imports)", top),
                         ("cycles with the deferred imports counted", both)):
        found = cycles(graph)
        print(f"{title}: {len(found)}")
        for component in found:
            print("  " + " <-> ".join(component))
    if args.list:
        for module, line, statement, _, comment in local:
            print(f"{module}:{line}: {statement}" + (f"  # {comment}" if comment else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
