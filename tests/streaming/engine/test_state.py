"""The engine's state as JSON: what a state written by an earlier routewatch reads as."""

from __future__ import annotations

import heapq

from streaming.engine.state import AFTER_LIVENESS, BEFORE_EVENTS, LIVENESS, Meta, Reg

_REG = {
    "addr": "a:10911",
    "last_hb": 30_000,
    "live": True,
    "shutdown": False,
    "auto_create": False,
    "default_q": 8,
    "last_reg": 30_000,
    "lingers": False,
    "version": None,
    "amended": False,
    "template": "missing",
    "template_held": False,
    "read_only": False,
    "expiry_deferred": False,
    "not_held": [],
    "expiry_due": 150_000,
    "parts_version": None,
    "parts": {},
    "round_base": None,
    "timeout_ms": None,
}


def _meta(deadlines: list[list[object]]) -> Meta:
    return Meta.from_json(
        {
            "stream_time": 60_000,
            "regs": {},
            "auto_topics": [],
            "active_topics": [],
            "no_namesrv_clients": {},
            "diverged_since": [],
            "deadlines": deadlines,
            "deadline_seq": 3,
            "open_alerts": [],
            "last_resolved": {},
            "observer": None,
        }
    )


def test_a_state_with_one_after_events_phase_puts_liveness_first_among_them() -> None:
    """States written before 2026-12-07 knew one phase after the events (0); the divergence's
    threshold, scheduled first, now comes after the expiry of the same millisecond."""
    meta = _meta(
        [
            [120_000, 0, 1, "diverge", '["a",0]'],
            [120_000, 1, 2, "settle", "T"],
            [120_000, 0, 3, "expire", '["ns","a",0]'],
        ]
    )

    order = [heapq.heappop(meta.deadlines) for _ in range(3)]

    assert [(phase, kind) for _, phase, _, kind, _ in order] == [
        (BEFORE_EVENTS, "settle"),
        (LIVENESS, "expire"),
        (AFTER_LIVENESS, "diverge"),
    ]


def test_a_state_is_written_and_read_back_with_its_phases() -> None:
    meta = _meta([[120_000, AFTER_LIVENESS, 1, "diverge", '["a",0]']])

    assert Meta.from_json(meta.to_json()).deadlines == meta.deadlines


def test_a_registration_written_before_its_full_registration_instant_was_kept() -> None:
    """Its latest registration stands for its latest full one, which wrote its counts."""
    reg = Reg.from_json(_REG)

    assert (reg.full_at, reg.named_at) == (30_000, {})
    assert reg.written_at("T") == 30_000
    assert Reg.from_json(reg.to_json()) == reg
