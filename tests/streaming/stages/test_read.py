"""Stage 1 on a few literal lines: validation reasons and arrival order."""

from __future__ import annotations

from typing import Any

import numpy as np
import orjson
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pyspark.sql import DataFrame, SparkSession

from streaming.engine.shards import event_shards, owner_shard, shard_bucket
from streaming.stages.read import (
    _ARROW_SCHEMA,
    EVERY_BUCKET,
    _by_size,
    pack_batches,
    pack_events,
    read_events,
    read_packed,
    unpack_chunks,
    unpack_columns,
    validate_batches,
)
from tests.streaming.engine.events import Trace

GOOD = (
    '{"v":1,"type":"send","ts":1000,"cluster":"C","event_id":"p-1","seq":7,"client_id":"c",'
    '"group":"g","topic":"T","broker":"b","queue_id":0,"default_topic":"TBW102",'
    '"default_topic_queue_nums":4,"status":"SEND_OK"}'
)


@pytest.mark.spark
def test_valid_lines_get_their_envelope_and_bad_lines_their_reason(spark: SparkSession) -> None:
    lines = spark.createDataFrame(
        [
            (GOOD, "f1"),
            ("{not json", "f1"),
            (GOOD.replace('"status":"SEND_OK"', '"status":"OK"'), "f1"),
            (GOOD.replace('"cluster":"C",', ""), "f1"),
        ],
        "value string, origin string",
    ).coalesce(1)

    out = read_events(lines).orderBy("arrival").collect()
    rows = [r for r in out if r.value is not None]  # (and the block's summary: below)

    assert [(r.cluster, r.type, r.ts, r.seq, r.event_id, r.reason) for r in rows] == [
        ("C", "send", 1000, 7, "p-1", None),
        (None, None, None, None, None, "not_json"),
        ("C", None, None, None, None, "bad_value"),
        (None, None, None, None, None, "missing_field"),
    ]
    assert rows[3].detail == "send.cluster is missing"
    assert [r.arrival for r in rows] == [f"f1|{i:012d}" for i in range(4)]
    assert rows[0].value == GOOD
    assert [(r.arrival, r.ts) for r in out if r.value is None] == [("f1|000000000000", 1000)]


def _event(ts: int) -> str:
    return GOOD.replace('"ts":1000', f'"ts":{ts}')


Rows = list[tuple[Any, Any]]


def _validated(
    values: list[str], origins: list[str], *, by_event_time: bool = False
) -> tuple[Rows, Rows]:
    """Lines through stage 1 in two Arrow batches (a block may end in either) -> each line's
    ``(arrival, prior)`` and each block summary's ``(arrival, ts)``."""
    schema = pa.schema([("value", pa.string()), ("origin", pa.string())])
    half = len(values) // 2
    batches = [
        pa.RecordBatch.from_pydict({"value": v, "origin": o}, schema=schema)
        for v, o in ((values[:half], origins[:half]), (values[half:], origins[half:]))
    ]
    out = pa.Table.from_batches(list(validate_batches(iter(batches), by_event_time)))
    rows = out.select(["value", "arrival", "prior", "ts"]).to_pylist()
    lines = [(r["arrival"], r["prior"]) for r in rows if r["value"] is not None]
    summaries = [(r["arrival"], r["ts"]) for r in rows if r["value"] is None]
    return lines, summaries


def test_each_event_gets_the_largest_ts_before_it_in_its_block_and_each_block_a_summary() -> None:
    lines, summaries = _validated(
        [_event(5000), _event(3000), "{bad", _event(9000), _event(1000), _event(4000)],
        ["a", "a", "a", "b", "b", "c"],
    )

    assert lines == [
        ("a|000000000000", None),
        ("a|000000000001", 5000),
        ("a|000000000002", None),  # bad input: no part of the clock
        ("b|000000000003", None),
        ("b|000000000004", 9000),
        ("c|000000000005", None),
    ]
    # each block's last valid event and its largest ts
    assert summaries == [
        ("a|000000000001", 5000),
        ("b|000000000004", 9000),
        ("c|000000000005", 4000),
    ]


def test_by_event_time_the_partition_is_one_block_and_no_event_has_a_prior() -> None:
    lines, summaries = _validated([_event(5000), _event(3000)], ["0|1", "1|1"], by_event_time=True)

    assert [prior for _, prior in lines] == [None, None]
    assert summaries == [("000000000005000|0|1|000000000000", 5000)]


