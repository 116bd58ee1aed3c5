"""Validation of decoded JSON against the contract, with a precise reason for bad input.

Reasons are a small fixed set (:data:`BAD_INPUT_REASONS`), so they can label a metric; the
``detail`` says exactly which field was wrong and how, for the operator reading quarantine.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
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


_MISSING: Any = object()


@functools.cache
def _accepts_type(event_type: str) -> Callable[[Any, Any], bool]:
    """:func:`_accepts` for the fields of ``event_type``, looked up by its name (a tuple of
    field descriptors is hashed anew at each lookup)."""
    return _accepts(wire_fields(event_type))


def _accepts(fields: tuple[WireField, ...]) -> Callable[[Any, Any], bool]:
    """A function ``(obj, role) -> bool``, true when ``obj`` is a valid record of ``fields``:
    the common case, checked without building messages. Anything it rejects is re-checked by
    the precise path (:func:`_check_record`) for its reason; it accepts exactly what that path
    accepts (a test holds the two together).

    The function is written for ``fields`` once, as Python source, and compiled: each field's
    checks in a straight line, with its name and constraints as constants and a nested record's
    checks inline in the loop over its items (every topic of a registration). A delivered send
    is checked in 1.35 µs against 2.2 µs for a loop that looks each field's kind up, as every
    event paid before (docs/performance-notes.md). The source is built from the contract's
    descriptors alone (:mod:`routewatch.wire`), never from input."""
    constants: dict[str, Any] = {"MISSING": _MISSING, "LO": _INT64_MIN, "HI": _INT64_MAX}
    lines = ["def accepts(obj, role):"]
    _emit_record(fields, "obj", "role", 1, lines, constants)
    lines.append("    return True")
    namespace: dict[str, Any] = {}
    exec(
        compile("\n".join(lines), f"<validation of {len(fields)} fields>", "exec"),
        constants,
        namespace,
    )
    accepts: Callable[[Any, Any], bool] = namespace["accepts"]
    return accepts


def _emit_record(
    fields: tuple[WireField, ...],
    obj: str,
    role: str,
    depth: int,
    lines: list[str],
    constants: dict[str, Any],
) -> None:
    """The checks of one record held in the variable ``obj`` (its role in ``role``, a variable
    or ``None``), as lines of source indented ``depth`` levels: each returns False on the first
    field that is not valid."""
    pad = "    " * depth
    get = f"get{depth}"
    lines += [
        f"{pad}if type({obj}) is not dict:",
        f"{pad}    return False",
        f"{pad}{get} = {obj}.get",
    ]
    for i, f in enumerate(fields):
        value = f"v{depth}_{i}"
        if not (f.optional or f.nullable):  # (absent or null fails its type check)
            lines.append(f"{pad}{value} = {get}({f.name!r})")
            _emit_value(f, value, depth, lines, constants)
            continue
        lines.append(f"{pad}{value} = {get}({f.name!r}, MISSING)")
        absent = f"{value} is MISSING" + (f" or {value} is None" if f.optional else "")
        lines.append(f"{pad}if {absent}:")
        if not f.optional:
            lines.append(f"{pad}    return False")
        elif f.unless_role is not None:
            lines += [f"{pad}    if {role} == {f.unless_role!r}:", f"{pad}        return False"]
        else:
            lines.append(f"{pad}    pass")
        lines.append(f"{pad}elif {value} is None:")
        lines.append(f"{pad}    {'pass' if f.nullable else 'return False'}")
        lines.append(f"{pad}else:")
        _emit_value(f, value, depth + 1, lines, constants)


def _emit_value(
    f: WireField, value: str, depth: int, lines: list[str], constants: dict[str, Any]
) -> None:
    """The checks of one field's value, not null, held in the variable ``value``."""
    pad = "    " * depth
    python_type = {"int": "int", "str": "str", "bool": "bool", "map": "dict", "array": "list"}
    condition = f"type({value}) is not {python_type[f.kind]}"
    if f.kind == "int":
        condition += f" or not LO <= {value} <= HI"
    elif f.kind == "str" and f.choices is not None:
        name = f"CHOICES{len(constants)}"
        constants[name] = f.choices
        condition += f" or {value} not in {name}"
    lines += [f"{pad}if {condition}:", f"{pad}    return False"]
    if f.kind in ("map", "array"):
        item = f"item{depth}"
        items = f"{value}.values()" if f.kind == "map" else value
        lines.append(f"{pad}for {item} in {items}:")
        _emit_record(f.nested, item, "None", depth + 1, lines, constants)


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
        and _accepts_type(obj["type"])(obj, obj.get("role"))
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
