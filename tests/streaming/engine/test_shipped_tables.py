"""Topic tables shipped by reference: a reference always finds its text, a line shipped by
reference is the line that was read, and the alerts are exactly those of every table shipped
whole — over random batchings, buckets, shards, read workers, restarts and a batch run twice."""

from __future__ import annotations

import random
from typing import Any

import orjson
import pytest

from emitter.fleet import FleetSpec, generate_fleet
from streaming.engine.compact import shipped
from streaming.engine.entries import MemoryEntries
from streaming.engine.runner import run_buckets
from streaming.engine.shipped_tables import (
    KEEP_BATCHES,
    TABLES,
    TEXT,
    MissingTableError,
    Shipments,
    TableStore,
    digest,
    elided,
    is_reference,
    reference,
    spliced,
    whole,
)
from streaming.stages.known_tables import KnownTables
from tests.streaming.engine.test_clock import _cut, _everything
from tests.streaming.stages.test_known_tables import TABLE, line

Arrival = tuple[str, int, int | None, str]


def test_a_line_shipped_by_reference_is_spliced_back_to_the_line_read() -> None:
    text = line()
    start = text.index('"topics":') + len('"topics":')
    shipped_line = reference(digest(TABLE), elided(text, start, start + len(TABLE)))
    assert is_reference(shipped_line)
    assert len(shipped_line) < len(text) - len(TABLE) + 40
    assert spliced(shipped_line[33:], TABLE) == text
    with pytest.raises(ValueError, match="not"):
        spliced(text, TABLE)  # (a line whose table is still in it)


def test_a_worker_ships_a_table_by_reference_only_after_an_earlier_batch_of_the_run() -> None:
    ships = Shipments()
    assert not ships.by_reference("C", "d", "run-1", 5)  # first: whole
    assert not ships.by_reference("C", "d", "run-1", 5)  # the same batch (or it run again)
    assert ships.by_reference("C", "d", "run-1", 6)
    assert not ships.by_reference("D", "d", "run-1", 7)  # another cluster's buckets
    assert not ships.by_reference("C", "d", "run-2", 7)  # a new run: whole again
    assert ships.by_reference("C", "d", "run-2", 8)
    assert ships.by_reference("C", "d", "run-2", 8 + KEEP_BATCHES)
    assert not ships.by_reference("C", "d", "run-2", 9 + 2 * KEEP_BATCHES)  # unused too long
    ships.forget("d")
    assert not ships.by_reference("C", "d", "run-2", 10 + 2 * KEEP_BATCHES)


def test_the_known_tables_ship_a_registration_whole_then_by_reference() -> None:
    known = KnownTables()
    text = line()
    first = known.parse(text)
    assert isinstance(first, dict)
    form = shipped(first, text)
    assert form is not None
    value, table = known.ship(text, first, form, ("run", 1))
    assert value == text and table is not None
    table_digest, start, end = table.split(":")
    assert text[int(start) : int(end)] == TABLE and table_digest == digest(TABLE)

    again = known.parse(text)
    assert isinstance(again, dict)
    assert known.ship(text, again, form, ("run", 1)) == (text, table)  # (the same batch)
    value, table = known.ship(text, again, form, ("run", 2))
    assert table == digest(TABLE) and is_reference(value)
    assert spliced(value[33:], TABLE) == text
    # a partial registration is held whole: no table column
    part = line(after=',"data_version":"1-1","full":false}').replace('"full":true,', "")
    event = known.parse(part)
    assert isinstance(event, dict) and not event["full"]
    assert shipped(event, part) is None


def test_a_bucket_keeps_each_text_it_received_whole_until_nothing_may_refer_to_it() -> None:
    entries = MemoryEntries()
    text = line()
    start = text.index('"topics":') + len('"topics":')
    table_digest = digest(TABLE)
    by_reference = reference(table_digest, elided(text, start, start + len(TABLE)))

    store = TableStore(entries)
    with pytest.raises(MissingTableError, match="reset the job"):
        store.received(table_digest, by_reference, 3, 1000)
    store.received(whole(table_digest, start, start + len(TABLE)), text, 3, 1000)
    store.save(3, None)
    assert entries.get(TEXT.format(table_digest)) is not None

    store = TableStore(entries)  # the next batch, from the stored bytes
    store.received(table_digest, by_reference, 4, 31_000)
    assert store.resolve(by_reference) == text
    assert store.resolve(text) == text
    store.save(4, None)

    # unused for KEEP_BATCHES batches, but a held event may be as old as the last one naming it
    store = TableStore(entries)
    store.save(5 + KEEP_BATCHES, 31_000)
    assert entries.get(TEXT.format(table_digest)) is not None
    store.save(5 + KEEP_BATCHES, 32_000)
    assert entries.get(TEXT.format(table_digest)) is None
    assert orjson.loads(entries.get(TABLES) or b"") == {}
    with pytest.raises(MissingTableError, match="reset the job"):
        TableStore(entries).resolve(by_reference)