@pytest.mark.spark
def test_a_line_that_is_not_utf8_is_bad_input_naming_its_file(spark: SparkSession) -> None:
    # the spool's lines are bytes: one a valid event, one with bytes that are not UTF-8
    origin = "000001767225600000|file:///spool/a%20b.jsonl|000000000000000"
    lines = spark.createDataFrame(
        [(GOOD.encode(), origin), (b'{"v":1,\xff\xfe}', origin)],
        "value binary, origin string",
    ).coalesce(1)

    rows = read_events(lines).where("value IS NOT NULL").orderBy("arrival").collect()

    assert [(r.event_id, r.reason) for r in rows] == [("p-1", None), (None, "not_utf8")]
    assert rows[0].value == GOOD
    assert rows[1].value == '{"v":1,\\xff\\xfe}'
    assert rows[1].detail == (
        "the input is not UTF-8 (byte 0xff at position 7 is not valid there), in /spool/a b.jsonl"
    )


def test_a_kafka_record_that_is_not_utf8_names_its_partition_and_offset() -> None:
    batch = pa.RecordBatch.from_pydict(
        {"value": [b"\x80"], "origin": ["000003|00000000000000000042"]},
        schema=pa.schema([("value", pa.binary()), ("origin", pa.string())]),
    )

    (out,) = list(validate_batches(iter([batch])))

    assert out.column("reason").to_pylist() == ["not_utf8"]
    assert out.column("detail").to_pylist()[0].endswith(", at Kafka partition 3, offset 42")


@pytest.mark.spark
def test_the_job_validates_and_packs_in_one_pass_what_the_two_stages_pack(
    spark: SparkSession,
) -> None:
    other = GOOD.replace('"cluster":"C"', '"cluster":"D"').replace('"p-1"', '"p-2"')
    lines = spark.createDataFrame(
        [(GOOD, "f1"), ("{not json", "f1"), (other, "f1"), (GOOD, "f2")],
        "value string, origin string",
    ).coalesce(1)
    keys = [0, 3]  # (any two grouping keys)

    fused = read_packed(lines, keys)
    two = pack_events(read_events(lines), keys)

    def events(frame: DataFrame) -> dict[int, list[tuple[Any, ...]]]:
        out: dict[int, list[tuple[Any, ...]]] = {}
        for row in frame.collect():
            table = unpack_chunks([bytes(row.events)])
            out.setdefault(row.bucket, []).extend(zip(*table.to_pydict().values(), strict=True))
        return {bucket: sorted(rows, key=repr) for bucket, rows in out.items()}

    assert events(fused) == events(two)
    assert sorted(events(fused)) == [0, 3]  # (C and D fall in different buckets of two)
    plan = fused._jdf.queryExecution().executedPlan().toString()
    assert plan.count("MapInArrow") == 1, plan


def test_a_bucket_s_events_are_packed_in_rows_of_at_most_the_chunk_size_in_arrival_order() -> None:
    other = GOOD.replace('"cluster":"C"', '"cluster":"D"')  # (C and D: buckets 0 and 1 of 2)
    values = [
        (GOOD if i % 3 else other).replace('"ts":1000', f'"ts":{1000 + i}') for i in range(30)
    ]
    values[7] = values[7].replace('"group":"g"', '"group":"' + "g" * 2000 + '"')  # a large one
    schema = pa.schema([("value", pa.string()), ("origin", pa.string())])
    lines = pa.RecordBatch.from_pydict(
        {"value": values, "origin": ["f1"] * 15 + ["f2"] * 15}, schema=schema
    )
    validated = list(validate_batches(iter([lines])))
    limit = 4 * len(GOOD)

    def packed(chunk_bytes: int) -> dict[int, list[bytes]]:
        out: dict[int, list[bytes]] = {}
        for batch in pack_batches(iter(validated), [0, 1], chunk_bytes):
            for key, blob, *_ in zip(*batch.to_pydict().values(), strict=True):
                out.setdefault(key, []).append(blob)
        return out

    whole, split = packed(10**9), packed(limit)

    # (a bucket's own events in one row, and the block summaries in one row both receive)
    assert {key: len(blobs) for key, blobs in whole.items()} == {0: 2, 1: 2}
    assert len(set(whole[0]) & set(whole[1])) == 1
    for key, blobs in split.items():
        assert len(blobs) > 2
        for blob in blobs:
            rows = unpack_chunks([blob]).select(["value", "held"]).to_pylist()
            text = sum(len(r["value"] or "") + len(r["held"] or "") for r in rows)
            assert text <= limit or len(rows) == 1
        # every event and block summary once, back in arrival order
        assert unpack_chunks(blobs).to_pylist() == unpack_chunks(whole[key]).to_pylist()


