"""NO_ROUTE_INFO: sends of a topic fail with "No route info of this topic" (or a proxy's
TOPIC_NOT_FOUND), with the cause the route tables give."""

from __future__ import annotations

from functools import partial
from typing import Any

from routewatch.alerts import Alert, NoRouteCause
from routewatch.remedy.plan import Plan
from routewatch.rocketmq import TBW102
from streaming.engine.alerts import Ending
from streaming.engine.rules.base import EVIDENCE_LIST_MAX, iso
from streaming.engine.rules.failures import FailureRule
from streaming.engine.rules.topics import TOPIC_FORGET_MS
from streaming.engine.state import key_json

__all__ = ["CLIENT_FORGET_MS", "NoRouteInfo"]

# A client's pull that said it has no NameServer address decides NO_ROUTE_INFO's cause for its
# failures for this long (a restarted application is a new client id: the old one is gone).
CLIENT_FORGET_MS = TOPIC_FORGET_MS

# positions of a resolution at one instant, in (ts, seq) order: one caused by time passing comes
# before every event stamped with that instant; one caused by an event without seq is only
# known to come after the events that arrived before it
_BEFORE_EVENTS = -2
_NO_SEQ = -1


def _later(event: tuple[int, int | None], resolution: tuple[int, int]) -> bool:
    """Whether an event at (``ts``, ``seq``) comes after a resolution in (ts, seq) order."""
    ts, seq = event
    at, position = resolution
    if ts != at:
        return ts > at
    if position == _BEFORE_EVENTS:
        return True
    return seq is not None and position != _NO_SEQ and seq > position


