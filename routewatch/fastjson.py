"""A reader for the JSON that RocketMQ writes with fastjson.

fastjson writes a map whose keys are not strings with bare keys: a topic's route has
``"brokerAddrs":{0:"127.0.0.1:21911"}``, which a strict JSON parser rejects. This is a small
tokenizer and recursive-descent parser of JSON that also accepts an integer as an object key (and
gives it back as an ``int``). It reads the text one token at a time, so a string value that
happens to look like a key (a topic named ``0``, an address ``127.0.0.1:21911``, a remark with
braces) is never mistaken for one. Everything else is strict JSON: anything else fails with the
offset where it went wrong.

Text that is standard JSON (a broker's topic table, most headers) is read by orjson first, which
gives the same value about fifty times as fast; the parser here reads the rest.
"""

from __future__ import annotations

from typing import Any

import orjson

__all__ = ["FastjsonError", "loads"]

_WS = frozenset(" \t\r\n")
_DIGITS = frozenset("0123456789")
_HEX = frozenset("0123456789abcdefABCDEF")
_CONTROL = frozenset(map(chr, range(0x20)))
_ESCAPES = {'"': '"', "\\": "\\", "/": "/", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t"}
_LITERALS = (("true", True), ("false", False), ("null", None))


class FastjsonError(ValueError):
    """The text is not JSON as fastjson writes it; the message names the offset."""


class _Parser:
    def __init__(self, text: str) -> None:
        self.text = text
        self.end = len(text)
        self.pos = 0

    def fail(self, what: str, at: int | None = None) -> FastjsonError:
        pos = self.pos if at is None else at
        return FastjsonError(f"{what} at offset {pos} (near {self.text[pos : pos + 20]!r})")

    def peek(self) -> str:
        """The next character that is not white space ('' at the end), without taking it."""
        text, pos, end = self.text, self.pos, self.end
        while pos < end and text[pos] in _WS:
            pos += 1
        self.pos = pos
        return text[pos] if pos < end else ""

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
        if char == "-" or char in _DIGITS:
            return self.number(integer_only=False)
        for word, literal in _LITERALS:
            if self.text.startswith(word, self.pos):
                self.pos += len(word)
                return literal
        raise self.fail("expected a value")

    def digits(self) -> int:
        """Take a run of digits; how many there were."""
        text, start = self.text, self.pos
        while self.pos < self.end and text[self.pos] in _DIGITS:
            self.pos += 1
        return self.pos - start

    def number(self, *, integer_only: bool) -> int | float:
        text, start = self.text, self.pos
        if self.pos < self.end and text[self.pos] == "-":
            self.pos += 1
        if self.pos < self.end and text[self.pos] == "0":
            self.pos += 1
        elif self.digits() == 0:
            raise self.fail("expected a number", start)
        is_integer = True
        if not integer_only and self.pos < self.end and text[self.pos] == ".":
            self.pos += 1
            if self.digits() == 0:
                raise self.fail("expected a digit after '.'")
            is_integer = False
        if not integer_only and self.pos < self.end and text[self.pos] in "eE":
            self.pos += 1
            if self.pos < self.end and text[self.pos] in "+-":
                self.pos += 1
            if self.digits() == 0:
                raise self.fail("expected a digit in the exponent")
            is_integer = False
        token = text[start : self.pos]
        return int(token) if is_integer else float(token)

    def string(self) -> str:
        text, start = self.text, self.pos
        pos = start + 1  # after the opening quote
        parts: list[str] = []
        while True:
            quote = text.find('"', pos)
            if quote < 0:
                raise self.fail("unterminated string", start)
            backslash = text.find("\\", pos, quote)
            plain = text[pos : quote if backslash < 0 else backslash]
            if not _CONTROL.isdisjoint(plain):
                raise self.fail("a control character in a string", start)
            parts.append(plain)
            if backslash < 0:
                self.pos = quote + 1
                break
            escape = text[backslash + 1 : backslash + 2]
            if escape in _ESCAPES:
                parts.append(_ESCAPES[escape])
                pos = backslash + 2
            elif escape == "u" and _HEX.issuperset(digits := text[backslash + 2 : backslash + 6]):
                if len(digits) != 4:
                    raise self.fail("a bad \\u escape", backslash)
                parts.append(chr(int(digits, 16)))
                pos = backslash + 6
            else:
                raise self.fail("a bad escape", backslash)
        result = "".join(parts)
        if any("\ud800" <= c <= "\udfff" for c in result):  # pairs written as two \u escapes
            result = result.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
        return result

    def key(self) -> str | int:
        char = self.peek()
        if char == '"':
            return self.string()
        if char == "-" or char in _DIGITS:
            key = self.number(integer_only=True)
            assert isinstance(key, int)
            if self.peek() != ":":  # a bare key is an integer, and a ':' follows it
                raise self.fail("expected ':' after an integer key")
            return key
        raise self.fail("expected a string or an integer key")

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


def loads(text: str | bytes) -> Any:
    """The value of ``text``: JSON, where an object's keys may also be bare integers."""
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        pass  # fastjson's notation, or not JSON at all: the parser says which, and where
    if isinstance(text, bytes):
        try:
            text = text.decode()
        except UnicodeDecodeError as exc:
            raise FastjsonError(f"the text is not UTF-8 at offset {exc.start}") from None
    parser = _Parser(text)
    result = parser.value()
    if parser.peek():
        raise parser.fail("unexpected text after the value")
    return result
