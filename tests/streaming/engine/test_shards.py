"""A cluster in shards by topic: where each shard lives, which shard applies which event, and
what a shard keeps of a registration. (That shards give exactly the alerts of one engine is
``test_clock.py``'s.)"""

from __future__ import annotations

import orjson

from streaming.engine.cluster import ClusterEngine
from streaming.engine.shards import (
    HEAD_SHARD,
    event_shards,
    owner_shard,
    shard_bucket,
    shard_of,
)
from tests.streaming.engine.events import Trace


def test_a_clusters_shards_cover_every_bucket_once() -> None:
    for buckets in (1, 2, 7):
        for cluster in ("c1", "Cluster07", "DefaultCluster"):
            assert sorted(shard_bucket(cluster, s, buckets) for s in range(buckets)) == list(
                range(buckets)
            )
    assert shard_bucket(None, 3, 7) == shard_bucket("anything", 5, 1) == 0


def test_a_topic_has_one_shard_and_the_topics_spread() -> None:
    assert shard_of("T", 7) == shard_of("T", 7)
    assert {shard_of(f"topic-{i}", 7) for i in range(100)} == set(range(7))
    assert shard_of("T", 1) == 0


def test_a_send_goes_to_its_topics_shard_and_a_registration_to_every_shard() -> None:
    t = shard_of("T", 4)
    assert tuple(event_shards("send", "T", 4)) == (t,) == (owner_shard("send", "T", 4),)
    assert tuple(event_shards("proxy_route_miss", "T", 4)) == (t,)
    # a pull's client (its NameServer state) matters to every shard, its topic to one
    assert list(event_shards("route_pull", "T", 4)) == [0, 1, 2, 3]
    assert owner_shard("route_pull", "T", 4) == t
    for kind in ("heartbeat", "collector_round"):
        assert list(event_shards(kind, None, 4)) == [0, 1, 2, 3]
        assert owner_shard(kind, None, 4) == HEAD_SHARD


def test_a_shard_keeps_its_topics_and_the_system_topics_and_the_head_keeps_all() -> None:
    topics = {f"topic-{i}": 4 for i in range(20)}
    trace = Trace()
    trace.hb(0, "broker-a", {**topics, "broker-a": 4, "SCHEDULE_TOPIC_XXXX": 1}, dv="v1")
    event = orjson.loads(orjson.dumps(trace.events[0]))
    key = (event["namesrv"], "broker-a", 0)
    shards = [ClusterEngine("C", shard=s, shards=3) for s in range(3)]
    for engine in shards:
        engine.apply_event(event)

    system = {"TBW102", "broker-a", "SCHEDULE_TOPIC_XXXX"}
    head = shards[HEAD_SHARD].tables.get(key) or {}
    assert set(head) == set(topics) | system
    for engine in shards[1:]:
        table = engine.tables.get(key) or {}
        assert set(table) == {t for t in topics if shard_of(t, 3) == engine.shard} | system
    # each topic's route changes are written by its own shard alone
    written = [c.topic for engine in shards for c in engine.out.route_changes]
    assert sorted(written) == sorted({*topics, *system})
    # and the registration is counted, and its broker's state written, by the head alone
    assert [e.out.events for e in shards] == [{"heartbeat": 1}, {}, {}]
    assert [bool(e.out.touched_regs) for e in shards] == [True, False, False]
