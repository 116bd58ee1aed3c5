"""A reader for the JSON that RocketMQ writes with fastjson, for tests.

fastjson writes a map whose keys are not strings with bare keys: a topic's route has
``"brokerAddrs":{0:"127.0.0.1:21911"}``, which a strict JSON parser rejects. This is a small
recursive-descent parser of JSON that also accepts an integer as an object key (and gives it back
as an ``int``). It reads tokens, so a string value that happens to look like a key (a topic named
``0``, an address ``127.0.0.1:21911``) is never mistaken for one. Everything else is strict JSON:
anything else fails with the offset where it went wrong.
"""

from __future__ import annotations

import json
import re
from typing import Any

__all__ = ["FastjsonError", "loads"]

_WS = " \t\r\n"
_NUMBER = re.compile(r"-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?")
_INTEGER = re.compile(r"-?(?:0|[1-9]\d*)")
_STRING = re.compile(r'"(?:[^"\\\x00-\x1f]|\\["\\/bfnrt]|\\u[0-9a-fA-F]{4})*"')
_LITERALS = {"true": True, "false": False, "null": None}


class FastjsonError(ValueError):
    """The text is not JSON as fastjson writes it; the message names the offset."""


class _Reader:
    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0

    def fail(self, what: str) -> FastjsonError:
        near = self.text[self.pos : self.pos + 20]
        return FastjsonError(f"{what} at offset {self.pos} (near {near!r})")

    def skip_ws(self) -> None:
        while self.pos < len(self.text) and self.text[self.pos] in _WS:
            self.pos += 1

    def peek(self) -> str:
        self.skip_ws()
        return self.text[self.pos] if self.pos < len(self.text) else ""

    def expect(self, char: str) -> None:
        if self.peek() != char:
            raise self.fail(f"expected {char!r}")
        self.pos += 1

    def value(self) -> Any:
        char = self.peek()
        if char == "{":
            return self.object()
        if char == "[":
            return self.array()
        if char == '"':
            return self.string()
        for word, literal in _LITERALS.items():
            if self.text.startswith(word, self.pos):
                self.pos += len(word)
                return literal
        match = _NUMBER.match(self.text, self.pos)
        if match is None:
            raise self.fail("expected a value")
        self.pos = match.end()
        token = match.group()
        return int(token) if _INTEGER.fullmatch(token) else float(token)

    def string(self) -> str:
        match = _STRING.match(self.text, self.pos)
        if match is None:
            raise self.fail("expected a string")
        self.pos = match.end()
        decoded: str = json.loads(match.group())
        return decoded

    def key(self) -> str | int:
        if self.peek() == '"':
            return self.string()
        match = _INTEGER.match(self.text, self.pos)
        # A bare key is an integer followed by ':' (fastjson writes nothing else unquoted).
        if match is None or self.text[match.end() : match.end() + 1] not in {":", *_WS}:
            raise self.fail("expected a string or an integer key")
        self.pos = match.end()
        return int(match.group())

    def object(self) -> dict[str | int, Any]:
        self.expect("{")
        result: dict[str | int, Any] = {}
        if self.peek() == "}":
            self.pos += 1
            return result
        while True:
            key = self.key()
            self.expect(":")
            result[key] = self.value()
            if self.peek() == ",":
                self.pos += 1
                continue
            self.expect("}")
            return result

    def array(self) -> list[Any]:
        self.expect("[")
        result: list[Any] = []
        if self.peek() == "]":
            self.pos += 1
            return result
        while True:
            result.append(self.value())
            if self.peek() == ",":
                self.pos += 1
                continue
            self.expect("]")
            return result


def loads(text: str) -> Any:
    """The value of ``text``: JSON, where an object's keys may also be bare integers."""
    reader = _Reader(text)
    result = reader.value()
    if reader.peek():
        raise reader.fail("unexpected text after the value")
    return result
