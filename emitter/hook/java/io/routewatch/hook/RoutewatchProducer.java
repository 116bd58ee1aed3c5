package io.routewatch.hook;

import java.util.Collection;
import java.util.Map;
import org.apache.rocketmq.client.exception.MQBrokerException;
import org.apache.rocketmq.client.exception.MQClientException;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.MessageQueueSelector;
import org.apache.rocketmq.client.producer.SendCallback;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.remoting.RPCHook;
import org.apache.rocketmq.remoting.exception.RemotingException;

/**
 * A {@link DefaultMQProducer} with routewatch installed: the one line an application changes is
 * {@code new DefaultMQProducer(group)} to {@code new RoutewatchProducer(group)} (settings from
 * {@link RoutewatchConfig#fromEnvironment()}), or {@code new RoutewatchProducer(group, config)}.
 *
 * <p>Its {@link RoutewatchHook} writes a {@code route_pull} event for every route query and a
 * {@code send} event for every send request that got an answer. Around each synchronous send it
 * tells the hook which topic the send is for (so a pull of the template topic is written as the
 * fallback pull for that topic), and records what the hook cannot see: "No route info of this
 * topic" ({@code NO_ROUTE_INFO}), "No name server address" ({@code NO_NAMESRV}, with the
 * {@code route_pull} of result {@code NO_NAMESRV} that stands for "connect to null failed"), and
 * send requests that timed out ({@code TIMEOUT}). Every exception reaches the application
 * unchanged, and writing events never blocks or fails a send.
 */
public class RoutewatchProducer extends DefaultMQProducer {
    private final RoutewatchHook routewatch;

    public RoutewatchProducer(String producerGroup) {
        this(producerGroup, null, RoutewatchConfig.fromEnvironment());
    }

    public RoutewatchProducer(String producerGroup, RoutewatchConfig config) {
        this(producerGroup, null, config);
    }

    /** With the application's own hook ({@code rpcHook}, e.g. ACL's), which is called first. */
    public RoutewatchProducer(String producerGroup, RPCHook rpcHook, RoutewatchConfig config) {
        this(producerGroup, new RoutewatchHook(config, rpcHook));
    }

    private RoutewatchProducer(String producerGroup, RoutewatchHook hook) {
        super(producerGroup, hook);
        this.routewatch = hook;
        hook.bind(this);
    }

    /** The hook, and through it the writer and its counters. */
    public RoutewatchHook routewatchHook() {
        return routewatch;
    }

    /** Events dropped so far (queue full, spool unwritable). */
    public long routewatchDropped() {
        return routewatch.writer().dropped();
    }

    /** The counters (see {@link RoutewatchHook#stats()}). */
    public Map<String, Long> routewatchStats() {
        return routewatch.stats();
    }

    /** Shuts the producer down, then publishes the events still queued (waiting at most 1 s). */
    @Override
    public void shutdown() {
        super.shutdown();
        routewatch.writer().close(1_000);
    }

    @Override
    public SendResult send(Message msg)
            throws MQClientException, RemotingException, MQBrokerException, InterruptedException {
        return recorded(topicOf(msg), () -> super.send(msg));
    }

    @Override
    public SendResult send(Message msg, long timeout)
            throws MQClientException, RemotingException, MQBrokerException, InterruptedException {
        return recorded(topicOf(msg), () -> super.send(msg, timeout));
    }

    @Override
    public SendResult send(Message msg, MessageQueueSelector selector, Object arg)
            throws MQClientException, RemotingException, MQBrokerException, InterruptedException {
        return recorded(topicOf(msg), () -> super.send(msg, selector, arg));
    }

    @Override
    public SendResult send(Collection<Message> msgs)
            throws MQClientException, RemotingException, MQBrokerException, InterruptedException {
        String topic = msgs == null || msgs.isEmpty() ? null : topicOf(msgs.iterator().next());
        return recorded(topic, () -> super.send(msgs));
    }

    /** A synchronous send, as the client throws it. */
    private interface SyncSend {
        SendResult call()
                throws MQClientException, RemotingException, MQBrokerException, InterruptedException;
    }

    private static String topicOf(Message msg) {
        return msg == null ? null : msg.getTopic();
    }

    /** Runs {@code send} with the hook told which topic it is for, and records its failure. */
    private SendResult recorded(String topic, SyncSend send)
            throws MQClientException, RemotingException, MQBrokerException, InterruptedException {
        RoutewatchHook.SendContext context = routewatch.beginSend(topic);
        Throwable failure = null;
        try {
            return send.call();
        } catch (MQClientException | RemotingException | MQBrokerException | InterruptedException
                 | RuntimeException e) {
            failure = e;
            throw e;
        } finally {
            routewatch.endSend(context, failure);
        }
    }

    /**
     * An asynchronous send: RocketMQ 4.9.8 calls no hook after an asynchronous response, so its
     * outcome is recorded from the callback (delivered: broker, queue and status; refused:
     * {@code TOPIC_NOT_EXIST} for the last broker tried; "No route info", no NameServer). Its
     * route pulls run on the client's executor, outside any send this class sees, so a fallback
     * pull of the template topic is written as a pull of the template topic itself.
     */
    @Override
    public void send(Message msg, SendCallback sendCallback)
            throws MQClientException, RemotingException, InterruptedException {
        super.send(msg, recording(msg, sendCallback));
    }

    @Override
    public void send(Message msg, SendCallback sendCallback, long timeout)
            throws MQClientException, RemotingException, InterruptedException {
        super.send(msg, recording(msg, sendCallback), timeout);
    }

    private SendCallback recording(Message msg, SendCallback callback) {
        if (msg == null || callback == null) {
            return callback;
        }
        final String topic = msg.getTopic();
        return new SendCallback() {
            @Override
            public void onSuccess(SendResult sendResult) {
                routewatch.completedAsync(topic, sendResult, null);
                callback.onSuccess(sendResult);
            }

            @Override
            public void onException(Throwable e) {
                routewatch.completedAsync(topic, null, e);
                callback.onException(e);
            }
        };
    }
}
