"""RocketMQ's reserved topic names (routewatch.rocketmq.is_system_topic), 4.9.x and 5.x."""

from __future__ import annotations

import pytest

from routewatch.rocketmq import is_system_topic

RESERVED = [
    "TBW102",
    "SCHEDULE_TOPIC_XXXX",
    "BenchmarkTest",
    "OFFSET_MOVED_EVENT",
    "SELF_TEST_TOPIC",
    "TRANS_CHECK_MAX_TIME_TOPIC",
    "RMQ_SYS_TRANS_HALF_TOPIC",
    "RMQ_SYS_TRANS_OP_HALF_TOPIC",
    "RMQ_SYS_TRACE_TOPIC",
    "CHECKPOINT_TOPIC",
    "rmq_sys_wheel_timer",
    "rmq_sys_REVIVE_LOG_DefaultCluster",
    "rmq_sys_SYNC_BROKER_MEMBER_broker-a",
    "rmq_sys_TRACE_DATA_region",
    "%RETRY%orders-consumer",
    "%RETRY%orders-consumer_Orders",
    "%DLQ%orders-consumer",
    "%LMQ%$Orders$device-1",
    "DefaultCluster",  # the cluster's own topic
    "DefaultCluster_REPLY_TOPIC",  # its request-reply topic (MixAll.getReplyTopic)
    "broker-a",  # a broker's own topic
]


@pytest.mark.parametrize("topic", RESERVED)
def test_every_reserved_name_is_a_system_topic(topic: str) -> None:
    assert is_system_topic(topic, "DefaultCluster", frozenset({"broker-a", "broker-b"}))


@pytest.mark.parametrize(
    "topic",
    ["Orders", "OtherCluster_REPLY_TOPIC", "REPLY_TOPIC", "broker-c", "TBW102x", "retry-orders"],
)
def test_a_users_topic_is_not(topic: str) -> None:
    assert not is_system_topic(topic, "DefaultCluster", frozenset({"broker-a", "broker-b"}))
