"""What each NameServer routes to a master (``emitter/collect/routes.py``): the questions asked
each round and the view they give, against the emitter's model of a NameServer (registration,
``wipeWritePerm``, ``addWritePerm``, a topic deleted on the broker only)."""

from __future__ import annotations

from emitter.collect.routes import AS_REGISTERED, UNKNOWN, WRITE_ADDED, WRITE_WIPED, RouteViews
from emitter.namesrv import NameServer
from emitter.sim import Simulation
from routewatch.events import Heartbeat, TopicConfig
from routewatch.remoting import BrokerData, DataVersion, QueueData, TopicRoute

NS = "127.0.0.1:9876"
ADDR = "127.0.0.1:10911"
RW, RWI, R = 6, 7, 4
V1, V2 = DataVersion(1000, 1), DataVersion(2000, 2)


def cfg(q: int, perm: int = RW) -> TopicConfig:
    return TopicConfig(read_queue_nums=q, write_queue_nums=q, perm=perm)


T1 = {"broker-a": cfg(1, RWI), "TBW102": cfg(8, RWI), "Orders": cfg(8), "Audit": cfg(4, R)}


class Cluster:
    """One model NameServer and the route questions asked of it."""

    def __init__(self) -> None:
        self.ns = NameServer(Simulation(0, lambda e: None), NS)
        self.views = RouteViews()
        self.asked: list[set[str]] = []
        self.seq = 0

    def register(self, version: DataVersion, table: dict[str, TopicConfig]) -> None:
        self.seq += 1
        self.ns.register(
            Heartbeat(
                ts=self.seq,
                cluster="C",
                event_id=str(self.seq),
                seq=self.seq,
                broker="broker-a",
                broker_addr=ADDR,
                broker_id=0,
                namesrv=NS,
                auto_create_topic_enable=True,
                default_topic_queue_nums=8,
                full=True,
                topics=dict(table),
                data_version=str(version),
            )
        )

    def route(self, topic: str) -> TopicRoute | None:
        queues = self.ns.route(topic)
        if queues is None:
            return None
        return TopicRoute(
            queues=tuple(
                QueueData(q.broker, q.read_queue_nums, q.write_queue_nums, q.perm) for q in queues
            ),
            brokers=(BrokerData("C", "broker-a", {0: ADDR}),),
        )

    def round(
        self,
        version: DataVersion,
        table: dict[str, TopicConfig],
        own: dict[str, TopicConfig] | None = None,
        *,
        seen: bool = True,
        now: int = 0,
        elsewhere: set[str] = frozenset(),  # type: ignore[assignment]
    ) -> tuple[dict[str, TopicConfig], tuple[str, ...], str, bool]:
        """One round as the collector makes it: questions in passes, then the view."""
        own = table if own is None else own
        bases = {"broker-a": (ADDR, version, table, seen)}
        self.views.start_round()
        asked: set[str] = set()
        for _ in range(3):
            listed = frozenset(self.ns.queues)
            questions = self.views.questions(
                NS, bases, listed, set(own) | elsewhere, now, lambda name: set(elsewhere)
            )
            if not questions:
                break
            asked |= questions
            self.views.answers(NS, bases, {t: self.route(t) for t in questions})
        self.asked.append(asked)
        view = self.views.view(NS, "broker-a", table, own, str(version), seen=seen)
        return view.topics, view.not_held, view.transform, view.complete


def test_a_route_as_registered_costs_one_question_and_is_the_table() -> None:
    c = Cluster()
    c.register(V1, T1)
    topics, not_held, transform, complete = c.round(V1, T1)
    assert (topics, not_held, transform, complete) == (T1, (), AS_REGISTERED, True)
    assert c.asked == [{"broker-a", "TBW102"}]  # the sentinel and TBW102 only


def test_a_template_stripped_in_memory_is_written_as_routed() -> None:
    """A refused send strips TBW102's inherit bit in the broker's memory, under the same data
    version: a collector whose first read of that version comes after it still writes what the
    NameServer applied (TBW102's route is asked each round)."""
    c = Cluster()
    c.register(V1, T1)
    stripped = {**T1, "TBW102": cfg(8, RW)}
    topics, not_held, _, _ = c.round(V1, stripped)
    assert topics == T1 == c.ns.routed("broker-a") and not_held == ()


def test_a_wiped_write_permission_is_seen_from_the_sentinel_alone() -> None:
    c = Cluster()
    c.register(V1, T1)
    c.round(V1, T1)
    c.ns.wipe_write_perm("broker-a")
    topics, _, transform, _ = c.round(V1, T1)
    assert transform == WRITE_WIPED and c.asked[-1] == {"broker-a", "TBW102"}
    assert topics == {t: cfg(x.read_queue_nums, x.perm & ~2) for t, x in T1.items()}
    assert topics == c.ns.routed("broker-a")  # what the NameServer really routes


