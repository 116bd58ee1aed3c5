"""Where the emitter's producers of events write: Kafka, the spool directory the job reads, or
stdout. Shared by ``routewatch replay`` and ``routewatch collect`` (which import this package,
never each other), each marking a spool with what it holds (:func:`claim_spool`)."""

from emitter.sinks.kafka import KafkaSink, kafka_key
from emitter.sinks.local import (
    ORIGIN_FILE,
    Sink,
    SpoolSink,
    StdoutSink,
    claim_spool,
    sink_for,
)

__all__ = [
    "ORIGIN_FILE",
    "KafkaSink",
    "Sink",
    "SpoolSink",
    "StdoutSink",
    "claim_spool",
    "kafka_key",
    "sink_for",
]
