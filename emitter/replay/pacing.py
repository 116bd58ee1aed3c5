"""Pacing: keep the gaps between events, scaled by the replay speed."""

from __future__ import annotations

import time
from collections.abc import Callable

__all__ = ["Pacer"]


class Pacer:
    """Maps event time to wall time: event ``ts`` is due ``(ts - first) / speed`` seconds after
    the first event was written. ``speed=None`` is as fast as possible."""

    def __init__(self, speed: float | None, clock: Callable[[], float] = time.monotonic) -> None:
        if speed is not None and speed <= 0:
            raise ValueError("speed must be positive")
        self.speed = speed
        self.clock = clock
        self._origin: tuple[int, float] | None = None

    def delay(self, ts: int) -> float:
        """Seconds to wait before event time ``ts`` is due (0 when it already is)."""
        if self.speed is None:
            return 0.0
        if self._origin is None:
            self._origin = (ts, self.clock())
            return 0.0
        first_ts, started = self._origin
        return max(started + (ts - first_ts) / 1000 / self.speed - self.clock(), 0.0)
