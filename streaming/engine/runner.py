"""The stream's step over a whole input in memory: tests, and anything that needs the alerts of
a finite input without Spark.

:func:`run_stream` calls the same :class:`~streaming.engine.step.Step` the Spark job calls,
over :class:`~streaming.engine.entries.MemoryEntries`, one batch at a time — every batch starts
from the stored bytes, as after a restart — and reads the alert versions, route changes and
counts back from the change rows the step returns (:mod:`routewatch.changes`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import orjson

from routewatch.alerts import Alert
from routewatch.changes import (
    DUPLICATES,
    LATE,
    BadLine,
    BrokerState,
    Change,
    ChangeRow,
    ClusterClock,
    Count,
    RouteChange,
    TopicCreated,
    combine_clocks,
    decode,
)
from routewatch.codec import parse
from routewatch.validation import BadInput
from streaming.engine.clock import Block, batch_max, in_block_priors, priors
from streaming.engine.compact import compact, held_form, shipped
from streaming.engine.entries import MemoryEntries
from streaming.engine.intake import dedupe_id
from streaming.engine.shards import event_shards, owner_shard, shard_bucket
from streaming.engine.step import Step
from streaming.engine.stream import Arrival

__all__ = ["ClusterRun", "LineRun", "StreamRun", "run_buckets", "run_cluster", "run_stream"]

DEFAULT_DEDUPE_HORIZON_MS = 300_000


@dataclass
class ClusterRun:
    """Everything one cluster's input produced: every alert change, route changes."""

    alert_changes: list[Alert] = field(default_factory=list)
    route_changes: list[RouteChange] = field(default_factory=list)

    def final_alerts(self) -> list[Alert]:
        """The last version of every alert, in the order alerts were first opened."""
        latest: dict[str, Alert] = {}
        for alert in self.alert_changes:
            latest[alert.id] = alert
        return list(latest.values())


@dataclass
class StreamRun:
    """Everything a whole input produced, per cluster, and the stream's counts."""

    clusters: dict[str, ClusterRun] = field(default_factory=dict)
    late: int = 0
    duplicates: int = 0
    # every count by (cluster, name, label); broker states and created topics, as written;
    # after each batch, each cluster's held events (those of the clusters holding any)
    counts: Counter[tuple[str | None, str, str]] = field(default_factory=Counter)
    facts: list[tuple[str | None, str]] = field(default_factory=list)
    held: list[dict[str | None, int]] = field(default_factory=list)

    def cluster(self, name: str) -> ClusterRun:
        return self.clusters.setdefault(name, ClusterRun())

    def final_alerts(self) -> list[Alert]:
        """The last version of every alert of every cluster."""
        return [a for name in sorted(self.clusters) for a in self.clusters[name].final_alerts()]

    def add(self, rows: Iterable[ChangeRow]) -> None:
        """Take in the changes of one batch (of every state bucket, for the clocks: the
        store adds up a batch's clock rows of one cluster)."""
        clocks: list[tuple[str | None, Change]] = []
        for row in rows:
            change = decode(row)
            if isinstance(change, Count):
                self.counts[(row.cluster, change.name, change.label)] += change.value
            elif isinstance(change, BrokerState | TopicCreated):
                self.facts.append((row.cluster, repr(change)))
            elif isinstance(change, ClusterClock):
                clocks.append((row.cluster, change))
            if isinstance(change, Alert):
                self.cluster(change.cluster).alert_changes.append(change)
            elif isinstance(change, RouteChange):
                assert row.cluster is not None
                self.cluster(row.cluster).route_changes.append(change)
            elif isinstance(change, Count) and change.name == LATE:
                self.late += change.value
            elif isinstance(change, Count) and change.name == DUPLICATES:
                self.duplicates += change.value
            elif row.cluster is not None:
                self.cluster(row.cluster)
        if clocks:
            combined = combine_clocks(clocks)
            self.held.append(
                {c: k.held for c, k in combined if isinstance(k, ClusterClock) and k.held}
            )


def run_stream(
    arrivals: Iterable[Arrival],
    *,
    lateness_ms: int,
    batch_size: int | None = None,
    dedupe_horizon_ms: int = DEFAULT_DEDUPE_HORIZON_MS,
) -> StreamRun:
    """Feed ``(event_id, ts, seq, raw)`` arrivals (of valid events) through the stream's step,
    ``batch_size`` at a time (all at once by default), then end the input."""
    step = Step(lateness_ms, dedupe_horizon_ms)
    entries = MemoryEntries()
    run = StreamRun()
    pending: list[Arrival] = []
    forms: list[str | None] = []
    for event_id, ts, seq, raw in arrivals:
        event = orjson.loads(raw)
        pending.append((dedupe_id(event["cluster"], event_id), ts, seq, raw))
        forms.append(compact(event, raw))
    size = batch_size or max(len(pending), 1)
    for start in range(0, len(pending), size):
        end = start + size
        run.add(step(entries, pending[start:end], compact=forms[start:end]))
    run.add(step(entries, [], final=True))
    return run


