"""The import contract: the architecture of ``rlcompare/`` written down where a test can hold it.

Every import counts: at module level, inside functions, and under ``if TYPE_CHECKING:``; importing
``a.b.c`` also imports the packages ``a`` and ``a.b``. Over that graph:

- there is no cycle;
- each layer imports only the layers before it (data flows spec -> plan -> execute -> store ->
  score -> report; the plugin manager, the built-in plugins, the command line and the testing kit
  sit on top);
- the harness (everything a run's worker imports) imports only itself, ``rlcompare.errors``, the
  standard library, numpy and gymnasium (and, only when called, Ray in the module that starts a
  run's private Ray and torch in the parity helpers for PyTorch frameworks);
- only the command line and the testing kit import the plugin manager;
- no core module imports a built-in plugin (adapters, criteria, ``rlcompare.builtins``) by name;
- the top of ``rlcompare/`` holds the public API only.
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "rlcompare"

#: Each layer and the layers it may import (besides itself, ``rlcompare`` and ``rlcompare.errors``).
LAYERS: dict[str, frozenset[str]] = {
    "harness": frozenset(),
    "spec": frozenset({"harness"}),
    "registry": frozenset({"harness"}),
    "pyenvs": frozenset({"harness"}),
    "parity": frozenset({"harness", "spec", "pyenvs"}),
    "plan": frozenset({"harness", "spec", "pyenvs", "parity"}),
    "store": frozenset({"harness", "spec"}),
    "execution": frozenset({"harness", "spec", "pyenvs", "parity", "plan", "store"}),
    "scoring": frozenset({"harness", "spec", "registry", "parity", "store"}),
    "reporting": frozenset({"harness", "spec", "registry", "parity", "store", "scoring"}),
    # published tables as data, judged against measured values (plain numbers)
    "studies": frozenset({"harness", "spec", "registry", "store", "scoring", "reporting"}),
    "plugins": frozenset({"harness", "spec", "registry", "pyenvs", "parity", "plan", "store", "execution",
                          "scoring", "reporting", "studies", "hookspecs"}),
    "builtins": frozenset({"harness", "spec", "registry", "pyenvs", "parity", "plan", "store", "execution",
                           "scoring", "reporting", "studies", "plugins.register"}),
    "cli": frozenset({"harness", "spec", "registry", "pyenvs", "parity", "plan", "store", "execution", "scoring",
                      "reporting", "studies", "plugins"}),
    "testing": frozenset({"harness", "spec", "registry", "pyenvs", "parity", "plan", "store", "execution",
                          "scoring", "reporting", "studies", "plugins", "adapter"}),
    # the public modules at the top
    "adapter": frozenset({"harness"}),
    "hookspecs": frozenset({"plugins.register"}),
    "errors": frozenset(),
    "__main__": frozenset({"cli"}),
}
#: What may sit directly under rlcompare/ (the public API).
TOP_LEVEL_MODULES = {"__init__", "__main__", "adapter", "hookspecs", "errors"}
#: Third-party packages the harness may import, and where else it may reach.
HARNESS_THIRD_PARTY = {"numpy", "gymnasium"}
HARNESS_EXCEPTIONS = {"rlcompare.harness.private_ray": {"ray"}, "rlcompare.harness.parity_torch": {"torch"},
                      "rlcompare.harness.envpool_envs": {"envpool"}}
#: Top-level names of the built-in plugin distributions.
BUILTIN_PLUGIN_PACKAGES = ("rlcompare_sb3", "rlcompare_tianshou", "rlcompare_rllib", "rlcompare_torchrl",
                           "rlcompare_skrl", "rlcompare_evotorch", "rlcompare_sample_factory", "rlcompare_rsl_rl",
                           "rlcompare_rejax", "rlcompare_d3rlpy", "rlcompare_rl_games", "rlcompare_mushroom_rl",
                           "rlcompare_sbx", "rlcompare_trl", "rlcompare_tunix",
                           "rlcompare_criteria")


@dataclass(frozen=True)
class Import:
    source: str  # the importing module
    target: str  # the imported name, resolved to an absolute dotted path
    line: int
    kind: str  # "module level", "in a function", "type checking"


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules() -> dict[str, Path]:
    return {module_name(path): path for path in sorted(PACKAGE.rglob("*.py"))}


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def imports_of(name: str, path: Path) -> Iterator[Import]:
    """Every import statement of the module, wherever it stands."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]

    def visit(node: ast.AST, kind: str) -> Iterator[Import]:
        for child in ast.iter_child_nodes(node):
            child_kind = kind
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)) and kind == "module level":
                child_kind = "in a function"
            if isinstance(child, ast.If) and _is_type_checking(child.test):
                for statement in child.body:
                    yield from visit_statement(statement, "type checking")
                for statement in child.orelse:
                    yield from visit_statement(statement, kind)
                continue
            yield from visit_statement(child, child_kind)

    def visit_statement(statement: ast.AST, kind: str) -> Iterator[Import]:
        if isinstance(statement, ast.Import):
            for alias in statement.names:
                yield Import(name, alias.name, statement.lineno, kind)
        elif isinstance(statement, ast.ImportFrom):
            if statement.level:
                base = package.split(".")[: len(package.split(".")) - statement.level + 1]
                origin = ".".join(base + ([statement.module] if statement.module else []))
            else:
                origin = statement.module or ""
            for alias in statement.names:
                yield Import(name, f"{origin}.{alias.name}", statement.lineno, kind)
        else:
            yield from visit(statement, kind)

    yield from visit(tree, "module level")


