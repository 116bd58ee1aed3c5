package io.routewatch.hook;

import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.rocketmq.client.exception.MQBrokerException;
import org.apache.rocketmq.client.exception.MQClientException;
import org.apache.rocketmq.client.impl.factory.MQClientInstance;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.common.message.MessageQueue;
import org.apache.rocketmq.remoting.CommandCustomHeader;
import org.apache.rocketmq.remoting.RPCHook;
import org.apache.rocketmq.remoting.exception.RemotingConnectException;
import org.apache.rocketmq.remoting.exception.RemotingTimeoutException;
import org.apache.rocketmq.remoting.exception.RemotingTooMuchRequestException;
import org.apache.rocketmq.remoting.protocol.RemotingCommand;

/**
 * The client's {@link RPCHook}: it sees every request that reaches the wire and its response, and
 * turns route queries ({@code GET_ROUTEINFO_BY_TOPIC}, 105) into {@code route_pull} events and
 * sends ({@code SEND_MESSAGE} 10, {@code SEND_MESSAGE_V2} 310, {@code SEND_BATCH_MESSAGE} 320)
 * into {@code send} events of routewatch's contract, version 1 (docs/contract.md).
 *
 * <p>It cannot see what fails before a request leaves the client ("No route info of this topic",
 * "No name server address" after "connect to null failed"), nor which topic a pull of the
 * template topic is for: {@link RoutewatchProducer} tells it, around each send. Another hook of
 * the application's (e.g. ACL's) is called first, unchanged. Nothing here throws into the client.
 */
public final class RoutewatchHook implements RPCHook {
    static final int GET_ROUTEINFO_BY_TOPIC = 105;
    static final int SEND_MESSAGE = 10;
    static final int SEND_MESSAGE_V2 = 310;
    static final int SEND_BATCH_MESSAGE = 320;
    static final int TOPIC_NOT_EXIST = 17;
    static final String TBW102 = "TBW102";
    static final int MAX_PENDING = 4096;

    private final RoutewatchConfig config;
    private final RPCHook delegate;
    private final SpoolWriter writer;
    private final String run = UUID.randomUUID().toString().replace("-", "").substring(0, 8);
    private final ThreadLocal<SendContext> context = new ThreadLocal<>();
    private final Map<String, String> brokerByAddr = new ConcurrentHashMap<>();
    private final Map<Integer, Request> pending = Collections.synchronizedMap(
        new LinkedHashMap<Integer, Request>(64, 0.75f, false) {
            @Override
            protected boolean removeEldestEntry(Map.Entry<Integer, Request> eldest) {
                return size() > MAX_PENDING;  // requests never answered (timeouts, async)
            }
        });
    // Asynchronous sends whose response the hook itself saw (5.x calls hooks after asynchronous
    // responses, 4.9 does not): the broker's message id of each delivered, "topic refused by
    // address" of each refused; their callbacks then emit nothing.
    private final Set<String> seenAsync = Collections.newSetFromMap(Collections.synchronizedMap(
        new LinkedHashMap<String, Boolean>(64, 0.75f, false) {
            @Override
            protected boolean removeEldestEntry(Map.Entry<String, Boolean> eldest) {
                return size() > MAX_PENDING;
            }
        }));
    private final AtomicLong unrepresentable = new AtomicLong();
    private final AtomicLong internalErrors = new AtomicLong();
    private volatile DefaultMQProducer producer;
    private volatile String clientId;
    private long seq;
    private static final String OPENING = "{\"v\":1,\"type\":\"";
    private long lastTs;

    public RoutewatchHook(RoutewatchConfig config, RPCHook delegate) {
        this.config = config;
        this.delegate = delegate;
        this.writer = new SpoolWriter(config);
    }

    /** The producer whose settings (client id, group, createTopicKey, ...) the events carry. */
    void bind(DefaultMQProducer producer) {
        this.producer = producer;
    }

    public SpoolWriter writer() {
        return writer;
    }

    /** The writer's counters, plus responses the contract has no name for and the hook's own errors. */
    public Map<String, Long> stats() {
        Map<String, Long> stats = writer.stats();
        stats.put("unrepresentable", unrepresentable.get());
        stats.put("internalErrors", internalErrors.get());
        return stats;
    }

