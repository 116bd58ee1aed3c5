"""One clock over many state buckets: every bucket reaches the verdicts one intake would, so
random traces, batchings, blocks, bucket counts and shards give exactly the alerts of one
bucket."""

from __future__ import annotations

import random

import orjson
import pytest

from emitter.fleet import FleetSpec, generate_fleet
from emitter.scenarios import SCENARIOS
from streaming.engine.clock import Block, batch_max, in_block_priors, priors
from streaming.engine.entries import MemoryEntries
from streaming.engine.intake import dedupe_id
from streaming.engine.runner import StreamRun, run_buckets, run_stream
from streaming.engine.step import Step
from tests.support.traces import Arrival, arrivals


def test_a_block_gives_each_event_the_largest_ts_before_it() -> None:
    assert in_block_priors([5, 3, 9, 7]) == ([None, 5, 5, 9], 9)
    assert in_block_priors([]) == ([], None)


def test_an_event_sees_the_blocks_ended_before_it_and_its_own_part() -> None:
    blocks = [Block("a|2", 100), Block("b|1", 400), Block("c|0", 50)]
    # an event of block b: block a has ended before it, block b's part is its own
    assert priors(["b|0", "b|1", "c|0"], [None, 30, None], blocks) == [100, 100, 400]
    assert batch_max(blocks) == 400


def _in_cluster(trace: list[Arrival], cluster: str) -> list[Arrival]:
    out = []
    for event_id, ts, seq, raw in trace:
        event = orjson.loads(raw)
        event["cluster"] = cluster
        out.append((event_id, ts, seq, orjson.dumps(event).decode()))
    return out


def _cut(rng: random.Random, items: list[Arrival], most: int) -> list[list[Arrival]]:
    out = []
    at = 0
    while at < len(items):
        size = rng.randint(1, most)
        out.append(items[at : at + size])
        at += size
    return out


def _everything(run: StreamRun) -> dict[str, object]:
    """All a run produced: every alert change of every cluster (each alert whole, the versions
    of each alert in order), every route change (of each topic in order), the late and
    duplicate counts and every other count, the broker states and created topics written, and
    each cluster's held events after each batch. (A cluster in shards writes the changes of
    its topics in shards: the order *between* two alerts, or two topics, is not kept, nor
    needed.)"""
    alerts: dict[tuple[str, str], list[bytes]] = {}
    routes: dict[tuple[str, str], list[object]] = {}
    for c, r in sorted(run.clusters.items()):
        for a in r.alert_changes:
            alerts.setdefault((c, a.id), []).append(
                orjson.dumps(a.to_dict(), option=orjson.OPT_SORT_KEYS)
            )
        for change in r.route_changes:
            routes.setdefault((c, change.topic), []).append(change)
    return {
        "alerts": dict(sorted(alerts.items())),
        "routes": dict(sorted(routes.items())),
        "late": run.late,
        "duplicates": run.duplicates,
        "counts": dict(sorted(run.counts.items(), key=repr)),
        "facts": sorted(run.facts, key=repr),
        "held": run.held,
    }


def _one_intake(batches: list[list[list[Arrival]]], lateness_ms: int) -> StreamRun:
    """The same batches through one step over the whole stream, as before buckets: no blocks,
    no priors (the duplicate horizon is pruned after each batch, so where a batch ends can turn
    a far-behind duplicate into a late event: the counts are compared batching for batching)."""
    step = Step(lateness_ms, 300_000)
    entries = MemoryEntries()
    run = StreamRun()
    for blocks in batches:
        batch = [
            (dedupe_id(orjson.loads(raw)["cluster"], i), ts, seq, raw)
            for block in blocks
            for i, ts, seq, raw in block
        ]
        run.add(step(entries, batch))
    run.add(step(entries, [], final=True))
    return run


def _alerts(run: StreamRun) -> list[bytes]:
    sort = orjson.OPT_SORT_KEYS
    return sorted(orjson.dumps(a.to_dict(), option=sort) for a in run.final_alerts())