def test_rows_of_several_read_tasks_come_back_in_arrival_order_each_summary_after_its_block() -> (
    None
):
    schema = pa.schema([("value", pa.string()), ("origin", pa.string())])

    def task(origins: list[str]) -> list[bytes]:
        values = [GOOD.replace('"ts":1000', f'"ts":{1000 + 7 * i}') for i in range(len(origins))]
        lines = pa.RecordBatch.from_pydict({"value": values, "origin": origins}, schema=schema)
        packed = pack_batches(validate_batches(iter([lines])), [0], chunk_bytes=3 * len(GOOD))
        return [blob for batch in packed for blob in batch.column("events").to_pylist()]

    # one task read files f1 and f3, the other f2: their arrivals interleave
    first, second = task(["f1"] * 5 + ["f3"] * 4), task(["f2"] * 6)
    names = ["arrival", "value", "ts", "prior"]

    columns = unpack_columns(second + first, names)

    arrivals = columns["arrival"]
    assert arrivals == sorted(arrivals)
    # (each block's summary right after its last event, whose arrival key it shares)
    summaries = [False] * 5 + [True] + [False] * 6 + [True] + [False] * 4 + [True]
    assert [value is None for value in columns["value"]] == summaries
    assert columns == unpack_chunks(first + second).select(names).to_pydict()
    assert unpack_columns(first, names) == unpack_chunks(first).select(names).to_pydict()
    assert unpack_columns([], names) == {name: [] for name in names}
    assert unpack_columns(second + first, ["ts"]) == {"ts": columns["ts"]}


def test_an_event_every_shard_applies_is_packed_once_for_all_the_buckets_that_receive_it() -> None:
    trace = Trace()
    for second in range(6):
        trace.hb(second, f"broker-{second}", {f"T{t}": 4 for t in range(50)})
    lines = [raw for _, _, _, raw in trace.arrivals()]
    schema = pa.schema([("value", pa.string()), ("origin", pa.string())])
    batch = pa.RecordBatch.from_pydict({"value": lines, "origin": ["f1"] * 6}, schema=schema)
    keys = [100, 101, 102]

    (packed,) = pack_batches(validate_batches(iter([batch])), keys, chunk_bytes=10**9)

    rows = list(zip(*packed.to_pydict().values(), strict=True))
    assert sorted(key for key, *_ in rows) == keys  # (each bucket one row: the cluster's shards)
    assert len({blob for _, blob, *_ in rows}) == 1  # (the same bytes, packed and compressed once)
    assert [lines for _, _, lines, _ in rows] == [6, 0, 0]  # (the batch's lines, counted once)
    owners = unpack_chunks([rows[0][1]]).column("owner").to_pylist()
    head = shard_bucket("C", 0, len(keys))
    assert owners == [head] * 6 + [EVERY_BUCKET]  # (owned by the head shard's bucket; summary)


def test_packed_rows_are_compressed() -> None:
    # events that repeat themselves, as registrations (most of the stream's bytes) do
    values = [GOOD.replace('"ts":1000', f'"ts":{1000 + i}') for i in range(200)]
    schema = pa.schema([("value", pa.string()), ("origin", pa.string())])
    lines = pa.RecordBatch.from_pydict({"value": values, "origin": ["f1"] * 200}, schema=schema)
    validated = list(validate_batches(iter([lines])))
    text = sum(len(v) for v in values)

    (batch,) = pack_batches(iter(validated), [0], chunk_bytes=10**9)
    blobs = batch.column("events").to_pylist()  # (the events, and apart their block's summary)

    assert sum(map(len, blobs)) < text * 0.35  # (the events' text alone, without other columns)
    assert unpack_chunks(blobs).column("value").to_pylist()[:-1] == values  # (+ the summary)


