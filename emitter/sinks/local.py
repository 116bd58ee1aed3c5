"""The sinks' protocol, the spool directory and stdout, and :func:`sink_for`, which picks a sink
(Kafka's is :mod:`emitter.sinks.kafka`) for a replay or the collector."""

from __future__ import annotations

import os
import sys
import time
import uuid
from pathlib import Path
from typing import IO, Protocol

from emitter.settings import EmitterSettings
from emitter.sinks.kafka import KafkaSink
from routewatch.errors import RoutewatchError
from routewatch.spool_origin import ORIGIN_FILE, ORIGINS, spool_origin

__all__ = ["ORIGIN_FILE", "KafkaSink", "Sink", "SpoolSink", "StdoutSink", "claim_spool", "sink_for"]


class Sink(Protocol):
    """Where events go. ``write`` takes one, ``poll`` moves what is pending along, ``flush``
    delivers everything written so far (the sink stays open) and says whether every event
    written since the previous flush was delivered, and ``close`` flushes and returns how many
    events were delivered in all."""

    def write(self, raw: bytes, key: bytes) -> None: ...

    def poll(self) -> None: ...

    def flush(self) -> bool: ...

    def close(self) -> int: ...


class StdoutSink:
    def __init__(self, out: IO[bytes] | None = None) -> None:
        self.out = out if out is not None else sys.stdout.buffer
        self.count = 0

    def write(self, raw: bytes, key: bytes) -> None:
        self.out.write(raw + b"\n")
        self.count += 1

    def poll(self) -> None:
        pass

    def flush(self) -> bool:
        self.out.flush()
        return True  # a failed write raises

    def close(self) -> int:
        self.flush()
        return self.count


class SpoolSink:
    """JSON-lines files published atomically into the spool: written under a hidden temporary
    name, then renamed, rolled after ``roll_events`` events or ``roll_interval_s`` seconds.

    Names start with the wall clock in nanoseconds, then the process id, a random part and a
    counter, so they sort in publishing order and never repeat; each published file's
    modification time is strictly later than the previous one's (Spark's file source orders
    new files by it).
    """

    def __init__(self, spool: Path, roll_events: int, roll_interval_s: float) -> None:
        self.spool = spool
        self.roll_events = roll_events
        self.roll_interval_s = roll_interval_s
        self.run = uuid.uuid4().hex[:8]
        self.files = 0
        self.published = 0
        self._file: IO[bytes] | None = None
        self._tmp: Path | None = None
        self._opened = 0.0
        self._in_file = 0
        self._last_mtime_ns = 0
        try:
            spool.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise RoutewatchError(
                f"cannot use the spool directory {spool}: {exc.strerror}."
            ) from None

    def write(self, raw: bytes, key: bytes) -> None:
        if self._file is None:
            self.files += 1
            self._tmp = self.spool / f".{self.run}-{self.files:08d}.tmp"
            self._file = self._tmp.open("wb")
            self._opened = time.monotonic()
            self._in_file = 0
        self._file.write(raw + b"\n")
        self._in_file += 1
        if self._in_file >= self.roll_events:
            self._publish()

    def poll(self) -> None:
        if self._file is not None and time.monotonic() - self._opened >= self.roll_interval_s:
            self._publish()

    def _publish(self) -> None:
        assert self._file is not None and self._tmp is not None
        self._file.close()
        mtime = max(time.time_ns(), self._last_mtime_ns + 1_000_000)
        os.utime(self._tmp, ns=(mtime, mtime))
        self._last_mtime_ns = mtime
        name = f"{mtime:020d}-{os.getpid()}-{self.run}-{self.files:08d}.jsonl"
        self._tmp.rename(self.spool / name)
        self.published += self._in_file
        self._file = self._tmp = None

    def flush(self) -> bool:
        """Publish the open file; the next write starts a new one."""
        if self._file is not None:
            self._publish()
        return True  # a failed write raises

    def close(self) -> int:
        self.flush()
        return self.published


def claim_spool(spool: Path, origin: str) -> None:
    """Mark ``spool`` as holding ``origin``'s events ("live" or "replayed"), or refuse, in one
    sentence, to write one origin's events into a spool that holds the other's: simulated
    brokers and NameServers, mixed with a live cluster's of the same names, would expire,
    resolve and diverge with them in the job's tables. A spool without a mark (written before
    marks existed) is claimed."""
    marker = spool / ORIGIN_FILE
    held = spool_origin(spool)
    if held and held != origin:
        what = ORIGINS.get(held, f"events of origin '{held}'")
        raise RoutewatchError(
            f"the spool {spool} holds {what}, and {ORIGINS[origin].split(' (')[0]} must not mix "
            "with them in one job: give this command a data directory of its own "
            "(ROUTEWATCH_DATA_DIR, or ROUTEWATCH_SPOOL_DIR), or, if what it holds is no longer "
            "wanted, delete that spool and the job's store and checkpoints with "
            "`routewatch reset --spool --yes`."
        )
    if not held:
        try:
            spool.mkdir(parents=True, exist_ok=True)
            marker.write_text(origin + "\n")
        except OSError as exc:
            raise RoutewatchError(
                f"cannot use the spool directory {spool}: {exc.strerror}."
            ) from None


def sink_for(target: str, settings: EmitterSettings, origin: str | None = None) -> Sink:
    """The sink ``routewatch replay --to target`` writes to, configured by ``settings``; a
    spool is claimed for ``origin`` first (:func:`claim_spool`) when one is given."""
    if target == "stdout":
        return StdoutSink()
    if target == "spool":
        if origin is not None:
            claim_spool(settings.spool_dir, origin)
        return SpoolSink(
            settings.spool_dir, settings.spool_roll_events, settings.spool_roll_interval_s
        )
    return KafkaSink(
        settings.kafka_bootstrap,
        settings.kafka_topic,
        settings.kafka_api_version,
        acks=settings.kafka_acks,
        linger_ms=settings.kafka_linger_ms,
        batch_bytes=settings.kafka_batch_bytes,
        compression=settings.kafka_compression,
        retries=settings.kafka_retries,
    )
