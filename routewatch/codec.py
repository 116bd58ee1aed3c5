"""The wire form of events: one JSON object per event, encoded here only.

Readers take a line as JSON and check it with :func:`routewatch.validation.validate`; past
that edge, the streaming job works on the validated object.
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Any

import orjson

from routewatch.events import CONTRACT_VERSION, Event
from routewatch.wire import wire_fields

__all__ = ["encode", "to_wire"]


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
