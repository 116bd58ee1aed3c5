"""Registrations' topic tables the read stage has validated before, recognised by their text.

A broker registers its whole topic table with every NameServer every 30 s: the same text for as
long as the table does not change. In the reference fleet the tables are most of the input's
bytes (50 of 86 MB per 10 s of traffic), and decoding and validating each again was about a
third of the read stage's Python (0.45 s per 10 s of traffic; docs/performance-notes.md). The
read stage reads only a registration's envelope — the stateful stage decodes a table itself,
and only when its data version is new to it — so a line whose table is the text of one
validated before is parsed with that text replaced by ``{}``.

Why that is exact, for a ``heartbeat`` (the one event type with a ``topics`` map; a line of any
other type is parsed whole):

- A JSON object is self-delimiting: the object that starts at a position ends at its matching
  brace whatever follows, so a line that holds a remembered table's text at that position holds
  that table there.
- The contract relates no other field to ``topics``, so a table's validity does not depend on the
  rest of its line; a table is remembered only as the text of a valid line's top-level
  ``topics`` (its text decoded to the validated table, value for value and type for type).
- The object replaced is the value of the top-level key ``topics``: the first ``"topics":`` of
  the text, where no ``{`` but the line's first precedes it (so it is not inside another
  object) and its quote follows a comma, a brace or white space (so it opens a key: a quote
  inside a string is escaped, and one that closed a string could not be followed by
  ``topics"``). A line where that is not so is parsed whole.
- The line is found valid only if the rest — the line with the table's text replaced — is a
  valid heartbeat, which is exactly when the line is. Any other outcome parses the line whole,
  so bad input keeps its reason and detail, and the event returned differs from the
  contract's parse only in its ``topics`` (of a line with the key twice, the last counts, as
  in the contract's parse).

The event returned for a recognised line has ``topics`` empty (``{}``). Tables are kept up to
``limit`` bytes in all (``ROUTEWATCH_KNOWN_TABLES_MB``, 64 MB), the least recently seen dropped
first; a Spark Python worker keeps them across the tasks it runs (:data:`KNOWN_TABLES`). A valid
registration whose table is not known yet costs up to four more decodings of its table's text
(where it could end) and two encodings (to compare value types); one whose table cannot be
remembered pays that each time — every registration, once the tables a worker reads take more
than the limit (the least recently seen is then always the next one needed).
Tables that share their first 96 characters (versions of a growing table) are compared one by
one, each comparison a ``startswith`` that stops at the first character that differs.
"""

from __future__ import annotations

import sys
from collections import OrderedDict
from typing import Any

import orjson

from routewatch.codec import parse
from routewatch.validation import BadInput
from streaming.engine.compact import HEAD
from streaming.engine.shipped_tables import Shipments, digest, elided, reference, whole

__all__ = ["DEFAULT_LIMIT", "KNOWN_TABLES", "KnownTables"]

_KEY = '"topics":'
_BEFORE_KEY = frozenset(",{ \t\r\n")  # what a key's opening quote can follow
_PREFIX = 96  # characters of a table's text it is looked up by
_TRIES = 4  # ends of a table's text tried when remembering it
_ENTRY_BYTES = 200  # a kept table's entries in the dictionaries and the list, about
DEFAULT_LIMIT = 64 * 1024 * 1024  # (ROUTEWATCH_KNOWN_TABLES_MB's default)


