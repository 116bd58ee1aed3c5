"""The intake's held events, kept by the caller per second of event time between batches."""

from __future__ import annotations

import random

import pytest

from streaming.engine.intake import Held, Intake, dedupe_id

LATENESS_MS = 2_000


def _arrivals(n: int, seed: int) -> list[tuple[str, int, int | None, str]]:
    """Events about 10 ms apart, arriving up to 1.5 s out of order, some sharing a ts (and
    no seq, so that only their arrival orders them), some repeated."""
    rng = random.Random(seed)
    events: list[tuple[str, int, int | None, str]] = []
    for i in range(n):
        ts = 1_000_000 + i * 10 - (i % 7 == 0) * rng.randrange(1_500)
        if i % 5 == 0 and events:
            ts = events[-1][1]  # the same ts as the one before
        events.append((dedupe_id("C", f"e{i}"), ts, None if i % 3 else i, f"raw{i}"))
    events += [events[i] for i in range(0, n, 50)]  # duplicates, arriving late
    rng.shuffle(events[-n // 10 :])
    return events


def _in_memory(arrivals: list[tuple[str, int, int | None, str]], cut: int) -> list[str]:
    intake = Intake(LATENESS_MS, 300_000)
    out = []
    for start in range(0, len(arrivals), cut):
        out += [h[-1] for h in intake.receive(arrivals[start : start + cut]).released]
    return out + [h[-1] for h in intake.flush()]


class _Caller:
    """What the stream processor does: held events in per-second buckets between batches,
    with the intake's counters; counts the buckets read and written."""

    def __init__(self) -> None:
        self.buckets: dict[int, list[Held]] = {}
        self.counts: dict[int, int] = {}
        self.by_cluster: dict[str, int] = {}
        self.max_received: int | None = None
        self.arrivals = 0
        self.seen: dict[int, set[str]] = {}
        self.read: list[int] = []
        self.written: list[int] = []

    def load(self, second: int) -> list[Held]:
        self.read.append(second)
        return list(self.buckets[second])

    def batch(self, arrivals: list[tuple[str, int, int | None, str]], final: bool) -> list[str]:
        intake = Intake(LATENESS_MS, 300_000)
        intake.max_received, intake.arrivals = self.max_received, self.arrivals
        intake.seen = {second: set(ids) for second, ids in self.seen.items()}
        intake.keep_stored(dict(self.counts), self.load)
        intake.held_by_cluster = dict(self.by_cluster)
        released = [h[-1] for h in intake.receive(arrivals).released]
        if final:
            released += [h[-1] for h in intake.flush()]
        for second, rows in intake.changed_held().items():
            self.written.append(second)
            if rows:
                self.buckets[second] = rows
            else:
                self.buckets.pop(second, None)
        self.counts = dict(intake.held_counts)
        self.by_cluster = dict(intake.held_by_cluster)
        self.max_received, self.arrivals = intake.max_received, intake.arrivals
        self.seen = intake.seen
        assert self.counts == {s: len(rows) for s, rows in self.buckets.items()}
        assert intake.held_count == sum(len(rows) for rows in self.buckets.values())
        assert intake.held_by_cluster == ({"C": intake.held_count} if intake.held_count else {})
        return released


def test_held_events_kept_per_second_are_released_as_if_all_were_in_memory() -> None:
    arrivals = _arrivals(2_000, seed=7)
    for cut in (1, 37, 100, 450):
        caller = _Caller()
        released = []
        batches = [arrivals[i : i + cut] for i in range(0, len(arrivals), cut)]
        for n, batch in enumerate(batches):
            released += caller.batch(batch, final=n == len(batches) - 1)

        assert released == _in_memory(arrivals, cut)
        assert caller.buckets == {}


def test_a_batch_reads_and_writes_only_the_seconds_it_changes() -> None:
    # 10 s of events in order, 100 a second, in batches of one second
    arrivals: list[tuple[str, int, int | None, str]] = [
        (dedupe_id("C", f"e{i}"), 1_000_000 + i * 10, i, f"raw{i}") for i in range(1_000)
    ]
    caller = _Caller()
    for start in range(0, 900, 100):
        caller.batch(arrivals[start : start + 100], final=False)
    caller.read.clear()
    caller.written.clear()

    caller.batch(arrivals[900:1_000], final=False)  # the 10th second

    # held: the last 2 s (1006.990 to 1008.990); the batch releases up to 1007.980 and adds
    # the 10th second: the second in between (1008) is neither read nor written
    assert sorted(caller.read) == [1_006, 1_007]
    assert sorted(caller.written) == [1_006, 1_007, 1_009]
    assert sorted(caller.buckets) == [1_007, 1_008, 1_009]


def _model(
    batches: list[list[tuple[str, int, int | None, str]]], lateness_ms: int
) -> list[tuple[int, list[str]]]:
    """What the intake must release, by its definition, computed the slow way: after each
    batch, every accepted event whose ts is more than the bound older than the newest received,
    sorted by (ts, seq or -1, arrival number); each batch's release, with the batch's index."""
    newest: int | None = None
    seen: set[str] = set()
    held: list[tuple[int, int, int, str]] = []  # (ts, seq, arrival number, raw line)
    number = 0
    out = []
    for n, batch in enumerate(batches):
        for event_id, ts, seq, raw in batch:
            before = newest
            newest = ts if newest is None else max(newest, ts)
            if event_id in seen:
                continue
            seen.add(event_id)
            if before is not None and before - ts > lateness_ms:
                continue  # late
            number += 1
            held.append((ts, -1 if seq is None else seq, number, raw))
        assert newest is not None
        ready = sorted(h for h in held if newest - h[0] > lateness_ms)
        held = [h for h in held if h not in ready]
        out.append((n, [h[3] for h in ready]))
    return out


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_each_batch_releases_what_the_definition_says_in_its_order(seed: int) -> None:
    rng = random.Random(seed)
    arrivals = _arrivals(1_500, seed=seed)
    cuts = sorted(rng.sample(range(1, len(arrivals)), 40))
    batches = [arrivals[a:b] for a, b in zip([0, *cuts], [*cuts, len(arrivals)], strict=True)]
    caller = _Caller()
    got = [(n, caller.batch(batch, final=False)) for n, batch in enumerate(batches)]
    assert got == _model(batches, LATENESS_MS)


def test_each_cluster_s_held_events_are_counted_where_they_are_owned() -> None:
    rng = random.Random(4)
    arrivals: list[tuple[str, int, int | None, str]] = []
    owners: list[str | None] = []
    for i in range(600):
        cluster = rng.choice(["C", "D", ""])  # (a cluster may be named "")
        owned = rng.random() < 0.7  # (the rest: copies another bucket owns)
        arrivals.append((dedupe_id(cluster, f"e{i}"), 1_000_000 + i * 10, None, f"raw{i}"))
        owners.append(cluster if owned else None)
    intake = Intake(LATENESS_MS, 300_000)
    held: list[int] = []  # the indices of the arrivals still held
    for start in range(0, 600, 50):
        released = intake.receive(arrivals[start : start + 50], owners=owners[start : start + 50])
        gone = {h[-1] for h in released.released}
        held = [i for i in [*held, *range(start, start + 50)] if f"raw{i}" not in gone]
        expected = {c: sum(1 for i in held if owners[i] == c) for c in ("C", "D", "")}
        assert intake.held_by_cluster == {c: n for c, n in expected.items() if n}
        assert intake.held_count == len(held)  # (every copy is held, owned or not)
    again = intake.receive(arrivals[:40], owners=owners[:40])  # (duplicates: owned ones said)
    assert len(again.duplicates) == sum(1 for o in owners[:40] if o is not None)
    intake.flush()
    assert intake.held_by_cluster == {}
