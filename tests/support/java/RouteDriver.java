/*
 * RouteDriver: plays a script of RocketMQ producer actions with the real Java client
 * (DefaultMQProducer) and prints what happened, one JSON object per line, for routewatch's tests.
 *
 * Compiled by tests/support/route_driver.py with `javac -cp '<rocketmq>/lib/*'` into an ignored
 * cache; run as `java -cp <cache>:<rocketmq>/lib/* RouteDriver SCRIPT.json` (or `-` for a script on
 * standard input), or `RouteDriver --interactive`, which reads one command per line of standard
 * input and answers each with its lines and then {"event":"done"}.
 *
 * A script: {"producers": [PRODUCER...], "steps": [COMMAND...]}. The commands:
 *   {"producer": {"name", "group", "namesrvAddr" (absent or null: none), "createTopicKey",
 *                 "defaultTopicQueueNums", "pollNameServerInterval", "sendMsgTimeout",
 *                 "retryTimesWhenSendFailed", "vipChannelEnabled", "rpcHook" (a class name),
 *                 "routewatch": {"spoolDir", "cluster", "queueCapacity", "rollEvents",
 *                                "rollIntervalMs"} (absent: no hook library)}}
 *   {"send": {"producer", "topic", "count" (1), "spacingMs" (0), "tag", "body", "via" ("send":
 *             send(message); "async": send(message, callback), waited for; "oneway":
 *             sendOneway(message); "selector": send(message, selector, arg, timeout), the first
 *             queue; "batch": send([message], timeout))}}
 *   {"wait": MILLISECONDS}
 *   {"route": {"producer", "topic"}}         the producer's cached route of the topic
 *   {"refresh": {"producer", "topic"}}       the producer refreshes that route from its NameServer
 *   {"scheduled": PRODUCER}                  waits until the client's scheduler has run every task
 *                                            that fell due before now (the first route refresh,
 *                                            10 ms after the start, among them)
 *   {"shutdown": PRODUCER}
 *   {"hookStats": {"producer", "flushMs" (0)}}  the hook library's counters, after a flush
 * Output lines ("event"): "started" (a producer), "send" (one per message: status, broker,
 * queueId, msgId; nothing of these for a one-way send that returned; or exception, message,
 * responseCode and the causes), "route", "refresh", "scheduled",
 * "shutdown", "hookStats", "error" (a command that could not run), "done" (interactive mode only).
 *
 * A producer with no NameServer address looks it up over HTTP at MixAll.getWSAddr():
 * http://<rocketmq.namesrv.domain>/rocketmq/<rocketmq.namesrv.domain.subgroup> when the domain has
 * a port, else on port 8080 of it; the default domain is an outside host (jmenv.tbsite.net). The
 * driver sets the domain to 127.0.0.1:1 (a closed loopback port) unless the JVM was given one, so
 * nothing leaves the machine.
 *
 * A producer with "routewatch" is built by the client hook library's one-line install
 * (emitter/hook/java: new RoutewatchProducer(group, rpcHook, config)), which is on the driver's
 * class path; it writes route_pull and send events into the spool directory given.
 */

import com.alibaba.fastjson.JSON;
import com.alibaba.fastjson.JSONArray;
import com.alibaba.fastjson.JSONObject;
import io.routewatch.hook.RoutewatchConfig;
import io.routewatch.hook.RoutewatchProducer;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.lang.reflect.Field;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import org.apache.rocketmq.client.exception.MQBrokerException;
import org.apache.rocketmq.client.exception.MQClientException;
import org.apache.rocketmq.client.impl.producer.TopicPublishInfo;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendCallback;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageQueue;
import org.apache.rocketmq.remoting.RPCHook;

public final class RouteDriver {
    static final String CLOSED_LOOPBACK = "127.0.0.1:1";

    private final Map<String, DefaultMQProducer> producers = new LinkedHashMap<>();
    private final PrintStream out;

