"""The collector's loop: poll, derive, write, and forward the client library's files, until
stopped."""

from __future__ import annotations

import logging
import threading
import time

from emitter.collect.derive import Deriver
from emitter.collect.forward import Forwarder
from emitter.collect.metrics import CollectorMetrics
from emitter.collect.poller import Poller
from emitter.collect.proxylog import ProxyLog
from emitter.sinks import Sink
from routewatch.codec import encode
from routewatch.errors import RoutewatchError
from routewatch.events import CollectorRound, Heartbeat

__all__ = ["Collector"]

log = logging.getLogger("routewatch.collect")


class Collector:
    """Polls every ``poll_interval_s`` and writes the heartbeats each poll calls for to
    ``sink``, and forwards the client library's files and reads the proxies' logs every
    ``forward_interval_s`` into the same sink, until :meth:`stop` (from a signal handler or
    another thread). Without a poller it only forwards and reads; without those it only
    polls."""

    def __init__(
        self,
        poller: Poller | None,
        deriver: Deriver,
        sink: Sink,
        metrics: CollectorMetrics,
        poll_interval_s: float,
        log_interval_s: float = 60.0,
        forwarder: Forwarder | None = None,
        forward_interval_s: float = 1.0,
        start_timeout_s: float = 0.0,
        proxy_logs: list[ProxyLog] | None = None,
    ) -> None:
        self.poller = poller
        self.deriver = deriver
        self.sink = sink
        self.metrics = metrics
        self.poll_interval_s = poll_interval_s
        self.log_interval_s = log_interval_s
        if forwarder is not None and forwarder.sink is not sink:
            raise ValueError("the forwarder must write through the collector's own sink")
        self.forwarder = forwarder
        self.proxy_logs = proxy_logs or []
        self.forward_interval_s = forward_interval_s
        self.start_timeout_s = start_timeout_s
        self.reached = False  # some NameServer has answered a poll
        self._stop = threading.Event()

    def stop(self) -> None:
        self._stop.set()
        if self.forwarder is not None:
            self.forwarder.stop()  # stops waiting for a delivery: its files stay

    def once(self) -> None:
        """One look into the forwarded directories and one poll (``--once``)."""
        self.forward_once()
        self.poll_once()
        if self.poller is not None and not self.reached:
            raise self._unreached("at its poll")

    def forward_once(self) -> int:
        """One look into the forwarded directories and the proxies' logs; how many events
        were forwarded or written."""
        forwarded = self.forwarder.forward_once() if self.forwarder is not None else 0
        misses = [e for proxy_log in self.proxy_logs for e in proxy_log.read()]
        for event in misses:
            self.sink.write(encode(event), f"{event.cluster}/{event.topic}".encode())
        if misses:
            self.sink.poll()
            self.metrics.events_written.inc(len(misses))
        return forwarded + len(misses)

    def poll_once(self) -> int:
        """One poll; how many events it wrote."""
        if self.poller is None:
            return 0
        snap = self.poller.poll(self.deriver.known, self.deriver)
        self.reached = self.reached or bool(snap.namesrvs)
        events: list[Heartbeat | CollectorRound] = list(self.deriver.derive(snap))
        ts = int(self.poller.clock() * 1000)
        events += self.deriver.rounds(
            self.poller.namesrvs, snap, ts, int(self.poll_interval_s * 1000)
        )
        for event in events:
            what = event.broker if isinstance(event, Heartbeat) else "collector"
            self.sink.write(encode(event), f"{event.cluster}/{what}".encode())
        self.sink.poll()
        self.metrics.events_written.inc(len(events))
        self.metrics.last_round.set(ts / 1000)
        return len(events)

    def run(self) -> None:
        start = time.monotonic()
        never = float("inf")
        next_poll = start if self.poller is not None else never
        next_forward = start if self.forwarder is not None or self.proxy_logs else never
        next_log = start + self.log_interval_s
        while not self._stop.is_set():
            # forwarding first: a backlog of client events (after a restart, or an outage of
            # the sink) reaches the job before heartbeats newer than it, not late behind them
            if time.monotonic() >= next_forward:
                self.forward_once()
                next_forward = _next(next_forward, self.forward_interval_s)
            if time.monotonic() >= next_poll and not self._stop.is_set():
                self.poll_once()
                next_poll = _next(next_poll, self.poll_interval_s)
                waited = time.monotonic() - start
                if not self.reached and 0 < self.start_timeout_s <= waited:
                    raise self._unreached(f"in {waited:.0f} s")
            now = time.monotonic()
            if now >= next_log:
                log.info("%s.", self.metrics.summary())
                next_log = now + self.log_interval_s
            due = min(next_poll, next_forward)
            # the spool publishes a file whose roll interval passed while we wait
            while not self._stop.wait(min(0.1, max(due - time.monotonic(), 0))):
                self.sink.poll()
                if time.monotonic() >= due:
                    break

    def _unreached(self, when: str) -> RoutewatchError:
        """No NameServer has answered: the sentence that ends the collector."""
        assert self.poller is not None
        why = "; ".join(
            f"{ns} {self.poller.failures.get(ns, 'did not answer')}" for ns in self.poller.namesrvs
        )
        return RoutewatchError(
            f"no NameServer of --namesrv answered {when} ({why}): check the addresses and that "
            "this host can reach them, or set ROUTEWATCH_COLLECT_START_TIMEOUT_S=0 to wait for "
            "them."
        )


def _next(previous: float, interval_s: float) -> float:
    """When the next round is due; one that took longer than the interval starts again now."""
    return max(previous + interval_s, time.monotonic())
