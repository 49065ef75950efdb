"""The package's structure: imports point one way (down the layers), no cycles, and a fast start."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "reporting"

# Lowest first. A module may import from its own layer or any layer below it, never from one above.
HEAVY = ("pandas", "sklearn", "plotly", "streamlit", "scipy", "pydantic", "jinja2")  # what `--help` must not import

LAYERS = [
    ("base", ["reporting._version", "reporting._gc", "reporting._memory", "reporting._time", "reporting.textsafe"]),
    ("format", ["reporting.format", "reporting.resources"]),  # the run file: RunLens's own format, nothing above
    ("importers", ["reporting.importers"]),  # other tools' files made into RunLens documents
    ("sources", ["reporting.sources"]),  # a run read by its content, whoever wrote it: over format and importers
    ("analysis", ["reporting.analysis"]),
    ("scoring", ["reporting.scoring"]),
    ("rubrics", ["reporting.rubrics"]),
    ("report", ["reporting.report"]),
    ("store", ["reporting.store"]),
    ("render", ["reporting.render"]),
    ("ui", ["reporting.ui", "reporting.cli", "reporting.commands", "reporting.__main__", "reporting"]),
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


def upward_imports(package: Path) -> list[str]:
    """Every import (at module level or inside a function) of a module from a layer above its own."""
    upward = []
    for path in sorted(package.rglob("*.py")):
        here = module_name(path)
        for target, line, _ in imports_of(path):
            if here == "reporting" and path.name == "__init__.py":
                continue  # the public API re-exports from every layer, lazily
            if layer_of(target) > layer_of(here):
                upward.append(
                    f"{path.relative_to(ROOT)}:{line}: {here} ({LAYERS[layer_of(here)][0]}) imports "
                    f"{target} ({LAYERS[layer_of(target)][0]})"
                )
    return upward


def test_imports_point_down_the_layers():
    upward = upward_imports(PACKAGE)
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


def test_the_layer_test_catches_the_run_file_importing_another_tools_reader(tmp_path, monkeypatch):
    # format is the run file alone: reading other tools' files by content is reporting.sources, a layer above both
    # (format < importers < sources < analysis). An import of the importers from format, even inside a function, fails.
    fake = tmp_path / "reporting"
    for folder in ("format", "importers", "sources"):
        (fake / folder).mkdir(parents=True)
        (fake / folder / "__init__.py").write_text("")
    (fake / "importers" / "reader.py").write_text("from reporting.format.schema import Case\n")
    (fake / "sources" / "reader.py").write_text("from reporting.importers import reader\n")
    (fake / "format" / "reading.py").write_text("def load():\n    from reporting.importers import import_document\n")
    monkeypatch.setattr(sys.modules[__name__], "ROOT", tmp_path)
    assert upward_imports(fake) == [
        "reporting/format/reading.py:2: reporting.format.reading (format) imports reporting.importers (importers)"
    ]
    (fake / "format" / "reading.py").write_text("from reporting.format.schema import Case\n")
    assert upward_imports(fake) == []
    assert layer_of("reporting.importers") < layer_of("reporting.sources") < layer_of("reporting.analysis")


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


def test_the_dashboard_and_the_figures_load_neither_scikit_learn_nor_scipy_stats():
    """scikit-learn (2 s) is imported when a geometry is computed, scipy.stats (1.6 s) when a paired test runs:
    not when the dashboard's pages, the report builder or the statistics module load."""
    code = (
        "import sys, reporting.ui.pages, reporting.report.build, reporting.analysis.stats as s\n"
        "assert s.t_interval(0.5, 0.1, 12) is not None\n"
        "print(','.join(m for m in ('sklearn', 'scipy.stats') if m in sys.modules))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert done.returncode == 0 and done.stdout.strip() == "", done.stdout + done.stderr


def test_the_t_quantile_is_scipy_stats_own():
    from scipy import stats as sps

    from reporting.analysis.stats import t_interval

    for n in (2, 3, 10, 31, 1000, 10**6):
        for confidence in (0.8, 0.9, 0.95, 0.99):
            half = float(sps.t.ppf(0.5 + confidence / 2, n - 1)) * (2.0 / n**0.5)
            assert t_interval(1.0, 2.0, n, confidence) == [1.0 - half, 1.0 + half]


def test_the_cli_default_min_cases_is_the_analysis_one():
    from reporting.analysis.observability import DEFAULT_MIN_CASES
    from reporting.commands import DEFAULT_MIN_CASES as CLI_DEFAULT

    assert CLI_DEFAULT == DEFAULT_MIN_CASES


MAX_MODULE_LINES = 400


def test_no_module_is_longer_than_400_lines():
    long = {
        str(path.relative_to(ROOT)): n
        for path in sorted((ROOT / "reporting").rglob("*.py"))
        if (n := len(path.read_text(encoding="utf-8").splitlines())) > MAX_MODULE_LINES
    }
    assert not long, f"modules over {MAX_MODULE_LINES} lines: {long}"


def _layout_table() -> list[tuple[str, str]]:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("## Layout", 1)[1].split("\n## ", 1)[0]
    rows = [line.split("|")[1:3] for line in section.splitlines() if line.startswith("| `")]
    return [(left.strip(), right.strip()) for left, right in rows]


def test_the_readme_layout_table_names_real_files_and_every_module():
    """Every path in the README's layout table exists, every module file it names in a folder row exists in that
    folder, and every module of the package is named in its folder's row."""
    import re

    rows = _layout_table()
    assert len(rows) >= 10
    named: set[str] = set()
    for left, right in rows:
        paths = re.findall(r"`([^`]+)`", left)
        for path in paths:
            assert (ROOT / path).exists(), f"README layout names {path}, which does not exist"
        folder = paths[0] if len(paths) == 1 and paths[0].endswith("/") else None
        if folder and folder.startswith("reporting/"):
            for name in re.findall(r"`(\w+\.py)`", right):
                assert (ROOT / folder / name).exists(), f"README layout names {folder}{name}, which does not exist"
                named.add(folder + name)
        named.update(p for p in paths if p.endswith(".py"))
    for path in sorted((ROOT / "reporting").rglob("*.py")):
        relative = str(path.relative_to(ROOT))
        if path.name == "__init__.py" and relative != "reporting/__init__.py":
            continue
        assert relative in named, f"{relative} is not named in the README's layout table"


def test_the_readme_lists_every_dashboard_page():
    from reporting.ui.pages import PAGES

    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    pages = readme.split("- **Pages**:", 1)[1].split("\n- ", 1)[0]
    for _, title, _ in PAGES:
        assert title in pages, f"the README's page list does not name the {title} page"


def test_docs_hold_a_screenshot_of_every_page_and_printed_page_type():
    """`make screenshots` (scripts/screenshots.py) keeps docs/screenshots/ in step with the dashboard's pages and
    the printed page types; a page added without its screenshot fails here."""
    from reporting.ui.pages import PAGES

    shots = ROOT / "docs" / "screenshots"
    wanted = [f"dashboard-{name}.png" for name, _, _ in PAGES]
    wanted += ["print-report.png", "print-report-cases.png", "print-compare.png", "print-trend.png"]
    for name in wanted:
        path = shots / name
        assert path.is_file() and path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n", name
    makefile = (ROOT / "Makefile").read_text()
    assert "screenshots:" in makefile and "scripts/screenshots.py" in makefile
    assert "docs/screenshots/dashboard-overview.png" in (ROOT / "README.md").read_text()


def test_every_package_is_declared_for_the_wheel():
    """A package folder left out of pyproject's list is missing from the installed wheel (it once was: importers)."""
    import tomllib

    declared = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    found = {module_name(init) for init in PACKAGE.rglob("__init__.py") if "__pycache__" not in init.parts}
    assert found - declared == set()
