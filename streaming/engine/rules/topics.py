"""An auto-created topic's life in the engine: how its auto-creation is known, when its coverage
is final, and when it is forgotten (docs/alerts.md, Terms, "auto-created")."""

from __future__ import annotations

from routewatch.alerts import AlertKind
from streaming.engine.rules.base import ClusterFacts, EngineView
from streaming.engine.state import TopicState

__all__ = [
    "AT_START",
    "OBSERVED",
    "SETTLE_MS",
    "TOPIC_FORGET_MS",
    "WHILE_WATCHING",
    "TopicLife",
    "evidence_of",
]

SETTLE_MS = 60_000
# how an auto-creation is known (TopicState.auto_created_how)
OBSERVED, WHILE_WATCHING, AT_START = "observed", "while_watching", "at_start"
# An auto-created topic left on no live broker, with no producer holding a template route for
# it, no failure pending and no alert open, is forgotten after this long: the state of a
# cluster whose clients keep inventing topic names stays bounded over months.
TOPIC_FORGET_MS = 7 * 24 * 3600 * 1000


def evidence_of(state: TopicState) -> str:
    """A coverage alert's ``auto_created_evidence``: ``observed`` (a client saw the
    auto-creation), or ``inferred_while_watching`` / ``inferred_at_start`` (the broker side's
    config looks it: docs/alerts.md)."""
    how = state.auto_created_how or OBSERVED
    return how if how == OBSERVED else f"inferred_{how}"


class TopicLife:
    """Auto-creation, settling and forgetting; ``keeping``: the alert kinds whose open alert
    keeps a topic from being forgotten (the registry's topic-scoped kinds)."""

    def __init__(
        self, engine: EngineView, facts: ClusterFacts, keeping: tuple[AlertKind, ...]
    ) -> None:
        self.e = engine
        self.facts = facts
        self.keeping = keeping

    def auto_created(
        self, topic: str, state: TopicState, at: int, how: str = OBSERVED, since: int | None = None
    ) -> bool:
        """The topic was auto-created: a client saw it (``how`` "observed", at ``at``), or the
        broker side's config looks it ("while_watching", "at_start": first seen at ``since``).
        The first evidence sets when; observed evidence replaces inferred. Whether anything
        changed."""
        if state.auto_created_at is None:
            when = at if since is None else min(since, at)
            state.auto_created_at = when
            state.auto_created_how = how
            self.e.out.auto_created[topic] = when
            self.e.meta.auto_topics.add(topic)
            self.e.topics.mark(topic)
            if when + SETTLE_MS > at:
                self.e.schedule(when + SETTLE_MS, "settle", topic)
            return True
        if how == OBSERVED and state.auto_created_how != OBSERVED:
            state.auto_created_how = OBSERVED
            self.e.topics.mark(topic)
            return True
        return False

    @staticmethod
    def settled(state: TopicState, at: int) -> bool:
        """Whether an auto-created topic's coverage is final: 60 s after its creation, at once
        when a client saw it and no producer holds a template route for it, and at once for a
        topic found at the observer's start (older than the observer)."""
        assert state.auto_created_at is not None
        if state.auto_created_how == AT_START:
            return True
        if state.auto_created_how == OBSERVED and not state.holders:
            return True
        return at >= state.auto_created_at + SETTLE_MS

    def is_idle(self, topic: str, state: TopicState) -> bool:
        """Nothing is left of the topic: no live broker holds it, no producer holds a template
        route for it, no failure of it is pending and no alert about it is open."""
        if self.e.live_holders(topic) or state.holders or state.no_route or state.rejected:
            return False
        return all(self.e.book.get(self.facts.topic_key(k, topic)) is None for k in self.keeping)

    def note_idle(self, topic: str, state: TopicState, at: int) -> None:
        """Start (or stop) counting the time an auto-created topic has been idle; one
        "forget" threshold is pending per topic at a time."""
        if state.auto_created_at is None:
            return
        idle = self.is_idle(topic, state)
        if not idle and state.idle_since is not None:
            state.idle_since = None
            self.e.topics.mark(topic)
        elif idle and state.idle_since is None:
            state.idle_since = at
            if state.forget_due is None:
                state.forget_due = at + TOPIC_FORGET_MS
                self.e.schedule(state.forget_due, "forget", topic)
            self.e.topics.mark(topic)

    def forget(self, topic: str, at: int) -> None:
        """The threshold: forget the topic if it has been idle for TOPIC_FORGET_MS, else wait
        for the end of its current idle time, if it is idle."""
        state = self.e.topic_state(topic)
        if state is None or state.forget_due != at:
            return
        state.forget_due = None
        self.e.topics.mark(topic)
        if state.idle_since is not None and not self.is_idle(topic, state):
            state.idle_since = None
        if state.idle_since is None:
            return
        if state.idle_since + TOPIC_FORGET_MS <= at:
            self.e.topics.set(topic, None)  # ClusterEngine.finish drops it from the indexes
            return
        state.forget_due = state.idle_since + TOPIC_FORGET_MS
        self.e.schedule(state.forget_due, "forget", topic)
