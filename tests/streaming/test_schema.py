"""The Spark schema and the contract agree: same fields, same values after parsing."""

from __future__ import annotations

from typing import Any

import orjson
import pytest
from pyspark.sql import SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import ArrayType, BooleanType, LongType, MapType, StringType, StructType

from emitter.fleet import FleetSpec, generate_fleet
from emitter.scenarios import SCENARIOS
from routewatch.codec import encode
from routewatch.wire import union_fields
from streaming.schema import event_schema
from tests.support.samples import sample_events

pytestmark = pytest.mark.spark


def test_schema_has_one_column_per_contract_field_with_its_type() -> None:
    schema = event_schema()

    assert schema.fieldNames() == [f.name for f in union_fields()]
    assert schema["ts"].dataType == LongType()
    assert schema["full"].dataType == BooleanType()
    assert schema["namesrv"].dataType == StringType()
    topics = schema["topics"].dataType
    assert isinstance(topics, MapType)
    assert isinstance(topics.valueType, StructType)
    assert topics.valueType.fieldNames() == ["read_queue_nums", "write_queue_nums", "perm"]
    queues = schema["queues"].dataType
    assert isinstance(queues, ArrayType)
    assert queues.elementType.fieldNames() == [  # type: ignore[attr-defined]
        "broker",
        "read_queue_nums",
        "write_queue_nums",
        "perm",
    ]


def _padded(wire: dict[str, Any]) -> dict[str, Any]:
    return {f.name: wire.get(f.name) for f in union_fields()}


def _emitter_lines() -> list[str]:
    lines = [encode(e).decode() for scenario in SCENARIOS.values() for e in scenario.run(seed=1)]
    fleet: list[bytes] = []
    generate_fleet(
        FleetSpec(
            clusters=1,
            brokers=2,
            topics=30,
            part_size=20,
            producers=2,
            topics_per_producer=2,
            send_rate=50,
            duration=31,
        ),
        fleet.append,
    )
    return lines + [line.decode() for line in fleet]


@pytest.mark.parametrize("source", ["samples", "emitter"])
def test_spark_parses_every_encoded_event_to_the_same_values(
    spark: SparkSession, source: str
) -> None:
    lines = (
        [encode(e).decode() for e in sample_events()] if source == "samples" else _emitter_lines()
    )
    frame = spark.createDataFrame([(line,) for line in lines], "value string")

    parsed = frame.select(F.from_json("value", event_schema()).alias("e")).select("e.*")

    got = [row.asDict(recursive=True) for row in parsed.collect()]
    assert got == [_padded(orjson.loads(line)) for line in lines]