    RouteDriver(PrintStream out) {
        this.out = out;
    }

    public static void main(String[] args) throws Exception {
        if (System.getProperty("rocketmq.namesrv.domain") == null) {
            System.setProperty("rocketmq.namesrv.domain", CLOSED_LOOPBACK);
        }
        PrintStream out = new PrintStream(System.out, true, "UTF-8");
        RouteDriver driver = new RouteDriver(out);
        int status = 0;
        try {
            if (args.length == 1 && args[0].equals("--interactive")) {
                driver.interactive();
            } else if (args.length == 1) {
                String text = args[0].equals("-")
                    ? new String(System.in.readAllBytes(), StandardCharsets.UTF_8)
                    : new String(Files.readAllBytes(Paths.get(args[0])), StandardCharsets.UTF_8);
                status = driver.script(JSON.parseObject(text)) ? 0 : 2;
            } else {
                System.err.println("usage: RouteDriver SCRIPT.json | - | --interactive");
                status = 2;
            }
        } finally {
            driver.shutdownAll();
        }
        out.flush();
        System.exit(status);
    }

    /** Plays a whole script; false if a command could not run. */
    boolean script(JSONObject script) {
        boolean ok = true;
        JSONArray producerSpecs = script.getJSONArray("producers");
        if (producerSpecs != null) {
            for (int i = 0; i < producerSpecs.size(); i++) {
                JSONObject command = new JSONObject();
                command.put("producer", producerSpecs.getJSONObject(i));
                ok &= run(command);
            }
        }
        JSONArray steps = script.getJSONArray("steps");
        if (steps != null) {
            for (int i = 0; i < steps.size(); i++) {
                ok &= run(steps.getJSONObject(i));
            }
        }
        return ok;
    }

    /** One command per line of standard input, each answered by its lines and "done". */
    void interactive() throws Exception {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String line;
        while ((line = in.readLine()) != null) {
            if (line.isBlank()) {
                continue;
            }
            JSONObject command;
            try {
                command = JSON.parseObject(line);
            } catch (RuntimeException e) {
                error("not a JSON object: " + line, e);
                emit(event("done"));
                continue;
            }
            run(command);
            emit(event("done"));
        }
    }

    /** Runs one command; false (after an "error" line) if it could not. */
    boolean run(JSONObject command) {
        try {
            if (command.containsKey("producer")) {
                startProducer(command.getJSONObject("producer"));
            } else if (command.containsKey("send")) {
                send(command.getJSONObject("send"));
            } else if (command.containsKey("wait")) {
                Thread.sleep(command.getLongValue("wait"));
            } else if (command.containsKey("route")) {
                route(command.getJSONObject("route"));
            } else if (command.containsKey("refresh")) {
                refresh(command.getJSONObject("refresh"));
            } else if (command.containsKey("scheduled")) {
                scheduled(command.getString("scheduled"));
            } else if (command.containsKey("hookStats")) {
                hookStats(command.getJSONObject("hookStats"));
            } else if (command.containsKey("shutdown")) {
                String name = command.getString("shutdown");
                producer(name).shutdown();
                producers.remove(name);
                JSONObject e = event("shutdown");
                e.put("producer", name);
                emit(e);
            } else {
                throw new IllegalArgumentException("unknown command: " + command.toJSONString());
            }
            return true;
        } catch (Exception e) {
            error(e.getMessage(), e);
            return false;
        }
    }

