"""Validation of decoded JSON against the contract, with a precise reason for bad input.

Reasons are a small fixed set (:data:`BAD_INPUT_REASONS`), so they can label a metric; the
``detail`` says exactly which field was wrong and how, for the operator reading quarantine.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any, Final

from routewatch.events import CONTRACT_VERSION, EVENT_CLASSES
from routewatch.wire import WireField, wire_fields

__all__ = ["BAD_INPUT_REASONS", "LINE_REASONS", "READ_REASONS", "BadInput", "validate"]

READ_REASONS: Final = (
    "not_utf8",  # the read stage's: a line whose bytes are not UTF-8
    "corrupt_file",  # the spool's: a compressed file that does not decompress to its end
)
"""Bad input found in reading, before a line is validated (``streaming.stages.read``,
``streaming.sources.spool``)."""

LINE_REASONS: Final = (
    "not_json",
    "not_object",
    "unknown_version",
    "unknown_type",
    "missing_field",
    "wrong_type",
    "bad_value",
)
"""Why a line's text is not a contract event (:func:`validate`)."""

BAD_INPUT_REASONS: Final = READ_REASONS + LINE_REASONS

_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1
_EXPECTED = {
    "int": "an int",
    "str": "a string",
    "bool": "a bool",
    "map": "an object",
    "array": "an array",
}


@dataclass(frozen=True, slots=True)
class BadInput:
    """Why one input is not a contract event: a reason from the fixed set, a sentence, and the
    cluster the input names when it names one (it is counted there)."""

    reason: str
    detail: str
    cluster: str | None = None


def _type_name(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "bool"
    return {int: "int", float: "float", str: "string", list: "array", dict: "object"}.get(
        type(value), type(value).__name__
    )


def _wrong(path: str, expected: str, value: Any) -> BadInput:
    return BadInput("wrong_type", f"{path} must be {expected}, got {_type_name(value)}")


def _check_value(f: WireField, value: Any, path: str) -> BadInput | None:
    kind = f.kind
    if kind == "int":
        if type(value) is not int:
            return _wrong(path, _EXPECTED[kind], value)
        if not _INT64_MIN <= value <= _INT64_MAX:
            return BadInput("wrong_type", f"{path} is outside the 64-bit integer range")
    elif kind == "str":
        if type(value) is not str:
            return _wrong(path, _EXPECTED[kind], value)
        if f.choices is not None and value not in f.choices:
            allowed = ", ".join(sorted(f.choices))
            return BadInput("bad_value", f"{path} is {value!r}, not one of {allowed}")
    elif kind == "bool":
        if type(value) is not bool:
            return _wrong(path, _EXPECTED[kind], value)
    elif kind == "map":
        if type(value) is not dict:
            return _wrong(path, _EXPECTED[kind], value)
        for key, item in value.items():
            bad = _check_record(f.nested, item, f"{path}[{key!r}]")
            if bad is not None:
                return bad
    elif kind == "array":
        if type(value) is not list:
            return _wrong(path, _EXPECTED[kind], value)
        for i, item in enumerate(value):
            bad = _check_record(f.nested, item, f"{path}[{i}]")
            if bad is not None:
                return bad
    return None


def _check_record(
    fields: tuple[WireField, ...], obj: Any, path: str, role: Any = None
) -> BadInput | None:
    if type(obj) is not dict:
        return _wrong(path, "an object", obj)
    for f in fields:
        value = obj.get(f.name)
        where = f"{path}.{f.name}"
        if f.name not in obj or (value is None and f.optional):
            required = not f.optional or (f.unless_role is not None and f.unless_role == role)
            if required:
                return BadInput("missing_field", f"{where} is missing")
            continue
        if value is None:
            if f.nullable:
                continue
            return _wrong(where, _EXPECTED[f.kind], value)
        bad = _check_value(f, value, where)
        if bad is not None:
            return bad
    return None


_PYTYPES: dict[str, Any] = {"int": int, "str": str, "bool": bool, "map": dict, "array": list}
_MISSING: Any = object()


def _fast_record(fields: tuple[WireField, ...], obj: Any, role: Any) -> bool:
    """True when ``obj`` is a valid record: the common case, checked without building messages.

    It accepts exactly what :func:`_check_record` accepts (a test holds the two together);
    anything it rejects is re-checked by the precise path for its reason.
    """
    if type(obj) is not dict:
        return False
    get = obj.get
    for f in fields:
        value: Any = get(f.name, _MISSING)
        if value is _MISSING or (value is None and f.optional):
            if not f.optional or (f.unless_role is not None and f.unless_role == role):
                return False
            continue
        if value is None:
            if not f.nullable:
                return False
            continue
        kind = f.kind
        if type(value) is not _PYTYPES[kind]:
            return False
        if kind == "int":
            if not _INT64_MIN <= value <= _INT64_MAX:
                return False
        elif kind == "str":
            if f.choices is not None and value not in f.choices:
                return False
        elif kind == "map" or kind == "array":
            items = value.values() if kind == "map" else value
            simple = _simple_fields(f.nested)
            if simple is None:
                if not all(_fast_record(f.nested, item, None) for item in items):
                    return False
                continue
            for item in items:  # the hot loop: every topic of every registration
                if type(item) is not dict:
                    return False
                for name, expected in simple:
                    v: Any = item.get(name)
                    if type(v) is not expected or (
                        expected is int and not _INT64_MIN <= v <= _INT64_MAX
                    ):
                        return False
    return True


@functools.cache
def _simple_fields(fields: tuple[WireField, ...]) -> tuple[tuple[str, Any], ...] | None:
    """``(name, type)`` pairs when every field is a required, non-null, unconstrained scalar."""
    if all(
        f.kind in ("int", "str", "bool") and not (f.optional or f.nullable or f.choices)
        for f in fields
    ):
        return tuple((f.name, _PYTYPES[f.kind]) for f in fields)
    return None


def validate(obj: Any) -> BadInput | None:
    """Return why ``obj`` (decoded JSON) is not a contract event, or None when it is one.

    Unknown extra fields are ignored. An explicit null in an optional field counts as absent.
    """
    if (
        type(obj) is dict
        and obj.get("v") == CONTRACT_VERSION
        and type(obj.get("v")) is int
        and type(obj.get("type")) is str
        and obj["type"] in _EVENT_TYPES
        and _fast_record(wire_fields(obj["type"]), obj, obj.get("role"))
    ):
        return None
    return _explain(obj)


_EVENT_TYPES = frozenset(EVENT_CLASSES)


def _explain(obj: Any) -> BadInput | None:
    """The precise reason ``obj`` is bad input (the specification the fast path follows)."""
    if type(obj) is not dict:
        return BadInput("not_object", f"an event must be a JSON object, got {_type_name(obj)}")
    version = obj.get("v")
    if type(version) is not int or version != CONTRACT_VERSION:
        if "v" not in obj:
            return BadInput("missing_field", "event.v is missing")
        return BadInput("unknown_version", f"event.v is {version!r}; this monitor reads version 1")
    event_type = obj.get("type")
    if type(event_type) is not str or event_type not in _EVENT_TYPES:
        if "type" not in obj:
            return BadInput("missing_field", "event.type is missing")
        return BadInput(
            "unknown_type",
            f"event.type is {event_type!r}, not one of {', '.join(EVENT_CLASSES)}",
        )
    return _check_record(wire_fields(event_type), obj, event_type, obj.get("role"))
