r"""JSON values and the operations that change them (DESIGN.md section 4).

Document content is stored as bases (complete values) and deltas (lists of
operations). The same operations travel in watch frames and JSON mode, so any
client can apply them:

- ``{"op": "set", "path": [...], "value": v}``: put ``v`` at ``path``; an empty
  path replaces the root, and the index just past a list's end appends.
- ``{"op": "delete", "path": [...]}``: remove a key of an object or an item of a
  list (later items move down).
- ``{"op": "splice", "path": [...], "index": i, "remove": n, "insert": [...]}``:
  change the list at ``path`` (``remove`` defaults to 0, ``insert`` to ``[]``).
- ``{"op": "append", "path": [...], "text": "..."}``: extend the string at
  ``path``, so streamed text costs only its new bytes.

A path is a list of object keys (strings) and list indexes (integers). Every
error names the operation's index, its kind and its full path.

``apply_ops`` never mutates its input: it returns a new value that shares no
mutable container with the old one along the changed paths (unchanged subtrees
are shared). ``check_ops`` checks an operation list's shape without a value, and
``check_json`` checks that a value is strict JSON, naming the path of the first
offence.

Strings are kept losslessly, lone surrogates included: Python makes them when it
decodes undecodable bytes (``os.fsdecode`` of a file name that is not UTF-8,
``errors="surrogateescape"``), so a file name a tool read can hold one. Such a
string has no UTF-8 encoding, so ``dumps`` writes each lone surrogate as a JSON
``\uXXXX`` escape (valid JSON text, pure UTF-8) and ``loads`` turns it back
into the same character: every backend stores and returns it unchanged. The one
string JSON cannot carry is a high surrogate directly followed by a low one (two
characters that JSON would read back as the single character they encode), so
``check_json`` refuses it.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Iterable, Sequence
from typing import Any, TypeAlias

Json: TypeAlias = bool | int | float | str | list[Any] | dict[str, Any] | None
# REMINDER: values are typed loosely (Any inside containers) on purpose: documents and
# records are edited as ordinary Python dicts, and strictness is enforced at run time
# by check_json, which names the path of the first value that is not JSON.
JsonObject: TypeAlias = dict[str, Any]


_SURROGATE = re.compile("[\ud800-\udfff]")
"""A lone surrogate: Python strings never hold a valid surrogate pair."""

Path: TypeAlias = Sequence[str | int]
Op: TypeAlias = dict[str, Any]


class InvalidOperation(ValueError):
    """An operation does not fit the value it is applied to, or is malformed."""


_encode = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode
"""``json.dumps`` with these options, without building an encoder per call (issue 14)."""


def dumps(value: Json) -> str:
    r"""Serialize a JSON value compactly and strictly (no NaN, no infinity).

    Args:
        value: The value to serialize.

    Returns:
        Compact JSON text with non-ASCII characters kept as they are, except lone
        surrogates, written as ``\uXXXX`` escapes: the text always encodes as UTF-8.

    Raises:
        ValueError: When the value holds a non-finite float.
        TypeError: When the value holds something that is not JSON.
    """
    text = _encode(value)
    # ``isascii`` reads a flag CPython keeps on every string, so ASCII text costs nothing.
    if text.isascii() or _SURROGATE.search(text) is None:
        return text
    # REMINDER: with ensure_ascii=False a surrogate can only sit inside a string literal
    # (a key or a value), where its escape means the same character.
    return _SURROGATE.sub(_escape, text)


def _escape(found: re.Match[str]) -> str:
    return f"\\u{ord(found.group()):04x}"


# The C scanner ``json.loads`` ends in, without its wrapper's two whitespace scans
# (typeshed does not declare it).
_scan_once: Callable[[str, int], tuple[Json, int]] = json.JSONDecoder().scan_once  # type: ignore[attr-defined]


def loads(text: str | bytes) -> Json:
    """Parse JSON text into a fresh value (every read is a detached copy)."""
    if type(text) is str:
        # Stored text has no surrounding whitespace, so the scanner alone reads it
        # (a fifth of a record's parse, issue 14); anything it does not read to its
        # end goes to ``json.loads``, which accepts it or names what is wrong.
        try:
            value, end = _scan_once(text, 0)
        except (StopIteration, ValueError):
            pass
        else:
            if end == len(text):
                return value
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

    Strings may hold lone surrogates (``dumps`` escapes them), but not a high
    surrogate followed by a low one, which JSON would read back as one character.
    Every message names the path and ends with ``is not JSON``.

    Args:
        value: The value to check.
        where: How to name the value's location in the error message.

    Raises:
        TypeError: When something is not JSON; the message names its path, for
            example ``docs["pi.live"].tools[0].output: bytes is not JSON``.
        ValueError: For a non-finite float or a split surrogate pair, with its path.
    """
    if _plainly_json(value):
        return
    _check_named(value, where)