    @Override
    public void doBeforeRequest(String remoteAddr, RemotingCommand request) {
        if (delegate != null) {
            delegate.doBeforeRequest(remoteAddr, request);
        }
        try {
            observeRequest(remoteAddr, request);
        } catch (RuntimeException | LinkageError e) {
            internalErrors.incrementAndGet();
        }
    }

    @Override
    public void doAfterResponse(String remoteAddr, RemotingCommand request, RemotingCommand response) {
        if (delegate != null) {
            delegate.doAfterResponse(remoteAddr, request, response);
        }
        try {
            observeResponse(remoteAddr, request, response);
        } catch (RuntimeException | LinkageError e) {
            internalErrors.incrementAndGet();
        }
    }

    // --- what a request was, until its response ---

    static final class Request {
        final boolean pull;
        final String topic;          // the topic wanted (for a template pull, not the template)
        final boolean viaDefault;
        final String addr;           // a send's broker address (null for a NameServer)
        final String group;
        final String defaultTopic;
        final Integer defaultTopicQueueNums;
        final Integer queueId;
        int opaque;
        boolean outsideSend;         // sent with no send of the wrapper's on the thread (async)
        volatile boolean answered;

        Request(boolean pull, String topic, boolean viaDefault, String addr, String group,
                String defaultTopic, Integer defaultTopicQueueNums, Integer queueId) {
            this.pull = pull;
            this.topic = topic;
            this.viaDefault = viaDefault;
            this.addr = addr;
            this.group = group;
            this.defaultTopic = defaultTopic;
            this.defaultTopicQueueNums = defaultTopicQueueNums;
            this.queueId = queueId;
        }
    }

    /** One send of the application's, from its start to its outcome, on its own thread. */
    static final class SendContext {
        final String topic;
        final List<Request> requests = new ArrayList<>();

        SendContext(String topic) {
            this.topic = topic;
        }
    }

    private void observeRequest(String addr, RemotingCommand request) {
        int code = request.getCode();
        if (code == GET_ROUTEINFO_BY_TOPIC) {
            CommandCustomHeader header = request.readCustomHeader();
            String topic = "GetRouteInfoRequestHeader".equals(Wire.kind(header))
                ? Wire.string(header, "getTopic")
                : ext(request, "topic");
            if (topic == null) {
                return;
            }
            SendContext send = context.get();
            boolean viaDefault = send != null && !topic.equals(send.topic)
                && (topic.equals(createTopicKey()) || topic.equals(TBW102));
            // Inside a send, a pull of another topic is the client's fallback for the topic it
            // sends to (DefaultMQProducerImpl.tryToFindTopicPublishInfo): of its createTopicKey
            // on 4.x, of TBW102 whatever the key from 5.1.1 (MQClientAPIImpl
            // .getDefaultTopicRouteInfoFromNameServer, apache/rocketmq#6452).
            track(request, send, new Request(true, viaDefault ? send.topic : topic, viaDefault, null,
                null, null, null, null));
        } else if (code == SEND_MESSAGE || code == SEND_MESSAGE_V2 || code == SEND_BATCH_MESSAGE) {
            if (request.isOnewayRPC()) {
                return;  // no response will come: its outcome is unknown
            }
            CommandCustomHeader header = request.readCustomHeader();
            Request send;
            String kind = Wire.kind(header);
            if (kind.equals("SendMessageRequestHeaderV2")) {  // its fields are one letter long
                send = new Request(false, Wire.string(header, "getB"), false, addr,
                    Wire.string(header, "getA"), Wire.string(header, "getC"),
                    Wire.integer(header, "getD"), Wire.integer(header, "getE"));
            } else if (kind.equals("SendMessageRequestHeader")) {
                send = new Request(false, Wire.string(header, "getTopic"), false, addr,
                    Wire.string(header, "getProducerGroup"), Wire.string(header, "getDefaultTopic"),
                    Wire.integer(header, "getDefaultTopicQueueNums"), Wire.integer(header, "getQueueId"));
            } else {
                return;
            }
            track(request, context.get(), send);
        }
    }

    private void track(RemotingCommand request, SendContext send, Request r) {
        r.opaque = request.getOpaque();
        r.outsideSend = send == null;
        pending.put(r.opaque, r);
        if (send != null) {
            send.requests.add(r);
        }
    }

