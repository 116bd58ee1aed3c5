"""What ``routewatch stream`` tells the person who started it, in routewatch's own words: each
alert as it opens and resolves (the terminal's alert lines, :mod:`routewatch.terminal`), a
warning when the job falls behind its input with what to do, and with ``--verbose`` a line per
batch. Spark's and the JVM's own lines go to the log file the job names (:func:`routed_output`).
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TextIO

from routewatch.store import Store
from routewatch.terminal import AlertChanges

__all__ = ["BEHIND_EVERY_S", "Console", "routed_output"]

# the falling-behind warning, at most this often (with the count of slow batches since)
BEHIND_EVERY_S = 300.0
# the first batches of a run warm the JVM up: not judged slow
WARM_UP_BATCHES = 2


class Console:
    """The job's lines for its operator, written to ``out``."""

    def __init__(self, out: TextIO, *, trigger_ms: int, verbose: bool = False) -> None:
        self.out = out
        self.trigger_ms = trigger_ms
        self.verbose = verbose
        self.changes: AlertChanges | None = None  # (from the log's end at the first batch)
        self.batches = 0
        self.slow = 0  # slow batches not yet said
        self.warned_at: float | None = None

    def say(self, line: str) -> None:
        print(line, file=self.out, flush=True)

    def start(self, store: Store) -> None:
        """Alerts from now on: the log's entries before the job started were said before."""
        last = store.db.execute("SELECT MAX(seq) FROM alert_log").fetchone()[0]
        self.changes = AlertChanges(after=int(last or 0))

    def batch(self, store: Store, batch_id: int, rows: int, duration_ms: int, lag: str) -> None:
        """After a batch (its progress, read with its store): the alerts it opened, changed
        and resolved; its figures at ``--verbose``; a warning when it took longer than the
        trigger interval."""
        if self.changes is None:
            self.changes = AlertChanges()
        for line in self.changes.lines(store.alert_log(after=self.changes.after)):
            self.say(line)
        if self.verbose:
            self.say(f"  batch {batch_id}: {rows} input line(s) in {duration_ms} ms, lag {lag}")
        self.batches += 1
        if self.batches > WARM_UP_BATCHES and duration_ms > self.trigger_ms:
            self.slow += 1
            now = time.monotonic()
            if self.warned_at is None or now - self.warned_at >= BEHIND_EVERY_S:
                self.warned_at, slow = now, self.slow
                self.slow = 0
                self.say(
                    f"routewatch: the job falls behind its input: batch {batch_id} took "
                    f"{duration_ms / 1000:.1f} s, longer than its trigger interval of "
                    f"{self.trigger_ms / 1000:g} s ({slow} such batch(es) since the last "
                    "warning), so alerts come later than they could. Give it more cores "
                    "(ROUTEWATCH_SPARK_MASTER=local[N]) or a longer trigger "
                    "(ROUTEWATCH_TRIGGER_INTERVAL_S); docs/operations.md, Sizing."
                )


@contextlib.contextmanager
def routed_output(log: Path | None) -> Iterator[TextIO]:
    """Send this process's standard output and error — and so those of the JVM and Python
    workers it starts — to the file ``log`` (appended), and give the terminal they were, for
    routewatch's own lines; both are back as they were after. ``log`` None: nothing moves."""
    if log is None:
        yield sys.stdout
        return
    sys.stdout.flush()
    sys.stderr.flush()
    log.parent.mkdir(parents=True, exist_ok=True)
    saved = os.dup(1), os.dup(2)
    target = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    terminal = os.fdopen(os.dup(saved[0]), "w", buffering=1)
    try:
        os.dup2(target, 1)
        os.dup2(target, 2)
        yield terminal
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        for handler in logging.getLogger().handlers:
            handler.flush()
        os.dup2(saved[0], 1)
        os.dup2(saved[1], 2)
        for fd in (target, *saved):
            os.close(fd)
        terminal.close()
