"""Deriving the operations of a commit by diffing a document draft against its base.

A commit callback edits plain Python dicts and lists; when it returns, the
kernel compares each draft with the committed value and emits the operations of
DESIGN.md section 4. The diff is what makes drafts ordinary Python values while
the store and every watcher still receive small deltas:

- a string that grew at its end becomes one ``append`` (streamed text and tool
  output cost only their new bytes);
- a list that grew at its end becomes one ``splice`` at the end; other list
  changes become per-item diffs or one ``splice`` over the changed middle;
- a dict becomes ``set`` / ``delete`` per key.

Values are compared by JSON type as well as equality (``True`` is not ``1``,
``1`` is not ``1.0``, ``0.0`` is not ``-0.0``). Every value that enters a ``set`` or
``splice`` is checked to be strict JSON; the error names its path the way
``check_json`` does, for example ``docs["pi.live"].tools[0].output: bytes is not
JSON`` or ``docs["x"]["odd key"]: set is not JSON``. A value holding a cycle is
refused with its path too, instead of exhausting the stack.

Neither argument is modified, and the operations share no container with either
(later edits of the draft cannot reach them).

Because the diff compares values, an assignment that leaves a value equal to what
it was produces no operation, so such a commit writes and publishes nothing for
that document (a deliberate simplification of R14's "non-empty batch whose result
equals the old value").
"""

from __future__ import annotations

import json
import math
from typing import Any

from pi_durable_tui.storage.json_ops import Json, Op, checked_copy_json


def diff_json(old: Json, new: Any, where: str) -> list[Op]:
    """Return the operations that turn ``old`` into ``new``.

    Args:
        old: The committed value.
        new: The edited draft; it is not modified.
        where: The name of the value's location, used in error messages.

    Returns:
        Operations with paths relative to the value.

    Raises:
        TypeError: When ``new`` holds something that is not JSON (message names the path).
        ValueError: When ``new`` holds a non-finite number or a cycle (message names
            the path).
    """
    ops: list[Op] = []
    _diff(old, new, [], where, ops)
    return ops


def _same_type(a: Any, b: Any) -> bool:
    # bool is a subclass of int, and 1 == 1.0: compare JSON types, not Python equality.
    return type(a) is type(b)


def _child_where(where: str, key: str | int) -> str:
    # REMINDER: spell paths exactly as ``check_json`` does; people and tests match on them.
    if isinstance(key, int):
        return f"{where}[{key}]"
    if key.isidentifier():
        return f"{where}.{key}"
    return f"{where}[{json.dumps(key, ensure_ascii=False)}]"


def checked_copy(value: Any, where: str) -> Json:
    """Return a copy of ``value`` after checking it is strict JSON.

    Raises:
        TypeError: When something is not JSON (message names the path).
        ValueError: For a non-finite number, or a cycle (message names the path).
    """
    try:
        return checked_copy_json(value, where)
    except RecursionError:
        raise ValueError(f"{where}: nests too deeply or holds a cycle") from None


def _set(path: list[str | int], value: Any, where: str, ops: list[Op]) -> None:
    ops.append({"op": "set", "path": list(path), "value": checked_copy(value, where)})


def _diff(old: Json, new: Any, path: list[str | int], where: str, ops: list[Op]) -> None:
    if old is new and not isinstance(new, (dict, list)):
        return
    if not _same_type(old, new):
        _set(path, new, where, ops)
        return
    if isinstance(new, dict):
        assert isinstance(old, dict)
        for key in old:
            if key not in new:
                ops.append({"op": "delete", "path": [*path, key]})
        for key, value in new.items():
            if not isinstance(key, str):
                raise TypeError(f"{where}: key {key!r} is not a string")
            child_where = _child_where(where, key)
            if key in old:
                _diff(old[key], value, [*path, key], child_where, ops)
            else:
                _set([*path, key], value, child_where, ops)
        return
    if isinstance(new, list):
        assert isinstance(old, list)
        _diff_list(old, new, path, where, ops)
        return
    if isinstance(new, str):
        assert isinstance(old, str)
        if new == old:
            return
        if len(new) > len(old) and new.startswith(old):
            ops.append({"op": "append", "path": list(path), "text": new[len(old) :]})
        else:
            ops.append({"op": "set", "path": list(path), "value": new})
        return
    if not _same_scalar(old, new):
        _set(path, new, where, ops)


def _diff_list(
    old: list[Json], new: list[Any], path: list[str | int], where: str, ops: list[Op]
) -> None:
    if len(new) == len(old):
        for index, (before, after) in enumerate(zip(old, new, strict=True)):
            _diff(before, after, [*path, index], _child_where(where, index), ops)
        return
    prefix = 0
    limit = min(len(old), len(new))
    while prefix < limit and _equal(old[prefix], new[prefix]):
        prefix += 1
    suffix = 0
    while suffix < limit - prefix and _equal(
        old[len(old) - 1 - suffix], new[len(new) - 1 - suffix]
    ):
        suffix += 1
    inserted = new[prefix : len(new) - suffix]
    ops.append(
        {
            "op": "splice",
            "path": list(path),
            "index": prefix,
            "remove": len(old) - suffix - prefix,
            "insert": [
                checked_copy(value, _child_where(where, prefix + offset))
                for offset, value in enumerate(inserted)
            ],
        }
    )


def _equal(a: Any, b: Any) -> bool:
    """JSON equality that tells ``True`` from ``1`` and ``1`` from ``1.0``."""
    if not _same_type(a, b):
        return False
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_equal(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(_equal(x, y) for x, y in zip(a, b, strict=True))
    return _same_scalar(a, b)


def _same_scalar(a: Any, b: Any) -> bool:
    """Equality of two scalars of one JSON type; ``0.0`` and ``-0.0`` serialize apart."""
    if isinstance(a, float):
        return bool(a == b) and math.copysign(1.0, a) == math.copysign(1.0, b)
    return bool(a == b)
