"""``routewatch collect``: watch a live RocketMQ cluster's NameServers and brokers over
RocketMQ's own protocol and write what each NameServer holds as contract heartbeats
(docs/collect.md)."""

from emitter.collect.derive import Deriver
from emitter.collect.poller import Poller, Snapshot

__all__ = ["Deriver", "Poller", "Snapshot"]