def checked_copy_json(value: object, where: str = "value") -> Json:
    """Return a copy of ``value`` after checking it is strict JSON: one walk for plain JSON.

    The same verdict and messages as ``check_json`` followed by ``copy_json``
    (issue 14: ``Tx.append`` and the document diff did both, two walks of every
    value a commit stores).

    Args:
        value: The value to check and copy.
        where: How to name the value's location in an error message.

    Returns:
        The copy.

    Raises:
        TypeError: When something is not JSON (the message names its path).
        ValueError: For a non-finite float or a split surrogate pair, with its path.
    """
    try:
        return _plain_copy(value)
    except _NotPlain:
        check_json(value, where)  # names what is wrong, or accepts a subclass
        return copy_json(value)  # type: ignore[arg-type]


class _NotPlain(Exception):
    """``_plain_copy`` met something ``_plainly_json`` would not accept."""


_NOT_PLAIN = _NotPlain()


def _plain_copy(value: Any) -> Json:
    """A copy of ``value`` made of the exact built-in JSON types; ``_NotPlain`` otherwise."""
    kind = type(value)
    if kind is dict:
        copied: dict[str, Json] = {}
        for key, item in value.items():
            if type(key) is not str or not (key.isascii() or _split_pair(key) is None):
                raise _NOT_PLAIN
            copied[key] = _plain_item(item)
        return copied
    if kind is list:
        return [_plain_item(item) for item in value]
    return _plain_item(value)


def _plain_item(item: Any) -> Json:
    inner = type(item)
    if inner is str:
        if item.isascii() or _split_pair(item) is None:
            return item
        raise _NOT_PLAIN
    if inner is int or inner is bool or item is None:
        return item
    if inner is float:
        if math.isfinite(item):
            return item
        raise _NOT_PLAIN
    if inner is dict or inner is list:
        return _plain_copy(item)
    raise _NOT_PLAIN


def _check_named(value: object, where: str) -> None:
    """``check_json``'s verdict, naming the path of the first offence (the slow path)."""
    if isinstance(value, str):
        _check_text(value, where)
        return
    if value is None or isinstance(value, (bool, int)):
        return
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError(f"{where}: {value!r} is not JSON (numbers must be finite)")
        return
    if isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(key, str):
                raise TypeError(f"{where}: key {key!r} is not JSON (keys must be strings)")
            _check_text(key, where)
            _check_named(item, f"{where}.{key}" if key.isidentifier() else f"{where}[{_key(key)}]")
        return
    if isinstance(value, list):
        for index, item in enumerate(value):
            _check_named(item, f"{where}[{index}]")
        return
    raise TypeError(f"{where}: {type(value).__name__} is not JSON")


_SPLIT_PAIR = re.compile("[\ud800-\udbff][\udc00-\udfff]")
_split_pair = _SPLIT_PAIR.search


def _plainly_json(value: Any) -> bool:
    """Whether ``value`` is strict JSON made of the exact built-in types, checked fast.

    Every value a commit stores passes through ``check_json`` at least once, and
    naming each nested value's path as it went cost most of the check (issue 14:
    two thirds of it for a tool round's records). This walks without names and answers
    ``False`` for anything it does not plainly accept (a subclass of a JSON type
    too), which ``_check_named`` then judges, so the verdict and every message stay
    those of the named walk.
    """
    kind = type(value)
    if kind is dict:
        for key in value:
            if type(key) is not str or not (key.isascii() or _split_pair(key) is None):
                return False
        items = value.values()
    elif kind is list:
        items = value
    elif kind is str:
        return value.isascii() or _split_pair(value) is None
    elif kind is float:
        return math.isfinite(value)
    else:
        return kind is int or kind is bool or value is None
    for item in items:
        inner = type(item)
        if inner is str:
            if not (item.isascii() or _split_pair(item) is None):
                return False
        elif not (inner is int or inner is bool or item is None or _plainly_json(item)):
            return False
    return True


def _check_text(text: str, where: str) -> None:
    # ``isascii`` reads a flag CPython keeps on every string, so ASCII costs nothing.
    if not text.isascii() and (found := _SPLIT_PAIR.search(text)) is not None:
        raise ValueError(
            f"{where}: surrogate pair {found.group()!r} at index {found.start()} is not JSON "
            "(JSON would read it back as one character; join it into that character)"
        )


