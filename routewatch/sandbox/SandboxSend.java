// `routewatch sandbox send`: a plain RocketMQ producer (DefaultMQProducer of the sandbox's own
// RocketMQ release, nothing of routewatch's), run from source by `java SandboxSend.java`.
//
//   SandboxSend NAMESRV TOPIC COUNT [BROKER]
//
// Sends COUNT messages to TOPIC, one producer, one after another, as an application would; with
// BROKER, each to a queue of that broker (a MessageQueueSelector over the queues the producer's
// route gives, the template route TBW102's for a topic that does not exist yet). One line per
// send: its status, the broker and queue, and the message id; exit 1 on a failed send.

import java.nio.charset.StandardCharsets;
import java.util.List;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageQueue;

public class SandboxSend {
    public static void main(String[] args) throws Exception {
        String namesrv = args[0];
        String topic = args[1];
        int count = Integer.parseInt(args[2]);
        String broker = args.length > 3 ? args[3] : null;
        DefaultMQProducer producer = new DefaultMQProducer("routewatch_sandbox_producer");
        producer.setNamesrvAddr(namesrv);
        producer.setSendMsgTimeout(15_000);
        producer.setInstanceName("sandbox-" + ProcessHandle.current().pid());
        producer.start();
        int failed = 0;
        try {
            for (int i = 0; i < count; i++) {
                byte[] body = ("routewatch sandbox message " + i).getBytes(StandardCharsets.UTF_8);
                Message message = new Message(topic, body);
                try {
                    SendResult result = broker == null
                        ? producer.send(message)
                        : producer.send(message, SandboxSend::pick, broker);
                    MessageQueue queue = result.getMessageQueue();
                    System.out.printf("%s %s queue %d %s%n", result.getSendStatus(),
                        queue.getBrokerName(), queue.getQueueId(), result.getMsgId());
                } catch (Exception e) {
                    failed++;
                    System.out.printf("FAILED %s%n", e.toString().replace('\n', ' '));
                }
            }
        } finally {
            producer.shutdown();
        }
        System.exit(failed == 0 ? 0 : 1);
    }

    private static MessageQueue pick(List<MessageQueue> queues, Message message, Object broker) {
        for (MessageQueue queue : queues) {
            if (queue.getBrokerName().equals(broker)) {
                return queue;
            }
        }
        throw new IllegalStateException("broker " + broker + " is not in the route this producer "
            + "has for " + message.getTopic() + " (the template route, TBW102's, for a new topic): "
            + "it has no TBW102, or it is not writable");
    }
}
