"""The fleet generator: a large, healthy deployment's traffic, streamed in time order.

Where the scenario model simulates every broker, NameServer and client object, the fleet
generator writes the same events for a steady state directly, so that traces of several GB come
out at about 100,000 events/s without being held in memory:

- every broker of a cluster holds every topic of the cluster (production settings:
  ``autoCreateTopicEnable=false``, so no TBW102), and registers its whole table with every
  NameServer every 30 s, split in parts of ``part_size`` topics sharing one ``data_version``;
  the brokers have been running for a while, so their registration times are spread over the
  30 s period;
- every producer refreshes the routes of its topics every 30 s (and of its ``createTopicKey``,
  which production brokers do not have: that pull fails, as in RocketMQ);
- sends go round-robin over the producers, their topics, and the brokers' queues.

Every event is an event record of the contract (:mod:`routewatch.events`) written by the
codec (:func:`routewatch.codec.encode`); the static parts of heartbeats and pulls (topic
tables, routes) are encoded once, by the same codec, and put in place of the empty table or
route the record was encoded with.
"""

from __future__ import annotations

import dataclasses
import math
import random
from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar

import orjson

from emitter.sim import DEFAULT_START_MS
from routewatch.codec import encode
from routewatch.events import Heartbeat, QueueData, RoutePull, Send, TopicConfig
from routewatch.rocketmq import (
    CLIENT_DEFAULT_TOPIC_QUEUE_NUMS,
    PERM_READ,
    PERM_WRITE,
    POLL_NAMESRV_INTERVAL_MS,
    REGISTER_PERIOD_MS,
    SPLIT_REGISTRATION_SIZE,
    TBW102,
)

__all__ = ["FleetSize", "FleetSpec", "estimate_fleet", "generate_fleet"]


@dataclass(frozen=True)
class FleetSpec:
    """The fleet's size; the defaults are the reference fleet the benchmarks use."""

    clusters: int = 10
    brokers: int = 10
    topics: int = 10_000
    namesrvs: int = 2
    part_size: int = SPLIT_REGISTRATION_SIZE
    producers: int = 1_000
    topics_per_producer: int = 10
    send_rate: int = 10_000
    duration: int = 60
    queues: int = 8
    seed: int = 0
    start_ms: int = DEFAULT_START_MS

    OPTIONS: ClassVar[dict[str, str]] = {
        "clusters": "number of clusters",
        "brokers": "master brokers per cluster",
        "topics": "topics per cluster, each on every broker of its cluster",
        "namesrvs": "NameServers, shared by every cluster",
        "part_size": "topics per part of a split registration",
        "producers": "producers, spread over the clusters",
        "topics_per_producer": "topics each producer uses and refreshes",
        "send_rate": "sends per second, over the whole fleet",
        "duration": "seconds of traffic to generate",
        "queues": "read and write queues of every topic on every broker",
    }

    def cluster_name(self, c: int) -> str:
        return f"Cluster{c:02d}"

    def broker_name(self, c: int, b: int) -> str:
        return f"cluster{c:02d}-broker-{b:02d}"

    def topic_name(self, c: int, t: int) -> str:
        return f"cluster{c:02d}-topic-{t:05d}"


def _splice(line: bytes, empty: bytes, blob: bytes) -> bytes:
    """An encoded event with its empty field ``empty`` (e.g. ``"topics":{}``) given the
    already-encoded value ``blob``."""
    at = line.index(empty)
    return line[:at] + empty[: empty.index(b":") + 1] + blob + line[at + len(empty) :]


_EMPTY_TOPICS = b'"topics":{}'
_EMPTY_QUEUES = b'"queues":[]'


