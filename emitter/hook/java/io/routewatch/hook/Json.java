package io.routewatch.hook;

/** The little JSON this library writes: strings escaped as RFC 8259 asks, nothing else. */
final class Json {
    private Json() {}

    static StringBuilder string(StringBuilder out, String value) {
        if (value == null) {
            return out.append("null");
        }
        out.append('"');
        for (int i = 0; i < value.length(); i++) {
            char c = value.charAt(i);
            switch (c) {
                case '"':
                    out.append("\\\"");
                    break;
                case '\\':
                    out.append("\\\\");
                    break;
                case '\n':
                    out.append("\\n");
                    break;
                case '\r':
                    out.append("\\r");
                    break;
                case '\t':
                    out.append("\\t");
                    break;
                default:
                    if (c < 0x20) {
                        out.append(String.format("\\u%04x", (int) c));
                    } else {
                        out.append(c);
                    }
            }
        }
        return out.append('"');
    }

    static StringBuilder field(StringBuilder out, String name, String value) {
        out.append(",\"").append(name).append("\":");
        return string(out, value);
    }

    static StringBuilder field(StringBuilder out, String name, long value) {
        return out.append(",\"").append(name).append("\":").append(value);
    }

    static StringBuilder field(StringBuilder out, String name, Integer value) {
        out.append(",\"").append(name).append("\":");
        return value == null ? out.append("null") : out.append(value.intValue());
    }

    static StringBuilder field(StringBuilder out, String name, boolean value) {
        return out.append(",\"").append(name).append("\":").append(value);
    }
}