    private void observeResponse(String addr, RemotingCommand request, RemotingCommand response) {
        Request r = pending.remove(request.getOpaque());
        if (r == null || response == null) {
            return;
        }
        r.answered = true;
        if (r.pull) {
            pulled(r, addr, response);
        } else {
            sent(r, addr, response);
        }
    }

    private void pulled(Request r, String namesrv, RemotingCommand response) {
        String result;
        List<Wire.Queues> queues = Collections.emptyList();
        if (response.getCode() == 0) {
            Wire.Route route = Wire.route(response.getBody());
            for (Wire.Broker broker : route.getBrokerDatas()) {
                for (String brokerAddr : broker.getBrokerAddrs().values()) {
                    brokerByAddr.put(brokerAddr, broker.getBrokerName());
                }
            }
            queues = route.getQueueDatas();
            result = "SUCCESS";
        } else if (response.getCode() == TOPIC_NOT_EXIST) {
            result = "TOPIC_NOT_EXIST";
        } else {
            unrepresentable.incrementAndGet();  // e.g. SYSTEM_ERROR: the contract names no such result
            return;
        }
        int clientDefault = defaultTopicQueueNums();
        StringBuilder e = routePull(r.topic, namesrv, result);
        e.append(",\"queues\":[");
        for (int i = 0; i < queues.size(); i++) {
            Wire.Queues q = queues.get(i);
            // The client's fallback route takes min(its defaultTopicQueueNums, the template's read
            // queues) for both counts (MQClientInstance.updateTopicRouteInfoFromNameServer).
            int read = r.viaDefault ? Math.min(clientDefault, q.getReadQueueNums()) : q.getReadQueueNums();
            int write = r.viaDefault ? read : q.getWriteQueueNums();
            e.append(i == 0 ? "{" : ",{").append("\"broker\":");
            Json.string(e, q.getBrokerName());
            Json.field(e, "read_queue_nums", read);
            Json.field(e, "write_queue_nums", write);
            Json.field(e, "perm", q.getPerm());
            e.append('}');
        }
        e.append(']');
        producerFields(e, r.viaDefault);
        emit(e);
    }

    private void sent(Request r, String addr, RemotingCommand response) {
        String status = sendStatus(response.getCode());
        if (status == null) {
            unrepresentable.incrementAndGet();  // e.g. NO_PERMISSION (16): not in the contract
            return;
        }
        Integer queueId = r.queueId;
        String answered = ext(response, "queueId");
        if (response.getCode() == 0 && answered != null) {
            try {
                queueId = Integer.valueOf(answered);
            } catch (NumberFormatException ignored) {
                // keep the queue the request named
            }
        }
        emit(send(r.topic, r.group, broker(r.addr != null ? r.addr : addr), queueId, r.defaultTopic,
            r.defaultTopicQueueNums, status));
        if (r.outsideSend) {
            // An asynchronous send's callback will tell of it too, where the client calls hooks
            // after asynchronous responses (5.x); remember it so the callback stays silent.
            String id = response.getCode() == 0 ? ext(response, "msgId") : refusal(r.topic, r.addr);
            if (id != null) {
                seenAsync.add(id);
            }
        }
    }

    private static String refusal(String topic, String brokerAddr) {
        return topic + " refused by " + brokerAddr;
    }

    static String sendStatus(int code) {
        switch (code) {
            case 0:
                return "SEND_OK";
            case 10:
                return "FLUSH_DISK_TIMEOUT";
            case 11:
                return "SLAVE_NOT_AVAILABLE";
            case 12:
                return "FLUSH_SLAVE_TIMEOUT";
            case TOPIC_NOT_EXIST:
                return "TOPIC_NOT_EXIST";
            default:
                return null;
        }
    }

    // --- what RoutewatchProducer tells it ---

    /** A send of the application's begins on this thread; null if one already runs (nested). */
    SendContext beginSend(String topic) {
        if (context.get() != null || topic == null) {
            return null;
        }
        SendContext send = new SendContext(topic);
        context.set(send);
        return send;
    }

