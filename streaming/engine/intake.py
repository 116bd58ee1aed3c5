"""Event-time intake for the whole stream: duplicates, the lateness bound, and release in order.

The clock is the whole stream's, as Spark's watermark is: an event is *late* when it is more
than ``L`` older than the largest ``ts`` of the valid events received before it over the whole
stream (duplicates and late events included: neither can be newer than the events they repeat or
lag), so a cluster whose events lag the others' by more than ``L`` has them counted late. The
stream may be spread over several intakes (state buckets, each of some clusters): each is told,
per event, the largest ``ts`` the rest of the stream received before it
(:mod:`streaming.engine.clock`), so that every intake reaches the verdicts one would. A repeated
``event_id`` of one cluster is a *duplicate* (checked first, against the ids of the last
``dedupe_horizon_ms`` of event time). Other events are held until the largest ``ts`` received
exceeds theirs by more than ``L``, then released in ``(ts, seq)`` order; :meth:`Intake.flush`
releases everything at the end of a finite input.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Final

__all__ = [
    "NO_SEQ",
    "OWNER",
    "TS",
    "Held",
    "Intake",
    "IntakeResult",
    "cluster_of",
    "dedupe_id",
]

NO_SEQ = -1  # a held event's seq when it has none


def dedupe_id(cluster: str, event_id: str) -> str:
    """The id an event is recognised as a duplicate by: its ``event_id`` within its cluster
    (the contract makes ids unique per event; two collectors of two clusters that number
    their events alike must still not drop each other's)."""
    return f"{len(cluster)}:{cluster}{event_id}"


def cluster_of(dedupe: str) -> str:
    """The cluster a :func:`dedupe_id` names."""
    length, rest = dedupe.split(":", 1)
    return rest[: int(length)]


Held = tuple[int, int, int, str | None, str]
"""One event waiting for release, ``(ts, seq, arrival, owner, value)`` (``seq``: ``NO_SEQ``
if it has none; ``owner``: the cluster whose held events it counts among, or None when
another state bucket counts it; ``value``: its raw line or its compact form), ordered as a
tuple: by ``ts``,
then ``seq``, then ``arrival`` — events with the same ``ts`` and no ``seq`` keep the order they
arrived in, and since ``arrival`` is unique the text fields are never compared. A plain tuple,
not a named one: it is built in C, once per event (a named tuple's constructor is a Python
call: about a quarter of the intake's time under cProfile), and stored as it is."""

# the fields of a held event read by position
TS: Final = 0
OWNER: Final = 3


@dataclass(slots=True)
class IntakeResult:
    """What one batch of arrivals did: released events in order, late raw lines, counts."""

    released: list[Held] = field(default_factory=list)
    late: list[tuple[str, str]] = field(default_factory=list)
    duplicates: list[str] = field(default_factory=list)  # their raw lines


class Intake:
    """Holds the stream's events until the lateness bound lets them be applied in order.

    State (persisted by the caller): ``max_received``, ``arrivals`` (the last arrival number),
    the held events and the ``seen`` ids, both in per-second buckets of event time.

    Held events can stay with the caller until they are needed (:meth:`keep_stored`): a bucket
    is loaded when an event arrives in it or when its events may be released, so a batch reads
    and writes only the buckets it changes (:meth:`changed_held`), not every held event.
    """

    def __init__(self, lateness_ms: int, dedupe_horizon_ms: int) -> None:
        self.lateness_ms = lateness_ms
        self.dedupe_horizon_ms = dedupe_horizon_ms
        self.max_received: int | None = None
        self.arrivals = 0
        self.held: list[Held] = []  # the loaded buckets' events, sorted (between calls)
        self._new: list[Held] = []  # events received or loaded since, not sorted yet
        self.held_counts: dict[int, int] = {}  # per second of ts: events held, loaded or not
        self.held_by_cluster: dict[str, int] = {}  # per cluster: the events held it owns
        self.changed_buckets: set[int] = set()  # held buckets that gained or lost events
        self._stored: list[int] = []  # held buckets not loaded yet, sorted
        self._load: Callable[[int], Iterable[Held]] | None = None
        self.seen: dict[int, set[str]] = {}
        self.touched_buckets: set[int] = set()
        self.dropped_buckets: set[int] = set()

    def receive(
        self,
        arrivals: list[tuple[str, int, int | None, str]],
        priors: list[int | None] | None = None,
        batch_max: int | None = None,
        compact: list[str | None] | None = None,
        owners: list[str | None] | None = None,
    ) -> IntakeResult:
        """Take ``(event_id, ts, seq, raw)`` in arrival order; return what is released.

        The clock is the whole stream's: an event is judged against the largest ``ts`` of every
        valid event received before it, this intake's or not. ``priors[i]``, if given, is the
        largest ``ts`` received before arrival ``i`` in this batch by the rest of the stream
        (other state buckets, :mod:`streaming.engine.clock`), and ``batch_max`` the largest of
        the whole batch; without them this intake is the whole stream. ``compact[i]``, if given
        and not None, is what arrival ``i`` is held and released as instead of its raw line
        (:mod:`streaming.engine.compact`). ``owners[i]``, if given, is the cluster of arrival ``i``
        if this intake owns it, or None: then it is judged as any other, but neither reported
        if late or a duplicate nor counted among its cluster's held events (another state
        bucket that received it too does both: :mod:`streaming.engine.shards`); without
        ``owners`` this intake owns every arrival."""
        out = IntakeResult()
        running = self.max_received
        by_cluster = self.held_by_cluster
        for i, (event_id, ts, seq, raw) in enumerate(arrivals):
            newest = running
            prior = priors[i] if priors is not None else None
            if prior is not None and (newest is None or prior > newest):
                newest = prior
            if running is None or ts > running:
                running = ts  # (every valid event moves the clock, duplicate or late)
            bucket = ts // 1000
            ids = self.seen.get(bucket)
            if ids is not None and event_id in ids:
                if owners is None or owners[i] is not None:
                    out.duplicates.append(raw)
                continue
            if ids is None:
                ids = self.seen[bucket] = set()
            ids.add(event_id)
            self.touched_buckets.add(bucket)
            if newest is not None and newest - ts > self.lateness_ms:
                if owners is not None and owners[i] is None:
                    continue
                out.late.append(
                    (
                        raw,
                        f"ts {ts} is {(newest - ts) / 1000:g} s older than the newest event "
                        f"received ({newest}), beyond the lateness bound of "
                        f"{self.lateness_ms / 1000:g} s",
                    )
                )
                continue
            self.arrivals += 1
            if bucket in self._stored:
                self._load_bucket(bucket)
            value = raw if compact is None else compact[i] or raw
            owner = cluster_of(event_id) if owners is None else owners[i]
            if owner is not None:
                by_cluster[owner] = by_cluster.get(owner, 0) + 1
            self._new.append((ts, NO_SEQ if seq is None else seq, self.arrivals, owner, value))
            self.held_counts[bucket] = self.held_counts.get(bucket, 0) + 1
            self.changed_buckets.add(bucket)
        if batch_max is not None and (running is None or batch_max > running):
            running = batch_max
        self.max_received = running
        self._release(out, final=False)
        self._prune()
        return out

    def flush(self) -> list[Held]:
        """Release everything held (end of a finite input)."""
        out = IntakeResult()
        self._release(out, final=True)
        return out.released

    def _release(self, out: IntakeResult, *, final: bool) -> None:
        """Release, in order, every held event older than the lateness bound allows to wait.
        The events received this batch join the held ones in one sort (both runs mostly in
        order already, which Python's sort merges in about linear time), and what is released
        is a prefix of them."""
        if final:
            cut = None  # everything goes
        elif self.max_received is None:
            return
        else:
            cut = self.max_received - self.lateness_ms  # releasable: ts < cut
        # a stored bucket that may hold a releasable event is loaded first, so that events
        # leave in order across buckets
        while self._stored and (cut is None or self._stored[0] * 1000 < cut):
            self._load_bucket(self._stored[0])
        if self._new:
            self.held += self._new
            self._new = []
            self.held.sort()
        end = len(self.held) if cut is None else bisect_left(self.held, (cut,))
        if not end:
            return
        released, self.held = self.held[:end], self.held[end:]
        counts, by_cluster = self.held_counts, self.held_by_cluster
        for held in released:
            bucket = held[TS] // 1000
            counts[bucket] -= 1
            if not counts[bucket]:
                del counts[bucket]
            self.changed_buckets.add(bucket)
            owner = held[OWNER]
            if owner is not None:
                by_cluster[owner] -= 1
                if not by_cluster[owner]:
                    del by_cluster[owner]
        out.released += released

    def _prune(self) -> None:
        if self.max_received is None:
            return
        oldest = (self.max_received - self.dedupe_horizon_ms) // 1000
        for bucket in [b for b in self.seen if b < oldest]:
            del self.seen[bucket]
            self.dropped_buckets.add(bucket)
            self.touched_buckets.discard(bucket)

    # -- persistence helpers -------------------------------------------------------------------

    @property
    def held_count(self) -> int:
        return sum(self.held_counts.values())

    def keep_stored(self, counts: dict[int, int], load: Callable[[int], Iterable[Held]]) -> None:
        """Held events stay with the caller, ``counts[second]`` of them per second of ``ts``;
        ``load(second)`` returns one bucket's (when it is needed, once)."""
        self.held_counts.update(counts)
        self._stored = sorted(counts)
        self._load = load

    def _load_bucket(self, bucket: int) -> None:
        assert self._load is not None
        self._stored.remove(bucket)  # a few buckets (the lateness bound's seconds): stays sorted
        self._new += self._load(bucket)

    def changed_held(self) -> dict[int, list[Held]]:
        """The held events of every bucket that changed since loading, in order (an empty
        list: the bucket is now empty)."""
        out: dict[int, list[Held]] = {b: [] for b in self.changed_buckets}
        # (after receive and flush every event is in the sorted ``held``)
        for held in sorted(self.held + self._new) if self._new else self.held:
            rows = out.get(held[TS] // 1000)
            if rows is not None:
                rows.append(held)
        return out
