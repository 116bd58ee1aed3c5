"""Pacing: keep the gaps between events, scaled by the replay speed."""

from __future__ import annotations

import time
from collections.abc import Callable

__all__ = ["Pacer"]


class Pacer:
    """Maps event time to wall time: event ``ts`` is due ``(ts - first) / speed`` seconds after
    the first event was written. ``speed=None`` is as fast as possible."""

    def __init__(
        self,
        speed: float | None,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        if speed is not None and speed <= 0:
            raise ValueError("speed must be positive")
        self.speed = speed
        self.clock = clock
        self.sleep = sleep
        self._origin: tuple[int, float] | None = None

    def wait_for(self, ts: int) -> None:
        """Block until event time ``ts`` is due."""
        if self.speed is None:
            return
        if self._origin is None:
            self._origin = (ts, self.clock())
            return
        first_ts, started = self._origin
        due = started + (ts - first_ts) / 1000 / self.speed
        delay = due - self.clock()
        if delay > 0:
            self.sleep(delay)
