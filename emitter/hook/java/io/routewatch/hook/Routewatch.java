package io.routewatch.hook;

import org.apache.rocketmq.client.producer.DefaultMQProducer;

/** The one-line install: {@code DefaultMQProducer producer = Routewatch.producer("my-group");}. */
public final class Routewatch {
    private Routewatch() {}

    /** A producer with routewatch installed, configured from the environment. */
    public static DefaultMQProducer producer(String producerGroup) {
        return new RoutewatchProducer(producerGroup);
    }

    /** A producer with routewatch installed, writing where {@code config} says. */
    public static DefaultMQProducer producer(String producerGroup, RoutewatchConfig config) {
        return new RoutewatchProducer(producerGroup, config);
    }
}
