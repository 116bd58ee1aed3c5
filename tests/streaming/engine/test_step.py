"""The stream's one step function over the in-memory entries: what it stores, that a reload
between batches changes nothing, and the order of its changes."""

from __future__ import annotations

import random

import orjson

from routewatch.alerts import Alert
from routewatch.changes import BadLine, ChangeRow, decode
from streaming.engine import MemoryEntries, Step, run_stream
from streaming.engine.held_rows import PART_BYTES
from streaming.engine.intake import dedupe_id
from streaming.engine.layout import BUCKETS, StateLayout
from streaming.engine.stream import Arrival
from tests.streaming.engine.events import Trace, ms
from tests.support.traces import arrivals

TRACE = "demo-mixed"


def _arrivals(trace: list[Arrival]) -> list[Arrival]:
    return [
        (dedupe_id(orjson.loads(raw)["cluster"], eid), ts, seq, raw) for eid, ts, seq, raw in trace
    ]


def _alerts(rows: list[ChangeRow]) -> list[tuple[str, str, int, int | None]]:
    alerts = [c for c in map(decode, rows) if isinstance(c, Alert)]
    return [(a.id, a.state, a.opened_at, a.resolved_at) for a in alerts]


def test_a_reload_between_batches_changes_nothing() -> None:
    """Each batch on entries copied from the bytes the previous one stored (a restart) gives
    the same changes as one set of entries kept throughout."""
    trace = _arrivals(arrivals(TRACE, seed=3))
    step = Step(lateness_ms=2000, dedupe_horizon_ms=300_000)
    kept, reloaded = MemoryEntries(), MemoryEntries()
    kept_rows: list[ChangeRow] = []
    reloaded_rows: list[ChangeRow] = []
    for start in range(0, len(trace), 50):
        batch = trace[start : start + 50]
        kept_rows += step(kept, batch)
        fresh = MemoryEntries()
        fresh.data = dict(reloaded.data)
        reloaded_rows += step(fresh, batch)
        reloaded = fresh
    kept_rows += step(kept, [], final=True)
    reloaded_rows += step(reloaded, [], final=True)

    assert reloaded_rows == kept_rows
    assert reloaded.data == kept.data
    one_batch = step(MemoryEntries(), trace, final=True)
    assert sorted(set(_alerts(kept_rows)) - set(_alerts(one_batch))) == []


def test_the_entries_hold_the_clock_the_intake_and_each_cluster_shards_state() -> None:
    entries = MemoryEntries()
    Step(lateness_ms=2000, dedupe_horizon_ms=300_000)(
        entries, _arrivals(arrivals(TRACE, seed=1)), final=True
    )
    names = set(entries.data)

    assert {"clock", "intake"} <= names
    clock = orjson.loads(entries.data["clock"])
    assert set(clock["clusters"]) == {'["DefaultCluster",0]'}  # (cluster, shard)
    assert {tuple(orjson.loads(n)[:2]) for n in names if n.startswith("[")} == {
        ("DefaultCluster", 0)
    }
    cluster_parts = [orjson.loads(n)[2] for n in names if n.startswith("[")]
    assert "meta" in cluster_parts
    assert any(p.startswith("table/") for p in cluster_parts)
    buckets = [int(p.split("/")[1]) for p in cluster_parts if p.startswith(("route/", "topic/"))]
    assert buckets and all(0 <= b < BUCKETS for b in buckets)
    # Everything is applied at the end of the input: nothing is held.
    assert not any(n.startswith("held/") for n in names)


def test_a_busy_second_is_held_in_parts_below_the_part_size_and_removed_once_released() -> None:
    """Twelve thousand sends of long, random topic names in one second, held by the lateness
    bound across a batch: stored in several parts, none over ``PART_BYTES``, and loaded whole
    again; once they are released no part is left."""
    rng = random.Random(5)
    t = Trace()
    t.hb(0, "a")
    for _ in range(12_000):
        t.send(1.5, f"t-{rng.randbytes(24).hex()}", broker="a")
    t.hb(9, "a")
    trace = _arrivals(t.arrivals())
    step = Step(lateness_ms=2000, dedupe_horizon_ms=300_000)
    entries = MemoryEntries()

    step(entries, trace[:-1])
    second = ms(1.5) // 1000
    held = {n: d for n, d in entries.data.items() if n.startswith(f"held/{second}")}
    stored = StateLayout(entries, 2000, 300_000).load_intake([]).flush()
    rows = step(entries, trace[-1:])

    assert len(held) > 2 and all(len(d) <= PART_BYTES for d in held.values())
    assert set(held) == {f"held/{second}"} | {f"held/{second}/{i}" for i in range(1, len(held))}
    assert [row[-1] for row in stored] == [raw for _, _, _, raw in trace[:-1]]
    assert rows and not any(n.startswith(f"held/{second}") for n in entries.data)
    assert orjson.loads(entries.data["intake"])["held_parts"] == []


def test_bad_input_comes_first_and_every_cluster_gets_its_clock() -> None:
    trace = _arrivals(arrivals(TRACE, seed=1))[:20]
    rows = Step(lateness_ms=0, dedupe_horizon_ms=300_000)(
        MemoryEntries(), trace, bad=[(None, BadLine("not_json", "line 1", "{"))]
    )

    assert rows[0].kind == "bad" and decode(rows[0]) == BadLine("not_json", "line 1", "{")
    assert rows[-1].kind == "clock" and rows[-1].cluster == "DefaultCluster"


def test_the_runner_is_the_step_over_memory() -> None:
    trace = arrivals(TRACE, seed=2)
    run = run_stream(trace, lateness_ms=2000, batch_size=25)
    rows = Step(lateness_ms=2000, dedupe_horizon_ms=300_000)(
        MemoryEntries(), _arrivals(trace), final=True
    )

    assert sorted(a.id for a in run.final_alerts()) == sorted({a[0] for a in _alerts(rows)})


def test_topics_and_clients_gone_for_7_days_leave_nothing_in_the_state() -> None:
    """Thirty auto-created topics (a system topic among them) and a client without a NameServer
    address; the topics are deleted and the client goes away. Eight days later no entry of the
    state names any of them: what the job reads at every batch does not grow with them."""
    day = 24 * 3600.0
    names = [f"Invented-{i}" for i in range(29)] + ["BenchmarkTest"]
    t = Trace()
    t.hb(0, "a")
    t.hb(0, "b")
    for i, topic in enumerate(names):
        client = f"app-{i}"
        t.pull(1, topic, ["a", "b"], via_default=True, client=client)
        t.send(1, topic, broker="a", auto_created=True, client=client)
        t.send(1, topic, broker="b", auto_created=True, client=client)
        t.pull(30, topic, ["a", "b"], client=client)  # converged: no alert
    t.hb(2, "a", dict.fromkeys(names, 4), full=False)
    t.hb(2, "b", dict.fromkeys(names, 4), full=False)
    t.pull(3, "Other", [], result="NO_NAMESRV", namesrv=None, client="ghost-client")
    t.hb(60, "a")  # the topics are deleted
    t.hb(60, "b")
    t.hb(8 * day, "a")  # the brokers, silent meanwhile, are back
    t.hb(8 * day, "b")
    entries = MemoryEntries()
    step = Step(lateness_ms=0, dedupe_horizon_ms=300_000)

    step(entries, _arrivals(t.arrivals()))
    step(entries, [], final=True)  # the end of the input releases the events held at 8 days

    stored = b"".join(name.encode() + data for name, data in entries.data.items())
    assert b"ghost-client" not in stored
    assert [name for name in names if name.encode() in stored] == []
