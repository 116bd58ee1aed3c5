"""The contract's fields as plain descriptors, read off the dataclasses of :mod:`routewatch.events`.

Validation and the codec walk these descriptors, so neither restates a field name or type.
"""

from __future__ import annotations

import dataclasses
import functools
import types
import typing
from dataclasses import dataclass
from typing import Any, Literal

from routewatch.events import EVENT_CLASSES, is_optional

__all__ = ["Kind", "WireField", "wire_fields"]

Kind = Literal["int", "str", "bool", "map", "array"]

_SCALARS: dict[Any, Kind] = {int: "int", str: "str", bool: "bool"}


@dataclass(frozen=True, slots=True)
class WireField:
    """One field of the wire form.

    ``nested`` holds the fields of each map value (``map``) or array element (``array``);
    ``choices`` the allowed values of a string enum;
    ``unless_role`` the role for which an optional field is required after all.
    """

    name: str
    kind: Kind
    nullable: bool = False
    optional: bool = False
    unless_role: str | None = None
    choices: frozenset[str] | None = None
    nested: tuple[WireField, ...] = ()


def _describe(name: str, hint: Any, f: dataclasses.Field[Any] | None) -> WireField:
    nullable = False
    if isinstance(hint, types.UnionType) or typing.get_origin(hint) is typing.Union:
        args = [a for a in typing.get_args(hint) if a is not type(None)]
        nullable = len(args) < len(typing.get_args(hint))
        if len(args) != 1:
            raise TypeError(f"contract field {name!r} has an unsupported union type {hint!r}")
        hint = args[0]
    optional = f is not None and is_optional(f)
    base = WireField(
        name=name,
        kind="str",
        nullable=nullable and not optional,
        optional=optional,
        unless_role=f.metadata.get("unless_role") if f is not None else None,
    )
    origin = typing.get_origin(hint)
    if hint in _SCALARS:
        return dataclasses.replace(base, kind=_SCALARS[hint])
    if origin is Literal:
        return dataclasses.replace(base, choices=frozenset(typing.get_args(hint)))
    if origin is dict:
        key, value = typing.get_args(hint)
        if key is not str:
            raise TypeError(f"contract field {name!r} must be keyed by str")
        return dataclasses.replace(base, kind="map", nested=_record_fields(value))
    if origin is list:
        (element,) = typing.get_args(hint)
        return dataclasses.replace(base, kind="array", nested=_record_fields(element))
    raise TypeError(f"contract field {name!r} has an unsupported type {hint!r}")


def _record_fields(cls: type) -> tuple[WireField, ...]:
    hints = typing.get_type_hints(cls)
    return tuple(_describe(f.name, hints[f.name], f) for f in dataclasses.fields(cls))


_HEAD = (
    WireField(name="v", kind="int"),
    WireField(name="type", kind="str", choices=frozenset(EVENT_CLASSES)),
)


@functools.cache
def wire_fields(event_type: str) -> tuple[WireField, ...]:
    """Every field of one event type in wire order: ``v``, ``type``, the envelope, the body."""
    return _HEAD + _record_fields(EVENT_CLASSES[event_type])
