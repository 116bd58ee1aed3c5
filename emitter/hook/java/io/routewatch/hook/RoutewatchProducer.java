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
import org.apache.rocketmq.common.message.MessageQueue;
import org.apache.rocketmq.remoting.RPCHook;
import org.apache.rocketmq.remoting.exception.RemotingException;

/**
 * A {@link DefaultMQProducer} with routewatch installed: the one line an application changes is
 * {@code new DefaultMQProducer(group)} to {@code new RoutewatchProducer(group)} (settings from
 * {@link RoutewatchConfig#fromEnvironment()}), or {@code new RoutewatchProducer(group, config)}.
 *
 * <p>Its {@link RoutewatchHook} writes a {@code route_pull} event for every route query and a
 * {@code send} event for every send request that got an answer. Around each synchronous and
 * one-way send (every form of {@code send} and {@code sendOneway} of 4.9.8) it
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

    // The synchronous sends and the one-way sends: the client looks the route up in the calling
    // thread, so the wrapper can tell the hook which topic its pulls are for.

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
    public SendResult send(Message msg, MessageQueue mq)
            throws MQClientException, RemotingException, MQBrokerException, InterruptedException {
        return recorded(topicOf(msg), () -> super.send(msg, mq));
    }

    @Override
    public SendResult send(Message msg, MessageQueue mq, long timeout)
            throws MQClientException, RemotingException, MQBrokerException, InterruptedException {
        return recorded(topicOf(msg), () -> super.send(msg, mq, timeout));
    }

    @Override
    public SendResult send(Message msg, MessageQueueSelector selector, Object arg)
            throws MQClientException, RemotingException, MQBrokerException, InterruptedException {
        return recorded(topicOf(msg), () -> super.send(msg, selector, arg));
    }

    @Override
    public SendResult send(Message msg, MessageQueueSelector selector, Object arg, long timeout)
            throws MQClientException, RemotingException, MQBrokerException, InterruptedException {
        return recorded(topicOf(msg), () -> super.send(msg, selector, arg, timeout));
    }

    @Override
    public SendResult send(Collection<Message> msgs)
            throws MQClientException, RemotingException, MQBrokerException, InterruptedException {
        return recorded(topicOf(msgs), () -> super.send(msgs));
    }

    @Override
    public SendResult send(Collection<Message> msgs, long timeout)
            throws MQClientException, RemotingException, MQBrokerException, InterruptedException {
        return recorded(topicOf(msgs), () -> super.send(msgs, timeout));
    }

    @Override
    public SendResult send(Collection<Message> msgs, MessageQueue mq)
            throws MQClientException, RemotingException, MQBrokerException, InterruptedException {
        return recorded(topicOf(msgs), () -> super.send(msgs, mq));
    }

    @Override
    public SendResult send(Collection<Message> msgs, MessageQueue mq, long timeout)
            throws MQClientException, RemotingException, MQBrokerException, InterruptedException {
        return recorded(topicOf(msgs), () -> super.send(msgs, mq, timeout));
    }

    /** One-way: no answer comes, so only its route pulls and a failure before the wire are seen. */
    @Override
    public void sendOneway(Message msg) throws MQClientException, RemotingException, InterruptedException {
        recorded(topicOf(msg), () -> {
            super.sendOneway(msg);
            return null;
        });
    }

    @Override
    public void sendOneway(Message msg, MessageQueue mq)
            throws MQClientException, RemotingException, InterruptedException {
        recorded(topicOf(msg), () -> {
            super.sendOneway(msg, mq);
            return null;
        });
    }

    @Override
    public void sendOneway(Message msg, MessageQueueSelector selector, Object arg)
            throws MQClientException, RemotingException, InterruptedException {
        recorded(topicOf(msg), () -> {
            super.sendOneway(msg, selector, arg);
            return null;
        });
    }

    /** A call into the client that throws what its sends throw, and {@code X} (for the sends
     * that also throw {@link MQBrokerException}; inferred as none for the one-way sends). */
    private interface Call<T, X extends Exception> {
        T call() throws MQClientException, RemotingException, InterruptedException, X;
    }

    private static String topicOf(Message msg) {
        return msg == null ? null : msg.getTopic();
    }

    /** A batch's topic: the client requires one topic for all its messages. */
    private static String topicOf(Collection<Message> msgs) {
        return msgs == null || msgs.isEmpty() ? null : topicOf(msgs.iterator().next());
    }

    /** Runs {@code send} with the hook told which topic it is for, and records its failure. */
    private <T, X extends Exception> T recorded(String topic, Call<T, X> send)
            throws MQClientException, RemotingException, InterruptedException, X {
        RoutewatchHook.SendContext context = routewatch.beginSend(topic);
        Throwable failure = null;
        try {
            return send.call();
        } catch (Exception e) {
            failure = e;
            throw e;
        } finally {
            routewatch.endSend(context, failure);
        }
    }

    /**
     * The asynchronous sends: RocketMQ 4.9.8 calls no hook after an asynchronous response, so
     * their outcome is recorded from the callback (delivered: broker, queue and status; refused:
     * {@code TOPIC_NOT_EXIST} for the last broker tried; "No route info", no NameServer). Their
     * route pulls run on the client's executor, outside any send this class sees, so a fallback
     * pull of the template topic is written as a pull of the template topic itself.
     */
    @Override
    public void send(Message msg, SendCallback sendCallback)
            throws MQClientException, RemotingException, InterruptedException {
        super.send(msg, recording(topicOf(msg), sendCallback));
    }

    @Override
    public void send(Message msg, SendCallback sendCallback, long timeout)
            throws MQClientException, RemotingException, InterruptedException {
        super.send(msg, recording(topicOf(msg), sendCallback), timeout);
    }

    @Override
    public void send(Message msg, MessageQueue mq, SendCallback sendCallback)
            throws MQClientException, RemotingException, InterruptedException {
        super.send(msg, mq, recording(topicOf(msg), sendCallback));
    }

    @Override
    public void send(Message msg, MessageQueue mq, SendCallback sendCallback, long timeout)
            throws MQClientException, RemotingException, InterruptedException {
        super.send(msg, mq, recording(topicOf(msg), sendCallback), timeout);
    }

    @Override
    public void send(Message msg, MessageQueueSelector selector, Object arg, SendCallback sendCallback)
            throws MQClientException, RemotingException, InterruptedException {
        super.send(msg, selector, arg, recording(topicOf(msg), sendCallback));
    }

    @Override
    public void send(Message msg, MessageQueueSelector selector, Object arg, SendCallback sendCallback,
            long timeout) throws MQClientException, RemotingException, InterruptedException {
        super.send(msg, selector, arg, recording(topicOf(msg), sendCallback), timeout);
    }

    @Override
    public void send(Collection<Message> msgs, SendCallback sendCallback)
            throws MQClientException, RemotingException, MQBrokerException, InterruptedException {
        super.send(msgs, recording(topicOf(msgs), sendCallback));
    }

    @Override
    public void send(Collection<Message> msgs, SendCallback sendCallback, long timeout)
            throws MQClientException, RemotingException, MQBrokerException, InterruptedException {
        super.send(msgs, recording(topicOf(msgs), sendCallback), timeout);
    }

    @Override
    public void send(Collection<Message> msgs, MessageQueue mq, SendCallback sendCallback)
            throws MQClientException, RemotingException, MQBrokerException, InterruptedException {
        super.send(msgs, mq, recording(topicOf(msgs), sendCallback));
    }

    @Override
    public void send(Collection<Message> msgs, MessageQueue mq, SendCallback sendCallback, long timeout)
            throws MQClientException, RemotingException, MQBrokerException, InterruptedException {
        super.send(msgs, mq, recording(topicOf(msgs), sendCallback), timeout);
    }

    private SendCallback recording(String topic, SendCallback callback) {
        if (topic == null || callback == null) {
            return callback;
        }
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
