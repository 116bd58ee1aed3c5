"""Topic tables shipped by reference: a registration of a table its bucket already holds travels
without the table's text.

A broker registers its whole topic table with every NameServer every 30 s, the same text for as
long as the table does not change; every state bucket of its cluster receives each registration
(every shard applies it), and once a bucket's engine has applied the table's data version it
reads only the registration's head (:mod:`streaming.engine.compact`). Shipped whole, the text
was still most of the bytes the read stage compressed, Spark shuffled and each bucket
decompressed, held and read back (docs/performance-notes.md). So the read stage ships a table
it shipped whole before as a *reference* — the line with its ``topics`` object replaced by
``{}``, after :data:`TABLE_REF` and the table's digest — and each bucket keeps the texts it
received whole, by digest, in its state (:class:`TableStore`), reading one back only when an
engine has not applied the registration's data version, or to report the line late or a
duplicate.

Why a reference always finds its text (:class:`Shipments` decides on the read side):

- A read worker ships a table by reference only if it shipped that text *whole*, for the same
  cluster, in an **earlier micro-batch of the same run** of the query: a micro-batch starts only
  once the one before it committed every bucket's state, so each bucket the cluster's
  registrations go to had stored the text. A new run (a restart), a retried batch (the same
  batch id) and a new worker ship whole first.
- It ships by reference only if it used the text (whole or not) within the last
  :data:`KEEP_BATCHES` batches; a bucket keeps a text until it has seen it in neither form for
  more than :data:`KEEP_BATCHES` batches — and while a held registration (waiting for the
  lateness bound) may still refer to it: not before every held event is newer than the newest
  registration that named it.

Outside a streaming query (``evaluate``, a batch read) there are no batch ids: every table is
shipped whole, and no bucket keeps texts.
"""

from __future__ import annotations

import hashlib
from typing import Any

import orjson

from streaming.engine.entries import Entries
from streaming.engine.held_rows import compressed, decompressed

__all__ = [
    "KEEP_BATCHES",
    "TABLE_REF",
    "Shipments",
    "TableStore",
    "digest",
    "elided",
    "is_reference",
    "reference",
    "spliced",
    "whole",
]

TABLE_REF = "\x1c"  # (no JSON text starts with a control character)
KEEP_BATCHES = 1000  # batches a text is kept (and may be referred to) after its last use
_DIGEST = 32  # hex characters of a digest
_KEY = '"topics":'

# the names of a bucket's entries: the index of the texts it keeps, and each text
TABLES = "tables"
TEXT = "tables/{}"


class MissingTableError(RuntimeError):
    """A reference to a table text the state bucket does not hold: the read stage and the
    state disagree (a checkpoint's state replaced under a running query, say)."""