    /** The send ended; {@code failure} is what it threw, or null. Never throws. */
    void endSend(SendContext send, Throwable failure) {
        if (send == null) {
            return;
        }
        context.remove();
        try {
            for (Request r : send.requests) {
                pending.remove(r.opaque, r);
            }
            if (failure != null) {
                failed(send, failure);
            }
        } catch (RuntimeException | LinkageError e) {
            internalErrors.incrementAndGet();
        }
    }

    /**
     * An asynchronous send's outcome, through its callback: RocketMQ 4.9.8 calls the hook after a
     * response for synchronous requests only (NettyRemotingClient.invokeSync), so the callback is
     * where an asynchronous send's outcome is seen. {@code failure} null: {@code result} holds it.
     */
    void completedAsync(String topic, SendResult result, Throwable failure) {
        try {
            if (failure == null) {
                if (result.getOffsetMsgId() != null && seenAsync.remove(result.getOffsetMsgId())) {
                    return;  // the hook saw the response (5.x)
                }
                MessageQueue queue = result.getMessageQueue();
                emit(send(topic, group(), queue == null ? null : queue.getBrokerName(),
                    queue == null ? null : queue.getQueueId(), createTopicKey(), defaultTopicQueueNums(),
                    result.getSendStatus().name()));
                return;
            }
            for (Throwable t = failure; t != null; t = t.getCause()) {
                if (t instanceof MQBrokerException && ((MQBrokerException) t).getResponseCode() == TOPIC_NOT_EXIST) {
                    if (seenAsync.remove(refusal(topic, ((MQBrokerException) t).getBrokerAddr()))) {
                        return;  // the hook saw every refusal (5.x)
                    }
                    // The last refusal only (4.9): the attempts before it are not seen.
                    emit(send(topic, group(), broker(((MQBrokerException) t).getBrokerAddr()), null,
                        createTopicKey(), defaultTopicQueueNums(), "TOPIC_NOT_EXIST"));
                    return;
                }
            }
            failed(new SendContext(topic), failure);
        } catch (RuntimeException | LinkageError e) {
            internalErrors.incrementAndGet();
        }
    }

    /** A send failed before or on the wire. */
    void failed(SendContext send, Throwable failure) {
        String topic = send.topic;
        String message = failure.getMessage() == null ? "" : failure.getMessage();
        int code = failure instanceof MQClientException ? ((MQClientException) failure).getResponseCode() : -1;
        if (code == 10004 || message.startsWith("No name server address")
                || (connectToNull(failure) && noNamesrvAddress())) {
            // The client has no NameServer address: its route request failed with "connect to
            // null failed" before leaving it. RocketMQ 4.9.8 throws that on the send
            // (IllegalStateException wrapping RemotingConnectException), and "No name server
            // address" (NO_NAME_SERVER_EXCEPTION) where it gets that far. The address list is
            // checked too: a client whose NameServers all refuse says "connect to [addr] failed".
            StringBuilder pull = routePull(topic, null, "NO_NAMESRV").append(",\"queues\":[]");
            emit(producerFields(pull, false));
            emit(send(topic, group(), null, null, createTopicKey(), defaultTopicQueueNums(), "NO_NAMESRV"));
        } else if (code == 10005 || message.startsWith("No route info")) {
            // NOT_FOUND_TOPIC_EXCEPTION: neither the topic's route nor the template's gave a broker.
            emit(send(topic, group(), null, null, createTopicKey(), defaultTopicQueueNums(), "NO_ROUTE_INFO"));
        } else if (timedOut(failure)) {
            for (Request r : send.requests) {
                if (!r.pull && !r.answered) {
                    emit(send(r.topic, r.group, broker(r.addr), r.queueId, r.defaultTopic,
                        r.defaultTopicQueueNums, "TIMEOUT"));
                }
            }
        }
    }

    /** Whether the started client has no NameServer address at all. */
    private boolean noNamesrvAddress() {
        DefaultMQProducer p = producer;
        MQClientInstance instance = p == null ? null : p.getDefaultMQProducerImpl().getmQClientFactory();
        if (instance == null) {
            return false;
        }
        List<String> addresses = instance.getMQClientAPIImpl().getNameServerAddressList();
        return addresses == null || addresses.isEmpty();
    }

