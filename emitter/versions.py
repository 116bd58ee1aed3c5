"""The RocketMQ releases whose behaviour the model follows, and where they differ.

A :class:`emitter.world.World` runs one release's behaviour (``World(version=ROCKETMQ_5)``); its
NameServers and brokers take it from there. What changes with the release, each checked on a
real cluster of that line (docs/emitter.md, "Checked against RocketMQ"):

- The NameServer's scan for silent brokers runs every 10 s in 4.x, every 5 s in 5.x
  (``NamesrvConfig.scanNotActiveBrokerInterval``). On 4.x the idle-connection handler (120 s)
  always drops a frozen broker first; on 5.x the scan sometimes does, up to 5 s later — the
  model drops it at 120 s on both (:mod:`emitter.namesrv`).
- After auto-creating a topic for a send, a 4.x broker registers its whole table at once
  (``registerBrokerAll``); a 5.x broker registers the new topic alone, under its new data
  version (``TopicConfigManager.registerBrokerData`` → ``registerIncrementBrokerData``, with
  ``enableSingleTopicRegister`` off by default). The NameServer applies the increment, and the
  next full registration, under the same data version, is not applied again — so whatever else
  changed in the broker's table in memory (a TBW102 that lost its inherit bit) stays unknown to
  the NameServers until the data version moves again.
- A 5.x broker writes its topic table (``topics.json``, with its data version) on a clean
  shutdown (``BrokerController.shutdown`` → ``topicConfigManager.persist()``, since 5.0.0's
  RIP-32, apache/rocketmq#3978); a 4.x broker writes it only when the table changes. So a 5.x
  broker that ran with auto-creation on and was restarted cleanly with it off keeps TBW102, inherit
  bit and all: a stale template, routed, that refuses every send.
- The 5.x client (5.1.1 and later) takes a new topic's template route from TBW102's route
  whatever its ``createTopicKey`` (``MQClientAPIImpl.getDefaultTopicRouteInfoFromNameServer``,
  apache/rocketmq#6452), still naming the key to the broker as the send's template; a 4.x client
  asks for the key's own route. And it no longer refreshes the key's route periodically
  (apache/rocketmq#6564).
- A send to a queue id the topic does not have is refused: ``SYSTEM_ERROR`` on 4.x, which the
  client retries on another broker; ``INVALID_PARAMETER`` (29) on 5.x, which it throws at once
  (``AbstractSendMessageProcessor.msgCheck``; the client's ``retryResponseCodes``).
- From 4.8.0 a broker refuses ``updateTopic`` and ``deleteTopic`` of a system topic.
"""

from __future__ import annotations

from routewatch.rocketmq import TBW102

__all__ = [
    "BEFORE_4_8",
    "RELEASES",
    "ROCKETMQ_4",
    "ROCKETMQ_5",
    "SYSTEM_TOPIC_ADMIN_REFUSED_FROM",
    "Release",
    "line_of",
    "persists_topics_on_shutdown",
    "refreshes_create_topic_key",
    "registers_whole_table_on_auto_create",
    "release_named",
    "retries_illegal_queue",
    "scan_interval_ms",
    "template_route_of",
]

Release = tuple[int, int, int]

ROCKETMQ_4: Release = (4, 9, 8)
"""The 4.9 line: the model's default (4.9.8 and the 4.9.7 the suite runs behave the same)."""

ROCKETMQ_5: Release = (5, 5, 0)
"""The 5.x line, as the suite's RocketMQ 5.5.0 behaves."""

BEFORE_4_8: Release = (4, 7, 1)
"""A broker that still lets ``deleteTopic`` remove TBW102."""

SYSTEM_TOPIC_ADMIN_REFUSED_FROM: Release = (4, 8, 0)

RELEASES: dict[str, Release] = {"4.9": ROCKETMQ_4, "5": ROCKETMQ_5}
"""The release lines by the names the command line takes (``--rocketmq 5``)."""


def release_named(name: str) -> Release:
    """The release line called ``name`` (``4.9`` or ``5``); ValueError with one sentence."""
    try:
        return RELEASES[name]
    except KeyError:
        raise ValueError(
            f"RocketMQ release line {name!r} is not modelled: use one of {', '.join(RELEASES)}."
        ) from None


def line_of(release: tuple[int, ...]) -> Release:
    """The modelled line of a real release (``(5, 3, 1)`` → :data:`ROCKETMQ_5`); ValueError
    with one sentence for a line the model does not follow."""
    for line in (ROCKETMQ_4, ROCKETMQ_5):
        if release[:1] == line[:1]:
            return line
    raise ValueError(f"RocketMQ {'.'.join(map(str, release))} is not modelled: use 4.9 or 5.x.")


def registers_whole_table_on_auto_create(version: Release) -> bool:
    """Whether a broker of ``version`` registers its whole table after auto-creating a topic
    (4.x), rather than the new topic alone (5.x)."""
    return version < (5, 0, 0)


def persists_topics_on_shutdown(version: Release) -> bool:
    """Whether a broker of ``version`` writes its topic table on a clean shutdown (5.x)."""
    return version >= (5, 0, 0)


def template_route_of(version: Release, create_topic_key: str) -> str:
    """The topic whose route a client of ``version`` takes as a new topic's template:
    ``create_topic_key`` on 4.x, TBW102 on 5.1.1 and later."""
    return TBW102 if version >= (5, 1, 1) else create_topic_key


def refreshes_create_topic_key(version: Release) -> bool:
    """Whether a client of ``version`` refreshes its ``createTopicKey``'s route with its other
    topics every ``pollNameServerInterval`` (4.x; not from 5.1.1)."""
    return version < (5, 1, 1)


def retries_illegal_queue(version: Release) -> bool:
    """Whether a client of ``version`` retries a send refused for its queue id (4.x)."""
    return version < (5, 0, 0)


def scan_interval_ms(version: Release) -> int:
    """How often a NameServer of ``version`` looks for brokers silent over 120 s."""
    return 10_000 if version < (5, 0, 0) else 5_000
