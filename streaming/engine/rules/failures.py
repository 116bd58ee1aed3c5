"""What the two failure alerts share (NO_ROUTE_INFO, SEND_REJECTED): a record of the failures
kept in the topic's state, resolved after 120 s without one."""

from __future__ import annotations

from typing import Any, ClassVar

from routewatch.alerts import Alert
from streaming.engine.alerts import Ending
from streaming.engine.rules.base import Rule, Scope, iso

__all__ = ["FAILURE_QUIET_MS", "FailureRule"]

FAILURE_QUIET_MS = 120_000


class FailureRule(Rule):
    """A failure alert: opened by a failed send, resolved by ``FAILURE_QUIET_MS`` without
    one; its record is the topic state's field of the name of its threshold (``record``)."""

    scope: ClassVar[Scope] = "topic"
    record: ClassVar[str]
    quiet_ms: ClassVar[int] = FAILURE_QUIET_MS

    def _failure(self, topic: str, ts: int, fresh: dict[str, Any]) -> dict[str, Any]:
        """A failure of this kind at ``ts``: its record — the open alert's, or ``fresh`` (with
        ``first``, ``count`` 0 and ``due`` None, and the kind's own fields) — counted, its quiet
        period scheduled, kept in the topic's state (which ends the topic's idle time); the
        caller adds what the failure says of its kind."""
        state = self.e.topic_state(topic, create=True)
        assert state is not None
        is_open = self.e.book.get(self.facts.topic_key(self.kind, topic)) is not None
        record = (getattr(state, self.record) if is_open else None) or fresh
        record["last"] = ts
        record["count"] += 1
        if record["due"] is None:
            record["due"] = due = ts + self.quiet_ms
            self.e.schedule(due, self.record, topic)
        setattr(state, self.record, record)
        self.life.note_idle(topic, state, ts)
        self.e.topics.mark(topic)
        return record

    def fire(self, deadline: str, key: str, at: int) -> None:
        """120 s without a failure of this kind resolves the alert."""
        topic = key
        state = self.e.topic_state(topic)
        record = None if state is None else getattr(state, self.record)
        if state is None or record is None or record["due"] != at:
            return  # resolved meanwhile, or a deadline replaced by a later one
        record["due"] = None
        if record["last"] + self.quiet_ms > at:
            record["due"] = record["last"] + self.quiet_ms
            self.e.schedule(record["due"], self.record, topic)
        else:
            alert_key = self.facts.topic_key(self.kind, topic)
            last = record["last"]
            self.e.book.resolve(
                alert_key,
                at,
                lambda alert: self.ended(
                    alert, f"none came for 120 s after {iso(last)}", "quiet for 120 s"
                ),
            )
            self.resolved_quietly(topic, at)
            setattr(state, self.record, None)
            self.life.note_idle(topic, state, at)
        self.e.topics.mark(topic)

    def ended(self, alert: Alert, how: str, resolution: str) -> Ending:
        """How the alert ended: its failures as they stand (they change no more), ``how`` in
        words, ``resolution`` in its evidence."""
        raise NotImplementedError

    def resolved_quietly(self, topic: str, at: int) -> None:
        """After the alert resolved for quiet at ``at``."""