def check_ops(ops: object) -> None:
    """Check the shape of an operation list without applying it.

    A delta that passes may still not fit a given value (a missing key, an index
    out of range); that is found when it is applied. What fails here can never
    apply to a document: not a list, an unknown ``op``, a path that is not a list
    of keys and indexes, a missing or mistyped field, or an operation on the root
    other than ``set`` of an object (a document's root is always an object).

    Args:
        ops: The operation list.

    Raises:
        InvalidOperation: Naming the first malformed operation by its index.
    """
    if not isinstance(ops, list):
        raise InvalidOperation(f"operations must be a list, not {type(ops).__name__}")
    for index, op in enumerate(ops):
        kind, path = _check_op(op, f"operation {index}")
        if not path and not (kind == "set" and isinstance(op["value"], dict)):
            raise InvalidOperation(
                f"operation {index}: {kind} at the root would leave a document without "
                "an object at its root"
            )


def apply_ops(value: Json, ops: Iterable[Op]) -> Json:
    """Apply operations in order and return the new value.

    Args:
        value: The value before the operations; it is not modified. With no
            operations it is returned as it is.
        ops: Operations in the format of this module's docstring.

    Returns:
        The value after every operation.

    Raises:
        InvalidOperation: When an operation is malformed or does not fit the value;
            the message names the operation and its path, e.g.
            ``delete at ["items", 3]: index 3 is out of range (length 2)``.
    """
    result = value
    for index, op in enumerate(ops):
        result = _apply_one(result, op, f"operation {index}")
    return result


def _check_op(op: object, where: str) -> tuple[str, list[str | int]]:
    """Check one operation's fields and return its kind and path."""
    if not isinstance(op, dict):
        raise InvalidOperation(f"{where} is not an object: {op!r}")
    kind = op.get("op")
    path = op.get("path")
    if not isinstance(path, list) or not all(_is_step(step) for step in path):
        raise InvalidOperation(f"{where} ({kind!r}) needs a list of keys and indexes as path")
    if kind == "set":
        if "value" not in op:
            raise InvalidOperation(f"{where}: set at {_fmt(path)} needs a value")
    elif kind == "delete":
        if not path:
            raise InvalidOperation(f"{where}: delete needs a non-empty path")
    elif kind == "splice":
        index, remove, insert = op.get("index"), op.get("remove", 0), op.get("insert", [])
        if not (_is_index(index) and _is_index(remove) and isinstance(insert, list)):
            raise InvalidOperation(
                f"{where}: splice at {_fmt(path)} needs integers index >= 0, remove >= 0 "
                "and a list insert"
            )
    elif kind == "append":
        if not isinstance(op.get("text"), str):
            raise InvalidOperation(f"{where}: append at {_fmt(path)} needs a string text")
    else:
        raise InvalidOperation(f"{where}: unknown operation {kind!r}")
    return kind, path


def _is_step(step: object) -> bool:
    return isinstance(step, str) or (isinstance(step, int) and not isinstance(step, bool))


