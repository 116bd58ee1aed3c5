package io.routewatch.hook;

import java.lang.reflect.Method;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.rocketmq.remoting.CommandCustomHeader;
import org.apache.rocketmq.remoting.protocol.RemotingSerializable;

/**
 * What the hook reads of requests and responses, in a form both release lines share, so that one
 * jar serves a 4.9 client and a 5.x one. RocketMQ 5.0 moved the header and route classes from
 * {@code org.apache.rocketmq.common.protocol} to {@code org.apache.rocketmq.remoting.protocol}
 * with the same names and getters, so a class compiled against one line's cannot load on the
 * other's: headers are read by their class's simple name and getters, and a route's body is
 * decoded into the beans below by the client's own {@link RemotingSerializable}, the same on both.
 */
final class Wire {
    private static final Map<String, Method> GETTERS = new ConcurrentHashMap<>();

    private Wire() {
    }

    /** The header's kind: its class's simple name, e.g. {@code SendMessageRequestHeaderV2}. */
    static String kind(CommandCustomHeader header) {
        return header == null ? "" : header.getClass().getSimpleName();
    }

    /** A getter's value, e.g. {@code get(h, "getTopic")}; null when the header has no such getter. */
    static Object get(CommandCustomHeader header, String getter) {
        Class<?> type = header.getClass();
        String key = type.getName() + '#' + getter;
        Method method = GETTERS.get(key);
        if (method == null) {
            try {
                method = type.getMethod(getter);
            } catch (NoSuchMethodException e) {
                return null;
            }
            GETTERS.put(key, method);
        }
        try {
            return method.invoke(header);
        } catch (ReflectiveOperationException e) {
            return null;
        }
    }

    static String string(CommandCustomHeader header, String getter) {
        Object value = get(header, getter);
        return value == null ? null : value.toString();
    }

    static Integer integer(CommandCustomHeader header, String getter) {
        Object value = get(header, getter);
        return value instanceof Number ? Integer.valueOf(((Number) value).intValue()) : null;
    }

    /** A NameServer's answer to {@code GET_ROUTEINFO_BY_TOPIC}. */
    static Route route(byte[] body) {
        Route route = RemotingSerializable.decode(body, Route.class);
        return route == null ? new Route() : route;
    }

    /** The part of {@code TopicRouteData} the events carry (JSON bean: public, with setters). */
    public static final class Route {
        private List<Broker> brokerDatas = new ArrayList<>();
        private List<Queues> queueDatas = new ArrayList<>();

        public List<Broker> getBrokerDatas() {
            return brokerDatas;
        }

        public void setBrokerDatas(List<Broker> brokerDatas) {
            this.brokerDatas = brokerDatas == null ? new ArrayList<Broker>() : brokerDatas;
        }

        public List<Queues> getQueueDatas() {
            return queueDatas;
        }

        public void setQueueDatas(List<Queues> queueDatas) {
            this.queueDatas = queueDatas == null ? new ArrayList<Queues>() : queueDatas;
        }
    }

    /** A route's {@code BrokerData}: a broker's name and its addresses by broker id. */
    public static final class Broker {
        private String brokerName;
        private Map<Long, String> brokerAddrs = new HashMap<>();

        public String getBrokerName() {
            return brokerName;
        }

        public void setBrokerName(String brokerName) {
            this.brokerName = brokerName;
        }

        public Map<Long, String> getBrokerAddrs() {
            return brokerAddrs;
        }

        public void setBrokerAddrs(Map<Long, String> brokerAddrs) {
            this.brokerAddrs = brokerAddrs == null ? new HashMap<Long, String>() : brokerAddrs;
        }
    }

    /** A route's {@code QueueData}: one broker's queue counts and permission. */
    public static final class Queues {
        private String brokerName;
        private int readQueueNums;
        private int writeQueueNums;
        private int perm;

        public String getBrokerName() {
            return brokerName;
        }

        public void setBrokerName(String brokerName) {
            this.brokerName = brokerName;
        }

        public int getReadQueueNums() {
            return readQueueNums;
        }

        public void setReadQueueNums(int readQueueNums) {
            this.readQueueNums = readQueueNums;
        }

        public int getWriteQueueNums() {
            return writeQueueNums;
        }

        public void setWriteQueueNums(int writeQueueNums) {
            this.writeQueueNums = writeQueueNums;
        }

        public int getPerm() {
            return perm;
        }

        public void setPerm(int perm) {
            this.perm = perm;
        }
    }
}
