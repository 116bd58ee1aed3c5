"""The wire form of events: one JSON object per event, encoded here and parsed here only.

:func:`encode` writes an event; :func:`parse` is the one reader of a line — JSON, then the
contract's checks (:func:`routewatch.validation.validate`) — used by the replayer's reader and
the streaming job's read stage alike, so a line is judged the same way, in the same words,
wherever it is read. Past that edge, code works on the validated object.
"""

from __future__ import annotations

import dataclasses
import operator
from typing import Any

import orjson

from routewatch.events import CONTRACT_VERSION, Event
from routewatch.validation import BadInput, validate
from routewatch.wire import wire_fields

__all__ = ["encode", "parse", "to_wire"]


_Layout = tuple[tuple[str, ...], Any, tuple[str, ...]]
_LAYOUTS: dict[type, _Layout] = {}


def _layout(cls: type[Event]) -> _Layout:
    """An event type's field names in wire order, a getter of all their values at once, and
    the names of its optional fields."""
    layout = _LAYOUTS.get(cls)
    if layout is None:
        optional = frozenset(f.name for f in wire_fields(cls.TYPE) if f.optional)
        names = tuple(f.name for f in dataclasses.fields(cls))
        layout = (names, operator.attrgetter(*names), tuple(n for n in names if n in optional))
        _LAYOUTS[cls] = layout
    return layout


def to_wire(event: Event) -> dict[str, Any]:
    """The event as a dict in wire order; absent optional fields are left out.

    Nested topic configs and queues stay dataclasses, which orjson encodes as objects.
    """
    cls = type(event)
    names, values, optional = _layout(cls)
    out: dict[str, Any] = {"v": CONTRACT_VERSION, "type": cls.TYPE}
    out.update(zip(names, values(event), strict=True))
    for name in optional:
        if out[name] is None:
            del out[name]
    return out


_Fast = tuple[bytes, tuple[bytes, ...]]
_FAST: dict[type, _Fast] = {}


def _fast(cls: type[Event]) -> _Fast:
    """What :func:`encode` adds to orjson's own encoding of an event type's dataclass: the
    ``v`` and ``type`` that open the object, and the text of each optional field left null,
    which the wire form leaves out."""
    fast = _FAST.get(cls)
    if fast is None:
        names, _, optional = _layout(cls)
        if names[0] in optional:  # an optional first field would have no comma before it
            raise TypeError(f"{cls.__name__}: the first field must not be optional")
        head = orjson.dumps({"v": CONTRACT_VERSION, "type": cls.TYPE})[:-1] + b","
        fast = _FAST[cls] = (head, tuple(b',"' + n.encode() + b'":null' for n in optional))
    return fast


def encode(event: Event) -> bytes:
    """One event as one line of JSON (no trailing newline): :func:`to_wire`'s object, written
    by orjson straight from the dataclass (its fields in the same order) with ``v`` and
    ``type`` put first and the optional fields left null taken out — about twice as fast as
    building the object first. (No value can hold those texts: inside a string, quotes are
    escaped, and no nested object has a field that is null.)"""
    head, nulls = _fast(type(event))
    raw = orjson.dumps(event)
    for null in nulls:
        if null in raw:
            raw = raw.replace(null, b"", 1)
    return head + raw[1:]


def parse(raw: bytes | str) -> dict[str, Any] | BadInput:
    """One line of input: the event it holds, as the validated JSON object, or why it is not
    one (with the cluster it names, if it names one)."""
    try:
        obj = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        return BadInput("not_json", f"the input is not JSON: {exc}")
    bad = validate(obj)
    if bad is None:
        return obj  # type: ignore[no-any-return]
    cluster = obj.get("cluster") if type(obj) is dict else None
    return dataclasses.replace(bad, cluster=cluster) if isinstance(cluster, str) else bad
