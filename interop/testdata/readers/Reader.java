// Reader.java: a tool server that reads stdin with
// BufferedReader.readLine, which ends a line at "\n", "\r" or "\r\n", and
// reads the first JSON value of each line the way Jackson's ObjectMapper
// does by default: white space before it is skipped, anything after it is
// ignored (FAIL_ON_TRAILING_TOKENS is off), and the last of duplicate keys
// wins. An object is a message, an array a JSON-RPC batch of messages.
//
// Every tools/call it executes is appended to $READER_EXEC as one JSON line
// {"reader":"java","id":<id>,"tool":<name>}, before it is answered on
// stdout with a result. Other requests get an empty result; lines whose
// first value is not JSON are skipped.
//
// Run as a single-file program: java Reader.java
import java.io.BufferedReader;
import java.io.FileOutputStream;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

public class Reader {
    /** A JSON number, kept as its source text. */
    record Num(String text) {}

    static final class Parser {
        final String s;
        int i;

        Parser(String s) {
            this.s = s;
        }

        IllegalArgumentException bad() {
            return new IllegalArgumentException("bad JSON at " + i);
        }

        void ws() {
            while (i < s.length() && " \t\r\n".indexOf(s.charAt(i)) >= 0) {
                i++;
            }
        }

        Object value() {
            ws();
            if (i >= s.length()) {
                throw bad();
            }
            char c = s.charAt(i);
            switch (c) {
                case '{': {
                    i++;
                    Map<String, Object> m = new LinkedHashMap<>();
                    ws();
                    if (i < s.length() && s.charAt(i) == '}') {
                        i++;
                        return m;
                    }
                    while (true) {
                        ws();
                        String k = string();
                        ws();
                        expect(':');
                        m.put(k, value()); // the last duplicate wins
                        ws();
                        if (i < s.length() && s.charAt(i) == ',') {
                            i++;
                            continue;
                        }
                        expect('}');
                        return m;
                    }
                }
                case '[': {
                    i++;
                    List<Object> a = new ArrayList<>();
                    ws();
                    if (i < s.length() && s.charAt(i) == ']') {
                        i++;
                        return a;
                    }
                    while (true) {
                        a.add(value());
                        ws();
                        if (i < s.length() && s.charAt(i) == ',') {
                            i++;
                            continue;
                        }
                        expect(']');
                        return a;
                    }
                }
                case '"':
                    return string();
                case 't':
                    word("true");
                    return Boolean.TRUE;
                case 'f':
                    word("false");
                    return Boolean.FALSE;
                case 'n':
                    word("null");
                    return null;
                default:
                    return number();
            }
        }

        void expect(char c) {
            if (i >= s.length() || s.charAt(i) != c) {
                throw bad();
            }
            i++;
        }

        void word(String w) {
            if (!s.startsWith(w, i)) {
                throw bad();
            }
            i += w.length();
        }

        Num number() {
            int start = i;
            if (i < s.length() && s.charAt(i) == '-') {
                i++;
            }
            int digits = i;
            while (i < s.length() && Character.isDigit(s.charAt(i))) {
                i++;
            }
            if (i == digits || (s.charAt(digits) == '0' && i - digits > 1)) {
                throw bad();
            }
            if (i < s.length() && s.charAt(i) == '.') {
                i++;
                int f = i;
                while (i < s.length() && Character.isDigit(s.charAt(i))) {
                    i++;
                }
                if (i == f) {
                    throw bad();
                }
            }
            if (i < s.length() && (s.charAt(i) == 'e' || s.charAt(i) == 'E')) {
                i++;
                if (i < s.length() && (s.charAt(i) == '+' || s.charAt(i) == '-')) {
                    i++;
                }
                int e = i;
                while (i < s.length() && Character.isDigit(s.charAt(i))) {
                    i++;
                }
                if (i == e) {
                    throw bad();
                }
            }
            return new Num(s.substring(start, i));
        }

        String string() {
            expect('"');
            StringBuilder b = new StringBuilder();
            while (true) {
                if (i >= s.length()) {
                    throw bad();
                }
                char c = s.charAt(i++);
                if (c == '"') {
                    return b.toString();
                }
                if (c < 0x20) {
                    throw bad(); // Jackson rejects unescaped control characters by default
                }
                if (c != '\\') {
                    b.append(c);
                    continue;
                }
                if (i >= s.length()) {
                    throw bad();
                }
                char e = s.charAt(i++);
                switch (e) {
                    case '"', '\\', '/' -> b.append(e);
                    case 'b' -> b.append('\b');
                    case 'f' -> b.append('\f');
                    case 'n' -> b.append('\n');
                    case 'r' -> b.append('\r');
                    case 't' -> b.append('\t');
                    case 'u' -> {
                        if (i + 4 > s.length()) {
                            throw bad();
                        }
                        b.append((char) Integer.parseInt(s.substring(i, i + 4), 16));
                        i += 4;
                    }
                    default -> throw bad();
                }
            }
        }
    }

    static String quote(String v) {
        StringBuilder b = new StringBuilder("\"");
        for (char c : v.toCharArray()) {
            switch (c) {
                case '"' -> b.append("\\\"");
                case '\\' -> b.append("\\\\");
                default -> {
                    if (c < 0x20) {
                        b.append(String.format("\\u%04x", (int) c));
                    } else {
                        b.append(c);
                    }
                }
            }
        }
        return b.append('"').toString();
    }

    static String json(Object v) {
        if (v == null) {
            return "null";
        }
        if (v instanceof Num n) {
            return n.text();
        }
        if (v instanceof String str) {
            return quote(str);
        }
        return String.valueOf(v); // booleans; ids are never containers here
    }

    static PrintStream out;
    static String exec;

    static void serve(Object v) throws IOException {
        if (!(v instanceof Map<?, ?> m) || !(m.get("method") instanceof String method)) {
            return;
        }
        Object id = m.get("id");
        if (method.equals("tools/call")) {
            if (!(m.get("params") instanceof Map<?, ?> p) || !(p.get("name") instanceof String name)) {
                return;
            }
            try (FileOutputStream f = new FileOutputStream(exec, true)) {
                f.write(("{\"reader\":\"java\",\"id\":" + json(id) + ",\"tool\":" + quote(name) + "}\n").getBytes(StandardCharsets.UTF_8));
            }
            if (id != null) {
                out.print("{\"jsonrpc\":\"2.0\",\"id\":" + json(id) + ",\"result\":{\"content\":[{\"type\":\"text\",\"text\":" + quote("ran " + name) + "}]}}\n");
                out.flush();
            }
        } else if (id != null) {
            out.print("{\"jsonrpc\":\"2.0\",\"id\":" + json(id) + ",\"result\":{}}\n");
            out.flush();
        }
    }

    public static void main(String[] args) throws IOException {
        exec = System.getenv("READER_EXEC");
        out = new PrintStream(new FileOutputStream(java.io.FileDescriptor.out), false, StandardCharsets.UTF_8);
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String line;
        while ((line = in.readLine()) != null) {
            Object v;
            try {
                v = new Parser(line).value(); // the first value; trailing bytes ignored
            } catch (IllegalArgumentException e) {
                continue;
            }
            if (v instanceof List<?> batch) {
                for (Object m : batch) {
                    serve(m);
                }
            } else {
                serve(v);
            }
        }
    }
}
