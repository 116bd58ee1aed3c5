"""A cluster in shards by topic: where each shard lives, which shard applies which event, and
what a shard keeps of a registration. (That shards give exactly the alerts of one engine is
``test_clock.py``'s.)"""

from __future__ import annotations

import orjson

from streaming.engine.cluster import ClusterEngine
from streaming.engine.runner import run_buckets
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


def test_every_shard_keeps_the_whole_table_and_the_routes_of_its_topics_and_the_system_ones() -> (
    None
):
    topics = {f"topic-{i}": 4 for i in range(20)}
    trace = Trace()
    trace.hb(0, "broker-a", {**topics, "broker-a": 4, "SCHEDULE_TOPIC_XXXX": 1}, dv="v1")
    event = orjson.loads(orjson.dumps(trace.events[0]))
    key = (event["namesrv"], "broker-a", 0)
    shards = [ClusterEngine("C", shard=s, shards=3) for s in range(3)]
    for engine in shards:
        engine.apply_event(event)

    system = {"TBW102", "broker-a", "SCHEDULE_TOPIC_XXXX"}
    for engine in shards:
        assert set(engine.tables.get(key) or {}) == set(topics) | system
        routed = {t for t in [*topics, *system] if engine.routes.get(t)}
        if engine.shard == HEAD_SHARD:
            assert routed == set(topics) | system
        else:
            assert routed == {t for t in topics if shard_of(t, 3) == engine.shard} | system
    # each topic's route changes are written by its own shard alone
    written = [c.topic for engine in shards for c in engine.out.route_changes]
    assert sorted(written) == sorted({*topics, *system})
    # and the registration is counted, and its broker's state written, by the head alone
    assert [e.out.events for e in shards] == [{"heartbeat": 1}, {}, {}]
    assert [bool(e.out.touched_regs) for e in shards] == [True, False, False]


def test_a_create_topic_key_of_another_shard_is_read_from_the_tables_exactly() -> None:
    # a producer whose createTopicKey is a topic of the cluster's, routed by a live broker,
    # fails on a topic of a shard that is neither the key's nor the head: its NO_ROUTE_INFO is
    # not a key mismatch there either
    key = "MyTemplate"
    topic = next(
        t
        for t in (f"T{i}" for i in range(50))
        if all(shard_of(t, n) not in (HEAD_SHARD, shard_of(key, n)) for n in (2, 3))
    )
    trace = Trace()
    trace.every(0, 150, 30, "a", topics={key: 4})
    trace.send(5, topic, "NO_ROUTE_INFO", default_topic=key)
    trace.send(6, "Other", "NO_ROUTE_INFO", default_topic="AUTO_CREATE_TOPIC_KEY")  # (a mismatch)
    batches = [[trace.arrivals()]]

    def causes(buckets: int) -> dict[str, str | None]:
        run = run_buckets(batches, buckets=buckets, lateness_ms=2000)
        return {a.topic or "": a.cause for a in run.final_alerts() if a.kind == "NO_ROUTE_INFO"}

    whole = causes(1)
    assert whole[topic] != "CREATE_TOPIC_KEY_MISMATCH"
    assert whole["Other"] == "CREATE_TOPIC_KEY_MISMATCH"
    assert causes(2) == causes(3) == whole
