"""Replaying recorded or simulated traces into Kafka, the spool or stdout, at any speed."""

from emitter.replay.pacing import Pacer
from emitter.replay.reader import TraceLine, read_traces
from emitter.replay.replayer import ReplayResult, replay
from emitter.replay.sinks import KafkaSink, Sink, SpoolSink, StdoutSink, sink_for

__all__ = [
    "KafkaSink",
    "Pacer",
    "ReplayResult",
    "Sink",
    "SpoolSink",
    "StdoutSink",
    "TraceLine",
    "read_traces",
    "replay",
    "sink_for",
]
