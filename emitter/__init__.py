"""A model of RocketMQ's route behaviour that writes contract events: scenarios, fleet, replay."""

__all__: list[str] = []