class NoRouteInfo(FailureRule):
    kind = "NO_ROUTE_INFO"
    reads = frozenset({"registrations", "template", "clients", "namesrvs"})
    record = "no_route"
    deadlines = ("no_route",)

    def on_send_succeeded(self, topic: str, ts: int, seq: int | None) -> None:
        """A delivered send of the topic resolves it."""
        key = self.facts.topic_key(self.kind, topic)
        if self.e.book.get(key) is not None:
            self.e.book.resolve(
                key,
                ts,
                lambda alert: self.ended(
                    alert, f"a send succeeded at {iso(ts)}", "a send succeeded"
                ),
            )
            self._resolved_at(topic, ts, _NO_SEQ if seq is None else seq)

    def ended(self, alert: Alert, how: str, resolution: str) -> Ending:
        e = alert.evidence
        statuses = ", ".join(f"{s} {n}" for s, n in sorted(e["statuses"].items()))
        via = ""
        if set(e["statuses"]) == {"TOPIC_NOT_FOUND"}:  # (a proxy's misses: the proxy is the client)
            via = f" through proxy {', '.join(e['clients'])}"
        return Ending(
            f"Sends of topic {alert.topic}{via} found no route {e['failures']} time(s) "
            f"({statuses}) from {iso(e['first_failure'])} to {iso(e['last_failure'])}, cause "
            f"{alert.cause}; {how}.",
            {**e, "resolution": resolution},
        )

    def resolved_quietly(self, topic: str, at: int) -> None:
        self._resolved_at(topic, at, _BEFORE_EVENTS)

    def _resolved_at(self, topic: str, ts: int, seq: int) -> None:
        """Where a resolution falls in (``ts``, ``seq``) order: only a failure later than it
        reopens the alert."""
        key = self.facts.topic_key(self.kind, topic)
        self.e.meta.last_resolved[key_json(key)] = (ts, seq)

    def _cause(self, e: dict[str, Any]) -> NoRouteCause:
        live = any(r.live for r in self.facts.regs().values())
        said_at = self.e.meta.no_namesrv_clients.get(e["client_id"])
        if e["status"] == "NO_NAMESRV" or (
            said_at is not None and e["ts"] < said_at + CLIENT_FORGET_MS
        ):
            return "NO_NAMESRV"
        if not live:
            return "NO_LIVE_BROKER"
        if e["type"] == "proxy_route_miss":
            return "GRPC_NOT_CREATED"
        reported_tbw102 = bool(self.e.live_holders(TBW102))
        key = e["default_topic"]
        if key != TBW102 and not self.e.live_holders(key) and reported_tbw102:
            return "CREATE_TOPIC_KEY_MISMATCH"
        says = self.facts.auto_create_by_broker().values()  # per live broker, not registration
        if all(on is False for on in says):
            return "AUTO_CREATE_DISABLED"
        if any(says) and not reported_tbw102:
            return "TEMPLATE_MISSING"
        return "UNKNOWN"

    def on_no_route(self, e: dict[str, Any], ts: int) -> None:
        """A send that found no route (or a proxy's route miss)."""
        topic = e["topic"]
        key = self.facts.topic_key(self.kind, topic)
        resolved = self.e.meta.last_resolved.get(key_json(key))
        if (
            self.e.book.get(key) is None
            and resolved is not None
            and not _later((ts, e.get("seq")), resolved)
        ):
            return  # not later than the alert's last resolution
        fresh = {"first": ts, "count": 0, "clients": [], "statuses": {}, "due": None}
        fail = self._failure(topic, ts, fresh)
        if e["client_id"] not in fail["clients"]:
            fail["clients"] = sorted([*fail["clients"], e["client_id"]])[:EVIDENCE_LIST_MAX]
        fail["statuses"][e["status"]] = fail["statuses"].get(e["status"], 0) + 1
        cause = self._cause(e)
        update = self.facts.update_topic
        remedies = {
            "NO_NAMESRV": "Set the client's NameServer address (namesrvAddr).",
            "NO_LIVE_BROKER": "Bring a broker of the cluster back.",
            "CREATE_TOPIC_KEY_MISMATCH": "Align the client's createTopicKey "
            f"({e['default_topic']}) with TBW102 (upgrade a 4.3.0 client).",
            "AUTO_CREATE_DISABLED": "Create the topic: " + update(topic, "-c", self.cluster, q=8),
            "TEMPLATE_MISSING": "Restore TBW102: restart the brokers with "
            "autoCreateTopicEnable=true, or create the topic: "
            + update(topic, "-c", self.cluster, q=8),
            "GRPC_NOT_CREATED": "Create the topic (gRPC clients never auto-create one): "
            + update(topic, "-c", self.cluster, q=8),
            "UNKNOWN": "Check the client's NameServer address and the topic's route.",
        }
        failure = (
            f"fail through proxy {e['proxy']} with TOPIC_NOT_FOUND"
            if e["type"] == "proxy_route_miss"
            else 'fail with "No route info of this topic"'
        )
        self.e.book.raise_or_update(
            key,
            ts,
            severity="critical",
            cause=cause,
            summary=f"Sends of topic {topic} {failure} (cause: {cause}).",
            evidence={
                "first_failure": fail["first"],
                "last_failure": fail["last"],
                "failures": fail["count"],
                "statuses": fail["statuses"],
                "clients": fail["clients"],
                "create_topic_key": e["default_topic"],
            },
            remedy=remedies[cause],
            plan=partial(self._plan, topic, cause, e["default_topic"]),
        )

    def _plan(self, topic: str, cause: NoRouteCause, key: str) -> Plan:
        """The topic made on every live writable master where a topic can be made; a manual
        step for the client or the brokers where it cannot."""
        facts = self.facts
        if cause in ("AUTO_CREATE_DISABLED", "TEMPLATE_MISSING", "GRPC_NOT_CREATED"):
            brokers = sorted(facts.expected_brokers())
            return Plan(
                namesrvs=facts.namesrv_list(),
                expects={"topic": topic, "routed": {b: None for b in brokers}},
                steps=list(facts.create_on(topic, brokers, 8)),
            )
        resolved = f"a send of {topic} succeeds: the alert resolves"
        if cause == "NO_LIVE_BROKER":
            return facts.manual_plan(
                f"Start a broker of cluster {self.cluster}, with every NameServer of the "
                "cluster in its namesrvAddr.",
                "broker_live",
                f"a master of cluster {self.cluster} is live on every NameServer",
                broker=None,
                broker_id=0,
            )
        do = {
            "NO_NAMESRV": "Set the client's NameServer address (namesrvAddr).",
            "CREATE_TOPIC_KEY_MISMATCH": f"Align the client's createTopicKey ({key}) with "
            "TBW102 (upgrade a 4.3.0 client).",
            "UNKNOWN": "Check the client's NameServer address and the topic's route.",
        }[cause]
        return facts.manual_plan(do, "alert_resolved", resolved)
