"""Stage 1 on a few literal lines: validation reasons and arrival order."""

from __future__ import annotations

import pyarrow as pa
import pytest
from pyspark.sql import SparkSession

from streaming.stages.read import read_events, validate_batches

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

    rows = read_events(lines).orderBy("arrival").collect()

    assert [(r.cluster, r.type, r.ts, r.seq, r.event_id, r.reason) for r in rows] == [
        ("C", "send", 1000, 7, "p-1", None),
        (None, None, None, None, None, "not_json"),
        ("C", None, None, None, None, "bad_value"),
        (None, None, None, None, None, "missing_field"),
    ]
    assert rows[3].detail == "send.cluster is missing"
    assert [r.arrival for r in rows] == [f"f1|{i:012d}" for i in range(4)]
    assert rows[0].value == GOOD


@pytest.mark.spark
def test_a_line_that_is_not_utf8_is_bad_input_naming_its_file(spark: SparkSession) -> None:
    # the spool's lines are bytes: one a valid event, one with bytes that are not UTF-8
    origin = "000001767225600000|file:///spool/a%20b.jsonl|000000000000000"
    lines = spark.createDataFrame(
        [(GOOD.encode(), origin), (b'{"v":1,\xff\xfe}', origin)],
        "value binary, origin string",
    ).coalesce(1)

    rows = read_events(lines).orderBy("arrival").collect()

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