    /**
     * "connect to null failed" (4.9), "connect to  failed" (5.x): a request for a NameServer that
     * found no address to connect to.
     */
    private boolean connectToNull(Throwable failure) {
        for (Throwable t = failure; t != null; t = t.getCause()) {
            if (t instanceof RemotingConnectException) {
                String message = String.valueOf(t.getMessage());
                if (message.equals("connect to null failed") || message.equals("connect to  failed")) {
                    return true;
                }
            }
        }
        return false;
    }

    private static boolean timedOut(Throwable failure) {
        for (Throwable t = failure; t != null; t = t.getCause()) {
            if (t instanceof RemotingTimeoutException || t instanceof RemotingTooMuchRequestException) {
                return true;
            }
        }
        return false;
    }

    // --- the events ---

    /** An event's opening, without its ts, event_id and seq: {@link #emit} stamps those. */
    private StringBuilder envelope(String type) {
        StringBuilder e = new StringBuilder(384);
        e.append(OPENING).append(type).append('"');
        Json.field(e, "cluster", config.cluster);
        Json.field(e, "client_id", clientId());
        return e;
    }

    private StringBuilder routePull(String topic, String namesrv, String result) {
        StringBuilder e = envelope("route_pull");
        Json.field(e, "group", group());
        Json.field(e, "role", "producer");
        Json.field(e, "namesrv", namesrv);
        Json.field(e, "topic", topic);
        Json.field(e, "result", result);
        return e;
    }

    private StringBuilder producerFields(StringBuilder e, boolean viaDefault) {
        Json.field(e, "via_default", viaDefault);
        Json.field(e, "create_topic_key", createTopicKey());
        return Json.field(e, "client_default_topic_queue_nums", (long) defaultTopicQueueNums());
    }

    private StringBuilder send(String topic, String group, String broker, Integer queueId, String defaultTopic,
            Integer defaultTopicQueueNums, String status) {
        StringBuilder e = envelope("send");
        Json.field(e, "group", group != null ? group : group());
        Json.field(e, "topic", topic);
        Json.field(e, "broker", broker);
        Json.field(e, "queue_id", broker == null ? null : queueId);
        Json.field(e, "default_topic", defaultTopic != null ? defaultTopic : createTopicKey());
        Json.field(e, "default_topic_queue_nums",
            (long) (defaultTopicQueueNums != null ? defaultTopicQueueNums : defaultTopicQueueNums()));
        return Json.field(e, "status", status);
    }

    /**
     * Stamps the event and hands it to the writer in one step, so that the spool gets a source's
     * events in their seq order whatever threads make them (the client's refresh and the sends):
     * ts never goes back within this source, and seq always goes up, line after line.
     */
    private void emit(StringBuilder event) {
        event.append('}');
        String client = clientId();
        synchronized (this) {
            long ts = Math.max(System.currentTimeMillis(), lastTs);
            lastTs = ts;
            long n = ++seq;
            StringBuilder stamp = new StringBuilder(96).append(",\"ts\":").append(ts);
            Json.field(stamp, "event_id", client + "-" + run + "-" + n);
            Json.field(stamp, "seq", n);
            event.insert(event.indexOf("\"", OPENING.length()) + 1, stamp);
            writer.offer(event.toString());  // never blocks
        }
    }

    // --- the producer's settings, read when an event is written ---

    private String broker(String addr) {
        return addr == null ? null : brokerByAddr.get(addr);
    }

    private String clientId() {
        String id = clientId;
        if (id != null) {
            return id;
        }
        DefaultMQProducer p = producer;
        if (p == null) {
            return "unknown";
        }
        MQClientInstance instance = p.getDefaultMQProducerImpl().getmQClientFactory();
        if (instance == null) {  // not started yet: the id it will take
            return p.buildMQClientId();
        }
        id = instance.getClientId();
        clientId = id;  // fixed once the producer started
        return id;
    }

    private String group() {
        DefaultMQProducer p = producer;
        return p == null ? "unknown" : p.getProducerGroup();
    }

    private String createTopicKey() {
        DefaultMQProducer p = producer;
        return p == null ? "TBW102" : p.getCreateTopicKey();
    }

    private int defaultTopicQueueNums() {
        DefaultMQProducer p = producer;
        return p == null ? 4 : p.getDefaultTopicQueueNums();
    }

    private static String ext(RemotingCommand command, String name) {
        Map<String, String> fields = command.getExtFields();
        return fields == null ? null : fields.get(name);
    }
}