def resolve(target: str, known: dict[str, Path]) -> str | None:
    """The rlcompare module ``target`` names (``a.b.name`` -> module ``a.b``), or None outside it."""
    parts = target.split(".")
    while parts and ".".join(parts) not in known:
        parts.pop()
    return ".".join(parts) if parts else None


def graph() -> tuple[dict[str, set[str]], list[Import]]:
    """Module -> the rlcompare modules it imports (with the packages above each), and every import."""
    known = modules()
    edges: dict[str, set[str]] = {name: set() for name in known}
    found: list[Import] = []
    for name, path in known.items():
        for item in imports_of(name, path):
            found.append(item)
            target = resolve(item.target, known)
            if target is None:
                continue
            parts = target.split(".")
            for depth in range(1, len(parts) + 1):  # importing a.b.c runs a/__init__ and a/b/__init__ first
                above = ".".join(parts[:depth])
                if above in known and above != name and not name.startswith(above + "."):
                    edges[name].add(above)
    return edges, found


def find_cycle(edges: dict[str, set[str]]) -> list[str] | None:
    """One cycle of the graph, as the modules along it, or None."""
    state: dict[str, int] = {}
    stack: list[str] = []

    def walk(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for following in sorted(edges.get(node, ())):
            if state.get(following) == 1:
                return stack[stack.index(following):] + [following]
            if following not in state:
                cycle = walk(following)
                if cycle:
                    return cycle
        stack.pop()
        state[node] = 2
        return None

    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10_000))
    for node in sorted(edges):
        if node not in state:
            cycle = walk(node)
            if cycle:
                return cycle
    return None


def layer_of(module: str) -> str | None:
    """``rlcompare.spec.workload`` -> ``spec``; the package itself and ``errors`` belong to none."""
    parts = module.split(".")
    if len(parts) < 2:
        return None
    return parts[1]


def _where(item: Import) -> str:
    return f"{item.source} line {item.line} ({item.kind}) imports {item.target}"


EDGES, IMPORTS = graph()
KNOWN = modules()


def test_the_import_graph_has_no_cycle_counting_every_kind_of_import() -> None:
    cycle = find_cycle(EDGES)
    assert cycle is None, "import cycle: " + " -> ".join(cycle or [])


def test_each_layer_imports_only_the_layers_before_it() -> None:
    breaches = []
    for item in IMPORTS:
        target = resolve(item.target, KNOWN)
        source_layer, target_layer = layer_of(item.source), layer_of(target or "")
        if target is None or source_layer is None or target_layer is None or target_layer == source_layer:
            continue
        if target_layer == "errors":
            continue
        allowed = LAYERS.get(source_layer)
        assert allowed is not None, f"{item.source}: layer {source_layer!r} is not in the contract (tests/test_architecture.py)"
        sub = ".".join(target.split(".")[1:3])  # e.g. plugins.register
        if target_layer not in allowed and sub not in allowed:
            breaches.append(_where(item))
    assert not breaches, "imports against the direction of flow:\n" + "\n".join(breaches)


