"""``routewatch replay``: recorded or simulated traces written, at any speed, into one of the
sinks of :mod:`emitter.sinks` (Kafka, the spool, stdout)."""

from emitter.replay.pacing import Pacer
from emitter.replay.reader import TraceLine, read_traces
from emitter.replay.replayer import ReplayResult, replay

__all__ = ["Pacer", "ReplayResult", "TraceLine", "read_traces", "replay"]
