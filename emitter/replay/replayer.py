"""The replay loop: paced, with progress, and a clean stop on Ctrl-C."""

from __future__ import annotations

import sys
import time
from collections.abc import Iterable
from dataclasses import dataclass
from typing import IO

from emitter.replay.pacing import Pacer
from emitter.replay.reader import BadLineError, TraceLine
from emitter.sinks import Sink

__all__ = ["Progress", "ReplayResult", "replay"]


@dataclass
class ReplayResult:
    written: int
    bytes: int
    elapsed_s: float
    interrupted: bool


class Progress:
    """A progress line on stderr: events, rate, ETA (``total`` counted ahead of time)."""

    def __init__(self, total: int, out: IO[str] = sys.stderr, every_s: float = 0.5) -> None:
        self.total = total
        self.out = out
        self.tty = out.isatty()
        self.every_s = every_s if self.tty else 5.0
        self.started = time.monotonic()
        self.last = 0.0

    def update(self, written: int, *, final: bool = False) -> None:
        now = time.monotonic()
        if not final and now - self.last < self.every_s:
            return
        self.last = now
        elapsed = max(now - self.started, 1e-9)
        rate = written / elapsed
        eta = (self.total - written) / rate if rate > 0 else float("inf")
        eta_text = "--" if eta == float("inf") else f"{eta:,.0f} s"
        pct = 100 * written / self.total if self.total else 100.0
        text = (
            f"{written:,}/{self.total:,} events ({pct:.0f}%)  {rate:,.0f} events/s  ETA {eta_text}"
        )
        self.out.write(("\r" + text + " " * 4) if self.tty else text + "\n")
        if final and self.tty:
            self.out.write("\n")
        self.out.flush()


def replay(
    lines: Iterable[TraceLine],
    sink: Sink,
    pacer: Pacer,
    progress: Progress | None = None,
    tick_s: float = 0.05,
) -> ReplayResult:
    """Write every line to ``sink`` at the pacer's speed; Ctrl-C stops after flushing.

    While waiting for the next event, the sink is polled every ``tick_s`` (so the spool
    publishes a file whose roll interval passed).
    """

    def wait(delay: float) -> None:
        end = time.monotonic() + delay
        while (left := end - time.monotonic()) > 0:
            time.sleep(min(left, tick_s))
            sink.poll()

    started = time.monotonic()
    sent = size = 0
    interrupted = False
    paced = pacer.speed is not None
    write = sink.write
    try:
        for line in lines:
            if paced:
                wait(pacer.delay(line.ts))
            write(line.raw, line.key)
            sent += 1
            size += len(line.raw) + 1
            if sent % 256 == 0 or paced:
                if progress is not None:
                    progress.update(sent)
                sink.poll()
    except KeyboardInterrupt:
        interrupted = True
    except BadLineError as exc:
        written = sink.close()
        raise BadLineError(f"{exc}; {written} event(s) before it were written") from None
    written = sink.close()
    if progress is not None:
        progress.update(written, final=True)
    return ReplayResult(written, size, time.monotonic() - started, interrupted)