def test_the_harness_imports_only_itself_errors_the_standard_library_numpy_and_gymnasium() -> None:
    breaches = []
    for item in IMPORTS:
        if layer_of(item.source) != "harness":
            continue
        top = item.target.split(".")[0]
        target = resolve(item.target, KNOWN)
        if target is not None:
            if target in ("rlcompare", "rlcompare.errors") or layer_of(target) == "harness":
                continue
            breaches.append(_where(item))
        elif top in sys.stdlib_module_names or top in HARNESS_THIRD_PARTY:
            continue
        elif top in HARNESS_EXCEPTIONS.get(item.source, ()) and item.kind == "in a function":
            continue
        else:
            breaches.append(_where(item))
    assert not breaches, "the harness reaches outside what a worker has:\n" + "\n".join(breaches)


def test_only_the_command_line_and_the_testing_kit_import_the_plugin_manager() -> None:
    importers = {item.source for item in IMPORTS if resolve(item.target, KNOWN) == "rlcompare.plugins.manager"}
    outside = sorted(source for source in importers
                     if layer_of(source) not in ("cli", "testing", "plugins"))
    assert not outside, f"the plugin manager is built only by cli/ and testing/; imported by {outside}"
    assert importers & {name for name in KNOWN if layer_of(name) == "cli"}, "the command line builds the manager"


def test_no_core_module_imports_a_builtin_plugin_by_name() -> None:
    breaches = [_where(item) for item in IMPORTS
                if layer_of(item.source) != "builtins"
                and (item.target.split(".")[0] in BUILTIN_PLUGIN_PACKAGES
                     or item.target.startswith("rlcompare.builtins."))]
    assert not breaches, "the core names a built-in plugin:\n" + "\n".join(breaches)


def test_the_top_of_the_package_holds_the_public_api_only() -> None:
    top = {path.stem for path in PACKAGE.glob("*.py")}
    assert top <= TOP_LEVEL_MODULES, f"modules directly under rlcompare/ beyond the public API: {sorted(top - TOP_LEVEL_MODULES)}"
    assert len(top - {"__init__", "__main__"}) <= 5
    folders = {path.name for path in PACKAGE.iterdir() if path.is_dir() and (path / "__init__.py").exists()}
    assert folders <= set(LAYERS), f"folders the contract does not place: {sorted(folders - set(LAYERS))}"


@pytest.mark.parametrize("module", sorted(name for name in KNOWN if layer_of(name) == "harness"))
def test_a_harness_module_imports_in_a_fresh_interpreter_without_pydantic_pluggy_or_pandas(module: str) -> None:
    import subprocess

    code = (f"import sys, {module}\n"
            "print(sorted(m for m in ('pydantic', 'pluggy', 'pandas', 'rich', 'scipy', 'torch') if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]", f"{module} loads {done.stdout.strip()}"


def test_the_contract_catches_a_cycle_an_upward_import_and_a_type_only_import(tmp_path: Path) -> None:
    """The checks above see what they claim to see: a cycle through a TYPE_CHECKING import, and a
    function-level import against the flow, in a small package laid out like this one."""
    edges = {"p.a": {"p.b"}, "p.b": {"p.a"}}
    assert find_cycle(edges) == ["p.a", "p.b", "p.a"]
    source = tmp_path / "m.py"
    source.write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from rlcompare.cli.main import main\n"
                      "def f():\n    from rlcompare.plugins.manager import build_plugin_manager\n")
    found = list(imports_of("rlcompare.harness.m", source))
    assert [(item.target, item.kind) for item in found] == [
        ("typing.TYPE_CHECKING", "module level"), ("rlcompare.cli.main.main", "type checking"),
        ("rlcompare.plugins.manager.build_plugin_manager", "in a function")]
    assert resolve(found[1].target, KNOWN) == "rlcompare.cli.main"
