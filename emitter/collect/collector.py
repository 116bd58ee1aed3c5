"""The collector's loop: poll, derive, write, until stopped."""

from __future__ import annotations

import logging
import threading
import time

from emitter.collect.derive import Deriver
from emitter.collect.metrics import Counters
from emitter.collect.poller import Poller
from emitter.replay.sinks import Sink
from routewatch.codec import encode

__all__ = ["Collector"]

log = logging.getLogger("routewatch.collect")


class Collector:
    """Polls every ``poll_interval_s`` and writes the heartbeats each poll calls for to
    ``sink``, until :meth:`stop` (from a signal handler or another thread)."""

    def __init__(
        self,
        poller: Poller,
        deriver: Deriver,
        sink: Sink,
        counters: Counters,
        poll_interval_s: float,
        log_interval_s: float = 60.0,
    ) -> None:
        self.poller = poller
        self.deriver = deriver
        self.sink = sink
        self.counters = counters
        self.poll_interval_s = poll_interval_s
        self.log_interval_s = log_interval_s
        self._stop = threading.Event()

    def stop(self) -> None:
        self._stop.set()

    def poll_once(self) -> int:
        """One poll; how many events it wrote."""
        snap = self.poller.poll(self.deriver.known)
        events = self.deriver.derive(snap)
        for event in events:
            self.sink.write(encode(event), f"{event.cluster}/{event.broker}".encode())
        self.sink.poll()
        self.counters.inc("routewatch_collect_events_written_total", len(events))
        return len(events)

    def run(self) -> None:
        next_poll = time.monotonic()
        next_log = next_poll + self.log_interval_s
        while not self._stop.is_set():
            self.poll_once()
            next_poll += self.poll_interval_s
            now = time.monotonic()
            if next_poll < now:  # a poll took longer than the interval: start again from now
                next_poll = now
            if now >= next_log:
                log.info("%s.", self.counters.summary())
                next_log = now + self.log_interval_s
            # the spool publishes a file whose roll interval passed while we wait
            while not self._stop.wait(min(0.1, max(next_poll - time.monotonic(), 0))):
                self.sink.poll()
                if time.monotonic() >= next_poll:
                    break
