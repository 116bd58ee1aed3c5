import java.nio.charset.StandardCharsets;
import java.time.Duration;
import org.apache.rocketmq.client.apis.ClientConfiguration;
import org.apache.rocketmq.client.apis.ClientServiceProvider;
import org.apache.rocketmq.client.apis.producer.Producer;
import org.apache.rocketmq.client.apis.producer.SendReceipt;

/**
 * RocketMQ 5.x's gRPC client (rocketmq-client-java) sending through a proxy, for the tests.
 *
 * <p>{@code GrpcProbe ENDPOINT STEP...}, each step one of {@code send:TOPIC} (one message from a
 * producer that declared no topic) and {@code declare:TOPIC} (a producer built with the topic
 * declared, as {@code setTopics} does, which fetches its route at start). One JSON line per step:
 * {@code {"step":..., "attempts":n, "ok":true, "messageId":...}} or {@code {"step":...,
 * "attempts":n, "ok":false, "error":<exception class>, "message":<its message, then its causes'>}}.
 * A step that times out (the machine's load, not an answer) is tried again, up to 5 times;
 * {@code until:TOPIC} sends every 200 ms until one succeeds (at most 60 s), {@code attempts}
 * saying how many it took.
 */
public final class GrpcProbe {
    private static final int MAX_ATTEMPTS = 5;

    private GrpcProbe() {}

    public static void main(String[] args) throws Exception {
        ClientServiceProvider provider = ClientServiceProvider.loadService();
        ClientConfiguration config = ClientConfiguration.newBuilder()
                .setEndpoints(args[0])
                .enableSsl(false)
                .setRequestTimeout(Duration.ofSeconds(15))
                .setMaxStartupAttempts(1)
                .build();
        try (Producer plain = provider.newProducerBuilder().setClientConfiguration(config).build()) {
            for (int i = 1; i < args.length; i++) {
                String step = args[i];
                String topic = step.substring(step.indexOf(':') + 1);
                boolean until = step.startsWith("until:");
                long start = System.nanoTime();
                // A timeout is the machine's load, not the answer under test: try again. An
                // until: step tries every 200 ms until a send succeeds (at most 60 s).
                for (int attempt = 1; ; attempt++) {
                    try {
                        print(step, run(provider, config, plain, step, topic), null, attempt);
                        break;
                    } catch (Exception e) {
                        if (until && System.nanoTime() - start < 60_000_000_000L) {
                            Thread.sleep(200);
                            continue;
                        }
                        if (!until && attempt < MAX_ATTEMPTS && isTimeout(e)) {
                            continue;
                        }
                        print(step, null, e, attempt);
                        break;
                    }
                }
            }
        }
        System.exit(0); // the client's non-daemon threads would keep the JVM alive
    }

    private static String run(ClientServiceProvider provider, ClientConfiguration config,
            Producer plain, String step, String topic) throws Exception {
        if (step.startsWith("declare:")) {
            provider.newProducerBuilder()
                    .setClientConfiguration(config)
                    .setTopics(topic)
                    .build()
                    .close();
            return null;
        }
        SendReceipt receipt = plain.send(provider.newMessageBuilder()
                .setTopic(topic)
                .setBody("routewatch".getBytes(StandardCharsets.UTF_8))
                .build());
        return receipt.getMessageId().toString();
    }

    private static boolean isTimeout(Throwable error) {
        for (Throwable t = error; t != null; t = t.getCause()) {
            String text = String.valueOf(t.getMessage());
            if (t instanceof java.util.concurrent.TimeoutException
                    || text.contains("DEADLINE_EXCEEDED")) {
                return true;
            }
        }
        return false;
    }

    private static void print(String step, String messageId, Throwable error, int attempts) {
        StringBuilder line = new StringBuilder("{\"step\":").append(quote(step))
                .append(",\"attempts\":").append(attempts);
        if (error == null) {
            line.append(",\"ok\":true");
            if (messageId != null) {
                line.append(",\"messageId\":").append(quote(messageId));
            }
        } else {
            StringBuilder message = new StringBuilder();
            for (Throwable t = error; t != null; t = t.getCause()) {
                message.append(message.length() == 0 ? "" : " | caused by ")
                        .append(t.getClass().getName()).append(": ").append(t.getMessage());
            }
            line.append(",\"ok\":false,\"error\":").append(quote(error.getClass().getName()))
                    .append(",\"message\":").append(quote(message.toString()));
        }
        System.out.println(line.append('}'));
        System.out.flush();
    }

    private static String quote(String s) {
        StringBuilder out = new StringBuilder("\"");
        for (char c : s.toCharArray()) {
            if (c == '"' || c == '\\') {
                out.append('\\').append(c);
            } else if (c < 0x20) {
                out.append(String.format("\\u%04x", (int) c));
            } else {
                out.append(c);
            }
        }
        return out.append('"').toString();
    }
}
