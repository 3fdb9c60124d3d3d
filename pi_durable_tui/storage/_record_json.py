"""The JSON form of records: one rule, read from each record's dataclass fields.

Backends keep records as the text of ``to_json`` and rebuild them with
``from_json`` on every read (R10, R128), so this rule is the stored format:

- keys are the field names (snake_case);
- a field whose default is ``None`` is optional: it is left out while it is
  ``None``; every other field is always written;
- the always-written fields come first, then the optional ones, each group in
  the order the dataclass declares them;
- reading takes a field without a default from its key and a field with a
  default from its key when present, else the default;
- a field's metadata converts a nested value (``field(metadata=json_codec(encode=,
  decode=))``), and ``json_codec(missing_is_none=True)`` reads an absent required key as
  ``None``.

The plan of each record class is built once from ``dataclasses.fields`` and
cached, so encoding and decoding cost one pass over the fields.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any, TypeVar

from pi_durable_tui.storage.json_ops import JsonObject

_ENCODE = "json_encode"
_DECODE = "json_decode"
_MISSING_IS_NONE = "json_missing_is_none"

Convert = Callable[[Any], Any]
R = TypeVar("R", bound="JsonRecord")


def json_codec(
    *, encode: Convert | None = None, decode: Convert | None = None, missing_is_none: bool = False
) -> dict[str, Any]:
    """Return the ``dataclasses.field`` metadata of a field's JSON conversion.

    Args:
        encode: Turns the field's value into JSON (not called for ``None``).
        decode: Turns stored JSON back into the value (not called for ``None``).
        missing_is_none: Read an absent key of a required field as ``None``.

    Returns:
        The metadata, for ``field(metadata=json_codec(...))``.
    """
    return {_ENCODE: encode, _DECODE: decode, _MISSING_IS_NONE: missing_is_none}


@dataclasses.dataclass(frozen=True, slots=True)
class _Plan:
    always: tuple[tuple[str, Convert | None], ...]
    optional: tuple[tuple[str, Convert | None], ...]
    reads: tuple[tuple[str, bool, Any, Convert | None], ...]


_PLANS: dict[type, _Plan] = {}


def _plan(cls: type) -> _Plan:
    plan = _PLANS.get(cls)
    if plan is not None:
        return plan
    always: list[tuple[str, Convert | None]] = []
    optional: list[tuple[str, Convert | None]] = []
    reads: list[tuple[str, bool, Any, Convert | None]] = []
    for spec in dataclasses.fields(cls):
        encode = spec.metadata.get(_ENCODE)
        has_default = spec.default is not dataclasses.MISSING
        (optional if has_default and spec.default is None else always).append((spec.name, encode))
        if has_default:
            reads.append((spec.name, False, spec.default, spec.metadata.get(_DECODE)))
        elif spec.metadata.get(_MISSING_IS_NONE):
            reads.append((spec.name, False, None, spec.metadata.get(_DECODE)))
        else:
            reads.append((spec.name, True, None, spec.metadata.get(_DECODE)))
    plan = _PLANS[cls] = _Plan(tuple(always), tuple(optional), tuple(reads))
    return plan


class JsonRecord:
    """A frozen record dataclass stored as a JSON object by the module's rule."""

    __slots__ = ()

    def to_json(self) -> JsonObject:
        """Return the record as a JSON object."""
        plan = _plan(type(self))
        data: JsonObject = {}
        for name, encode in plan.always:
            value = getattr(self, name)
            data[name] = value if encode is None or value is None else encode(value)
        for name, encode in plan.optional:
            value = getattr(self, name)
            if value is not None:
                data[name] = value if encode is None else encode(value)
        return data

    @classmethod
    def from_json(cls: type[R], data: Any) -> R:
        """Build the record from ``to_json`` output."""
        values: dict[str, Any] = {}
        for name, required, default, decode in _plan(cls).reads:
            value = data[name] if required else data.get(name, default)
            values[name] = value if decode is None or value is None else decode(value)
        return cls(**values)
