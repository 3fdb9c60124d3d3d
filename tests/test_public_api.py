"""The public surface of every package is what its ``__all__`` says, documented, with one path.

Built from the code, never from a hand-copied list: every public module of
``pi_durable_tui`` (no ``_`` component in its name) that defines ``__all__`` is a
public face, and for each of them:

- every name in ``__all__`` can be imported from it;
- every name is documented: a class or function has a docstring of its own (a
  dataclass's generated signature does not count), and a constant or type alias
  has an attribute docstring (a string right after its assignment) where it is
  defined (dunder names such as ``__version__`` document themselves);
- each name has one import path: two faces export the same object only when one
  is the parent of the other and re-exports its child's face (``kernel``
  re-exports its ``docs`` and ``tasks`` parts, ``storage`` its ``sqlite``
  backend); two unrelated faces never export the same object.

``Tx``, ``Session`` and ``TaskRuntime`` are what the harness hands to authors;
each declares the members authors may use (``_SURFACE``, next to the class), and
the class shows exactly those, each documented.
"""

from __future__ import annotations

import ast
import asyncio
import importlib
import inspect
import pkgutil
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

import pi_durable_tui
from pi_durable_tui.kernel import (
    Completed,
    ConversationOwned,
    Ownerless,
    Session,
    TaskRegistry,
    TaskRuntime,
    Tx,
    define_task,
)
from pi_durable_tui.storage import MemoryStorage, TaskRecord

AWAITING_DOCS: dict[str, set[str]] = {
    "pi_durable_tui.storage": {
        "Json",
        "JsonObject",
        "Op",
        "LIVE_TASK_STATUSES",
        "DocScope",
        "Write",
    },
    "pi_durable_tui.ai": {"THINKING_LEVELS", "AssistantEvent", "Message"},
    "pi_durable_tui.bench.storage": {"PROFILES"},
}
"""Names exported before this test existed, whose packages still owe an attribute docstring.

Remove a name once its package documents it; nothing may be added.
"""


@dataclass(frozen=True)
class Origin:
    """Where an exported name is defined: the module and the name there."""

    module: str
    name: str


def _is_public(module_name: str) -> bool:
    return not any(part.startswith("_") for part in module_name.split("."))


@cache
def public_faces() -> tuple[str, ...]:
    """Every public module of the package that defines ``__all__``."""
    found = ["pi_durable_tui"]
    for info in pkgutil.walk_packages(pi_durable_tui.__path__, "pi_durable_tui."):
        if _is_public(info.name) and not info.name.endswith("__main__"):
            found.append(info.name)
    return tuple(name for name in found if hasattr(importlib.import_module(name), "__all__"))


def _tree(module_name: str) -> ast.Module:
    module = importlib.import_module(module_name)
    assert module.__file__ is not None
    return ast.parse(Path(module.__file__).read_text(encoding="utf-8"))


def _resolve(module_name: str, base: str | None, level: int) -> str:
    if not level:
        return base or ""
    module = importlib.import_module(module_name)
    package = module_name if hasattr(module, "__path__") else module_name.rpartition(".")[0]
    parts = package.split(".")[: len(package.split(".")) - (level - 1)]
    return ".".join([*parts, base] if base else parts)


@cache
def origin(module_name: str, name: str) -> Origin:
    """Follow ``from X import name`` statements to the module that defines ``name``.

    A lazy face (``app``) names its lazily imported names under ``if TYPE_CHECKING:``.
    """
    body = _tree(module_name).body
    nested = [inner for node in body if isinstance(node, ast.If) for inner in node.body]
    for node in [*body, *nested]:
        if isinstance(node, ast.ImportFrom):
            for alias in node.names:
                if (alias.asname or alias.name) == name:
                    source = _resolve(module_name, node.module, node.level)
                    if hasattr(importlib.import_module(source), "__path__") and _has_module(
                        f"{source}.{alias.name}"
                    ):
                        return Origin(f"{source}.{alias.name}", "")
                    return origin(source, alias.name)
    return Origin(module_name, name)


def _has_module(name: str) -> bool:
    try:
        importlib.import_module(name)
    except ImportError:
        return False
    return True


def _attribute_docstring(where: Origin) -> str | None:
    body = _tree(where.module).body
    for index, node in enumerate(body):
        targets: list[ast.expr] = []
        if isinstance(node, ast.Assign):
            targets = node.targets
        elif isinstance(node, ast.AnnAssign):
            targets = [node.target]
        if any(isinstance(t, ast.Name) and t.id == where.name for t in targets):
            following = body[index + 1] if index + 1 < len(body) else None
            if (
                isinstance(following, ast.Expr)
                and isinstance(following.value, ast.Constant)
                and isinstance(following.value.value, str)
            ):
                return following.value.value
            return None
    return None


def _own_docstring(obj: Any) -> str | None:
    if isinstance(obj, ModuleType):
        return obj.__doc__
    if inspect.isclass(obj):
        doc = obj.__dict__.get("__doc__")
        generated = f"{obj.__name__}("  # what @dataclass writes when there is no docstring
        if not isinstance(doc, str) or doc.startswith(generated):
            return None
        return doc
    if inspect.isfunction(obj) or inspect.ismethod(obj) or inspect.isbuiltin(obj):
        return obj.__doc__
    return None