def test_a_bucket_that_received_no_table_writes_nothing() -> None:
    entries = MemoryEntries()
    TableStore(entries).save(7, None)
    assert entries.get(TABLES) is None


# -- the alerts, exactly ------------------------------------------------------------------------


def _fleet_stream(rng: random.Random) -> list[Arrival]:
    """A small fleet, with some registrations again (duplicates) and some moved far later
    (late): every way a registration shipped by reference is held, applied or reported."""
    lines: list[bytes] = []
    spec = FleetSpec(clusters=3, brokers=3, topics=60, producers=30, send_rate=200, duration=100)
    generate_fleet(spec, lines.append)
    stream: list[Arrival] = []
    for raw in lines:
        event = orjson.loads(raw)
        stream.append((event["event_id"], event["ts"], event.get("seq"), raw.decode()))
    registrations = [i for i, a in enumerate(stream) if '"type":"heartbeat"' in a[3]]
    for at in rng.sample(registrations, 12):  # duplicates, anywhere after
        stream.insert(rng.randrange(at, len(stream)) + 1, stream[at])
    for at in sorted(rng.sample(registrations, 6), reverse=True):  # late: 10-20 s after
        moved = stream.pop(at)
        later = next(
            (i for i, a in enumerate(stream) if a[1] > moved[1] + rng.randint(10_000, 20_000)),
            len(stream),
        )
        stream.insert(later, moved)
    return stream


class _Workers:
    """The read stage's Python workers (each keeps its known tables and shipments): block ``b``
    of a batch is read by worker ``b % workers``; the query restarts (a new run) at the batches
    of ``restarts``; a batch of ``retried`` is read twice — an attempt whose state was never
    committed (its buckets did not run), then the one that counts."""

    def __init__(
        self,
        batches: list[list[list[Arrival]]],
        workers: int,
        restarts: set[int],
        retried: set[int],
    ) -> None:
        self.batches = batches
        self.known = [KnownTables() for _ in range(workers)]
        self.restarts = restarts
        self.retried = retried
        self.by_reference = 0

    def __call__(self, batch: int, block: int, raw: str, event: dict[str, Any]) -> tuple[str, Any]:
        if batch in self.retried:
            self.retried.discard(batch)
            for b, lines in enumerate(self.batches[batch]):
                for _, _, _, line in lines:
                    self._ship(batch, b, line)
        return self._ship(batch, block, raw)

    def _ship(self, batch: int, block: int, raw: str) -> tuple[str, Any]:
        known = self.known[block % len(self.known)]
        parsed = known.parse(raw)
        assert isinstance(parsed, dict)
        form = shipped(parsed, raw)
        if form is None:
            return raw, None
        run = f"run-{sum(1 for r in self.restarts if r <= batch)}"
        value, table = known.ship(raw, parsed, form, (run, batch))
        self.by_reference += is_reference(value)
        return value, table


@pytest.mark.parametrize("seed", range(3))
def test_tables_shipped_by_reference_give_exactly_the_alerts_of_tables_shipped_whole(
    seed: int,
) -> None:
    rng = random.Random(seed)
    stream = _fleet_stream(rng)
    for buckets, shards in ((1, 1), (2, 2), (2, 1), (7, 7), (3, 2)):
        batches = [_cut(rng, batch, 150) for batch in _cut(rng, stream, 900)]
        reference_run = _everything(
            run_buckets(batches, buckets=buckets, lateness_ms=2000, shards=shards)
        )
        assert reference_run["late"] and reference_run["duplicates"]
        count = len(batches)
        workers = _Workers(
            batches,
            rng.randint(1, 3),
            restarts={rng.randrange(1, count)},
            retried={rng.randrange(1, count), rng.randrange(1, count)},
        )
        run = run_buckets(batches, buckets=buckets, lateness_ms=2000, shards=shards, ship=workers)
        registrations = sum('"heartbeat"' in raw for _, _, _, raw in stream)
        assert workers.by_reference > registrations // 3, "registrations should go by reference"
        assert _everything(run) == reference_run, (buckets, shards)
