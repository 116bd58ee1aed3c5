package io.routewatch.hook;

import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.apache.rocketmq.common.protocol.header.SendMessageRequestHeaderV2;
import org.apache.rocketmq.common.protocol.header.namesrv.GetRouteInfoRequestHeader;
import org.apache.rocketmq.common.protocol.route.BrokerData;
import org.apache.rocketmq.common.protocol.route.QueueData;
import org.apache.rocketmq.common.protocol.route.TopicRouteData;
import org.apache.rocketmq.remoting.exception.RemotingTimeoutException;
import org.apache.rocketmq.remoting.protocol.RemotingCommand;

/**
 * Drives the hook library without a cluster, with the requests and responses RocketMQ's client
 * would hand its RPCHook, for tests/emitter/hook/test_hook_library.py:
 *   HookProbe flood SPOOL COUNT CAPACITY   COUNT answered sends into a queue of CAPACITY
 *   HookProbe timeout SPOOL               a send of a new topic: its template pull, then a send
 *                                         request that never gets an answer and times out
 * Prints one JSON object: the counters after a flush, and how long the hook took.
 */
public final class HookProbe {
    static final String NAMESRV = "127.0.0.1:9876";
    static final String BROKER_ADDR = "127.0.0.1:10911";

    public static void main(String[] args) throws Exception {
        RoutewatchConfig config = new RoutewatchConfig("ProbeCluster", Paths.get(args[1]));
        if (args[0].equals("flood")) {
            config = config.withQueueCapacity(Integer.parseInt(args[3])).withRoll(100_000, 60_000);
        }
        RoutewatchProducer producer = new RoutewatchProducer("probe-group", config);
        RoutewatchHook hook = producer.routewatchHook();
        long elapsed;
        if (args[0].equals("flood")) {
            int count = Integer.parseInt(args[2]);
            long start = System.nanoTime();
            for (int i = 0; i < count; i++) {
                RemotingCommand request = send("Flood", i % 4);
                hook.doBeforeRequest(BROKER_ADDR, request);
                hook.doAfterResponse(BROKER_ADDR, request, ok(request));
            }
            elapsed = System.nanoTime() - start;
        } else {
            long start = System.nanoTime();
            RoutewatchHook.SendContext context = hook.beginSend("Fresh");
            RemotingCommand own = pull("Fresh");
            hook.doBeforeRequest(null, own);
            hook.doAfterResponse(NAMESRV, own, RemotingCommand.createResponseCommand(17, "No topic route info"));
            RemotingCommand template = pull("TBW102");
            hook.doBeforeRequest(null, template);
            RemotingCommand routed = RemotingCommand.createResponseCommand(0, null);
            routed.setBody(route().encode());
            hook.doAfterResponse(NAMESRV, template, routed);
            hook.doBeforeRequest(BROKER_ADDR, send("Fresh", 2));  // no answer comes
            hook.endSend(context, new RemotingTimeoutException("wait response on the channel timeout"));
            elapsed = System.nanoTime() - start;
        }
        hook.writer().flush(10_000);
        Map<String, Object> out = new HashMap<>(hook.stats());
        StringBuilder line = new StringBuilder("{\"elapsedMs\":").append(elapsed / 1_000_000);
        for (Map.Entry<String, Object> e : out.entrySet()) {
            line.append(",\"").append(e.getKey()).append("\":").append(e.getValue());
        }
        System.out.println(line.append('}'));
        System.exit(0);
    }

    static RemotingCommand pull(String topic) {
        GetRouteInfoRequestHeader header = new GetRouteInfoRequestHeader();
        header.setTopic(topic);
        return RemotingCommand.createRequestCommand(105, header);
    }

    static RemotingCommand send(String topic, int queueId) {
        SendMessageRequestHeaderV2 header = new SendMessageRequestHeaderV2();
        header.setA("probe-group");
        header.setB(topic);
        header.setC("TBW102");
        header.setD(4);
        header.setE(queueId);
        header.setF(0);
        header.setG(System.currentTimeMillis());
        header.setH(0);
        return RemotingCommand.createRequestCommand(310, header);
    }

    static RemotingCommand ok(RemotingCommand request) {
        RemotingCommand response = RemotingCommand.createResponseCommand(0, null);
        response.setOpaque(request.getOpaque());
        response.addExtField("queueId", String.valueOf(((SendMessageRequestHeaderV2) request.readCustomHeader()).getE()));
        return response;
    }

    static TopicRouteData route() {
        TopicRouteData route = new TopicRouteData();
        List<QueueData> queues = new ArrayList<>();
        List<BrokerData> brokers = new ArrayList<>();
        for (String name : new String[] {"broker-a", "broker-b"}) {
            QueueData q = new QueueData();
            q.setBrokerName(name);
            q.setReadQueueNums(8);
            q.setWriteQueueNums(8);
            q.setPerm(7);
            queues.add(q);
            HashMap<Long, String> addrs = new HashMap<>();
            addrs.put(0L, name.equals("broker-a") ? BROKER_ADDR : "127.0.0.1:10921");
            brokers.add(new BrokerData("ProbeCluster", name, addrs));
        }
        route.setQueueDatas(queues);
        route.setBrokerDatas(brokers);
        return route;
    }
}
