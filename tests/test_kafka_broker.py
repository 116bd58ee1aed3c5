"""Smoke test of the harness: real messages through the real Kafka broker with kafka-python."""

from __future__ import annotations

from pathlib import Path

import pytest
from kafka import KafkaConsumer, KafkaProducer, TopicPartition

from routewatch.testing.kafka import KafkaBroker, random_cluster_id
from routewatch.testing.processes import listening_addresses

pytestmark = pytest.mark.kafka


def _consume(broker: KafkaBroker, topic: str, expected: int) -> list[tuple[int, bytes, bytes]]:
    consumer = KafkaConsumer(
        bootstrap_servers=broker.bootstrap,
        group_id=None,
        enable_auto_commit=False,
        consumer_timeout_ms=10_000,
    )
    try:
        parts = [TopicPartition(topic, p) for p in sorted(broker.partitions(topic))]
        consumer.assign(parts)
        consumer.seek_to_beginning(*parts)
        got: list[tuple[int, bytes, bytes]] = []
        for record in consumer:
            got.append((record.partition, record.key, record.value))
            if len(got) == expected:
                break
        return got
    finally:
        consumer.close()


def test_the_broker_listens_on_loopback_only(kafka_broker: KafkaBroker) -> None:
    assert listening_addresses(kafka_broker.pid) == {
        ("127.0.0.1", kafka_broker.port),
        ("127.0.0.1", kafka_broker.controller_port),
    }


def test_messages_round_trip_through_the_broker(kafka_broker: KafkaBroker) -> None:
    producer = KafkaProducer(bootstrap_servers=kafka_broker.bootstrap, acks="all")
    sent = [(f"DefaultCluster/Topic{i % 3}".encode(), f'{{"n": {i}}}'.encode()) for i in range(50)]
    for key, value in sent:
        producer.send("smoke.roundtrip", key=key, value=value)
    producer.flush()
    producer.close()

    got = _consume(kafka_broker, "smoke.roundtrip", len(sent))

    assert [(k, v) for _, k, v in got] == sent


def test_a_topic_with_several_partitions_keeps_order_per_key(kafka_broker: KafkaBroker) -> None:
    kafka_broker.create_topic("smoke.partitioned", partitions=3)
    producer = KafkaProducer(bootstrap_servers=kafka_broker.bootstrap)
    keys = [b"ClusterA/T", b"ClusterB/T", b"ClusterC/T", b"ClusterD/T"]
    for i in range(40):
        producer.send("smoke.partitioned", key=keys[i % 4], value=str(i).encode())
    producer.flush()
    producer.close()

    got = _consume(kafka_broker, "smoke.partitioned", 40)

    assert len(got) == 40
    assert len({p for p, _, _ in got}) > 1
    for key in keys:
        values = [int(v) for _, k, v in got if k == key]
        assert values == sorted(values)
        assert len({p for p, k, _ in got if k == key}) == 1


def test_a_cluster_id_beginning_with_a_dash_is_formatted(tmp_path: Path) -> None:
    # a random id begins with "-" once in 64 (URL-safe Base64); passed as a separate argument,
    # the storage tool read it as an option and refused to format
    broker = KafkaBroker(tmp_path / "kafka", cluster_id="-" + random_cluster_id()[1:])
    broker.start()
    try:
        assert (tmp_path / "kafka" / "kafka-logs" / "meta.properties").read_text().count(
            f"cluster.id={broker.cluster_id}"
        ) == 1
    finally:
        broker.stop()