    void startProducer(JSONObject spec) throws Exception {
        String name = spec.getString("name");
        if (name == null || producers.containsKey(name)) {
            throw new IllegalArgumentException("a producer needs a name of its own: " + spec);
        }
        String group = spec.containsKey("group") ? spec.getString("group") : "routewatch-" + name;
        RPCHook hook = null;
        String hookClass = spec.getString("rpcHook");
        if (hookClass != null) {
            Class<?> cls;
            try {
                cls = Class.forName(hookClass, true, RouteDriver.class.getClassLoader());
            } catch (ClassNotFoundException e) {
                throw new IllegalArgumentException("the rpcHook class " + hookClass + " is not on the class path", e);
            }
            if (!RPCHook.class.isAssignableFrom(cls)) {
                throw new IllegalArgumentException("the rpcHook class " + hookClass + " is not an RPCHook");
            }
            hook = (RPCHook) cls.getDeclaredConstructor().newInstance();
        }
        JSONObject routewatch = spec.getJSONObject("routewatch");
        DefaultMQProducer producer;
        if (routewatch != null) {
            RoutewatchConfig config = new RoutewatchConfig(
                routewatch.getString("cluster"), Paths.get(routewatch.getString("spoolDir")));
            if (routewatch.containsKey("queueCapacity")) {
                config = config.withQueueCapacity(routewatch.getIntValue("queueCapacity"));
            }
            if (routewatch.containsKey("rollEvents") || routewatch.containsKey("rollIntervalMs")) {
                config = config.withRoll(
                    routewatch.containsKey("rollEvents") ? routewatch.getIntValue("rollEvents")
                        : RoutewatchConfig.DEFAULT_ROLL_EVENTS,
                    routewatch.containsKey("rollIntervalMs") ? routewatch.getLongValue("rollIntervalMs")
                        : RoutewatchConfig.DEFAULT_ROLL_INTERVAL_MS);
            }
            // The library's one-line install (the application's own hook, if any, is kept).
            producer = new RoutewatchProducer(group, hook, config);
        } else {
            producer = hook == null ? new DefaultMQProducer(group) : new DefaultMQProducer(group, hook);
        }
        // Each producer its own client instance (its own route table), named after it.
        producer.setInstanceName(name);
        producer.setClientIP("127.0.0.1");
        producer.setNamesrvAddr(spec.getString("namesrvAddr"));
        if (spec.containsKey("createTopicKey")) {
            producer.setCreateTopicKey(spec.getString("createTopicKey"));
        }
        if (spec.containsKey("defaultTopicQueueNums")) {
            producer.setDefaultTopicQueueNums(spec.getIntValue("defaultTopicQueueNums"));
        }
        if (spec.containsKey("pollNameServerInterval")) {
            producer.setPollNameServerInterval(spec.getIntValue("pollNameServerInterval"));
        }
        if (spec.containsKey("sendMsgTimeout")) {
            producer.setSendMsgTimeout(spec.getIntValue("sendMsgTimeout"));
        }
        if (spec.containsKey("retryTimesWhenSendFailed")) {
            producer.setRetryTimesWhenSendFailed(spec.getIntValue("retryTimesWhenSendFailed"));
        }
        if (spec.containsKey("vipChannelEnabled")) {
            producer.setVipChannelEnabled(spec.getBooleanValue("vipChannelEnabled"));
        }
        producer.start();
        producers.put(name, producer);
        JSONObject e = event("started");
        e.put("producer", name);
        e.put("group", group);
        e.put("namesrvAddr", producer.getNamesrvAddr());
        e.put("createTopicKey", producer.getCreateTopicKey());
        e.put("defaultTopicQueueNums", producer.getDefaultTopicQueueNums());
        e.put("pollNameServerInterval", producer.getPollNameServerInterval());
        e.put("rpcHook", hook == null ? null : hook.getClass().getName());
        e.put("routewatch", producer instanceof RoutewatchProducer);
        e.put("clientId", producer.getDefaultMQProducerImpl().getmQClientFactory().getClientId());
        emit(e);
    }

    void hookStats(JSONObject spec) {
        String name = spec.getString("producer");
        DefaultMQProducer producer = producer(name);
        if (!(producer instanceof RoutewatchProducer)) {
            throw new IllegalArgumentException("the producer " + name + " has no routewatch hook");
        }
        RoutewatchProducer hooked = (RoutewatchProducer) producer;
        long flush = spec.getLongValue("flushMs");
        if (flush > 0) {
            hooked.routewatchHook().writer().flush(flush);
        }
        JSONObject e = event("hookStats");
        e.put("producer", name);
        e.put("stats", new JSONObject(new LinkedHashMap<String, Object>(hooked.routewatchStats())));
        e.put("lastError", hooked.routewatchHook().writer().lastError());
        emit(e);
    }

