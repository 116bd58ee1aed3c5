"""RocketMQ's own constants and names, as its source (4.9.x and 5.x) defines them.

Shared by the emitter's model and the streaming job's rules, so both read them from one place.
"""

from __future__ import annotations

from typing import Final

__all__ = [
    "BROKER_EXPIRY_MS",
    "CLIENT_DEFAULT_TOPIC_QUEUE_NUMS",
    "DEFAULT_TOPIC_QUEUE_NUMS",
    "PERM_INHERIT",
    "PERM_PRIORITY",
    "PERM_READ",
    "PERM_WRITE",
    "POLL_NAMESRV_INTERVAL_MS",
    "REGISTER_PERIOD_MS",
    "REPLY_TOPIC_POSTFIX",
    "SPLIT_REGISTRATION_SIZE",
    "TBW102",
    "is_system_topic",
]

# PermName bits.
PERM_PRIORITY: Final = 8
PERM_READ: Final = 4
PERM_WRITE: Final = 2
PERM_INHERIT: Final = 1

TBW102: Final = "TBW102"
"""TopicValidator.AUTO_CREATE_TOPIC_KEY_TOPIC, the template topic of auto-creation."""

DEFAULT_TOPIC_QUEUE_NUMS: Final = 8
"""BrokerConfig.defaultTopicQueueNums: TBW102's queue count when a broker creates it."""

CLIENT_DEFAULT_TOPIC_QUEUE_NUMS: Final = 4
"""DefaultMQProducer.defaultTopicQueueNums: queues per broker on the template route."""

REGISTER_PERIOD_MS: Final = 30_000
"""BrokerConfig.registerNameServerPeriod (clamped to 10-60 s by the broker)."""

BROKER_EXPIRY_MS: Final = 120_000
"""RouteInfoManager's broker channel expiry: a NameServer drops a broker silent this long."""

POLL_NAMESRV_INTERVAL_MS: Final = 30_000
"""ClientConfig.pollNameServerInterval: how often a client refreshes its topic routes."""

SPLIT_REGISTRATION_SIZE: Final = 800
"""BrokerConfig.splitRegistrationSize (RocketMQ 5): topics per part of a split registration."""

# RocketMQ's reserved topic names, 4.9.x and 5.x (docs/alerts.md, "System topics", lists them
# with where each is defined): TopicValidator's SYSTEM_TOPIC_SET ...
_SYSTEM_TOPICS: Final = frozenset(
    {
        TBW102,
        "SCHEDULE_TOPIC_XXXX",
        "BenchmarkTest",
        "OFFSET_MOVED_EVENT",
        "SELF_TEST_TOPIC",
        "TRANS_CHECK_MAX_TIME_TOPIC",
        "RMQ_SYS_TRANS_HALF_TOPIC",
        "RMQ_SYS_TRANS_OP_HALF_TOPIC",
        "RMQ_SYS_TRACE_TOPIC",
        "CHECKPOINT_TOPIC",  # 5.2+: RMQ_SYS_ROCKSDB_OFFSET_TOPIC
    }
)
# ... its SYSTEM_TOPIC_PREFIX (the timer, revive, broker-member topics of 5.x among them), the
# upper-case RMQ_SYS_ names, MixAll's retry, dead-letter and light-queue prefixes (5.x's pop
# retry topics and RIP-83's lite topics among them)
_SYSTEM_PREFIXES: Final = ("RMQ_SYS_", "rmq_sys_", "%RETRY%", "%DLQ%", "%LMQ%")
# MixAll.REPLY_TOPIC_POSTFIX: a cluster's request-reply topic is <cluster>_REPLY_TOPIC
REPLY_TOPIC_POSTFIX: Final = "_REPLY_TOPIC"


def is_system_topic(
    topic: str, cluster: str, brokers: frozenset[str] | set[str] = frozenset()
) -> bool:
    """Whether ``topic`` is one of RocketMQ's own (TopicValidator, MixAll) or one a broker makes
    for its cluster: named after the cluster or one of its brokers, or the cluster's reply
    topic. Coverage and skew rules skip them; alerts count them apart."""
    return (
        topic in _SYSTEM_TOPICS
        or topic.startswith(_SYSTEM_PREFIXES)
        or topic == cluster
        or topic == cluster + REPLY_TOPIC_POSTFIX
        or topic in brokers
    )
