"""The replayer's Kafka sink against the harness's real Apache Kafka 4.x broker: keys, partitions
and order as the default partitioner would have them, compression, batches within the broker's
size limit, and failures reported."""

from __future__ import annotations

import uuid
from collections import defaultdict
from pathlib import Path

import pytest
from kafka import KafkaConsumer, TopicPartition
from kafka.partitioner.default import murmur2

from emitter.settings import EmitterSettings
from emitter.sinks import KafkaSink, sink_for
from routewatch.errors import RoutewatchError
from routewatch.settings import load
from routewatch.testing.kafka import KafkaBroker

pytestmark = pytest.mark.kafka


def _sink(broker: KafkaBroker, topic: str, **options: object) -> KafkaSink:
    settings: dict[str, object] = {
        "acks": "all",
        "linger_ms": 5,
        "batch_bytes": 4_000,  # many small batches per partition
        "compression": "none",
        "retries": 2,
        **options,
    }
    return KafkaSink(broker.bootstrap, topic, None, **settings)  # type: ignore[arg-type]


def test_the_default_batch_fits_the_brokers_default_message_size(
    kafka_broker: KafkaBroker, tmp_path: Path
) -> None:
    """A record batch (message format 2) is bounded whole by the broker's message.max.bytes,
    1,048,588 bytes by default: 3 MB written at once into one partition with the default
    settings all land (a 4 MiB batch was refused with MessageSizeTooLargeError)."""
    topic = f"sink-{uuid.uuid4().hex[:8]}"
    settings = load(EmitterSettings, data_dir=tmp_path)
    sink = sink_for(
        "kafka",
        settings.model_copy(
            update={"kafka_bootstrap": kafka_broker.bootstrap, "kafka_topic": topic}
        ),
    )
    value = b'{"pad": "' + b"x" * 2_990 + b'"}'
    for _ in range(1_000):  # about 3 MB, one key: one partition, written without a poll
        sink.write(value, b"C/T")
    assert sink.close() == 1_000
    assert sum(len(v) for v in _read(kafka_broker, topic, 1, 1_000).values()) == 1_000


def _read(broker: KafkaBroker, topic: str, partitions: int, count: int) -> dict[int, list[bytes]]:
    consumer = KafkaConsumer(
        bootstrap_servers=broker.bootstrap,
        group_id=None,
        consumer_timeout_ms=10_000,
    )
    tps = [TopicPartition(topic, p) for p in range(partitions)]
    consumer.assign(tps)
    for tp in tps:
        consumer.seek_to_beginning(tp)
    got: dict[int, list[bytes]] = defaultdict(list)
    for record, _ in zip(consumer, range(count), strict=False):
        got[record.partition].append(record.key + b"=" + record.value)
    consumer.close()
    return got


@pytest.mark.parametrize(
    "options",
    [
        pytest.param({}, id="plain"),
        pytest.param({"compression": "gzip"}, id="gzip"),
        pytest.param({"acks": "1", "linger_ms": 0}, id="acks-1-no-linger"),
    ],
)
def test_every_event_lands_once_in_its_keys_partition_in_order(
    kafka_broker: KafkaBroker, options: dict[str, object]
) -> None:
    topic = f"sink-{uuid.uuid4().hex[:8]}"
    kafka_broker.create_topic(topic, partitions=3)
    events = [(f"c/topic-{i % 17}".encode(), f'{{"n":{i}}}'.encode()) for i in range(3_000)]
    sink = _sink(kafka_broker, topic, **options)

    for key, value in events:
        sink.write(value, key)
        sink.poll()
    delivered = sink.close()

    assert delivered == len(events)
    expected: dict[int, list[bytes]] = defaultdict(list)
    for key, value in events:
        expected[(murmur2(key) & 0x7FFFFFFF) % 3].append(key + b"=" + value)
    assert _read(kafka_broker, topic, 3, len(events)) == expected


def test_an_event_the_broker_refuses_is_counted_and_reported_not_dropped(
    kafka_broker: KafkaBroker,
) -> None:
    topic = f"sink-{uuid.uuid4().hex[:8]}"
    sink = _sink(kafka_broker, topic)
    too_large = b"x" * 1_500_000  # over the broker's message.max.bytes (1,000,012)

    sink.write(b"before", b"k")
    sink.write(too_large, b"k")  # alone in its batch: the batches are 4,000 bytes
    sink.write(b"after", b"k")
    with pytest.raises(RoutewatchError) as failure:
        sink.close()

    message = str(failure.value)
    where = kafka_broker.bootstrap
    assert message.startswith(f"1 event(s) could not be delivered to Kafka at {where}")
    assert "MessageSizeTooLargeError" in message and "2 were delivered" in message
    assert _read(kafka_broker, topic, 1, 2) == {0: [b"k=before", b"k=after"]}


def test_flush_delivers_what_was_written_and_says_whether_any_of_it_failed(
    kafka_broker: KafkaBroker,
) -> None:
    topic = f"sink-{uuid.uuid4().hex[:8]}"
    sink = _sink(kafka_broker, topic, linger_ms=60_000)  # nothing leaves on its own

    sink.write(b"one", b"k")
    first = sink.flush()
    delivered_at_first = sink.delivered
    sink.write(b"x" * 1_500_000, b"k")  # refused by the broker (message.max.bytes)
    second = sink.flush()
    sink.write(b"two", b"k")
    third = sink.flush()

    assert (first, second, third) == (True, False, True)  # each flush: since the previous one
    assert delivered_at_first == 1 and (sink.delivered, sink.failed) == (2, 1)
    assert _read(kafka_broker, topic, 1, 2) == {0: [b"k=one", b"k=two"]}
    with pytest.raises(RoutewatchError):  # the failure is still reported at the end
        sink.close()