    void send(JSONObject spec) throws Exception {
        String name = spec.getString("producer");
        DefaultMQProducer producer = producer(name);
        String topic = spec.getString("topic");
        int count = spec.containsKey("count") ? spec.getIntValue("count") : 1;
        long spacing = spec.getLongValue("spacingMs");
        String tag = spec.containsKey("tag") ? spec.getString("tag") : "routewatch";
        String body = spec.containsKey("body") ? spec.getString("body") : "routewatch";
        String via = spec.containsKey("via") ? spec.getString("via") : "send";
        for (int i = 0; i < count; i++) {
            if (i > 0 && spacing > 0) {
                Thread.sleep(spacing);
            }
            JSONObject e = event("send");
            e.put("producer", name);
            e.put("topic", topic);
            e.put("index", i);
            long start = System.nanoTime();
            try {
                Message message = new Message(topic, tag, (body + " " + i).getBytes(StandardCharsets.UTF_8));
                SendResult result = sendVia(via, producer, message);
                if (result != null) {
                    e.put("status", result.getSendStatus().name());
                    e.put("broker", result.getMessageQueue().getBrokerName());
                    e.put("queueId", result.getMessageQueue().getQueueId());
                    e.put("msgId", result.getMsgId());
                }
            } catch (Exception ex) {
                describe(e, ex);
                JSONArray causes = new JSONArray();
                Throwable c = ex.getCause();
                for (int depth = 0; c != null && depth < 8; depth++, c = c.getCause()) {
                    JSONObject cause = new JSONObject(true);
                    describe(cause, c);
                    causes.add(cause);
                }
                e.put("causes", causes);
            }
            e.put("elapsedMs", (System.nanoTime() - start) / 1_000_000);
            emit(e);
        }
    }

    /** One send of {@code message} through the producer's method named by {@code via}; null for
     * a one-way send, which has no result. */
    static SendResult sendVia(String via, DefaultMQProducer producer, Message message) throws Exception {
        switch (via) {
            case "send":
                return producer.send(message);
            case "async":
                return sendAsync(producer, message);
            case "oneway":
                producer.sendOneway(message);
                return null;
            case "selector":
                return producer.send(message, (queues, msg, arg) -> queues.get(0), null,
                    producer.getSendMsgTimeout());
            case "batch":
                return producer.send(Collections.singletonList(message), producer.getSendMsgTimeout());
            default:
                throw new IllegalArgumentException("no send is called " + via);
        }
    }

    /** An asynchronous send (with a callback), waited for: its result, or what it failed with. */
    static SendResult sendAsync(DefaultMQProducer producer, Message message) throws Exception {
        CompletableFuture<SendResult> outcome = new CompletableFuture<>();
        producer.send(message, new SendCallback() {
            @Override
            public void onSuccess(SendResult result) {
                outcome.complete(result);
            }

            @Override
            public void onException(Throwable e) {
                outcome.completeExceptionally(e);
            }
        });
        try {
            return outcome.get(producer.getSendMsgTimeout() + 10_000L, TimeUnit.MILLISECONDS);
        } catch (ExecutionException e) {
            Throwable cause = e.getCause();
            throw cause instanceof Exception ? (Exception) cause : e;
        }
    }

    void route(JSONObject spec) throws Exception {
        String name = spec.getString("producer");
        String topic = spec.getString("topic");
        TopicPublishInfo info = producer(name).getDefaultMQProducerImpl().getTopicPublishInfoTable().get(topic);
        JSONObject e = event("route");
        e.put("producer", name);
        e.put("topic", topic);
        if (info == null) {
            e.put("queues", null);
        } else {
            e.put("haveTopicRouterInfo", info.isHaveTopicRouterInfo());
            e.put("queues", queues(info.getMessageQueueList()));
        }
        emit(e);
    }

