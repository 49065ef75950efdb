"""The package's structure: imports point one way (down the layers), no cycles, and a fast start."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "reporting"

# Lowest first. A module may import from its own layer or any layer below it, never from one above.
HEAVY = ("pandas", "sklearn", "plotly", "streamlit", "scipy")  # what `--help` must not import

LAYERS = [
    ("base", ["reporting._version", "reporting._gc", "reporting._time", "reporting.textsafe"]),
    ("format", ["reporting.format", "reporting.resources"]),
    ("analysis", ["reporting.analysis"]),
    ("scoring", ["reporting.scoring"]),
    ("rubrics", ["reporting.rubrics"]),
    ("report", ["reporting.report"]),
    ("render", ["reporting.render"]),
    ("ui", ["reporting.ui", "reporting.cli", "reporting.__main__", "reporting"]),
]


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def layer_of(module: str) -> int:
    best, best_len = None, -1
    for index, (_, prefixes) in enumerate(LAYERS):
        for prefix in prefixes:
            if (module == prefix or module.startswith(prefix + ".")) and len(prefix) > best_len:
                best, best_len = index, len(prefix)
    assert best is not None, f"{module} belongs to no layer: add it to LAYERS"
    return best


def imports_of(path: Path) -> list[tuple[str, int, bool]]:
    """(imported module, line, at module level) for every import of the package in a file."""
    tree = ast.parse(path.read_text(), str(path))
    found = []
    top_level = {id(node) for node in tree.body}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("reporting"):
            assert node.level == 0, f"{path}:{node.lineno}: relative import"
            for alias in node.names:
                target = f"{node.module}.{alias.name}"
                module = (
                    target
                    if (PACKAGE.parent / (target.replace(".", "/") + ".py")).exists()
                    or (PACKAGE.parent / target.replace(".", "/") / "__init__.py").exists()
                    else node.module
                )
                found.append((module, node.lineno, id(node) in top_level))
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("reporting"):
                    found.append((alias.name, node.lineno, id(node) in top_level))
    return found


def test_imports_point_down_the_layers():
    upward = []
    for path in sorted(PACKAGE.rglob("*.py")):
        here = module_name(path)
        for target, line, _ in imports_of(path):
            if here == "reporting" and path.name == "__init__.py":
                continue  # the public API re-exports from every layer, lazily
            if layer_of(target) > layer_of(here):
                upward.append(
                    f"{path.relative_to(ROOT)}:{line}: {here} ({LAYERS[layer_of(here)][0]}) imports "
                    f"{target} ({LAYERS[layer_of(target)][0]})"
                )
    assert not upward, "imports pointing up the layers:\n" + "\n".join(upward)


def test_no_import_cycle_between_modules():
    graph: dict[str, set[str]] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        here = module_name(path)
        graph[here] = {t for t, _, top in imports_of(path) if top and t != here}
    # Depth-first search for a back edge among module-level imports.
    state: dict[str, int] = {}
    stack: list[str] = []
    cycles: list[str] = []

    def visit(node: str) -> None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if nxt not in graph:
                continue
            if state.get(nxt) == 1:
                cycles.append(" -> ".join(stack[stack.index(nxt) :] + [nxt]))
            elif nxt not in state:
                visit(nxt)
        stack.pop()
        state[node] = 2

    for node in sorted(graph):
        if node not in state:
            visit(node)
    assert not cycles, "import cycles:\n" + "\n".join(cycles)


def test_the_layer_test_catches_an_upward_import(tmp_path, monkeypatch):
    # The checker itself can fail: a format module importing the renderer is reported.
    fake = tmp_path / "reporting" / "format"
    fake.mkdir(parents=True)
    (fake / "bad.py").write_text("from reporting.render.html import render_html\n")
    monkeypatch.setattr(sys.modules[__name__], "ROOT", tmp_path)
    found = imports_of(fake / "bad.py")
    assert found and layer_of(found[0][0]) > layer_of(module_name(fake / "bad.py"))


def test_import_reporting_loads_nothing_heavy():
    code = (
        "import sys, reporting; heavy = [m for m in ('pandas', 'sklearn', 'plotly', 'streamlit', 'pydantic', "
        "'scipy', 'jinja2') if m in sys.modules]; print(','.join(heavy))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert done.returncode == 0 and done.stdout.strip() == "", done.stdout + done.stderr
    code = (
        "import sys, reporting.cli as c\ntry:\n    c.main(['--help'])\nexcept SystemExit:\n    pass\n"
        "print('HEAVY:' + ','.join(m for m in HEAVY_MODULES if m in sys.modules))".replace("HEAVY_MODULES", repr(HEAVY))
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert done.returncode == 0 and done.stdout.strip().splitlines()[-1] == "HEAVY:", done.stdout + done.stderr


def test_the_cli_default_min_cases_is_the_analysis_one():
    from reporting.analysis.observability import DEFAULT_MIN_CASES
    from reporting.cli import DEFAULT_MIN_CASES as CLI_DEFAULT

    assert CLI_DEFAULT == DEFAULT_MIN_CASES