@given(
    st.lists(st.integers(0, 50), max_size=60),
    st.integers(1, 80),
    st.lists(st.booleans(), min_size=60, max_size=60),
)
def test_a_bucket_s_rows_are_cut_as_one_greedy_pass_would_cut_them(
    sizes: list[int], limit: int, taken: list[bool]
) -> None:
    indices = [i for i in range(len(sizes)) if taken[i]]
    expected: list[list[int]] = []  # the definition: add a row while the run stays in the limit
    total = 0
    for i in indices:
        if expected and total + sizes[i] <= limit:
            expected[-1].append(i)
            total += sizes[i]
        else:
            expected.append([i])
            total = sizes[i]

    runs = _by_size(np.array(indices, dtype=np.int64), np.array(sizes, dtype=np.int64), limit)

    assert [run.tolist() for run in runs] == expected


_ROW = st.tuples(
    st.sampled_from([None, "C", "D", "Cluster07", "DefaultCluster"]),  # cluster
    st.sampled_from(
        [None, "send", "proxy_route_miss", "route_pull", "heartbeat", "collector_round"]
    ),  # type (None: bad input)
    st.sampled_from([None, "T", "TopicA", "orders-7", "TBW102"]),  # topic
    st.booleans(),  # a block summary
)


@settings(deadline=None)  # (the first example's Arrow kernels take their time)
@given(
    st.lists(_ROW, min_size=1, max_size=40),
    st.sampled_from([1, 2, 3, 7]),
    st.sampled_from([None, 1, 2, 3, 7]),
)
def test_each_row_goes_to_the_buckets_of_the_shards_that_apply_it_and_its_owner_s_owns_it(
    rows: list[tuple[str | None, str | None, str | None, bool]], n: int, shards: int | None
) -> None:
    columns: dict[str, list[Any]] = {name: [] for name in _ARROW_SCHEMA.names}
    # (a valid event always names its cluster; bad input may not)
    rows = [(c if c or k is None else "C", k, t, s) for c, k, t, s in rows]
    for i, (cluster, kind, topic, summary) in enumerate(rows):
        for name in _ARROW_SCHEMA.names:
            columns[name].append(None)
        columns["value"][i] = None if summary else f"line {i}"
        columns["arrival"][i] = f"{i:09d}"
        columns["cluster"][i], columns["topic"][i] = cluster, topic
        columns["type"][i] = None if summary else kind
        columns["reason"][i] = "bad_json" if kind is None and not summary else None
    batch = pa.RecordBatch.from_pydict(columns, schema=_ARROW_SCHEMA)
    keys = [100 + b for b in range(n)]

    expected: dict[int, list[tuple[str, bool]]] = {key: [] for key in keys}
    for i, (cluster, kind, topic, summary) in enumerate(rows):
        if summary:  # (every bucket, to keep the clock)
            for key in keys:
                expected[key].append((f"{i:09d}", True))
            continue
        if kind is None:  # bad input: its cluster's head shard
            applied: list[int] = [0]
            owner = 0
        else:
            applied = list(event_shards(kind, topic, shards or n))
            owner = owner_shard(kind, topic, shards or n)
        for bucket in sorted({shard_bucket(cluster, s, n) for s in applied}):
            owned = bucket == shard_bucket(cluster, owner, n)
            expected[keys[bucket]].append((f"{i:09d}", owned))

    found: dict[int, list[tuple[str, bool]]] = {key: [] for key in keys}
    for packed in pack_batches(iter([batch]), keys, chunk_bytes=20, shards=shards):
        for key, blob, *_ in zip(*packed.to_pydict().values(), strict=True):
            table = unpack_chunks([blob])
            owns = [o in (keys.index(key), EVERY_BUCKET) for o in table["owner"].to_pylist()]
            found[key] += zip(table["arrival"].to_pylist(), owns, strict=True)

    assert {key: sorted(rows) for key, rows in found.items()} == expected


def test_a_topic_field_of_an_event_type_without_one_is_ignored() -> None:
    # (the contract ignores unknown fields: a registration's "topic" is not its topic)
    trace = Trace()
    trace.hb(0, "broker-a", {"T": 4})
    event = orjson.loads(trace.arrivals()[0][3])
    line = orjson.dumps({**event, "topic": 7}).decode()
    schema = pa.schema([("value", pa.string()), ("origin", pa.string())])
    lines = pa.RecordBatch.from_pydict({"value": [line], "origin": ["f1"]}, schema=schema)

    (batch,) = validate_batches(iter([lines]))

    assert batch.column("reason").to_pylist() == [None, None]  # (the event, then its summary)
    assert batch.column("topic").to_pylist() == [None, None]
