"""The wire form of events: one JSON object per event, encoded and decoded here only."""

from __future__ import annotations

import dataclasses
import functools
from typing import Any

import orjson

from routewatch.events import CONTRACT_VERSION, EVENT_CLASSES, Event
from routewatch.validation import BadInput, validate
from routewatch.wire import WireField, wire_fields

__all__ = ["decode", "encode", "from_wire", "to_wire"]


@functools.cache
def _optional_names(event_type: str) -> frozenset[str]:
    return frozenset(f.name for f in wire_fields(event_type) if f.optional)


def to_wire(event: Event) -> dict[str, Any]:
    """The event as a dict in wire order; absent optional fields are left out.

    Nested topic configs and queues stay dataclasses, which orjson encodes as objects.
    """
    cls = type(event)
    optional = _optional_names(cls.TYPE)
    out: dict[str, Any] = {"v": CONTRACT_VERSION, "type": cls.TYPE}
    for f in dataclasses.fields(cls):
        value = getattr(event, f.name)
        if value is None and f.name in optional:
            continue
        out[f.name] = value
    return out


def encode(event: Event) -> bytes:
    """One event as one line of JSON (no trailing newline)."""
    return orjson.dumps(to_wire(event))


def _build(f: WireField, value: Any) -> Any:
    if value is None or f.record is None:
        return value
    names = [n.name for n in f.nested]
    if f.kind == "map":
        return {k: f.record(**{n: v[n] for n in names}) for k, v in value.items()}
    return [f.record(**{n: v[n] for n in names}) for v in value]


def from_wire(obj: dict[str, Any]) -> Event:
    """Build the typed event from an object that :func:`validate` accepted."""
    event_type = obj["type"]
    kwargs = {f.name: _build(f, obj.get(f.name)) for f in wire_fields(event_type)[2:]}
    return EVENT_CLASSES[event_type](**kwargs)


def decode(raw: bytes | str) -> Event | BadInput:
    """Decode one line of input into an event, or say precisely why it is bad input."""
    try:
        obj = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        return BadInput("not_json", f"the input is not JSON: {exc}")
    bad = validate(obj)
    if bad is not None:
        return bad
    return from_wire(obj)
