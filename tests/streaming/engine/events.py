"""Contract events written by hand for the rule tests: a :class:`Trace` of heartbeats, route
pulls and sends, with explicit event times in seconds from :data:`T0`."""

from __future__ import annotations

from typing import Any

import orjson

__all__ = ["NS1", "NS2", "T0", "TBW102", "Trace", "ms"]

T0 = 1_767_225_600_000
NS1, NS2 = "10.0.0.100:9876", "10.0.0.101:9876"
TBW102 = (8, 8, 7)


def ms(s: float) -> int:
    """An event time: ``s`` seconds from :data:`T0`, in epoch milliseconds."""
    return T0 + round(s * 1000)


class Trace:
    """Contract events written by hand; times in seconds from ``T0``."""

    def __init__(self) -> None:
        self.events: list[dict[str, Any]] = []

    def _add(self, s: float, cluster: str, seq: int | None, body: dict[str, Any]) -> None:
        event = {"v": 1, "ts": ms(s), "cluster": cluster}
        event["event_id"] = f"e{len(self.events)}"
        if seq is not None:
            event["seq"] = seq
        self.events.append({**event, **body})

    def hb(
        self,
        s: float,
        broker: str,
        topics: dict[str, int | tuple[int, int, int]] | None = None,
        *,
        ns: str = NS1,
        broker_id: int = 0,
        full: bool = True,
        auto: bool = True,
        tbw: bool = True,
        shutdown: bool = False,
        dv: str | None = None,
        part: int | None = None,
        parts: int | None = None,
        cluster: str = "C",
        inferred: dict[str, tuple[str, float]] | None = None,
        timeout_s: float | None = None,
        not_held: tuple[str, ...] = (),
    ) -> None:
        """A registration of ``broker`` on ``ns``: a topic's counts are ``q`` (read = write =
        ``q``, perm 6) or ``(read, write, perm)``; a full one lists a usable TBW102 unless
        ``tbw`` is false. ``inferred``: topic -> (found, first seen in seconds), the broker
        side's evidence of an auto-creation; ``timeout_s``: the registration's own expiry;
        ``not_held``: topics ``ns`` routes to the broker that its own table lacks (``held``, as
        a collector writes what a NameServer routes)."""
        configs = {t: (q, q, 6) if isinstance(q, int) else q for t, q in (topics or {}).items()}
        if full and tbw and not shutdown:
            configs = {"TBW102": TBW102, **configs}
        body: dict[str, Any] = {
            "type": "heartbeat",
            "broker": broker,
            "broker_addr": f"{broker}:10911",
            "broker_id": broker_id,
            "namesrv": ns,
            "auto_create_topic_enable": auto,
            "default_topic_queue_nums": 8,
            "full": full,
            "topics": {
                t: {"read_queue_nums": r, "write_queue_nums": w, "perm": p}
                for t, (r, w, p) in ({} if shutdown else configs).items()
            },
        }
        if shutdown:
            body["shutdown"] = True
        if inferred is not None:
            body["inferred_auto_created"] = {
                t: {"found": found, "first_seen": ms(at)} for t, (found, at) in inferred.items()
            }
        if timeout_s is not None:
            body["heartbeat_timeout_ms"] = ms(timeout_s) - ms(0)
        if not_held:
            body["held"] = {t: {"held": False, "perm": None} for t in not_held}
        for name, value in (("data_version", dv), ("part", part), ("parts", parts)):
            if value is not None:
                body[name] = value
        self._add(s, cluster, None, body)

    def round(
        self,
        s: float,
        *,
        unreached: dict[str, float] | None = None,
        namesrvs: tuple[str, ...] = (NS1,),
        interval_s: float = 10,
        cluster: str = "C",
        collector: str = "collect-t",
    ) -> None:
        """A round of the cluster's collector: it reached ``namesrvs`` but those in
        ``unreached`` (NameServer -> since, in seconds)."""
        unreached = unreached or {}
        body = {
            "type": "collector_round",
            "collector": collector,
            "interval_ms": round(interval_s * 1000),
            "namesrvs": {
                ns: {
                    "reached": ns not in unreached,
                    "unreachable_since": ms(unreached[ns]) if ns in unreached else None,
                }
                for ns in sorted(set(namesrvs) | set(unreached))
            },
        }
        self._add(s, cluster, None, body)

    def pull(
        self,
        s: float,
        topic: str,
        brokers: list[str],
        *,
        via_default: bool = False,
        result: str = "SUCCESS",
        client: str = "p1",
        namesrv: str | None = NS1,
        cluster: str = "C",
    ) -> None:
        """A producer's route pull of ``topic``, returning 4 queues on each of ``brokers``."""
        queues = [
            {"broker": b, "read_queue_nums": 4, "write_queue_nums": 4, "perm": 6} for b in brokers
        ]
        body = {
            "type": "route_pull",
            "client_id": client,
            "group": "pg",
            "role": "producer",
            "namesrv": namesrv,
            "topic": topic,
            "via_default": via_default,
            "create_topic_key": "TBW102",
            "client_default_topic_queue_nums": 4,
            "result": result,
            "queues": queues if result == "SUCCESS" else [],
        }
        self._add(s, cluster, None, body)

    def send(
        self,
        s: float,
        topic: str,
        status: str = "SEND_OK",
        broker: str | None = None,
        *,
        auto_created: bool = False,
        seq: int | None = None,
        client: str = "p1",
        default_topic: str = "TBW102",
        cluster: str = "C",
    ) -> None:
        """A send of ``topic`` and its outcome."""
        body = {
            "type": "send",
            "client_id": client,
            "group": "pg",
            "topic": topic,
            "broker": broker,
            "queue_id": None if broker is None else 0,
            "default_topic": default_topic,
            "default_topic_queue_nums": 4,
            "status": status,
            "auto_created": auto_created,
        }
        self._add(s, cluster, seq, body)

    def proxy_miss(
        self,
        s: float,
        topic: str,
        *,
        proxy: str = "proxy-1:/logs/broker_default.log",
        thread: str = "GrpcRouteThreadPool-0",
        cluster: str = "C",
    ) -> None:
        """A 5.x proxy's NameServer lookup of ``topic`` for a gRPC client found no route."""
        body = {"type": "proxy_route_miss", "proxy": proxy, "topic": topic, "thread": thread}
        self._add(s, cluster, None, body)

    def every(self, start: float, stop: float, step: float, broker: str, **kw: Any) -> None:
        """Periodic full registrations of ``broker`` from ``start`` through ``stop``."""
        s = start
        while s <= stop:
            self.hb(s, broker, **kw)
            s += step

    def arrivals(self, *, as_written: bool = False) -> list[tuple[str, int, int | None, str]]:
        """In event-time order (events of one instant in the order they were written), or in
        the order they were written."""
        ordered = self.events if as_written else sorted(self.events, key=lambda e: e["ts"])
        return [(e["event_id"], e["ts"], e.get("seq"), orjson.dumps(e).decode()) for e in ordered]
