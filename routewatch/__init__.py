"""routewatch core: the event contract, settings, errors and the command line.

What emitter, streaming and api share, and nothing else. It never imports pyspark, nor any of
those three packages.
"""

from routewatch.codec import encode, to_wire
from routewatch.errors import RoutewatchError
from routewatch.events import (
    CONTRACT_VERSION,
    EVENT_CLASSES,
    Event,
    Heartbeat,
    QueueData,
    RoutePull,
    Send,
    TopicConfig,
)
from routewatch.validation import BAD_INPUT_REASONS, BadInput, validate

__all__ = [
    "BAD_INPUT_REASONS",
    "CONTRACT_VERSION",
    "EVENT_CLASSES",
    "BadInput",
    "Event",
    "Heartbeat",
    "QueueData",
    "RoutePull",
    "RoutewatchError",
    "Send",
    "TopicConfig",
    "encode",
    "to_wire",
    "validate",
]
