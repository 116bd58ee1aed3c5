"""One step of the whole stream: a batch of arrivals in, the changes it made out.

:class:`Step` is what the Spark job's stateful processor calls once per micro-batch
(:mod:`streaming.stages.track`, over Spark's ``MapState``) and what the tests and in-memory runs
call (:mod:`streaming.engine.runner`, over :class:`~streaming.engine.entries.MemoryEntries`):
load the clock and the intake from the entries, feed the arrivals through the stream's one
intake and clock (:class:`~streaming.engine.stream.StreamEngine`), save what changed, and return
the changes as rows of :mod:`routewatch.changes` — alert versions, route changes, topics
created, broker states, counts, late and bad input, and each cluster's clock. Since every step
starts from the entries, a run is the same whatever its batches, and a restart (new entries
object, same stored bytes) resumes exactly.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

import orjson

from routewatch.changes import (
    DUPLICATES,
    EVENTS_APPLIED,
    LATE,
    SENDS,
    BadLine,
    BrokerState,
    ChangeRow,
    ClusterClock,
    Count,
    LateEvent,
    TopicCreated,
    encode_alert,
    encode_bad,
    encode_broker,
    encode_clock,
    encode_count,
    encode_late,
    encode_route,
    encode_topic,
)
from streaming.engine.cluster import ClusterEngine
from streaming.engine.entries import Entries
from streaming.engine.layout import StateLayout
from streaming.engine.stream import Arrival, StreamEngine

__all__ = ["Step"]


class Step:
    """The stream's step function, for one lateness bound and duplicate horizon; each cluster
    in ``shards`` shards (:mod:`streaming.engine.shards`), of which the entries hold those
    ``mine(cluster, shard)`` says (all by default)."""

    def __init__(
        self,
        lateness_ms: int,
        dedupe_horizon_ms: int,
        *,
        shards: int = 1,
        mine: Callable[[str, int], bool] | None = None,
    ) -> None:
        self.lateness_ms = lateness_ms
        self.dedupe_horizon_ms = dedupe_horizon_ms
        self.shards = shards
        self.mine = mine

    def __call__(
        self,
        entries: Entries,
        arrivals: list[Arrival],
        *,
        final: bool = False,
        bad: Iterable[tuple[str | None, BadLine]] = (),
        priors: list[int | None] | None = None,
        batch_max: int | None = None,
        compact: list[str | None] | None = None,
        owners: list[str | None] | None = None,
        tables: list[str | None] | None = None,
        batch: int | None = None,
    ) -> list[ChangeRow]:
        """Apply one batch: ``arrivals`` (valid events, ``(dedupe id, ts, seq, raw)``, in
        arrival order) and ``bad`` input (the cluster it names, if any, and the line); with
        ``final``, the input ends here and everything held is applied. The changes, in order:
        bad input, each cluster's changes, late input and counts, each cluster's clock.

        ``priors`` and ``batch_max``: when the entries are one state bucket's (some of the
        stream's clusters), the largest ``ts`` the rest of the stream received before each
        arrival, and in the whole batch (:mod:`streaming.engine.clock`). ``compact``: the
        arrivals' compact forms, held instead of their raw lines where given
        (:mod:`streaming.engine.compact`). ``owners``: the cluster of each arrival this bucket
        owns — reports if late or a duplicate, counts while held — and None for the others
        (an event several buckets receive is owned by one); all by default. ``tables``: for
        each arrival, how the read stage shipped its registration's table, if it shipped it
        whole with its digest or by reference (:mod:`streaming.engine.shipped_tables`), in
        micro-batch ``batch`` of a streaming query."""
        out = [encode_bad(cluster, line) for cluster, line in bad]
        layout = StateLayout(entries, self.lateness_ms, self.dedupe_horizon_ms, self.shards)
        intake = layout.load_intake(arrivals)
        clock = layout.load_clock()
        store = layout.table_store()
        if tables and batch is not None:
            for (_, ts, _, raw), shipped in zip(arrivals, tables, strict=True):
                if shipped is not None:
                    store.received(shipped, raw, batch, ts)
        stream = StreamEngine(
            intake,
            layout.load_engine,
            clock,
            shards=self.shards,
            mine=self.mine,
            resolve=store.resolve,
        )
        result = stream.receive(arrivals, priors, batch_max, compact, owners)
        if final:
            stream.flush()
        for engine in stream.finish():
            layout.save_engine(engine)
            out += _engine_changes(engine.cluster, engine, clock.stream_time)
        out += _intake_changes(result.late, result.duplicates, clock.stream_time, store.resolve)
        # a row per cluster with a shard or a held event here, with the events of it held here:
        # the store adds up a batch's rows of one cluster (routewatch.changes.combine_clocks),
        # so they are written only when every bucket takes part in the batch — it received
        # the batch's block summaries, or it is the whole stream (not a batch of bad input
        # alone, which reaches only the buckets it names)
        if priors is None or batch_max is not None:
            held = intake.held_by_cluster
            known = {orjson.loads(key)[0] for key in clock.clusters}
            for cluster in sorted(known | set(held)):
                cluster_clock = ClusterClock(
                    clock.stream_time, intake.max_received, held.get(cluster, 0)
                )
                out.append(encode_clock(cluster, cluster_clock))
        layout.save_intake(intake)
        layout.save_clock(clock)
        seconds = [second for second, count in intake.held_counts.items() if count]
        store.save(batch, min(seconds) * 1000 if seconds else None)
        return out


def _engine_changes(cluster: str, engine: ClusterEngine, now: int | None) -> list[ChangeRow]:
    """What a cluster's engine changed in this batch, as change rows."""
    rows = [encode_alert(alert, i) for i, alert in enumerate(engine.book.take_changes())]
    rows += [encode_route(cluster, change) for change in engine.out.route_changes]
    for topic, at in sorted(engine.out.auto_created.items()):
        rows.append(encode_topic(cluster, TopicCreated(topic, at)))
    for key in sorted(engine.out.touched_regs):
        reg = engine.meta.regs[key]
        state = BrokerState(
            key, reg.addr, reg.live, reg.shutdown, reg.auto_create, reg.template, reg.last_hb
        )
        rows.append(encode_broker(cluster, state))
    counts = [Count(EVENTS_APPLIED, k, v, now) for k, v in engine.out.events.items()]
    counts += [Count(SENDS, k, v, now) for k, v in engine.out.sends.items()]
    for count in sorted(counts, key=lambda c: (c.name, c.label)):
        rows.append(encode_count(cluster, count))
    return rows


def _intake_changes(
    late: list[tuple[str, str]],
    duplicates: list[str],
    now: int | None,
    resolve: Callable[[str], str],
) -> list[ChangeRow]:
    """Late input (kept with its reason, as it was read: ``resolve`` gives a registration
    shipped by reference its table back) and the late and duplicate counts, by the cluster
    each line names."""
    rows: list[ChangeRow] = []
    counts: dict[tuple[str, str], int] = {}
    for raw in duplicates:
        cluster = orjson.loads(resolve(raw))["cluster"]
        counts[(cluster, DUPLICATES)] = counts.get((cluster, DUPLICATES), 0) + 1
    for shipped, detail in late:
        raw = resolve(shipped)
        cluster = orjson.loads(raw)["cluster"]
        counts[(cluster, LATE)] = counts.get((cluster, LATE), 0) + 1
        rows.append(encode_late(cluster, LateEvent(detail, raw)))
    for (cluster, name), value in sorted(counts.items()):
        rows.append(encode_count(cluster, Count(name, "", value, now)))
    return rows