def test_an_added_write_permission_sets_every_topic_read_write() -> None:
    c = Cluster()
    c.register(V1, T1)
    c.ns.wipe_write_perm("broker-a")
    c.round(V1, T1)
    c.ns.add_write_perm("broker-a")
    topics, _, transform, _ = c.round(V1, T1)
    assert transform == WRITE_ADDED
    # the inherit bit gone, and the read-only Audit made writable, as RocketMQ does
    assert topics["TBW102"] == cfg(8, RW) and topics["Audit"] == cfg(4, RW)
    assert topics == c.ns.routed("broker-a")


def test_a_changed_table_registered_again_undoes_a_wipe() -> None:
    c = Cluster()
    c.register(V1, T1)
    c.ns.wipe_write_perm("broker-a")
    c.round(V1, T1)
    t2 = {**T1, "New": cfg(4)}
    c.register(V2, t2)
    topics, _, transform, _ = c.round(V2, t2)
    assert (topics, transform) == (t2, AS_REGISTERED)


def test_a_topic_the_broker_dropped_stays_routed_and_is_found_once() -> None:
    c = Cluster()
    c.register(V1, T1)
    c.round(V1, T1)
    t2 = {t: x for t, x in T1.items() if t != "Orders"}  # deleted on the broker only
    c.register(V2, t2)
    topics, not_held, _, _ = c.round(V2, t2)
    assert "Orders" in c.asked[-1]
    assert topics == {**t2, "Orders": cfg(8)} == c.ns.routed("broker-a")
    assert not_held == ("Orders",)
    # asked again each round while it differs, and gone once the NameServer drops it
    c.round(V2, t2)
    assert c.asked[-1] == {"broker-a", "TBW102", "Orders"}
    c.ns.delete_topic("Orders")
    topics, not_held, _, _ = c.round(V2, t2)
    assert topics == t2 and not_held == ()
    c.round(V2, t2)
    assert c.asked[-1] == {"broker-a", "TBW102"}


def test_a_topic_routed_that_no_broker_holds_is_found_at_the_first_look() -> None:
    c = Cluster()
    c.register(V1, T1)
    own = {t: x for t, x in T1.items() if t != "Orders"}  # deleted before the collector started
    topics, not_held, _, _ = c.round(V1, own, own)
    assert "Orders" in c.asked[-1] and not_held == ("Orders",)
    assert topics == c.ns.routed("broker-a")


def test_a_topic_other_brokers_hold_is_asked_at_the_first_look_only() -> None:
    c = Cluster()
    c.register(V1, T1)
    # deleted on broker-a before the collector started, while another master still holds it
    own = {t: x for t, x in T1.items() if t != "Orders"}
    topics, not_held, _, _ = c.round(V1, own, own, elsewhere={"Orders", "OnlyElsewhere"})
    assert c.asked[-1] == {"broker-a", "TBW102", "Orders", "OnlyElsewhere"}
    assert not_held == ("Orders",) and topics == c.ns.routed("broker-a")
    c.round(V1, own, own, elsewhere={"Orders", "OnlyElsewhere"})
    assert c.asked[-1] == {"broker-a", "TBW102", "Orders"}  # the stale route again


def test_a_route_that_fits_no_transform_is_asked_topic_by_topic_once() -> None:
    c = Cluster()
    c.register(V1, T1)
    c.round(V1, T1)
    # the NameServer holds other counts than the table says, for the sentinel and Orders
    c.ns.queues["broker-a"]["broker-a"] = cfg(2, RWI)
    c.ns.queues["Orders"]["broker-a"] = cfg(4)
    topics, _, transform, _ = c.round(V1, T1)
    assert transform == UNKNOWN and c.asked[-1] == set(T1)
    assert topics == c.ns.routed("broker-a")
    c.round(V1, T1)
    assert c.asked[-1] == {"broker-a", "TBW102", "Orders"}  # the differences only, from then on


def test_a_namesrv_holding_a_table_never_seen_is_asked_topic_by_topic_after_35_s() -> None:
    c = Cluster()
    c.register(V1, T1)
    newest = {**T1, "Later": cfg(4)}  # the broker's table now; the NameServer still has V1's
    # most often a race its next registration ends: nothing asked topic by topic, no view yet
    *_, complete = c.round(V1, newest, newest, seen=False, now=0)
    assert not complete and c.asked[-1] == {"broker-a", "TBW102"}
    *_, complete = c.round(V1, newest, newest, seen=False, now=34_999)
    assert not complete
    topics, not_held, _, complete = c.round(V1, newest, newest, seen=False, now=35_000)
    assert complete and c.asked[-1] >= set(newest)
    assert topics == c.ns.routed("broker-a") and not_held == ()
