"""The Kafka sink: record batches built here, sent through kafka-python's network client, and
the contract's message key (:func:`kafka_key`).

kafka-python's ``KafkaProducer`` costs about 40 µs of Python per record on this machine (a
future, accumulator bookkeeping and locks per record), which bounds a replay at about 25,000
events/s. A replay needs none of that per record: it writes one stream, in order, and only
wants to know that every event arrived. So this sink appends each event to a per-partition
batch with kafka-python's own record builder (``MemoryRecordsBuilder``: the message format,
CRCs and compression) and sends each full or lingered batch as one ``ProduceRequest`` through
kafka-python's client (connections, API version negotiation, framing, request timeouts).

Order and delivery, per partition:

- at most one request is in flight, and the next batch goes only after the previous one is
  acknowledged, so a retried batch is never overtaken (like ``max_in_flight=1``);
- a request that fails with a retriable error (a lost connection, a leader change, a timeout)
  is sent again, up to ``retries`` times, after refreshing the topic's metadata; while the
  leader cannot be reached at all, the batch waits, up to ``delivery_timeout_ms``, without
  spending a retry (a broker restart costs time, not events);
- an event that still fails is counted, and ``close`` reports how many, with the first error.
"""

from __future__ import annotations

import contextlib
import logging
import time
from dataclasses import dataclass, field
from typing import Any

from kafka.errors import (
    KafkaConnectionError,
    KafkaError,
    KafkaTimeoutError,
    NodeNotReadyError,
    for_code,
)
from kafka.future import Future
from kafka.net.compat import KafkaNetClient
from kafka.partitioner.default import murmur2
from kafka.protocol.metadata import MetadataRequest
from kafka.protocol.producer import ProduceRequest
from kafka.record.memory_records import MemoryRecordsBuilder

from routewatch.errors import RoutewatchError

__all__ = ["KafkaSink", "kafka_key"]


def kafka_key(event: dict[str, object]) -> bytes:
    """``cluster/topic``, or ``cluster/broker`` for heartbeats (the contract's message key)."""
    name = event["broker"] if event["type"] == "heartbeat" else event["topic"]
    return f"{event['cluster']}/{name}".encode()


log = logging.getLogger(__name__)

_CODECS = {"none": 0, "gzip": 1}
# The newest produce request the sink writes: it names topics. Kafka 4.1 and later answer a
# request of version 13 and up, which kafka-python picks unless told, only by topic id
# (UnknownTopicIdError for a topic named).
PRODUCE_MAX_VERSION = 7
_Topic = ProduceRequest.TopicProduceData
_Partition = _Topic.PartitionProduceData


@dataclass
class _Batch:
    """One partition's records, open for appends, then sent until acknowledged or given up."""

    partition: int
    builder: MemoryRecordsBuilder
    opened: float = field(default_factory=time.monotonic)
    count: int = 0
    attempts: int = 0
    future: Future | None = None


