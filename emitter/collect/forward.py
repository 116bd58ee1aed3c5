"""Forwarding the client library's spool files into the collector's sink (docs/collect.md).

The client library (docs/hook.md) publishes JSON-lines files into a spool directory exactly as
:class:`~emitter.sinks.SpoolSink` does: written under a hidden name, then renamed to
``<mtime ns>-<pid>-<run>-<n>.jsonl``. Each look, the :class:`Forwarder` takes the published
files of each directory in name order (publishing order), checks every line with the one
parser (:func:`routewatch.codec.parse`), writes the valid lines unchanged to the sink, keyed as
the replayer keys them, waits until the sink confirms their delivery, and only then removes the
files. A crash between delivery and removal sends a file again: at least once, and the job drops
the copies by ``event_id`` (docs/contract.md, Duplicates).
"""

from __future__ import annotations

import logging
import os
import threading
from dataclasses import dataclass
from pathlib import Path

from emitter.collect.metrics import CollectorMetrics
from emitter.sinks import Sink, kafka_key
from routewatch.codec import parse
from routewatch.validation import BadInput

__all__ = ["Forwarder"]

log = logging.getLogger("routewatch.collect")

# one delivery confirmation covers up to this many files or events
_BATCH_FILES = 100
_BATCH_EVENTS = 5_000


@dataclass
class _File:
    path: Path
    events: int
    skipped: int
    first_bad: str | None


def _read(path: Path) -> bytes:
    return path.read_bytes()


class Forwarder:
    """Forwards the published files of ``dirs`` to ``sink`` at each :meth:`forward_once`."""

    def __init__(self, dirs: list[Path], sink: Sink, metrics: CollectorMetrics) -> None:
        self.dirs = dirs
        self.sink = sink
        self.metrics = metrics
        self._stop = threading.Event()
        self._troubles: dict[str, str] = {}  # what fails -> the line logged for it
        self._delivered: set[Path] = set()  # delivered, but not removed yet
        metrics.forwarding = True  # the log line shows the forwarding counts from now

    def stop(self) -> None:
        self._stop.set()

    def forward_once(self) -> int:
        """One look into every directory; how many events were forwarded (delivered)."""
        forwarded = 0
        for directory in self.dirs:
            batch: list[_File] = []
            for path in self._published(directory):
                if self._stop.is_set():
                    return forwarded
                if path in self._delivered:  # only its removal failed
                    self._remove(path)
                    continue
                file = self._write(path)
                if file is None:
                    continue
                batch.append(file)
                if len(batch) >= _BATCH_FILES or sum(f.events for f in batch) >= _BATCH_EVENTS:
                    if not self._deliver(batch):
                        return forwarded
                    forwarded += sum(f.events for f in batch)
                    batch = []
            if batch:
                if not self._deliver(batch):
                    return forwarded
                forwarded += sum(f.events for f in batch)
        return forwarded

    # the steps

    def _published(self, directory: Path) -> list[Path]:
        """The directory's published files in name order; hidden temporaries are not."""
        try:
            with os.scandir(directory) as entries:
                names = sorted(
                    e.name
                    for e in entries
                    if not e.name.startswith(".") and e.name.endswith(".jsonl") and e.is_file()
                )
        except FileNotFoundError:
            self._trouble(
                str(directory),
                f"the directory {directory} does not exist (yet); its files are forwarded "
                "once the client library creates it.",
            )
            return []
        except OSError as exc:
            self.metrics.forward_errors.labels(reason="list").inc()
            self._trouble(
                str(directory),
                f"cannot list {directory} ({exc.strerror}); trying again at the next look: "
                "give the collector read and write access to it.",
            )
            return []
        self._fine(str(directory), f"forwarding the files of {directory} now.")
        return [directory / name for name in names]

    def _write(self, path: Path) -> _File | None:
        """Every valid line of ``path`` written to the sink; None if the file cannot be read."""
        try:
            data = _read(path)
        except FileNotFoundError:  # removed since the listing
            return None
        except OSError as exc:
            self.metrics.forward_errors.labels(reason="read").inc()
            self._trouble(
                str(path),
                f"cannot read {path} ({exc.strerror}); it stays, and is tried again at the "
                "next look.",
            )
            return None
        self._fine(str(path), f"{path} could be read after all.")
        events = skipped = 0
        first_bad = None
        for line_no, line in enumerate(data.split(b"\n"), start=1):
            raw = line.rstrip(b"\r")
            if not raw.strip():
                continue
            obj = parse(raw)
            if isinstance(obj, BadInput):
                skipped += 1
                if first_bad is None:
                    first_bad = f"line {line_no}: {obj.detail}"
                continue
            self.sink.write(raw, kafka_key(obj))
            events += 1
        return _File(path, events, skipped, first_bad)

    def _deliver(self, batch: list[_File]) -> bool:
        """Wait for the sink to deliver the batch's events (also after a stop: they are written
        already), then remove its files."""
        if not self.sink.flush():
            self.metrics.forward_errors.labels(reason="delivery").inc()
            log.warning(
                "the sink did not deliver every event of %d forwarded file(s) from %s on "
                "(see the sink's own line); they stay, and are sent again at the next look.",
                len(batch),
                batch[0].path,
            )
            return False
        for file in batch:
            self.metrics.forward_events.inc(file.events)
            if file.skipped:
                self.metrics.forward_lines_skipped.inc(file.skipped)
                log.warning(
                    "%s: skipped %d line(s) that are not contract events (the first, %s); "
                    "forwarded its %d other event(s).",
                    file.path,
                    file.skipped,
                    file.first_bad,
                    file.events,
                )
            self._delivered.add(file.path)
            self._remove(file.path)
        return True

    def _remove(self, path: Path) -> None:
        try:
            path.unlink()
        except FileNotFoundError:
            pass
        except OSError as exc:
            self.metrics.forward_errors.labels(reason="remove").inc()
            self._trouble(
                f"remove {path}",
                f"cannot remove {path} after forwarding it ({exc.strerror}); this process does "
                "not send it again and tries to remove it at the next look: give the collector "
                f"write access to {path.parent}.",
            )
            return
        self._fine(f"remove {path}", f"{path} removed after all.")
        self._delivered.discard(path)
        self.metrics.forward_files.inc()

    # logging: one line when something starts failing (or fails otherwise), one when it stops

    def _trouble(self, what: str, line: str) -> None:
        if self._troubles.get(what) != line:
            self._troubles[what] = line
            log.warning("%s", line)

    def _fine(self, what: str, line: str) -> None:
        if self._troubles.pop(what, None) is not None:
            log.info("%s", line)
