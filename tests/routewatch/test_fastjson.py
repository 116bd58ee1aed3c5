"""The reader of fastjson's JSON (``routewatch/fastjson.py``), on text from the real
NameServer and ``mqadmin`` of RocketMQ 4.9.8, captured on this machine (1 NameServer; broker-a with
a slave, broker-b; topic ``2024`` made with ``updateTopic -c`` at 4 queues, then on broker-b with
8 read and 2 write queues)."""

from __future__ import annotations

import json

import pytest

from routewatch import fastjson
from routewatch.remoting import BrokerData, QueueData, parse_cluster_info, parse_topic_route

# GET_ROUTEINFO_BY_TOPIC answered to a client older than 4.9.4: fastjson's own notation.
ROUTE_LEGACY = (
    '{"brokerDatas":[{"brokerAddrs":{0:"127.0.0.1:37729"},"brokerName":"broker-b","cl'
    'uster":"DefaultCluster"},{"brokerAddrs":{0:"127.0.0.1:47105",1:"127.0.0.1:42013"'
    '},"brokerName":"broker-a","cluster":"DefaultCluster"}],"filterServerTable":{},"q'
    'ueueDatas":[{"brokerName":"broker-b","perm":6,"readQueueNums":8,"topicSysFlag":0'
    ',"writeQueueNums":2},{"brokerName":"broker-a","perm":6,"readQueueNums":4,"topicS'
    'ysFlag":0,"writeQueueNums":4}]}'
)
# The same request from a 4.9.8 client: standard JSON (the integer keys quoted).
ROUTE_STANDARD = (
    '{"brokerDatas":[{"brokerAddrs":{"0":"127.0.0.1:37729"},"brokerName":"broker-b","'
    'cluster":"DefaultCluster"},{"brokerAddrs":{"0":"127.0.0.1:47105","1":"127.0.0.1:'
    '42013"},"brokerName":"broker-a","cluster":"DefaultCluster"}],"filterServerTable"'
    ':{},"queueDatas":[{"brokerName":"broker-b","perm":6,"readQueueNums":8,"topicSysF'
    'lag":0,"writeQueueNums":2},{"brokerName":"broker-a","perm":6,"readQueueNums":4,"'
    'topicSysFlag":0,"writeQueueNums":4}]}'
)
# GET_BROKER_CLUSTER_INFO, which 4.9.8 answers in fastjson's notation to every client.
CLUSTER_INFO = (
    '{"brokerAddrTable":{"broker-b":{"brokerAddrs":{0:"127.0.0.1:37729"},"brokerName"'
    ':"broker-b","cluster":"DefaultCluster"},"broker-a":{"brokerAddrs":{0:"127.0.0.1:'
    '47105",1:"127.0.0.1:42013"},"brokerName":"broker-a","cluster":"DefaultCluster"}}'
    ',"clusterAddrTable":{"DefaultCluster":["broker-b","broker-a"]}}'
)
# `mqadmin topicRoute -t 2024`: fastjson's pretty printing, tabs and bare keys.
MQADMIN_TOPIC_ROUTE = (
    "{\n"
    '\t"brokerDatas":[\n'
    "\t\t{\n"
    '\t\t\t"brokerAddrs":{0:"127.0.0.1:37729"\n'
    "\t\t\t},\n"
    '\t\t\t"brokerName":"broker-b",\n'
    '\t\t\t"cluster":"DefaultCluster"\n'
    "\t\t},\n"
    "\t\t{\n"
    '\t\t\t"brokerAddrs":{0:"127.0.0.1:47105",1:"127.0.0.1:42013"\n'
    "\t\t\t},\n"
    '\t\t\t"brokerName":"broker-a",\n'
    '\t\t\t"cluster":"DefaultCluster"\n'
    "\t\t}\n"
    "\t],\n"
    '\t"filterServerTable":{},\n'
    '\t"queueDatas":[\n'
    "\t\t{\n"
    '\t\t\t"brokerName":"broker-b",\n'
    '\t\t\t"perm":6,\n'
    '\t\t\t"readQueueNums":8,\n'
    '\t\t\t"topicSysFlag":0,\n'
    '\t\t\t"writeQueueNums":2\n'
    "\t\t},\n"
    "\t\t{\n"
    '\t\t\t"brokerName":"broker-a",\n'
    '\t\t\t"perm":6,\n'
    '\t\t\t"readQueueNums":4,\n'
    '\t\t\t"topicSysFlag":0,\n'
    '\t\t\t"writeQueueNums":4\n'
    "\t\t}\n"
    "\t]\n"
    "}\n"
)