    void refresh(JSONObject spec) throws Exception {
        String name = spec.getString("producer");
        String topic = spec.getString("topic");
        boolean changed = producer(name).getDefaultMQProducerImpl().getmQClientFactory()
            .updateTopicRouteInfoFromNameServer(topic);
        JSONObject e = event("refresh");
        e.put("producer", name);
        e.put("topic", topic);
        e.put("changed", changed);
        emit(e);
    }

    /**
     * Queues a no-op on the client instance's scheduler (MQClientInstance's single-threaded
     * "MQClientFactoryScheduledThread", a private field on 4.9 and 5.x alike) to run 20 ms from
     * now, and waits for it: the scheduler runs its tasks one at a time in the order they fall
     * due, so every task due earlier, the first periodic route refresh (due 10 ms after the
     * start) included, has finished by then. On 5.1.1+ that refresh fetches nothing a test can
     * see (the producer no longer adds its createTopicKey to the topics it refreshes), so this is
     * the one sign it ran.
     */
    void scheduled(String name) throws Exception {
        Object factory = producer(name).getDefaultMQProducerImpl().getmQClientFactory();
        Field field = factory.getClass().getDeclaredField("scheduledExecutorService");
        field.setAccessible(true);
        ScheduledExecutorService scheduler = (ScheduledExecutorService) field.get(factory);
        scheduler.schedule(() -> { }, 20, TimeUnit.MILLISECONDS).get(30, TimeUnit.SECONDS);
        JSONObject e = event("scheduled");
        e.put("producer", name);
        emit(e);
    }

    static JSONArray queues(List<MessageQueue> list) {
        JSONArray result = new JSONArray();
        for (MessageQueue q : new ArrayList<>(list)) {
            JSONObject queue = new JSONObject(true);
            queue.put("broker", q.getBrokerName());
            queue.put("queueId", q.getQueueId());
            result.add(queue);
        }
        return result;
    }

    static void describe(JSONObject into, Throwable ex) {
        into.put("exception", ex.getClass().getName());
        if (ex instanceof MQClientException) {
            MQClientException mq = (MQClientException) ex;
            into.put("message", ex.getMessage());
            into.put("responseCode", mq.getResponseCode());
            into.put("errorMessage", mq.getErrorMessage());
        } else if (ex instanceof MQBrokerException) {
            MQBrokerException mq = (MQBrokerException) ex;
            into.put("message", ex.getMessage());
            into.put("responseCode", mq.getResponseCode());
            into.put("errorMessage", mq.getErrorMessage());
            into.put("brokerAddr", mq.getBrokerAddr());
        } else {
            into.put("message", ex.getMessage());
        }
    }

    DefaultMQProducer producer(String name) {
        DefaultMQProducer producer = producers.get(name);
        if (producer == null) {
            throw new IllegalArgumentException("no producer named " + name);
        }
        return producer;
    }

    void shutdownAll() {
        for (DefaultMQProducer producer : producers.values()) {
            try {
                producer.shutdown();
            } catch (RuntimeException e) {
                error("shutting a producer down: " + e.getMessage(), e);
            }
        }
        producers.clear();
    }

    static JSONObject event(String kind) {
        JSONObject e = new JSONObject(true);
        e.put("event", kind);
        return e;
    }

    void error(String message, Throwable cause) {
        JSONObject e = event("error");
        e.put("message", message);
        if (cause != null) {
            e.put("exception", cause.getClass().getName());
        }
        emit(e);
    }

    synchronized void emit(JSONObject e) {
        out.println(JSON.toJSONString(e, com.alibaba.fastjson.serializer.SerializerFeature.WriteMapNullValue));
    }
}