class KafkaSink:
    """Events into a Kafka topic, keyed and partitioned as the default partitioner would."""

    def __init__(
        self,
        bootstrap: str,
        topic: str,
        api_version: tuple[int, ...] | None,
        *,
        acks: str,
        linger_ms: int,
        batch_bytes: int,
        compression: str,
        retries: int,
        connect_timeout_ms: int = 10_000,
        request_timeout_ms: int = 30_000,
        delivery_timeout_ms: int = 120_000,
        retry_backoff_ms: int = 100,
    ) -> None:
        self.bootstrap, self.topic = bootstrap, topic
        self.delivered = 0
        self.failed = 0
        self._failed_at_flush = 0
        self.first_error: str | None = None
        self._acks = -1 if acks == "all" else int(acks)
        self._linger_s = linger_ms / 1000
        self._batch_bytes = batch_bytes
        self._codec = _CODECS[compression]
        self._retries = retries
        self._request_timeout_ms = request_timeout_ms
        self._delivery_timeout_s = delivery_timeout_ms / 1000
        self._backoff_s = retry_backoff_ms / 1000
        self._open: dict[int, _Batch] = {}  # partition -> the batch being filled
        self._sent: dict[int, _Batch] = {}  # partition -> the batch in flight
        self._by_key: dict[bytes, int] = {}
        self._leaders: dict[int, int] = {}
        self.client = KafkaNetClient(
            bootstrap_servers=bootstrap.split(","),
            client_id="routewatch-replay",
            api_version=api_version,
            request_timeout_ms=request_timeout_ms,
            max_in_flight_requests_per_connection=1_000,  # the limit is ours, per partition
        )
        try:
            self.client.check_version(timeout_ms=connect_timeout_ms)
            self._refresh_metadata(time.monotonic() + connect_timeout_ms / 1000)
        except KafkaError as exc:
            self.client.close()
            raise RoutewatchError(
                f"cannot reach Kafka at {bootstrap} ({type(exc).__name__}): check "
                "ROUTEWATCH_KAFKA_BOOTSTRAP and that the broker is running."
            ) from None
        self._partitions = sorted(self._leaders)
        produce_version = self.client.api_version(ProduceRequest, max_version=PRODUCE_MAX_VERSION)
        # the message format the broker takes: v2 from Kafka 0.11 (produce v3), v1 from 0.10
        self._magic = 2 if produce_version >= 3 else 1 if produce_version >= 2 else 0

    # metadata

    def _refresh_metadata(self, deadline: float) -> None:
        """The topic's partition leaders (the broker creates the topic if it auto-creates)."""
        request_topic = MetadataRequest.MetadataRequestTopic
        while True:
            node = self.client.least_loaded_node(bootstrap_fallback=True)
            request = MetadataRequest(
                topics=[request_topic(name=self.topic)], allow_auto_topic_creation=True
            )
            timeout_ms = max(int((deadline - time.monotonic()) * 1000), 1)
            response = self.client.send_and_receive(node, request, timeout_ms=timeout_ms)
            (topic,) = response.topics
            leaders = {p.partition_index: p.leader_id for p in topic.partitions}
            if topic.error_code == 0 and leaders and min(leaders.values()) >= 0:
                self.client.cluster.update_metadata(response)
                self._leaders = leaders
                return
            if time.monotonic() + self._backoff_s > deadline:
                error = for_code(topic.error_code) if topic.error_code else KafkaTimeoutError
                raise error(f"no leader for every partition of {self.topic}")
            time.sleep(self._backoff_s)

    def _partition(self, key: bytes) -> int:
        """The default partitioner's choice (murmur2 of the key), computed once per key."""
        partition = self._by_key.get(key)
        if partition is None:
            partition = self._partitions[(murmur2(key) & 0x7FFFFFFF) % len(self._partitions)]
            self._by_key[key] = partition
        return partition

    # the Sink interface

    def write(self, raw: bytes, key: bytes) -> None:
        partition = self._partition(key)
        batch = self._open.get(partition)
        if batch is None:
            batch = self._open[partition] = self._new_batch(partition)
        timestamp = None if self._magic == 0 else int(time.time() * 1000)
        if batch.builder.append(timestamp, key, raw) is None:  # full: send it, start another
            self._ship(batch)
            batch = self._open[partition] = self._new_batch(partition)
            batch.builder.append(timestamp, key, raw)
        batch.count += 1

    def poll(self) -> None:
        """Move bytes on the wire, settle answered batches, and send every batch that has
        lingered long enough."""
        self.client.poll(timeout_ms=0)
        for partition, sent in list(self._sent.items()):
            if sent.future is not None and sent.future.is_done:
                self._settle(partition)  # counted now; a failure is retried now, not later
        now = time.monotonic()
        for batch in list(self._open.values()):
            if now - batch.opened >= self._linger_s:
                self._ship(batch)

    def flush(self) -> bool:
        """Send every open batch and wait until every batch is acknowledged or given up (each
        partition at most twice the delivery timeout: its batch in flight, then its open one);
        True when no event written since the previous flush failed."""
        for batch in list(self._open.values()):
            self._ship(batch)
        for partition in list(self._sent):
            self._settle(partition)
        ok = self.failed == self._failed_at_flush
        self._failed_at_flush = self.failed
        return ok

    def close(self) -> int:
        try:
            self.flush()
        finally:
            self.client.close()
        if self.failed:
            raise RoutewatchError(
                f"{self.failed} event(s) could not be delivered to Kafka at {self.bootstrap}, "
                f"topic {self.topic} ({self.first_error}); {self.delivered} were delivered."
            )
        return self.delivered

    # sending

    def _new_batch(self, partition: int) -> _Batch:
        builder = MemoryRecordsBuilder(self._magic, self._codec, self._batch_bytes)
        return _Batch(partition, builder)

    def _ship(self, batch: _Batch) -> None:
        """Send a closed batch once its partition's previous batch is settled."""
        del self._open[batch.partition]
        batch.builder.close()
        self._settle(batch.partition)
        batch.opened = time.monotonic()  # the delivery timeout counts from here
        self._send(batch)
        self._sent[batch.partition] = batch
        self.client.poll(timeout_ms=0)

    def _send(self, batch: _Batch) -> None:
        records = _Partition(index=batch.partition, records=batch.builder.buffer())
        request = ProduceRequest(
            acks=self._acks,
            timeout_ms=self._request_timeout_ms,
            topic_data=[_Topic(name=self.topic, partition_data=[records])],
            max_version=PRODUCE_MAX_VERSION,
        )
        batch.future = self.client.send(self._leaders[batch.partition], request)

    def _settle(self, partition: int) -> None:
        """Wait until the partition's batch in flight is acknowledged or given up."""
        batch = self._sent.pop(partition, None)
        failing_since: float | None = None
        pause = self._backoff_s
        while batch is not None and batch.future is not None:
            self.client.poll(timeout_ms=self._request_timeout_ms, future=batch.future)
            error = self._error(batch.future)
            if error is None:
                self.delivered += batch.count
                if failing_since is not None:
                    log.warning(
                        "Kafka delivery to %s partition %d resumed after %.1f s.",
                        self.topic,
                        partition,
                        time.monotonic() - failing_since,
                    )
                return
            unreachable = not batch.future.is_done or _is_unreachable(error)
            late = time.monotonic() - batch.opened > self._delivery_timeout_s
            if not error.retriable or late or (not unreachable and batch.attempts >= self._retries):
                self._give_up(batch, error)
                return
            if failing_since is None:
                failing_since = time.monotonic()
                log.warning(
                    "Kafka delivery to %s partition %d failed (%s: %s); retrying for up to %g s.",
                    self.topic,
                    partition,
                    type(error).__name__,
                    error,
                    self._delivery_timeout_s,
                )
            if not unreachable:
                batch.attempts += 1
            time.sleep(pause)
            pause = min(pause * 2, 1.0)
            # still unreachable: sent again, it fails at once, and the delivery timeout decides
            with contextlib.suppress(KafkaError):
                self._refresh_metadata(time.monotonic() + self._request_timeout_ms / 1000)
            self._send(batch)

    def _error(self, future: Future) -> KafkaError | None:
        """The batch's error, from the request or from its partition's answer."""
        if not future.is_done:
            return KafkaTimeoutError("no answer within the request timeout")
        if future.failed():
            exc = future.exception
            return exc if isinstance(exc, KafkaError) else KafkaError(repr(exc))
        response: Any = future.value
        if response is None:  # acks=0: nothing comes back
            return None
        for topic in response.responses:
            for answer in topic.partition_responses:
                if answer.error_code:
                    return for_code(answer.error_code)(answer.error_message or "")
        return None

    def _give_up(self, batch: _Batch, error: KafkaError) -> None:
        self.failed += batch.count
        if self.first_error is None:
            self.first_error = f"{type(error).__name__}: {error}"


def _is_unreachable(error: KafkaError) -> bool:
    """No connection to the leader: retrying spends no retry (the delivery timeout bounds it)."""
    return isinstance(error, NodeNotReadyError | KafkaConnectionError)