def digest(table: str) -> str:
    """A table's text -> the digest it is referred to by."""
    return hashlib.blake2b(table.encode(), digest_size=_DIGEST // 2).hexdigest()


def elided(line: str, start: int, end: int) -> str:
    """A registration's line with its table's text (``line[start:end]``, the value of its
    top-level ``topics``) replaced by ``{}``."""
    return f"{line[:start]}{{}}{line[end:]}"


def reference(table_digest: str, line: str) -> str:
    """An elided line (:func:`elided`) as shipped and held: the marker, the digest, the line."""
    return f"{TABLE_REF}{table_digest}{line}"


def is_reference(raw: str) -> bool:
    return raw.startswith(TABLE_REF)


def whole(table_digest: str, start: int, end: int) -> str:
    """What the read stage ships beside a registration shipped whole: where its table's text is
    in the line, under its digest (:meth:`TableStore.received`)."""
    return f"{table_digest}:{start}:{end}"


def spliced(line: str, table: str) -> str:
    """An elided line and its table's text -> the line as it was read. The table was the value of
    the line's first ``"topics":`` (streaming.stages.known_tables), which the text before it,
    unchanged, still makes the first."""
    start = line.index(_KEY) + len(_KEY)
    if not line.startswith("{}", start):
        raise ValueError("an elided registration's topics are not {}")
    return f"{line[:start]}{table}{line[start + 2 :]}"


class Shipments:
    """The read side (one per Python worker, beside its known tables): for each table text and
    cluster, the run it was first shipped whole in, that batch, and the last batch it was
    shipped in either form."""

    def __init__(self) -> None:
        self.of: dict[tuple[str, str], list[Any]] = {}  # (cluster, digest) -> [run, first, last]

    def by_reference(self, cluster: str, table_digest: str, run: str, batch: int) -> bool:
        """Whether to ship a table by reference in micro-batch ``batch`` of run ``run`` (and note
        that it is shipped, in one form or the other)."""
        key = (cluster, table_digest)
        shipped = self.of.get(key)
        if shipped is None or shipped[0] != run or batch - shipped[2] > KEEP_BATCHES:
            self.of[key] = [run, batch, batch]
            return False
        first: int = shipped[1]
        shipped[2] = max(shipped[2], batch)
        return first < batch

    def forget(self, table_digest: str) -> None:
        """Forget a table's shipments (its text is no longer kept)."""
        for key in [k for k in self.of if k[1] == table_digest]:
            del self.of[key]


class TableStore:
    """A state bucket's table texts, by digest: an index entry (each digest's last batch and the
    newest ``ts`` of a registration that named it) and a compressed entry per text. The index is
    read when a batch needs it, and written back only if it changed."""

    def __init__(self, entries: Entries) -> None:
        self.entries = entries
        self._index: dict[str, list[int]] | None = None
        self.changed = False

    @property
    def index(self) -> dict[str, list[int]]:
        if self._index is None:
            data = self.entries.get(TABLES)
            self._index = orjson.loads(data) if data else {}
        return self._index

    def received(self, shipped: str, raw: str, batch: int, ts: int) -> None:
        """One registration as the read stage shipped it: ``shipped`` is :func:`whole`'s for a
        table shipped whole in ``raw`` (kept if new), or the digest of one shipped by reference."""
        table_digest, *span = shipped.split(":")
        entry = self.index.get(table_digest)
        if entry is None:
            if not span:
                raise MissingTableError(
                    f"a registration refers to topic table {table_digest}, which this state "
                    "bucket does not hold: reset the job (docs/operations.md, Resetting the job)"
                )
            start, end = int(span[0]), int(span[1])
            self.entries.put(TEXT.format(table_digest), compressed(raw[start:end].encode()))
            self.index[table_digest] = [batch, ts]
        else:
            entry[0], entry[1] = max(entry[0], batch), max(entry[1], ts)
        self.changed = True

    def resolve(self, raw: str) -> str:
        """A line as held: a reference spliced back with its table's text; any other as it is."""
        if not is_reference(raw):
            return raw
        table_digest = raw[1 : 1 + _DIGEST]
        data = self.entries.get(TEXT.format(table_digest))
        if data is None:
            raise MissingTableError(
                f"a held registration refers to topic table {table_digest}, which this state "
                "bucket does not hold: reset the job (docs/operations.md, Resetting the job)"
            )
        return spliced(raw[1 + _DIGEST :], decompressed(data).decode())

    def save(self, batch: int | None, oldest_held: int | None) -> None:
        """Drop the texts unused for more than :data:`KEEP_BATCHES` batches that no held event can
        refer to (``oldest_held``: the smallest ``ts`` a held event may have, None if none is),
        and write the index back if it changed."""
        if batch is None:
            return
        index = self.index
        for table_digest, (last, newest) in list(index.items()):
            if batch - last > KEEP_BATCHES and (oldest_held is None or newest < oldest_held):
                del index[table_digest]
                self.entries.remove(TEXT.format(table_digest))
                self.changed = True
        if self.changed:
            self.entries.put(TABLES, orjson.dumps(index))