def generate_fleet(spec: FleetSpec, write_line: Callable[[bytes], None]) -> int:
    """Write the fleet's events in (ts, seq) order, one encoded line per call; return the count."""
    rng = random.Random(spec.seed)
    start = spec.start_ms
    namesrvs = [f"10.0.0.{100 + n}:9876" for n in range(spec.namesrvs)]
    perm = PERM_READ | PERM_WRITE
    config = TopicConfig(read_queue_nums=spec.queues, write_queue_nums=spec.queues, perm=perm)

    # Work due at each instant of the 30 s cycle: ("hb", c, b) or ("pull", p).
    schedule: dict[int, list[tuple[Any, ...]]] = defaultdict(list)
    parts_of: list[list[bytes]] = []
    route_of: list[bytes] = []
    for c in range(spec.clusters):
        names = sorted(spec.topic_name(c, t) for t in range(spec.topics))
        chunks = [names[i : i + spec.part_size] for i in range(0, len(names), spec.part_size)]
        parts_of.append([orjson.dumps(dict.fromkeys(chunk, config)) for chunk in chunks])
        route_of.append(
            orjson.dumps(
                [
                    QueueData(
                        broker=spec.broker_name(c, b),
                        read_queue_nums=spec.queues,
                        write_queue_nums=spec.queues,
                        perm=perm,
                    )
                    for b in range(spec.brokers)
                ]
            )
        )
        for b in range(spec.brokers):
            schedule[rng.randrange(REGISTER_PERIOD_MS)].append(("hb", c, b))

    producers: list[tuple[str, str, str, list[str]]] = []
    for p in range(spec.producers):
        c = p % spec.clusters
        picks = rng.sample(range(spec.topics), min(spec.topics_per_producer, spec.topics))
        client_id = f"10.{1 + p // 65536}.{p // 256 % 256}.{p % 256}@{1000 + p}"
        producers.append(
            (
                spec.cluster_name(c),
                client_id,
                f"group-{p:04d}",
                [spec.topic_name(c, t) for t in picks],
            )
        )
        schedule[rng.randrange(POLL_NAMESRV_INTERVAL_MS)].append(("pull", p))

    broker_names = [
        [spec.broker_name(c, b) for b in range(spec.brokers)] for c in range(spec.clusters)
    ]
    seq = 0
    count = 0

    def heartbeats(ts: int, c: int, b: int) -> None:
        nonlocal seq, count
        cluster, broker = spec.cluster_name(c), spec.broker_name(c, b)
        parts = parts_of[c]
        for ns in namesrvs:
            for part, blob in enumerate(parts):
                seq += 1
                split = len(parts) > 1
                event = Heartbeat(
                    ts=ts,
                    cluster=cluster,
                    event_id=f"{broker}-0-{seq}",
                    seq=seq,
                    broker=broker,
                    broker_addr=f"10.{100 + c}.0.{b}:10911",
                    broker_id=0,
                    namesrv=ns,
                    auto_create_topic_enable=False,
                    default_topic_queue_nums=8,
                    full=True,
                    topics={},
                    data_version=f"{start}-1",
                    part=part if split else None,
                    parts=len(parts) if split else None,
                )
                write_line(_splice(encode(event), _EMPTY_TOPICS, blob))
                count += 1

    def pulls(ts: int, p: int) -> None:
        nonlocal seq, count
        cluster, client_id, group, topics = producers[p]
        c = p % spec.clusters
        ns = namesrvs[p % len(namesrvs)]
        for topic in (*topics, TBW102):
            seq += 1
            ok = topic != TBW102
            pull = RoutePull(
                ts=ts,
                cluster=cluster,
                event_id=f"{client_id}-{seq}",
                seq=seq,
                client_id=client_id,
                group=group,
                role="producer",
                namesrv=ns,
                topic=topic,
                result="SUCCESS" if ok else "TOPIC_NOT_EXIST",
                queues=[],
                via_default=False,
                create_topic_key=TBW102,
                client_default_topic_queue_nums=CLIENT_DEFAULT_TOPIC_QUEUE_NUMS,
            )
            line = encode(pull)
            write_line(_splice(line, _EMPTY_QUEUES, route_of[c]) if ok else line)
            count += 1

    n_producers = len(producers)
    owed = 0.0
    per_ms = spec.send_rate / 1000
    sent = 0
    for offset in range(spec.duration * 1000):
        ts = start + offset
        for work in schedule.get(offset % REGISTER_PERIOD_MS, ()):
            if work[0] == "hb":
                heartbeats(ts, work[1], work[2])
            else:
                pulls(ts, work[1])
        owed += per_ms
        while owed >= 1 and n_producers:
            owed -= 1
            cluster, client_id, group, topics = producers[sent % n_producers]
            c = sent % n_producers % spec.clusters
            seq += 1
            write_line(
                encode(
                    Send(
                        ts=ts,
                        cluster=cluster,
                        event_id=f"{client_id}-{seq}",
                        seq=seq,
                        client_id=client_id,
                        group=group,
                        topic=topics[sent // n_producers % len(topics)],
                        broker=broker_names[c][sent % spec.brokers],
                        queue_id=sent // spec.brokers % spec.queues,
                        default_topic=TBW102,
                        default_topic_queue_nums=CLIENT_DEFAULT_TOPIC_QUEUE_NUMS,
                        status="SEND_OK",
                    )
                )
            )
            sent += 1
            count += 1
    return count


@dataclass(frozen=True)
class FleetSize:
    """About how much :func:`generate_fleet` writes for a spec."""

    events: int
    bytes: int


SAMPLE_SENDS = 2_000  # sends in the sample an estimate measures its line lengths on


def estimate_fleet(spec: FleetSpec) -> FleetSize:
    """What :func:`generate_fleet` writes for ``spec``, about (a few per cent), in well under a
    second whatever its size: the lines of one cluster over one 30 s period are generated and
    measured by kind, and each kind's average line is multiplied by its count in ``spec``
    (registrations and refreshes at their average, one per 30 s each, as their phases are
    random)."""
    period_ms = max(REGISTER_PERIOD_MS, POLL_NAMESRV_INTERVAL_MS)
    sample = dataclasses.replace(
        spec,
        clusters=1,
        producers=min(spec.producers, max(1, math.ceil(spec.producers / spec.clusters))),
        duration=period_ms // 1000,
        send_rate=max(1, SAMPLE_SENDS * 1000 // period_ms),
    )
    lines: Counter[bytes] = Counter()
    sizes: Counter[bytes] = Counter()

    def measure(line: bytes) -> None:
        kind = line[line.index(b'"type":"') + 8 :].split(b'"', 1)[0]
        lines[kind] += 1
        sizes[kind] += len(line) + 1  # and its newline

    generate_fleet(sample, measure)
    periods = spec.duration * 1000 / period_ms
    counts = {
        b"heartbeat": lines[b"heartbeat"] * spec.clusters * periods,
        b"route_pull": lines[b"route_pull"] * spec.producers / sample.producers * periods,
        b"send": math.floor(spec.send_rate * spec.duration) if spec.producers else 0,
    }
    return FleetSize(
        events=round(sum(counts.values())),
        bytes=round(sum(n * sizes[k] / lines[k] for k, n in counts.items() if lines[k])),
    )
