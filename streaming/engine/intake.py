"""Event-time intake for one cluster: duplicates, the lateness bound, and release in order.

An event is *late* when it is more than ``L`` older than the largest ``ts`` received (at its
arrival); a repeated ``event_id`` is a *duplicate* (checked first, against the ids of the last
``dedupe_horizon_ms`` of event time). Other events are held until the largest ``ts`` received
exceeds theirs by more than ``L``, then released in ``(ts, seq)`` order; :meth:`Intake.flush`
releases everything at the end of a finite input.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass, field
from typing import Any, NamedTuple

__all__ = ["Held", "Intake", "IntakeResult"]

_NO_SEQ = -1


class Held(NamedTuple):
    """One event waiting for release, ordered by ``(ts, seq, arrival)``: events with the same
    ``ts`` and no ``seq`` keep the order they arrived in. (``arrival`` is unique, so the text
    fields are never compared; a tuple compares in C, which the heap does ~10 times an event.)"""

    ts: int
    seq: int
    arrival: int
    event_id: str
    value: str


@dataclass(slots=True)
class IntakeResult:
    """What one batch of arrivals did: released events in order, late raw lines, counts."""

    released: list[Held] = field(default_factory=list)
    late: list[tuple[str, str]] = field(default_factory=list)
    duplicates: int = 0


class Intake:
    """Holds one cluster's events until the lateness bound lets them be applied in order.

    State (persisted by the caller): ``max_received``, the ``held`` heap, and ``seen`` ids in
    per-second buckets of event time.
    """

    def __init__(self, lateness_ms: int, dedupe_horizon_ms: int) -> None:
        self.lateness_ms = lateness_ms
        self.dedupe_horizon_ms = dedupe_horizon_ms
        self.max_received: int | None = None
        self.arrivals = 0
        self.held: list[Held] = []
        self.seen: dict[int, set[str]] = {}
        self.touched_buckets: set[int] = set()
        self.dropped_buckets: set[int] = set()

    def receive(self, arrivals: list[tuple[str, int, int | None, str]]) -> IntakeResult:
        """Take ``(event_id, ts, seq, raw)`` in arrival order; return what is released."""
        out = IntakeResult()
        for event_id, ts, seq, raw in arrivals:
            bucket = ts // 1000
            ids = self.seen.get(bucket)
            if ids is not None and event_id in ids:
                out.duplicates += 1
                continue
            if ids is None:
                ids = self.seen[bucket] = set()
            ids.add(event_id)
            self.touched_buckets.add(bucket)
            newest = self.max_received
            if newest is not None and newest - ts > self.lateness_ms:
                out.late.append(
                    (
                        raw,
                        f"ts {ts} is {(newest - ts) / 1000:g} s older than the newest event "
                        f"received ({newest}), beyond the lateness bound of "
                        f"{self.lateness_ms / 1000:g} s",
                    )
                )
                continue
            if newest is None or ts > newest:
                self.max_received = ts
            self.arrivals += 1
            held = Held(ts, _NO_SEQ if seq is None else seq, self.arrivals, event_id, raw)
            heapq.heappush(self.held, held)
        self._release(out, final=False)
        self._prune()
        return out

    def flush(self) -> list[Held]:
        """Release everything held (end of a finite input)."""
        out = IntakeResult()
        self._release(out, final=True)
        return out.released

    def _release(self, out: IntakeResult, *, final: bool) -> None:
        newest = self.max_received
        while self.held and (
            final or (newest is not None and newest - self.held[0].ts > self.lateness_ms)
        ):
            out.released.append(heapq.heappop(self.held))

    def _prune(self) -> None:
        if self.max_received is None:
            return
        oldest = (self.max_received - self.dedupe_horizon_ms) // 1000
        for bucket in [b for b in self.seen if b < oldest]:
            del self.seen[bucket]
            self.dropped_buckets.add(bucket)
            self.touched_buckets.discard(bucket)

    # -- persistence helpers -------------------------------------------------------------------

    def held_rows(self) -> list[tuple[int, int, int, str, str]]:
        return [(ts, seq, arrival, eid, value) for ts, seq, arrival, eid, value in self.held]

    def load_held(self, rows: list[Any]) -> None:
        self.held = [
            Held(int(ts), int(seq), int(arrival), str(eid), str(value))
            for ts, seq, arrival, eid, value in rows
        ]
        heapq.heapify(self.held)
