"""The package's layers (issue 34): data flows one way, cli -> runner -> engine -> checks -> eval ->
project -> frontend -> ir -> model (-> system -> base), with no import cycle anywhere.

Imports are read with `ast`, not by importing: every `import` and `from ... import` of a kernlint
module, at module level, inside a function (a deferred import is still a dependency) or under
`if TYPE_CHECKING:` (an annotation's import is a dependency too, and joins a cycle as any other).
"""
from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "kernlint"

# Top to bottom. A module may import its own layer (without a cycle) and the layers below it.
LAYERS: tuple[tuple[str, ...], ...] = (
    ("cli",),  # the command line and its subcommands
    ("server",),  # the editor's language server
    ("runner", "reporters"),  # many files; output formats
    ("confirm",),  # --confirm on a GPU
    ("engine",),  # one file to findings
    ("settings",),  # config, selectors, flag values
    ("checks",),  # the rules
    ("eval",),  # the warp evaluator
    ("project",),  # the project index
    ("frontend",),  # libclang (and ptxas) to IR
    ("ir",),
    ("model",),  # hardware cost models
    ("system",),  # caches, temporary files, workers
    ("base",),  # frozen data, findings, options, budgets
)
# The package's own entry points and its root (version) sit outside the layers.
OUTSIDE = {"kernlint": len(LAYERS), "kernlint.__main__": -1}


def modules() -> dict[str, Path]:
    out = {}
    for p in sorted(PACKAGE.rglob("*.py")):
        parts = list(p.relative_to(ROOT).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = p
    return out


def layer_of(module: str) -> int | None:
    if module in OUTSIDE:
        return OUTSIDE[module]
    top = module.split(".")[1] if module.count(".") >= 1 else ""
    for rank, names in enumerate(LAYERS):
        if top in names:
            return rank
    return None


def _resolve(name: str, known: dict[str, Path]) -> str | None:
    while name and name not in known:
        name = name.rpartition(".")[0]
    return name or None


def imports(module: str, path: Path, known: dict[str, Path]) -> tuple[set[str], set[str]]:
    """(kernlint modules `module` imports at run time, those it imports only for type checking)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    is_package = path.name == "__init__.py"
    runtime: set[str] = set()
    typing_only: set[str] = set()

    def add(node: ast.Import | ast.ImportFrom, into: set[str]) -> None:
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        else:
            base = node.module or ""
            if node.level:
                parts = module.split(".")[: None if is_package else -1]
                parts = parts[: len(parts) - (node.level - 1)]
                base = ".".join([*parts, base] if base else parts)
            subs = [f"{base}.{a.name}" for a in node.names if f"{base}.{a.name}" in known]
            targets = subs + ([base] if len(subs) < len(node.names) else [])
        for t in targets:
            if t == "kernlint" or t.startswith("kernlint."):
                r = _resolve(t, known)
                if r and r != module:
                    into.add(r)

    def visit(node: ast.AST, into: set[str]) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.Import, ast.ImportFrom)):
                add(child, into)
            elif isinstance(child, ast.If) and "TYPE_CHECKING" in ast.unparse(child.test):
                visit(child, typing_only)
                for other in child.orelse:
                    visit(other, into)
            else:
                visit(child, into)

    visit(tree, runtime)
    return runtime, typing_only - runtime


def graph() -> tuple[dict[str, set[str]], dict[str, set[str]]]:
    known = modules()
    run: dict[str, set[str]] = {}
    typ: dict[str, set[str]] = {}
    for m, p in known.items():
        run[m], typ[m] = imports(m, p, known)
    return run, typ


def upward(edges: dict[str, set[str]]) -> list[str]:
    """Imports from a layer into a layer above it, and modules that sit in no layer."""
    out = []
    for m, targets in sorted(edges.items()):
        lm = layer_of(m)
        if lm is None:
            out.append(f"{m}: in no layer (add its package to LAYERS)")
            continue
        for t in sorted(targets):
            lt = layer_of(t)
            if lt is not None and lt < lm:
                out.append(f"{m} imports {t}, a layer above it")
    return out


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []
    counter = 0
    for root in sorted(edges):
        if root in index:
            continue
        work = [(root, iter(sorted(edges.get(root, ()))))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on.add(root)
        while work:
            v, it = work[-1]
            for w in it:
                if w not in index:
                    index[w] = low[w] = counter
                    counter += 1
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(edges.get(w, ())))))
                    break
                if w in on:
                    low[v] = min(low[v], index[w])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[v])
                if low[v] == index[v]:
                    comp = []
                    while True:
                        w = stack.pop()
                        on.discard(w)
                        comp.append(w)
                        if w == v:
                            break
                    if len(comp) > 1:
                        out.append(sorted(comp))
    return out


def test_no_import_goes_up_a_layer() -> None:
    run, typ = graph()
    both = {m: run[m] | typ[m] for m in run}
    assert upward(both) == []


def test_no_import_cycle() -> None:
    run, typ = graph()
    assert cycles({m: run[m] | typ[m] for m in run}) == []


def test_no_cycle_between_packages() -> None:
    run, typ = graph()
    packages: dict[str, set[str]] = {}
    for m, targets in run.items():
        for t in targets | typ[m]:
            a, b = m.split(".")[:2], t.split(".")[:2]
            if len(a) == 2 and len(b) == 2 and a != b:
                packages.setdefault(a[1], set()).add(b[1])
    assert cycles(packages) == []


def test_each_package_says_what_it_owns_and_may_import() -> None:
    for d in sorted(p for p in PACKAGE.iterdir() if p.is_dir() and p.name != "__pycache__"):
        init = d / "__init__.py"
        if not any(d.glob("*.py")):
            continue  # (data only)
        assert init.exists(), f"{d.name}/ has no __init__.py"
        doc = ast.get_docstring(ast.parse(init.read_text(encoding="utf-8"))) or ""
        assert doc and ("may import" in doc.lower() or "imports nothing" in doc.lower()), (
            f"{d.name}/__init__.py: its docstring should say what the package owns and what it may import")


def test_the_checks_find_what_they_should() -> None:
    # An import from the IR up into the engine, and a two-module cycle, are caught; a downward one is not.
    assert upward({"kernlint.ir.nodes": {"kernlint.engine.lint"}}) == [
        "kernlint.ir.nodes imports kernlint.engine.lint, a layer above it"]
    assert upward({"kernlint.engine.lint": {"kernlint.ir.nodes", "kernlint.base.frozen"}}) == []
    assert upward({"kernlint.somewhere.new": set()}) == ["kernlint.somewhere.new: in no layer (add its package to LAYERS)"]
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []
    # A deferred import inside a function is read, and one under TYPE_CHECKING is kept apart.
    known = modules()
    run, typ = imports("kernlint.cli.command", known["kernlint.cli.command"], known)
    assert "kernlint.runner.parallel" in run
    run, typ = imports("kernlint.checks.occupancy", known["kernlint.checks.occupancy"], known)
    assert "kernlint.base.options" in typ and "kernlint.base.options" not in run