def documentation(face: str, name: str) -> str | None:
    """The documentation of an exported name, or ``None`` when it has none."""
    obj = getattr(importlib.import_module(face), name)
    doc = _own_docstring(obj)
    if doc is None and not (inspect.isclass(obj) or inspect.isfunction(obj)):
        doc = _attribute_docstring(origin(face, name))
    return doc if doc and doc.strip() else None


def exports() -> list[tuple[str, str]]:
    """Every ``(face, name)`` the public faces export."""
    return [
        (face, name) for face in public_faces() for name in importlib.import_module(face).__all__
    ]


def test_the_public_faces_include_the_layers_and_their_parts() -> None:
    faces = set(public_faces())
    assert {
        "pi_durable_tui.storage",
        "pi_durable_tui.storage.jsonl",
        "pi_durable_tui.storage.sqlite",
        "pi_durable_tui.kernel",
        "pi_durable_tui.kernel.docs",
        "pi_durable_tui.kernel.tasks",
        "pi_durable_tui.ai",
    } <= faces
    assert not [face for face in faces if not _is_public(face)]


@pytest.mark.parametrize("face", public_faces())
def test_every_name_a_face_exports_can_be_imported_from_it(face: str) -> None:
    module = importlib.import_module(face)
    missing = [name for name in module.__all__ if not hasattr(module, name)]
    assert missing == [], f"{face}.__all__ names what it does not define: {missing}"
    assert len(set(module.__all__)) == len(module.__all__), f"{face}.__all__ repeats a name"


@pytest.mark.parametrize("face", public_faces())
def test_every_exported_name_is_documented(face: str) -> None:
    undocumented = {
        name
        for name in importlib.import_module(face).__all__
        if not name.startswith("__") and documentation(face, name) is None
    }
    awaiting = AWAITING_DOCS.get(face, set())
    assert undocumented - awaiting == set(), (
        f"{face} exports undocumented names: {sorted(undocumented - awaiting)}; give each a "
        "docstring (a class or function) or an attribute docstring after its assignment"
    )
    assert awaiting - undocumented == set(), (
        f"{face} documents {sorted(awaiting - undocumented)} now: remove them from AWAITING_DOCS"
    )


def _is_parent(parent: str, child: str) -> bool:
    return child.startswith(parent + ".")


def test_each_public_name_has_one_import_path() -> None:
    exporters: dict[Origin, list[str]] = {}
    for face, name in exports():
        exporters.setdefault(origin(face, name), []).append(face)
    conflicts = []
    for where, faces in exporters.items():
        ordered = sorted(set(faces), key=len)
        unrelated = [f for f in ordered[1:] if not _is_parent(ordered[0], f)]
        if unrelated:
            conflicts.append(f"{where.module}.{where.name}: exported by {ordered}")
    assert conflicts == [], "one object, several unrelated import paths:\n" + "\n".join(conflicts)


# -- what authors hold (DESIGN.md 3 and 3.1) --


def public_members(cls: type) -> set[str]:
    """The public attributes of a class: methods, properties and class attributes."""
    return {name for name in dir(cls) if not name.startswith("_")}


@pytest.mark.parametrize("cls", [Tx, Session, TaskRuntime], ids=lambda c: c.__name__)
def test_what_authors_hold_shows_exactly_its_declared_surface(cls: type) -> None:
    declared: frozenset[str] = vars(cls)["_SURFACE"]
    shown = public_members(cls)
    assert shown - declared == set(), f"{cls.__name__} shows undeclared members"
    assert declared - shown == set(), f"{cls.__name__} declares members it lacks"


@pytest.mark.parametrize("cls", [Tx, Session, TaskRuntime], ids=lambda c: c.__name__)
def test_every_member_authors_may_use_is_documented(cls: type) -> None:
    undocumented = [
        name
        for name in sorted(public_members(cls))
        if not (inspect.getdoc(getattr(cls, name)) or "").strip()
    ]
    assert undocumented == [], f"{cls.__name__} members without a docstring: {undocumented}"


async def test_instances_of_what_authors_hold_carry_no_public_attributes() -> None:
    seen: dict[str, set[str]] = {}

    def public(instance: object) -> set[str]:
        return {name for name in vars(instance) if not name.startswith("_")}

    async def run(task: TaskRecord, runtime: TaskRuntime) -> None:
        seen["TaskRuntime"] = public(runtime)

        def finish(tx: Tx) -> Completed:
            seen["Tx"] = public(tx)
            return Completed()

        await runtime.commit(finish)

    job = define_task("job", initial=lambda _: {"phase": "run"}, phases={"run": run}, abort=run)
    session = await Session.open(MemoryStorage(), registry=TaskRegistry([job]))
    seen["Session"] = public(session)

    def start(tx: Tx) -> TaskRecord:
        conversation = tx.create_conversation(Ownerless())
        return tx.create_task(job, ownership=ConversationOwned(), conversation_id=conversation.id)

    task = await session.commit(start)
    await asyncio.wait_for(session.wait_for_task(task.id), 5)
    await session.close()
    assert seen == {"Session": set(), "TaskRuntime": set(), "Tx": set()}