def run_buckets(
    batches: Iterable[list[list[Arrival]]],
    *,
    buckets: int,
    lateness_ms: int,
    dedupe_horizon_ms: int = DEFAULT_DEDUPE_HORIZON_MS,
    shards: int | None = None,
    ship: Ship | None = None,
) -> StreamRun:
    """:func:`run_stream` as the Spark job runs it over ``buckets`` state buckets, each cluster
    in ``shards`` shards (as many as buckets by default): each batch is a list of blocks of
    ``(event_id, ts, seq, raw)`` arrivals (together, in arrival order); every bucket takes the
    events of its cluster shards (:mod:`streaming.engine.shards`) and every block's summary, and
    steps on its own entries (:mod:`streaming.engine.clock`). ``ship``, if given, is the read
    stage's shipping of each event in a streaming query whose micro-batches are numbered from
    0 (:data:`Ship`)."""
    shards = shards or buckets
    steps = [
        Step(lateness_ms, dedupe_horizon_ms, shards=shards, mine=_bucket_holds(b, buckets))
        for b in range(buckets)
    ]
    entries = [MemoryEntries() for _ in range(buckets)]
    run = StreamRun()
    for batch, blocks in enumerate(batches):
        summaries: list[Block] = []
        own: list[Own] = [([], [], [], [], [], []) for _ in range(buckets)]
        for b, block in enumerate(blocks):
            in_block, top = in_block_priors([ts for _, ts, _, _ in block])
            if top is not None:
                summaries.append(Block(f"{b:09d}|{len(block) - 1:09d}", top))
            pairs = zip(block, in_block, strict=True)
            for p, ((event_id, ts, seq, raw), prior) in enumerate(pairs):
                event = orjson.loads(raw)
                cluster, kind, topic = event["cluster"], event["type"], event.get("topic")
                owner = shard_bucket(cluster, owner_shard(kind, topic, shards), buckets)
                line, table = (raw, None) if ship is None else ship(batch, b, raw, event)
                form = shipped(event, raw)
                form = None if form is None else held_form(form, line)
                for bucket in sorted(
                    {shard_bucket(cluster, s, buckets) for s in event_shards(kind, topic, shards)}
                ):
                    keys, prior_list, arrivals, forms, owners, tables = own[bucket]
                    keys.append(f"{b:09d}|{p:09d}")
                    prior_list.append(prior)
                    arrivals.append((dedupe_id(cluster, event_id), ts, seq, line))
                    forms.append(form)
                    owners.append(cluster if bucket == owner else None)
                    tables.append(table)
        top = batch_max(summaries)
        if not summaries:
            continue  # (no valid event: no bucket is called, as in Spark)
        rows: list[ChangeRow] = []
        for bucket, (keys, prior_list, arrivals, forms, owners, tables) in enumerate(own):
            rows += steps[bucket](
                entries[bucket],
                arrivals,
                priors=priors(keys, prior_list, summaries),
                batch_max=top,
                compact=forms,
                owners=owners,
                tables=tables,
                batch=None if ship is None else batch,
            )
        run.add(rows)
    run.add(
        [row for step, got in zip(steps, entries, strict=True) for row in step(got, [], final=True)]
    )
    return run


# one bucket's part of a batch: arrival keys, in-block priors, arrivals, compact forms, each
# arrival's cluster if the bucket owns it (None if not), and how its table was shipped
Own = tuple[
    list[str], list[int | None], list[Arrival], list[str | None], list[str | None], list[str | None]
]

Ship = Callable[[int, int, str, dict[str, Any]], tuple[str, str | None]]
"""The read stage's shipping of one valid event in a streaming query: ``(batch, block, raw,
event) -> (line, table)``, the line as shipped and the ``table`` column beside it
(:mod:`streaming.engine.shipped_tables`; ``(raw, None)`` for an event shipped as it was read)."""


def _bucket_holds(bucket: int, buckets: int) -> Callable[[str, int], bool]:
    """Whether a cluster shard lives in state bucket ``bucket``."""
    return lambda cluster, shard: shard_bucket(cluster, shard, buckets) == bucket


def run_cluster(
    cluster: str,
    arrivals: Iterable[Arrival],
    *,
    lateness_ms: int,
    batch_size: int | None = None,
    dedupe_horizon_ms: int = DEFAULT_DEDUPE_HORIZON_MS,
) -> ClusterRun:
    """:func:`run_stream` over an input, and what one of its clusters produced."""
    run = run_stream(
        arrivals,
        lateness_ms=lateness_ms,
        batch_size=batch_size,
        dedupe_horizon_ms=dedupe_horizon_ms,
    )
    return run.cluster(cluster)


class LineRun:
    """The stream's step over lines of input given a batch at a time: the change rows the job
    would write for the same batches, without Spark — each line decoded as the read stage
    decodes it (:func:`routewatch.codec.parse`), bad lines kept with their reason, the state
    carried from batch to batch in memory. Tests fill a store with them through the store's
    own API (``Store.write_batch``)."""

    def __init__(
        self, *, lateness_ms: int, dedupe_horizon_ms: int = DEFAULT_DEDUPE_HORIZON_MS
    ) -> None:
        self.step = Step(lateness_ms, dedupe_horizon_ms)
        self.entries = MemoryEntries()

    def batch(self, lines: Iterable[str], *, final: bool = False) -> list[ChangeRow]:
        """One batch of lines, in arrival order; with ``final``, the input ends with it."""
        arrivals: list[Arrival] = []
        forms: list[str | None] = []
        bad: list[tuple[str | None, BadLine]] = []
        for line in lines:
            event = parse(line)
            if isinstance(event, BadInput):
                bad.append((event.cluster, BadLine(event.reason, event.detail, line)))
            else:
                cluster = event["cluster"]
                key = dedupe_id(cluster, event["event_id"])
                arrivals.append((key, event["ts"], event.get("seq"), line))
                forms.append(compact(event, line))
        return self.step(self.entries, arrivals, final=final, bad=bad, compact=forms)
