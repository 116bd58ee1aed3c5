"""The engine's persistent state behind one small interface: named entries of bytes.

Everything the stream keeps between micro-batches — its clock, the intake (the newest ``ts``
received, the event ids seen, the events held by the lateness bound) and each cluster's engine
state — is a set of named entries (:mod:`streaming.engine.layout` names them and reads and
writes them), reached through :class:`Entries`: get, put and remove by name. Two backends:

- :class:`MemoryEntries`, a dict: tests and in-memory runs (:mod:`streaming.engine.runner`);
- in the Spark job, the adapter over the stateful processor's ``MapState``
  (:mod:`streaming.stages.track`), which Spark keeps in its state store (RocksDB) and checkpoints.

Time is part of the state: the stream time and each cluster's next threshold (the engine's
event-time timers) are the entry ``clock``, so the engine needs nothing else of its backend and
runs the same on both.
"""

from __future__ import annotations

from typing import Protocol

__all__ = ["Entries", "MemoryEntries"]


class Entries(Protocol):
    """Named entries of bytes: the state the engine persists."""

    def get(self, name: str) -> bytes | None: ...

    def put(self, name: str, data: bytes) -> None: ...

    def remove(self, name: str) -> None: ...


class MemoryEntries:
    """Entries in a dict (tests, in-memory runs); ``data`` is every entry."""

    def __init__(self) -> None:
        self.data: dict[str, bytes] = {}

    def get(self, name: str) -> bytes | None:
        return self.data.get(name)

    def put(self, name: str, data: bytes) -> None:
        self.data[name] = bytes(data)

    def remove(self, name: str) -> None:
        self.data.pop(name, None)
