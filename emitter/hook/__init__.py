"""The client hook: a Java library (``emitter/hook/java``) that an application installs around
RocketMQ's ``DefaultMQProducer`` to write ``route_pull`` and ``send`` events into the spool
(docs/hook.md). :mod:`emitter.hook.build` compiles it."""