def _random_stream(rng: random.Random) -> list[Arrival]:
    """Several scenarios, each as its own cluster, interleaved at random, some events twice."""
    names = rng.sample(sorted(SCENARIOS), 4)
    traces = [
        _in_cluster(arrivals(name, seed=rng.randint(0, 9)), f"c{i}") for i, name in enumerate(names)
    ]
    return _interleaved(rng, [list(t) for t in traces], most=60)


def _interleaved(rng: random.Random, queues: list[list[Arrival]], most: int) -> list[Arrival]:
    """The queues' events in random runs of up to ``most`` (each queue's in its order), and
    twenty of them again, anywhere after the event they repeat; empties the queues."""
    stream: list[Arrival] = []
    while any(queues):
        queue = rng.choice([q for q in queues if q])
        take = rng.randint(1, most)
        stream += queue[:take]
        del queue[:take]
    for _ in range(20):
        at = rng.randrange(len(stream))
        stream.insert(rng.randrange(at, len(stream)) + 1, stream[at])
    return stream


@pytest.mark.parametrize("seed", range(6))
def test_buckets_give_exactly_the_alerts_of_one_intake(seed: int) -> None:
    rng = random.Random(seed)
    stream = _random_stream(rng)
    lateness_ms = rng.choice([0, 2000, 5000])
    evaluated = run_stream(stream, lateness_ms=lateness_ms)  # all in one batch, as evaluate
    assert evaluated.late, "the interleaving should make some events late"

    # (buckets, shards of each cluster): whole clusters in 1, 2 or 7 buckets, as many shards as
    # buckets (as the job), and more or fewer
    for buckets, shards in ((1, 1), (2, 1), (7, 1), (2, 2), (7, 7), (1, 3), (2, 5), (3, 2)):
        batches = [_cut(rng, batch, 50) for batch in _cut(rng, stream, 400)]
        run = run_buckets(batches, buckets=buckets, lateness_ms=lateness_ms, shards=shards)
        one = _one_intake(batches, lateness_ms)
        assert _everything(run) == _everything(one), (buckets, shards)
        assert _alerts(run) == _alerts(evaluated), (buckets, shards)


@pytest.mark.parametrize("seed", [7, 8])
def test_buckets_give_exactly_the_fleets_alerts(seed: int) -> None:
    """A small fleet (its clusters' events in random runs, so that some arrive late, and some
    twice), in random batches and blocks: every keying gives one intake's state changes, and
    the alerts of the whole stream evaluated at once."""
    lines: list[bytes] = []
    spec = FleetSpec(clusters=3, brokers=3, topics=60, producers=30, send_rate=300, duration=70)
    generate_fleet(spec, lines.append)
    rng = random.Random(seed)
    queues: dict[str, list[Arrival]] = {}
    for raw in lines:
        event = orjson.loads(raw)
        arrival = (event["event_id"], event["ts"], event.get("seq"), raw.decode())
        queues.setdefault(event["cluster"], []).append(arrival)
    stream = _interleaved(rng, list(queues.values()), most=400)
    batches = [_cut(rng, batch, 120) for batch in _cut(rng, stream, 500)]
    reference = _everything(_one_intake(batches, 2000))
    evaluated = run_stream(stream, lateness_ms=2000)
    assert evaluated.late and evaluated.duplicates

    for buckets, shards in ((1, 1), (2, 1), (2, 2), (7, 7), (1, 4)):
        run = run_buckets(batches, buckets=buckets, lateness_ms=2000, shards=shards)
        assert _everything(run) == reference, (buckets, shards)
        assert _alerts(run) == _alerts(evaluated), (buckets, shards)


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_every_scenario_gives_the_same_alerts_with_its_cluster_in_shards(name: str) -> None:
    stream = arrivals(name, seed=3)
    batches = [[batch] for batch in _cut(random.Random(3), stream, 80)]
    whole = _everything(run_buckets(batches, buckets=1, lateness_ms=2000, shards=1))

    for buckets, shards in ((1, 3), (3, 3), (2, 7)):
        run = run_buckets(batches, buckets=buckets, lateness_ms=2000, shards=shards)
        assert _everything(run) == whole, (buckets, shards)