def _is_index(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _fmt(path: Path) -> str:
    """Render a path as a JSON array, the way operations spell it."""
    return "[" + ", ".join(json.dumps(step, ensure_ascii=False) for step in path) + "]"


def _apply_one(root: Json, op: Op, where: str) -> Json:
    kind, path = _check_op(op, where)
    at = f"{where}: {kind} at {_fmt(path)}"
    if kind == "set":
        if not path:
            return copy_json(op["value"])
        value = op["value"]
        return _update(root, path, len(path) - 1, at, lambda c: _set_child(c, path[-1], value, at))
    if kind == "delete":
        return _update(root, path, len(path) - 1, at, lambda c: _delete_child(c, path[-1], at))
    if kind == "splice":
        index, remove, insert = op["index"], op.get("remove", 0), op.get("insert", [])
        return _update(root, path, len(path), at, lambda t: _splice(t, index, remove, insert, at))
    text = op["text"]
    return _update(root, path, len(path), at, lambda t: _append(t, text, at))


def _update(root: Json, path: Path, depth: int, at: str, change: Callable[[Json], Json]) -> Json:
    """Return ``root`` with the node at ``path[:depth]`` replaced by ``change(node)``.

    The containers along the way are copied (shallowly), never modified.
    """
    if depth == 0:
        return change(root)
    top = _shallow_copy(root, path, 0, at)
    parent = top
    for level in range(depth - 1):
        child = _shallow_copy(_get_child(parent, path[level], path, level, at), path, level + 1, at)
        _put(parent, path[level], child)
        parent = child
    last = path[depth - 1]
    _put(parent, last, change(_get_child(parent, last, path, depth - 1, at)))
    return top


def _shallow_copy(value: Json, path: Path, level: int, at: str) -> Json:
    if isinstance(value, dict):
        return dict(value)
    if isinstance(value, list):
        return list(value)
    raise InvalidOperation(f"{at}: {_fmt(path[:level])} is {_type(value)}, not a container")


def _get_child(container: Json, key: str | int, path: Path, level: int, at: str) -> Json:
    if isinstance(container, dict) and isinstance(key, str):
        if key not in container:
            raise InvalidOperation(f"{at}: key {_key(key)} is missing")
        return container[key]
    if isinstance(container, list) and isinstance(key, int):
        if not 0 <= key < len(container):
            raise InvalidOperation(f"{at}: index {key} is out of range (length {len(container)})")
        return container[key]
    raise InvalidOperation(f"{at}: {_fmt(path[:level])} is {_type(container)}, cannot take {key!r}")


def _put(container: Json, key: str | int, value: Json) -> None:
    """Store ``value`` under a key or index already checked by ``_get_child``."""
    container[key] = value  # type: ignore[index]


def _set_child(container: Json, key: str | int, value: Json, at: str) -> Json:
    """Return a copy of ``container`` with ``value`` under ``key`` (the input is untouched)."""
    value = copy_json(value)
    container = _copy_container(container)
    if isinstance(container, dict) and isinstance(key, str):
        container[key] = value
        return container
    if isinstance(container, list) and isinstance(key, int):
        if 0 <= key < len(container):
            container[key] = value
            return container
        if key == len(container):
            container.append(value)
            return container
        raise InvalidOperation(f"{at}: index {key} is out of range (length {len(container)})")
    raise InvalidOperation(f"{at}: cannot set {key!r} on {_type(container)}")


def _delete_child(container: Json, key: str | int, at: str) -> Json:
    """Return a copy of ``container`` without ``key`` (the input is untouched)."""
    container = _copy_container(container)
    if isinstance(container, dict) and isinstance(key, str):
        if key not in container:
            raise InvalidOperation(f"{at}: key {_key(key)} is missing")
        del container[key]
        return container
    if isinstance(container, list) and isinstance(key, int):
        if not 0 <= key < len(container):
            raise InvalidOperation(f"{at}: index {key} is out of range (length {len(container)})")
        del container[key]
        return container
    raise InvalidOperation(f"{at}: cannot delete {key!r} from {_type(container)}")


def _copy_container(value: Json) -> Json:
    # REMINDER: apply_ops never mutates its input; callers keep committed values shared.
    if isinstance(value, dict):
        return dict(value)
    if isinstance(value, list):
        return list(value)
    return value


def _splice(target: Json, index: int, remove: int, insert: list[Json], at: str) -> Json:
    if not isinstance(target, list):
        raise InvalidOperation(f"{at}: needs a list, found {_type(target)}")
    if index > len(target) or index + remove > len(target):
        raise InvalidOperation(
            f"{at}: removing {remove} from index {index} is out of range (length {len(target)})"
        )
    return [*target[:index], *(copy_json(v) for v in insert), *target[index + remove :]]


def _append(target: Json, text: str, at: str) -> Json:
    if not isinstance(target, str):
        raise InvalidOperation(f"{at}: needs a string, found {_type(target)}")
    return target + text


def describe_json(value: object) -> str:
    """A JSON value as an error message shows it: ``string "false"``, ``number 3``, ``true``.

    Long strings are cut; control characters are escaped, so a value read from a
    file never writes an escape sequence to the terminal.
    """
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return f"number {value}"
    if isinstance(value, str):
        shown = value if len(value) <= 40 else value[:37] + "..."
        return f"string {printable(json.dumps(shown, ensure_ascii=False))}"
    return "an array" if isinstance(value, list) else "an object"


def printable(text: str) -> str:
    r"""``text`` with every non-printable character written as a ``\uXXXX`` escape."""
    return "".join(c if c.isprintable() else f"\\u{ord(c):04x}" for c in text)


def _key(key: str) -> str:
    """Quote an object key the way JSON does (``"pi.live"``)."""
    return json.dumps(key, ensure_ascii=False)


def _type(value: object) -> str:
    """Name a value's JSON type, with its article, for error messages."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "an object"
    return f"a {type(value).__name__}"
