"""The discrete-event loop: simulated time in epoch milliseconds, timers, and event output."""

from __future__ import annotations

import heapq
import itertools
import random
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from routewatch.events import Event

__all__ = ["DEFAULT_START_MS", "Simulation", "Timer"]

DEFAULT_START_MS = 1_767_225_600_000
"""2026-01-01T00:00:00Z: where simulated time starts unless a scenario says otherwise."""


@dataclass
class Timer:
    """A repeating action; :meth:`cancel` stops it before its next firing."""

    period_ms: int
    action: Callable[[], None]
    cancelled: bool = field(default=False)

    def cancel(self) -> None:
        self.cancelled = True


class Simulation:
    """Runs actions in simulated-time order and hands every emitted event to ``sink``.

    Actions scheduled for the same instant run in the order they were scheduled. ``seq`` is one
    counter for the whole simulation, so ``(ts, seq)`` orders every event it writes, across
    sources, in the order they happened.
    """

    def __init__(self, seed: int, sink: Callable[[Event], None], start_ms: int = DEFAULT_START_MS):
        self.now = start_ms
        self.start_ms = start_ms
        self.rng = random.Random(seed)
        self.sink = sink
        self._queue: list[tuple[int, int, Callable[[], None]]] = []
        self._order = itertools.count()
        self._seq = itertools.count(1)

    def at(self, when_ms: int, action: Callable[[], None]) -> None:
        """Run ``action`` at simulated time ``when_ms`` (never in the past)."""
        heapq.heappush(self._queue, (max(when_ms, self.now), next(self._order), action))

    def after(self, delay_ms: int, action: Callable[[], None]) -> None:
        self.at(self.now + delay_ms, action)

    def every(self, period_ms: int, action: Callable[[], None], first_delay_ms: int) -> Timer:
        """Run ``action`` after ``first_delay_ms``, then every ``period_ms``, until cancelled."""
        timer = Timer(period_ms, action)

        def fire() -> None:
            if timer.cancelled:
                return
            timer.action()
            if not timer.cancelled:
                self.after(timer.period_ms, fire)

        self.after(first_delay_ms, fire)
        return timer

    def run(self, until_ms: int) -> None:
        """Run every action due up to and including ``until_ms``."""
        while self._queue and self._queue[0][0] <= until_ms:
            when, _, action = heapq.heappop(self._queue)
            self.now = when
            action()
        self.now = max(self.now, until_ms)

    def envelope(self, cluster: str, source: str) -> dict[str, Any]:
        """The envelope fields of a new event from ``source``, stamped now."""
        seq = next(self._seq)
        return {"ts": self.now, "cluster": cluster, "event_id": f"{source}-{seq}", "seq": seq}

    def emit(self, event: Event) -> None:
        self.sink(event)
