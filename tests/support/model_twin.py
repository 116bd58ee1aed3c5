"""The emitter's model of a real cluster under test: the same description, read the same way.

:func:`model_world` builds a :class:`emitter.world.World` from a harness :class:`ClusterSpec`
(NameServers by name, each broker with its cluster, NameServers, ``autoCreateTopicEnable`` and
``defaultTopicQueueNums``), and :func:`model_routes` reads a topic's route from each of the
model's NameServers as :class:`routewatch.remoting.QueueData`, as :meth:`RocketMQCluster.routes`
reads the real ones — so a test states one expectation and holds both to it.
"""

from __future__ import annotations

from emitter.versions import ROCKETMQ_4, line_of
from emitter.world import World
from routewatch.events import Send
from routewatch.remoting import QueueData
from routewatch.testing.rocketmq import ClusterSpec

__all__ = ["model_routes", "model_sends", "model_world"]


def model_world(spec: ClusterSpec, seed: int = 0, release: tuple[int, ...] = ROCKETMQ_4) -> World:
    """The model of ``spec`` under the behaviour of ``release``'s line (a real cluster's
    ``cluster.release``): its NameServers (addressed by their names) and brokers, started."""
    world = World(seed, version=line_of(release))
    five = release[0] >= 5  # the two 5.x settings below; a 4.9 process ignores them
    for name in spec.namesrvs:
        props = spec.namesrv_properties.get(name, {})
        deleting = five and props.get("deleteTopicWithBrokerRegistration") == "true"
        world.add_namesrv(name, delete_topic_with_registration=deleting)
    for b in spec.brokers:
        split = five and b.properties.get("enableSplitRegistration") == "true"
        world.add_broker(
            b.name,
            cluster=b.cluster,
            broker_id=b.broker_id,
            auto_create=b.auto_create_topic,
            namesrvs=b.namesrvs,
            default_topic_queue_nums=b.default_topic_queue_nums,
            # (5.x's default size, 800, when only the switch is set)
            split_size=int(b.properties.get("splitRegistrationSize", "800")) if split else None,
        )
    return world


def model_routes(world: World, topic: str) -> dict[str, tuple[QueueData, ...] | None]:
    """The route of ``topic`` on each of the model's NameServers, by NameServer name."""
    out: dict[str, tuple[QueueData, ...] | None] = {}
    for name, ns in world.namesrvs.items():
        route = ns.route(topic)
        out[name] = (
            None
            if route is None
            else tuple(
                QueueData(q.broker, q.read_queue_nums, q.write_queue_nums, q.perm) for q in route
            )
        )
    return out


def model_sends(world: World, topic: str) -> list[Send]:
    """Every send attempt the model's producers made to ``topic``, in order."""
    return [e for e in world.events if isinstance(e, Send) and e.topic == topic]
