"""JSON values and the operations that change them (DESIGN.md section 4).

Document content is stored as bases (complete values) and deltas (lists of
operations). The same operations travel in watch frames and JSON mode, so any
client can apply them:

- ``{"op": "set", "path": [...], "value": v}``: put ``v`` at ``path``; an empty
  path replaces the root.
- ``{"op": "delete", "path": [...]}``: remove a key of an object or an item of a
  list.
- ``{"op": "splice", "path": [...], "index": i, "remove": n, "insert": [...]}``:
  change the list at ``path``.
- ``{"op": "append", "path": [...], "text": "..."}``: extend the string at
  ``path``, so streamed text costs only its new bytes.

``apply_ops`` never mutates its input: it returns a new value that shares no
mutable container with the old one along the changed paths.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Sequence
from typing import Any, TypeAlias

Json: TypeAlias = bool | int | float | str | list["Json"] | dict[str, "Json"] | None
JsonObject: TypeAlias = dict[str, Json]
Path: TypeAlias = Sequence[str | int]
Op: TypeAlias = dict[str, Any]


class InvalidOperation(ValueError):
    """An operation does not fit the value it is applied to, or is malformed."""


def dumps(value: Json) -> str:
    """Serialize a JSON value compactly and strictly (no NaN, no infinity).

    Args:
        value: The value to serialize.

    Returns:
        Compact JSON text with non-ASCII characters kept as they are.

    Raises:
        ValueError: When the value holds a non-finite float.
        TypeError: When the value holds something that is not JSON.
    """
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)


def loads(text: str | bytes) -> Json:
    """Parse JSON text into a fresh value (every read is a detached copy)."""
    result: Json = json.loads(text)
    return result


def copy_json(value: Json) -> Json:
    """Return a deep copy of a JSON value, faster than ``copy.deepcopy`` for JSON."""
    if isinstance(value, dict):
        return {k: copy_json(v) for k, v in value.items()}
    if isinstance(value, list):
        return [copy_json(v) for v in value]
    return value


def check_json(value: object, where: str = "value") -> None:
    """Check that ``value`` is strict JSON: dicts with string keys, lists, finite numbers.

    Args:
        value: The value to check.
        where: How to name the value's location in the error message.

    Raises:
        TypeError: When something is not JSON; the message names its path, for
            example ``docs["pi.live"].tools[0].output: bytes is not JSON``.
        ValueError: For a non-finite float, with its path.
    """
    if value is None or isinstance(value, (bool, str, int)):
        return
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError(f"{where}: {value!r} is not a finite number")
        return
    if isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(key, str):
                raise TypeError(f"{where}: key {key!r} is not a string")
            check_json(item, f"{where}.{key}" if key.isidentifier() else f"{where}[{key!r}]")
        return
    if isinstance(value, list):
        for index, item in enumerate(value):
            check_json(item, f"{where}[{index}]")
        return
    raise TypeError(f"{where}: {type(value).__name__} is not JSON")


def apply_ops(value: Json, ops: Iterable[Op]) -> Json:
    """Apply operations in order and return the new value.

    Args:
        value: The value before the operations; it is not modified.
        ops: Operations in the format of this module's docstring.

    Returns:
        The value after every operation.

    Raises:
        InvalidOperation: When an operation is malformed or its path does not fit.
    """
    result = value
    for op in ops:
        result = _apply_one(result, op)
    return result


def _apply_one(root: Json, op: Op) -> Json:
    kind = op.get("op")
    path = op.get("path")
    if not isinstance(path, list):
        raise InvalidOperation(f"operation {kind!r} needs a list path, got {path!r}")
    if kind == "set":
        if "value" not in op:
            raise InvalidOperation("set needs a value")
        if not path:
            return copy_json(op["value"])
        return _with_child(root, path, lambda parent, key: _set_child(parent, key, op["value"]))
    if kind == "delete":
        if not path:
            raise InvalidOperation("delete needs a non-empty path")
        return _with_child(root, path, _delete_child)
    if kind == "splice":
        index, remove, insert = op.get("index"), op.get("remove", 0), op.get("insert", [])
        if (
            not isinstance(index, int)
            or not isinstance(remove, int)
            or not isinstance(insert, list)
        ):
            raise InvalidOperation(f"malformed splice {op!r}")
        return _replace_at(root, path, lambda target: _splice(target, index, remove, insert, path))
    if kind == "append":
        text = op.get("text")
        if not isinstance(text, str):
            raise InvalidOperation(f"append needs text, got {text!r}")
        return _replace_at(root, path, lambda target: _append(target, text, path))
    raise InvalidOperation(f"unknown operation {kind!r}")


def _splice(target: Json, index: int, remove: int, insert: list[Json], path: Path) -> Json:
    if not isinstance(target, list):
        raise InvalidOperation(f"splice at {list(path)} needs a list")
    if not 0 <= index <= len(target) or remove < 0 or index + remove > len(target):
        raise InvalidOperation(f"splice {index}+{remove} out of range at {list(path)}")
    return [*target[:index], *(copy_json(v) for v in insert), *target[index + remove :]]


def _append(target: Json, text: str, path: Path) -> Json:
    if not isinstance(target, str):
        raise InvalidOperation(f"append at {list(path)} needs a string")
    return target + text


def _replace_at(root: Json, path: Path, change: Any) -> Json:
    if not path:
        return change(root)
    return _with_child(
        root,
        path,
        lambda parent, key: _set_child(parent, key, change(_get_child(parent, key, path))),
    )


def _with_child(root: Json, path: Path, change: Any) -> Json:
    """Copy the containers along ``path[:-1]`` and let ``change`` edit the last one."""
    if not path:
        raise InvalidOperation("empty path")
    head, rest = path[0], path[1:]
    container = _shallow_copy(root, path)
    if not rest:
        change(container, head)
        return container
    child = _get_child(container, head, path)
    _set_child(container, head, _with_child(child, rest, change), replace_only=True)
    return container


def _shallow_copy(value: Json, path: Path) -> Json:
    if isinstance(value, dict):
        return dict(value)
    if isinstance(value, list):
        return list(value)
    raise InvalidOperation(f"path {list(path)} goes through a {type(value).__name__}")


def _get_child(container: Json, key: str | int, path: Path) -> Json:
    if isinstance(container, dict) and isinstance(key, str):
        if key not in container:
            raise InvalidOperation(f"missing key {key!r} on path {list(path)}")
        return container[key]
    if isinstance(container, list) and isinstance(key, int) and not isinstance(key, bool):
        if not 0 <= key < len(container):
            raise InvalidOperation(f"index {key} out of range on path {list(path)}")
        return container[key]
    raise InvalidOperation(f"cannot step {key!r} into a {type(container).__name__}")


def _set_child(container: Json, key: str | int, value: Json, replace_only: bool = False) -> None:
    value = value if replace_only else copy_json(value)
    if isinstance(container, dict) and isinstance(key, str):
        container[key] = value
        return
    if isinstance(container, list) and isinstance(key, int) and not isinstance(key, bool):
        if 0 <= key < len(container):
            container[key] = value
            return
        if key == len(container) and not replace_only:
            container.append(value)
            return
        raise InvalidOperation(f"index {key} out of range")
    raise InvalidOperation(f"cannot set {key!r} on a {type(container).__name__}")


def _delete_child(container: Json, key: str | int) -> None:
    if isinstance(container, dict) and isinstance(key, str):
        if key not in container:
            raise InvalidOperation(f"cannot delete missing key {key!r}")
        del container[key]
        return
    if isinstance(container, list) and isinstance(key, int) and not isinstance(key, bool):
        if not 0 <= key < len(container):
            raise InvalidOperation(f"cannot delete index {key}")
        del container[key]
        return
    raise InvalidOperation(f"cannot delete {key!r} from a {type(container).__name__}")
