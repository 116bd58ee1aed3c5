"""Where a replay writes: Kafka (kafka-python), the spool directory, or stdout."""

from __future__ import annotations

import os
import sys
import time
import uuid
from collections import deque
from pathlib import Path
from typing import IO, Any, Protocol

from kafka import KafkaProducer
from kafka.errors import KafkaError
from kafka.partitioner.default import murmur2

from routewatch.errors import RoutewatchError

__all__ = ["KafkaSink", "Sink", "SpoolSink", "StdoutSink"]


class Sink(Protocol):
    """A replay target. ``close`` flushes and returns how many events were delivered."""

    def write(self, raw: bytes, key: bytes) -> None: ...

    def poll(self) -> None: ...

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

    def close(self) -> int:
        self.out.flush()
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

    def close(self) -> int:
        if self._file is not None:
            self._publish()
        return self.published


class KafkaSink:
    """A kafka-python producer; every delivery is confirmed, failures are counted and reported."""

    def __init__(
        self,
        bootstrap: str,
        topic: str,
        api_version: tuple[int, ...] | None,
        *,
        acks: str,
        linger_ms: int,
        batch_bytes: int,
        compression: str,
        retries: int,
        connect_timeout_ms: int = 10_000,
    ) -> None:
        self.bootstrap, self.topic = bootstrap, topic
        self.delivered = 0
        self.failed = 0
        self.first_error: str | None = None
        self._pending: deque[Any] = deque()
        self._by_key: dict[bytes, int] = {}
        options: dict[str, Any] = {
            "bootstrap_servers": bootstrap.split(","),
            "acks": acks if acks == "all" else int(acks),
            "linger_ms": linger_ms,
            "batch_size": batch_bytes,
            "compression_type": None if compression == "none" else compression,
            "retries": retries,
            "max_in_flight_requests_per_connection": 1,  # retries keep the order
        }
        if api_version is not None:
            options["api_version"] = api_version
        try:
            self.producer = KafkaProducer(max_block_ms=connect_timeout_ms, **options)
            # fails now, not at the first send; the partitions are read once
            self._partitions = sorted(self.producer.partitions_for(topic))
        except KafkaError as exc:
            raise RoutewatchError(
                f"cannot reach Kafka at {bootstrap} ({type(exc).__name__}): check "
                "ROUTEWATCH_KAFKA_BOOTSTRAP and that the broker is running."
            ) from None

    def _failed(self, exc: BaseException) -> None:
        self.failed += 1
        if self.first_error is None:
            self.first_error = f"{type(exc).__name__}: {exc}"

    def _partition(self, key: bytes) -> int:
        """The default partitioner's choice (murmur2 of the key), computed once per key."""
        partition = self._by_key.get(key)
        if partition is None:
            partition = self._partitions[(murmur2(key) & 0x7FFFFFFF) % len(self._partitions)]
            self._by_key[key] = partition
        return partition

    def write(self, raw: bytes, key: bytes) -> None:
        try:
            future = self.producer.send(
                self.topic, value=raw, key=key, partition=self._partition(key)
            )
        except KafkaError as exc:
            self._failed(exc)
            return
        self._pending.append(future)
        if len(self._pending) >= 1_000:  # few live futures: less work for the GC
            self._sweep(done_only=True)

    def _sweep(self, *, done_only: bool) -> None:
        """Count settled deliveries, oldest first, and forget them; after a flush, all."""
        pending = self._pending
        while pending:
            future = pending[0]
            if not future.is_done:
                if done_only:
                    return
                self._failed(TimeoutError("no answer before the flush ended"))
            elif future.failed():
                self._failed(future.exception)
            else:
                self.delivered += 1
            pending.popleft()

    def poll(self) -> None:
        pass

    def close(self) -> int:
        try:
            self.producer.flush(timeout=120)
        except KafkaError as exc:
            self._failed(exc)
        finally:
            self._sweep(done_only=False)
            self.producer.close(timeout=10)
        if self.failed:
            raise RoutewatchError(
                f"{self.failed} event(s) could not be delivered to Kafka at {self.bootstrap}, "
                f"topic {self.topic} ({self.first_error}); {self.delivered} were delivered."
            )
        return self.delivered
