"""Which topics look auto-created from the broker side (``emitter/inference.py``): the
signature, and what an observer that starts at its first look finds, on literal tables."""

from __future__ import annotations

import pytest

from emitter.inference import AutoCreateInference, MasterTable, looks_auto_created
from routewatch.events import InferredAutoCreation, TopicConfig

TBW102 = TopicConfig(read_queue_nums=8, write_queue_nums=8, perm=7)


def cfg(read: int, write: int | None = None, perm: int = 6) -> TopicConfig:
    return TopicConfig(
        read_queue_nums=read, write_queue_nums=read if write is None else write, perm=perm
    )


def table(auto: bool = True, **topics: TopicConfig) -> MasterTable:
    return MasterTable(auto, {"TBW102": TBW102, **topics})


@pytest.mark.parametrize(
    ("config", "auto", "looks"),
    [
        (cfg(4), True, True),  # a producer's fallback: min(4, 8) queues, perm 7 without inherit
        (cfg(8), True, True),  # min(client default 16, 8)
        (cfg(1), True, True),
        (cfg(16), True, False),  # more queues than any template
        (cfg(4, 8), True, False),  # read and write queues differ
        (cfg(4, perm=7), True, False),  # the inherit bit is never inherited
        (cfg(4, perm=4), True, False),  # not the template's perm
        (cfg(4), False, False),  # auto-creation off on that broker
    ],
)
def test_the_signature_of_an_auto_created_topic(
    config: TopicConfig, auto: bool, looks: bool
) -> None:
    assert looks_auto_created("T", table(auto, T=config)) is looks


def test_any_template_with_the_inherit_bit_counts() -> None:
    # the cluster's own topic (16 queues, perm 7) is a template too; a read-only one gives perm 4
    cluster_topic = TopicConfig(read_queue_nums=16, write_queue_nums=16, perm=7)
    read_only = TopicConfig(read_queue_nums=8, write_queue_nums=8, perm=5)
    assert looks_auto_created("T", MasterTable(True, {"C": cluster_topic, "T": cfg(16)}))
    assert looks_auto_created("T", MasterTable(True, {"R": read_only, "T": cfg(4, perm=4)}))
    assert not looks_auto_created("T", MasterTable(True, {"T": cfg(4)}))  # no template at all


def test_a_topic_that_appears_after_the_first_look_is_found_while_watching() -> None:
    inf = AutoCreateInference()
    inf.look(1_000, "C", {"a": table(), "b": table()})
    inf.look(2_000, "C", {"a": table(T=cfg(4)), "b": table(U=cfg(4, 8))})
    assert inf.found("C", "a") == {
        "T": InferredAutoCreation(found="while_watching", first_seen=2_000)
    }
    assert inf.found("C", "b") == {}  # U does not look auto-created
    # seen again: nothing changes, its first sight stays
    inf.look(3_000, "C", {"a": table(T=cfg(4)), "b": table()})
    assert inf.found("C", "a")["T"].first_seen == 2_000


def test_a_topic_there_at_the_first_look_is_found_at_start_only_on_a_strict_subset() -> None:
    inf = AutoCreateInference()
    inf.look(
        1_000,
        "C",
        {
            "a": table(OnA=cfg(4), OnAB=cfg(8), Everywhere=cfg(8), Other=cfg(8, 4)),
            "b": table(OnAB=cfg(8), Everywhere=cfg(8), SCHEDULE_TOPIC_XXXX=cfg(4)),
            "c": table(Everywhere=cfg(8)),
        },
    )
    at_start = InferredAutoCreation(found="at_start", first_seen=1_000)
    assert inf.found("C", "a") == {"OnA": at_start, "OnAB": at_start}
    # on every master (Everywhere), another config (Other), a system topic: not found
    assert inf.found("C", "b") == {"OnAB": at_start}
    assert inf.found("C", "c") == {}


def test_a_topic_on_a_subset_with_another_config_on_one_holder_is_not_found_at_start() -> None:
    inf = AutoCreateInference()
    inf.look(1_000, "C", {"a": table(T=cfg(4)), "b": table(T=cfg(4, 8)), "c": table()})
    assert inf.found("C", "a") == inf.found("C", "b") == {}


def test_the_first_look_waits_for_every_listed_masters_table() -> None:
    inf = AutoCreateInference()
    inf.look(1_000, "C", {"a": table(T=cfg(4)), "b": None})  # b's table not read yet
    assert inf.found("C", "a") == {}
    inf.look(2_000, "C", {"a": table(T=cfg(4)), "b": table()})
    assert inf.found("C", "a") == {"T": InferredAutoCreation(found="at_start", first_seen=2_000)}


def test_a_topic_that_leaves_the_table_is_forgotten_and_judged_again_when_it_returns() -> None:
    inf = AutoCreateInference()
    inf.look(1_000, "C", {"a": table(), "b": table()})
    inf.look(2_000, "C", {"a": table(T=cfg(4)), "b": table()})
    inf.look(3_000, "C", {"a": table(), "b": table()})
    assert inf.found("C", "a") == {}
    inf.look(4_000, "C", {"a": table(T=cfg(4)), "b": table()})
    assert inf.found("C", "a")["T"].first_seen == 4_000


def test_only_the_masters_named_changed_are_judged_again() -> None:
    inf = AutoCreateInference()
    inf.look(1_000, "C", {"a": table(), "b": table(), "c": table()})
    inf.look(2_000, "C", {"a": table(T=cfg(4)), "b": table(T=cfg(4)), "c": table()}, {"a"})
    assert set(inf.found("C", "a")) == {"T"} and inf.found("C", "b") == {}


def test_a_topic_that_appears_on_every_master_at_once_is_not_taken_for_auto_created() -> None:
    # updateTopic -c: every master at once (a producer's auto-creation starts on some)
    inf = AutoCreateInference()
    inf.look(1_000, "C", {"a": table(), "b": table()})
    inf.look(2_000, "C", {"a": table(T=cfg(8)), "b": table(T=cfg(8))})
    assert inf.found("C", "a") == inf.found("C", "b") == {}
    # one that reaches the other master later was on a subset first: found where it was
    inf.look(3_000, "C", {"a": table(T=cfg(8), U=cfg(4)), "b": table(T=cfg(8))})
    inf.look(4_000, "C", {"a": table(T=cfg(8), U=cfg(4)), "b": table(T=cfg(8), U=cfg(4))})
    assert inf.found("C", "a")["U"].first_seen == 3_000
    assert "U" not in inf.found("C", "b")
