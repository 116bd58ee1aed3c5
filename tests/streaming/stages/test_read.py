"""Stage 1 on a few literal lines: validation reasons and arrival order."""

from __future__ import annotations

import pytest
from pyspark.sql import SparkSession

from streaming.stages.read import read_events

pytestmark = pytest.mark.spark

GOOD = (
    '{"v":1,"type":"send","ts":1000,"cluster":"C","event_id":"p-1","seq":7,"client_id":"c",'
    '"group":"g","topic":"T","broker":"b","queue_id":0,"default_topic":"TBW102",'
    '"default_topic_queue_nums":4,"status":"SEND_OK"}'
)


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