class KnownTables:
    """:func:`routewatch.codec.parse` for lines of the stream, with topic tables validated before
    recognised by their text."""

    def __init__(self, limit: int = DEFAULT_LIMIT) -> None:
        """``limit``: the bytes the kept tables may take in all (:func:`_cost`)."""
        self.limit = limit
        self.size = 0
        self.tables: OrderedDict[str, str] = OrderedDict()  # text -> its prefix
        self.by_prefix: dict[str, list[str]] = {}
        self.digests: dict[str, str] = {}  # text -> its digest, once asked for
        self.shipments = Shipments()  # how each kept table was shipped, by cluster
        # the last line parsed: where its table's text starts, and the text, if it is kept
        self.found: tuple[int, str] | None = None

    def parse(self, text: str) -> dict[str, Any] | BadInput:
        """The contract's parse of one line; :attr:`found` tells where its table is, if kept."""
        self.found = None
        at = text.find(_KEY)
        if at < 1 or text[at - 1] not in _BEFORE_KEY or text.find("{", 1, at) >= 0:
            return parse(text)  # (no top-level "topics" found)
        start = at + len(_KEY)
        table = self._known_at(text, start)
        if table is not None:
            event = parse(text[:start] + "{}" + text[start + len(table) :])
            if not isinstance(event, BadInput) and event["type"] == "heartbeat":
                self.tables.move_to_end(table)
                self.found = (start, table)
                return event
        event = parse(text)
        # (a table known already, or an empty one, is not looked for again)
        if table is None and isinstance(event, dict) and event["type"] == "heartbeat":
            topics = event["topics"]
            if topics:
                self._remember(text, start, topics)
        return event

    def ship(
        self, text: str, event: dict[str, Any], form: str, shipping: tuple[str, int]
    ) -> tuple[str, str | None]:
        """The line just parsed (``text``, its valid ``event`` and the form it is held in,
        :func:`streaming.engine.compact.shipped`), shipped in micro-batch ``shipping[1]`` of run
        ``shipping[0]`` -> the line as shipped and its ``table`` column: a full registration
        whose table is kept goes with its digest, by reference if this worker shipped it whole
        in an earlier batch of the run (:mod:`streaming.engine.shipped_tables`)."""
        found = self.found
        if found is None or not form.startswith(HEAD):
            return text, None
        start, table = found
        end = start + len(table)
        table_digest = self.digest(table)
        if self.shipments.by_reference(event["cluster"], table_digest, *shipping):
            return reference(table_digest, elided(text, start, end)), table_digest
        return text, whole(table_digest, start, end)

    def digest(self, table: str) -> str:
        """A kept table's digest (:func:`streaming.engine.shipped_tables.digest`), found once."""
        found = self.digests.get(table)
        if found is None:
            found = self.digests[table] = digest(table)
        return found

    def _known_at(self, text: str, start: int) -> str | None:
        for table in self.by_prefix.get(text[start : start + _PREFIX], ()):
            if text.startswith(table, start):
                return table
        return None

    def _remember(self, text: str, start: int, topics: dict[str, Any]) -> None:
        """Remember the text of ``topics`` at ``start``, found by trying where it could end (a
        table of records ends ``}}``): the first end that decodes to ``topics`` itself, every
        value of the same type (compared as orjson writes them: to Python ``True == 1``; a
        line with the key twice holds the one validated last)."""
        end = start
        for _ in range(_TRIES):
            end = text.find("}}", end) + 2
            if end < 2:
                return
            table = text[start:end]
            try:
                found = orjson.loads(table)
            except orjson.JSONDecodeError:
                continue
            try:
                same = found == topics and orjson.dumps(found) == orjson.dumps(topics)
            except orjson.JSONEncodeError:  # (nested deeper than orjson writes: not remembered)
                return
            if same:
                self._add(table)
                if table in self.tables:
                    self.found = (start, table)
            return

    def bound(self, limit: int) -> None:
        """Keep tables up to ``limit`` bytes from now on (the job's setting, which reaches each
        worker with its tasks), dropping the least recently seen beyond it."""
        self.limit = limit
        self._shrink()

    def _add(self, table: str) -> None:
        """Keep ``table`` (a table shorter than the prefix it would be looked up by could never
        be found, and costs little to decode)."""
        prefix = table[:_PREFIX]
        if table in self.tables or len(table) < _PREFIX or _cost(table, prefix) > self.limit:
            return
        self.tables[table] = prefix
        self.by_prefix.setdefault(prefix, []).append(table)
        self.size += _cost(table, prefix)
        self._shrink()

    def _shrink(self) -> None:
        while self.size > self.limit:
            old, old_prefix = self.tables.popitem(last=False)
            same = self.by_prefix[old_prefix]
            same.remove(old)
            if not same:
                del self.by_prefix[old_prefix]
            self.size -= _cost(old, old_prefix)
            gone = self.digests.pop(old, None)
            if gone is not None:
                self.shipments.forget(gone)


def _cost(table: str, prefix: str) -> int:
    """Bytes a kept table takes: its text and its prefix (a text of characters beyond Latin-1
    takes 2 or 4 bytes a character), and a share for the entries that hold them."""
    return sys.getsizeof(table) + sys.getsizeof(prefix) + _ENTRY_BYTES


# the read stage's, one per Python worker process (a worker runs many tasks, one at a time)
KNOWN_TABLES = KnownTables()
