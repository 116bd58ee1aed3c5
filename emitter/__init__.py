"""Everything that produces routewatch's events: the model of RocketMQ's route behaviour
(``world``, ``broker``, ``namesrv``, ``clients``, ``versions``; ``scenarios``, ``fleet``,
``trace``: ``routewatch simulate``), the replayer (``replay``), the live collector
(``collect``), the Java client library (``hook``), and the sinks the replayer and the
collector both write through (``sinks``)."""

__all__: list[str] = []
