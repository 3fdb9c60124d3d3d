"""The layers of DESIGN.md section 1, checked against every import in the package.

Each module of ``pi_durable_tui`` belongs to the layer of its top-level package
(``LAYERS``, the one place the map is written). Every import counts, including
those under ``TYPE_CHECKING`` and inside functions:

- a module imports only from its own package and from lower layers; packages on
  the same layer (``kernel``, ``ai``, ``env``) never import each other; the TUI
  imports ``app`` only (and the root package);
- a private module (a ``_`` name anywhere in its path) is imported only from
  inside the package that holds it;
- inside a package, imports run one way: no import loop, except through a
  package face that re-exports its own modules;
- the harness and the app are made of parts (``PARTS``: sub-packages and the
  layer's own private modules, each at a level); a part imports only parts of
  lower levels, and another part only through its face (the rule on private
  modules above).

Packages that do not exist yet (``env``, ``harness``, ``tools``, ``app``,
``tui``) simply have no modules. A failure names the offending import.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import pytest

import pi_durable_tui

LAYERS: dict[str, int] = {
    "": 0,  # the root package: the version, nothing else
    "storage": 1,
    "kernel": 2,
    "ai": 2,
    "env": 2,
    "harness": 3,
    "tools": 4,
    "app": 5,
    "tui": 6,
    "cli": 7,
    "stack_dump": 0,  # diagnostics on SIGUSR1: imports nothing of the package, any layer may use it
    "_utf8": 0,  # where UTF-8 may be cut: env, harness and tools share it (issue 14)
    "bench": 7,  # programs beside the product: they may use any layer, nothing uses them
    "examples": 7,
    "__main__": 8,  # ``python -m pi_durable_tui`` runs the command line
}
"""The layer of each top-level part of ``pi_durable_tui`` (DESIGN.md section 1)."""

PARTS: dict[str, dict[str, int]] = {
    "harness": {
        "permissions": 0,
        "_errors": 1,
        "_settings": 1,
        "_submission_types": 1,
        "_progress": 1,  # throttled progress commits: partials and tool output (issue 14)
        "context": 1,
        "extensions": 2,
        "state": 3,
        "mcp": 4,  # MCP servers as tools (issue 16), above the tools it builds and ``pi.tools``
        "views": 4,
        "_services": 4,
        "conversations": 5,
        "_runtime": 6,
        "_session_hooks": 6,
        "compaction": 7,
        "tool": 7,
        "generation": 8,
        "_builtins": 9,
        "_harness": 9,
        "": 10,  # the face
    },
    "app": {
        "_terminal_text": 0,
        "_view": 1,
        "_wire": 1,
        "_socket": 1,
        "_editor_command": 1,  # the draft's external editor (Ctrl+G), its environment scrubbed
        "_ports": 2,
        "client": 2,
        "files": 2,
        "_opening": 3,
        "_location": 3,
        "agent": 4,
        "_startup_errors": 5,
        "screen": 6,  # says a store that fails under it in _startup_errors' words (issue 12)
        "host": 7,  # serves the open session to clients (issue 15): above the screen it reuses
        "remote": 8,  # the same screen model over a session hosted elsewhere (issue 15)
        "web": 8,  # the web page's server and ``pidurable serve`` (issue 15)
        "acp": 9,  # an editor's agent over stdio, on the screen's model and controller (issue 15)
        "": 10,  # the face
    },
}
"""The parts of the layers that have parts, by level (the faces' docstrings list the same).

A part is a sub-package or one of the layer's own modules; ``""`` is the face.
"""

TUI_MAY_IMPORT = {"", "app", "tui"}
"""The TUI renders the view model and calls the controller: ``app`` only."""

ROOT = Path(pi_durable_tui.__file__).parent


@dataclass(frozen=True)
class Import:
    """One import statement's target, where it was written."""

    module: str
    target: str
    line: int

    def __str__(self) -> str:
        return f"{self.module} (line {self.line}) imports {self.target}"


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(["pi_durable_tui", *parts])


@cache
def modules() -> dict[str, Path]:
    """Every module of the package, by dotted name."""
    return {_module_name(path): path for path in sorted(ROOT.rglob("*.py"))}


def _is_package(name: str) -> bool:
    return modules()[name].name == "__init__.py"


@cache
def imports() -> tuple[Import, ...]:
    """Every import of a package module, resolved to the package modules it names."""
    known = modules()
    found: list[Import] = []
    for name, path in known.items():
        package = name if _is_package(name) else name.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    parts = package.split(".")
                    parts = parts[: len(parts) - (node.level - 1)]
                    base = ".".join([*parts, base] if base else parts)
                # ``from package import module`` runs the package face, then the module
                targets = [base, *(f"{base}.{alias.name}" for alias in node.names)]
            else:
                continue
            found.extend(
                Import(name, target, node.lineno)
                for target in targets
                if target in known and target != name
            )
    return tuple(found)


def part_of(module: str) -> str:
    """The top-level part a module belongs to (``""`` for the root package)."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def test_every_top_level_part_has_a_layer() -> None:
    unknown = sorted({part_of(m) for m in modules()} - set(LAYERS))
    assert unknown == [], f"add these to LAYERS (DESIGN.md section 1): {unknown}"


def _layer_problem(found: Import) -> str | None:
    source, target = part_of(found.module), part_of(found.target)
    if source == target:
        return None
    if source == "tui" and target not in TUI_MAY_IMPORT:
        return "the TUI imports app only"
    if source == "ai" and target != "":
        return "the model layer stands on nothing of the package (DESIGN.md section 1)"
    if LAYERS[target] >= LAYERS[source]:
        return f"layer {LAYERS[source]} may not import layer {LAYERS[target]}"
    return None


def test_no_module_imports_from_its_own_layer_or_a_higher_one() -> None:
    problems = [
        f"{found}: {problem}"
        for found in imports()
        if (problem := _layer_problem(found)) is not None
    ]
    assert problems == [], "imports against the layers:\n" + "\n".join(problems)


def _private_owner(target: str) -> Iterator[str]:
    """The packages whose private modules ``target`` reaches into."""
    parts = target.split(".")
    for index, part in enumerate(parts):
        if part.startswith("_") and not part.startswith("__"):
            yield ".".join(parts[:index])


def test_no_module_imports_a_private_module_from_outside_its_package() -> None:
    problems = [
        f"{found}: private to {owner}"
        for found in imports()
        for owner in _private_owner(found.target)
        if found.module != owner and not found.module.startswith(owner + ".")
    ]
    assert problems == [], "private modules imported from outside:\n" + "\n".join(problems)


def _loops(names: set[str]) -> list[list[str]]:
    """Strongly connected sets of more than one module among ``names``, faces aside."""
    edges: dict[str, set[str]] = {n: set() for n in names}
    for found in imports():
        if found.module in names and found.target in names:
            edges[found.module].add(found.target)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    loops: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(edges[node]):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            members: list[str] = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                members.append(member)
                if member == node:
                    break
            # a face re-exports its own modules: a loop through faces alone is no design loop
            if len([m for m in members if not _is_package(m)]) > 1:
                loops.append(sorted(members))

    for node in sorted(names):
        if node not in index:
            visit(node)
    return loops


@pytest.mark.parametrize(
    "part",
    [
        "storage",
        "harness",
        "tools",
        "env",
        "app",
        "tui",
        "kernel",
        "ai",
        "bench",
        "examples",
    ],
)
def test_imports_inside_a_part_run_one_way(part: str) -> None:
    names = {m for m in modules() if part_of(m) == part}
    assert names, f"no modules in {part}"
    assert _loops(names) == [], f"import loops in {part}"


def inner_part_of(module: str) -> str:
    """The part of its layer a module belongs to (``""`` for the layer's face)."""
    parts = module.split(".")
    return parts[2] if len(parts) > 2 else ""


@pytest.mark.parametrize("layer", sorted(PARTS))
def test_every_module_of_a_layer_with_parts_is_in_a_known_part(layer: str) -> None:
    found = {inner_part_of(m) for m in modules() if part_of(m) == layer}
    unknown = sorted(found - set(PARTS[layer]))
    assert unknown == [], f"add these to PARTS[{layer!r}] at their level: {unknown}"
    gone = sorted(set(PARTS[layer]) - found)
    assert gone == [], f"PARTS[{layer!r}] names parts that do not exist: {gone}"


@pytest.mark.parametrize("layer", sorted(PARTS))
def test_imports_between_the_parts_of_a_layer_run_one_way(layer: str) -> None:
    levels = PARTS[layer]
    problems = []
    for found in imports():
        if part_of(found.module) != layer or part_of(found.target) != layer:
            continue
        source, target = inner_part_of(found.module), inner_part_of(found.target)
        if source != target and levels[target] >= levels[source]:
            problems.append(
                f"{found}: {source or 'the face'} (level {levels[source]}) may not import "
                f"{target or 'the face'} (level {levels[target]})"
            )
    assert problems == [], f"imports against the parts of {layer}:\n" + "\n".join(problems)


TEXT_BUILDERS = {"rich.text", "rich.markdown", "rich.syntax", "textual.content"}
"""The modules whose classes build the text a widget paints (issue 13)."""
TEXT_FUNNEL = "pi_durable_tui.tui._terminal_text"
"""The one TUI module that may use them: it makes every string terminal-safe."""
LABEL_TAKERS = {"Static", "Label", "Option", "update", "show"}
"""Widget calls that read a string argument as markup to paint."""


def _tui_trees() -> Iterator[tuple[str, ast.Module]]:
    for name, path in modules().items():
        if part_of(name) == "tui" and name != TEXT_FUNNEL:
            yield name, ast.parse(path.read_text(encoding="utf-8"))


def test_tui_modules_build_text_only_through_the_terminal_safe_funnel() -> None:
    problems = []
    for name, tree in _tui_trees():
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module in TEXT_BUILDERS:
                problems.append(f"{name} (line {node.lineno}) imports {node.module}")
            elif isinstance(node, ast.ImportFrom) and node.module in {"rich", "textual"}:
                wrong = {a.name for a in node.names} & {"text", "markdown", "syntax", "content"}
                if wrong:
                    problems.append(f"{name} (line {node.lineno}) imports {sorted(wrong)}")
            elif isinstance(node, ast.Import):
                problems.extend(
                    f"{name} (line {node.lineno}) imports {alias.name}"
                    for alias in node.names
                    if alias.name in TEXT_BUILDERS
                )
    assert problems == [], (
        "build Text, Content, Markdown and Syntax with pi_durable_tui.tui._terminal_text, "
        "which makes every string terminal-safe:\n" + "\n".join(problems)
    )


def test_tui_modules_pass_no_formatted_string_to_a_widget_as_its_content() -> None:
    problems = []
    for name, tree in _tui_trees():
        for node in ast.walk(tree):
            if not isinstance(node, ast.Call) or not node.args:
                continue
            func = node.func
            called = func.id if isinstance(func, ast.Name) else getattr(func, "attr", "")
            first = node.args[0]
            formatted = isinstance(first, ast.JoinedStr) or (
                isinstance(first, ast.BinOp) and isinstance(first.op, ast.Add)
            )
            if called in LABEL_TAKERS and formatted:
                problems.append(f"{name} (line {node.lineno}): {called}({ast.unparse(first)})")
    assert problems == [], (
        "wrap a built string in plain(...) or Text(...) from tui._terminal_text:\n"
        + "\n".join(problems)
    )