def test_bare_integer_keys_are_read_as_integers() -> None:
    assert fastjson.loads('{0:"127.0.0.1:21911",1:"127.0.0.1:21921"}') == {
        0: "127.0.0.1:21911",
        1: "127.0.0.1:21921",
    }
    assert fastjson.loads("{ -1 :2, 10:{}}") == {-1: 2, 10: {}}


def test_standard_json_reads_as_json_does() -> None:
    text = '{"a":[1,-2.5e3,true,false,null,"x\\u00e9\\n"],"b":{},"c":[]}'
    assert fastjson.loads(text) == json.loads(text)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # Text that looks like a bare key inside a string stays as it is: the reader works on
        # tokens, it does not rewrite the text (a topic may be named 2024, an address has ':').
        ('{"topic":"0","x":"{0:\\"a\\"}"}', {"topic": "0", "x": '{0:"a"}'}),
        ('{"2024":{0:"127.0.0.1:1"},"k":"2024:"}', {"2024": {0: "127.0.0.1:1"}, "k": "2024:"}),
        ('["0:1", {1:"{2:3}"}]', ["0:1", {1: "{2:3}"}]),
    ],
)
def test_keys_are_read_as_tokens_not_patterns(text: str, expected: object) -> None:
    assert fastjson.loads(text) == expected


@pytest.mark.parametrize(
    "text",
    ["{a:1}", "{1.5:1}", '{"a":1,}', '{"a" 1}', "[1,]", "{0:1} x", '"\\x41"', "", "01", "{01:1}"],
)
def test_anything_else_is_refused_with_its_offset(text: str) -> None:
    with pytest.raises(fastjson.FastjsonError, match="at offset"):
        fastjson.loads(text)


def test_route_in_fastjson_notation_from_the_namesrv() -> None:
    route = parse_topic_route(ROUTE_LEGACY)
    assert route.queues == (
        QueueData("broker-a", read_queue_nums=4, write_queue_nums=4, perm=6),
        QueueData("broker-b", read_queue_nums=8, write_queue_nums=2, perm=6),
    )
    assert route.brokers == (
        BrokerData("DefaultCluster", "broker-a", {0: "127.0.0.1:47105", 1: "127.0.0.1:42013"}),
        BrokerData("DefaultCluster", "broker-b", {0: "127.0.0.1:37729"}),
    )
    assert route.broker_names == {"broker-a", "broker-b"}
    assert route.queue("broker-b") == route.queues[1]
    assert route.queue("broker-c") is None


def test_the_three_notations_of_one_route_agree() -> None:
    legacy = parse_topic_route(ROUTE_LEGACY)
    assert parse_topic_route(ROUTE_STANDARD) == legacy
    assert parse_topic_route(MQADMIN_TOPIC_ROUTE) == legacy
    with pytest.raises(json.JSONDecodeError):
        json.loads(ROUTE_LEGACY)  # why the reader exists


def test_cluster_info_from_the_namesrv() -> None:
    info = parse_cluster_info(CLUSTER_INFO)
    assert info.clusters == {"DefaultCluster": frozenset({"broker-a", "broker-b"})}
    assert info.addr("broker-a") == "127.0.0.1:47105"
    assert info.addr("broker-a", 1) == "127.0.0.1:42013"
    assert info.addr("broker-b", 1) is None
    assert info.addr("broker-c") is None
