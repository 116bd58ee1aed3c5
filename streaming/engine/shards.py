"""A cluster's state in shards, by topic: so that one large cluster spreads over many tasks.

A cluster's state is split into ``shards`` shards (the number of state buckets, fixed per
checkpoint). Shard ``s`` holds the topics whose CRC-32 is ``s`` modulo ``shards``: their routes,
their rule state and their topic alerts. Every shard keeps the cluster-wide facts the topic
rules read (docs/streaming.md, "What each rule reads"), from every registration, collector
round and route pull of the cluster: every registration's liveness, flags and whole table, and
every client's NameServer state; of the routes, those of its own topics and the cluster's system
topics (TBW102, the broker-named topics, ...), a topic of another shard being read from the
tables when a rule asks (a producer's ``createTopicKey``). **Shard 0**, the cluster's *head*,
keeps every topic's routes, and owns the alerts about brokers and the cluster (expiry,
template, divergence, the collector), which read every topic's routes.

So a delivered send, a failed one and a proxy's route miss go to their topic's shard alone; a
registration, a collector round and a route pull go to every shard (the pull's topic part is
applied by its topic's shard only). An event is *owned* — counted, and reported if late or a
duplicate — by one shard: its topic's, or the head for a registration and a collector round.

Shard ``s`` of cluster ``c`` lives in state bucket ``(crc32(c) + s) mod buckets``
(:func:`shard_bucket`): with as many shards as buckets, a cluster's shards cover every bucket
once, so one large cluster spreads over all of them.
"""

from __future__ import annotations

import zlib

import orjson

__all__ = [
    "HEAD_SHARD",
    "OWNED_BY_HEAD",
    "TOPIC_EVENTS",
    "TOPIC_TYPES",
    "engine_key",
    "event_shards",
    "owner_shard",
    "shard_bucket",
    "shard_of",
]

HEAD_SHARD = 0
TOPIC_EVENTS = frozenset({"send", "proxy_route_miss"})  # (go to their topic's shard alone)
OWNED_BY_HEAD = frozenset({"heartbeat", "collector_round"})  # (owned by the head, topic or not)
# the event types whose ``topic`` is the contract's (another type's is an unknown extra field)
TOPIC_TYPES = frozenset({"send", "proxy_route_miss", "route_pull"})


def shard_of(topic: str, shards: int) -> int:
    """The shard that holds ``topic``."""
    if shards <= 1:
        return 0
    return zlib.crc32(topic.encode()) % shards


def shard_bucket(cluster: str | None, shard: int, buckets: int) -> int:
    """The state bucket a cluster's shard lives in (input naming no cluster: bucket 0)."""
    if buckets <= 1 or cluster is None:
        return 0
    return (zlib.crc32(cluster.encode()) + shard) % buckets


def event_shards(kind: str, topic: str | None, shards: int) -> range | tuple[int]:
    """The shards an event of type ``kind`` (about ``topic``) is applied by."""
    if kind in TOPIC_EVENTS and topic is not None:
        return (shard_of(topic, shards),)
    return range(max(shards, 1))


def owner_shard(kind: str, topic: str | None, shards: int) -> int:
    """The shard that owns an event: counts it, and reports it if late or a duplicate."""
    if topic is None or kind in OWNED_BY_HEAD:
        return HEAD_SHARD
    return shard_of(topic, shards)


def engine_key(cluster: str, shard: int) -> str:
    """A cluster shard as one string, the JSON pair ``[cluster, shard]`` (the clock's keys)."""
    return orjson.dumps((cluster, shard)).decode()
