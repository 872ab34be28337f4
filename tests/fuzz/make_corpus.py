#!/usr/bin/env python3
"""Writes the seed corpora of the fuzz targets (tests/fuzz/corpus/<target>/) from the protocol
documents' and the unit tests' examples: real MCP conversations, HTTP requests, engine streams,
harness frames. Run it again after changing a target's input layout:
    python3 tests/fuzz/make_corpus.py
Targets that read their input with libFuzzer's FuzzedDataProvider get inputs encoded the way it
decodes them (Fdp below): integers from the end, strings from the front."""
import base64
import hashlib
import json
import os
import struct

HERE = os.path.dirname(os.path.abspath(__file__))


class Fdp:
    """Builds bytes that FuzzedDataProvider decodes to the values added, in order."""

    def __init__(self):
        self.front = bytearray()
        self.back = bytearray()  # in consumption order; stored reversed at the end

    def int_in_range(self, lo, hi, value):
        span, v, shift = hi - lo, value - lo, 0
        chunks = []
        while shift < 64 and (span >> shift) > 0:
            chunks.append(0)
            shift += 8
        # The first byte consumed is the most significant of `result`.
        for i in range(len(chunks)):
            chunks[i] = (v >> (8 * (len(chunks) - 1 - i))) & 0xFF
        self.back += bytes(chunks)
        return self

    def boolean(self, value):
        return self.int_in_range(0, 255, 1 if value else 0)

    def u8(self, value):
        return self.int_in_range(0, 255, value)

    def u16(self, value):
        return self.int_in_range(0, 65535, value)

    def pick(self, options, value):
        return self.int_in_range(0, len(options) - 1, options.index(value))

    def string(self, text):
        data = text.encode() if isinstance(text, str) else text
        self.front += data.replace(b"\\", b"\\\\") + b"\\n"  # "\\" + other ends the string
        return self

    def rest(self, data):
        self.front += data
        return self

    def bytes(self):
        return bytes(self.front) + bytes(reversed(self.back))


def write(target, name, data):
    folder = os.path.join(HERE, "corpus", target)
    os.makedirs(folder, exist_ok=True)
    if isinstance(data, str):
        data = data.encode()
    with open(os.path.join(folder, name), "wb") as f:
        f.write(data)


def rpc(id_, method, params=None):
    m = {"jsonrpc": "2.0", "id": id_, "method": method}
    if params is not None:
        m["params"] = params
    return json.dumps(m, separators=(",", ":"))


def note(method, params=None):
    m = {"jsonrpc": "2.0", "method": method}
    if params is not None:
        m["params"] = params
    return json.dumps(m, separators=(",", ":"))


VERSIONS = ["2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"]
SESSION = "00000000000000000000000000000001"  # the fake session service's first id
INIT = rpc(0, "initialize", {"protocolVersion": "2025-11-25", "capabilities": {},
                             "clientInfo": {"name": "seed", "version": "1"}})
CALL = rpc(2, "tools/call", {"name": "run_python", "arguments": {"code": "print(1)"},
                             "_meta": {"progressToken": "p1"}})
MCP_MESSAGES = [
    note("notifications/initialized"),
    rpc(1, "ping"),
    rpc("a", "tools/list"),
    CALL,
    rpc(3, "tools/call", {"name": "sandbox_info", "arguments": {}}),
    rpc(4, "tools/call", {"name": "session_create", "arguments": {}}),
    rpc(5, "tools/call", {"name": "run_python", "arguments": {"code": "x=1", "session_id": SESSION,
                                                              "files": [{"path": "a.txt", "content_base64": "aGk="}]}}),
    rpc(6, "tools/call", {"name": "session_upload_file", "arguments": {"session_id": SESSION, "path": "d/b.bin", "content_base64": "AAE="}}),
    rpc(7, "tools/call", {"name": "session_list_files", "arguments": {"session_id": SESSION}}),
    rpc(8, "tools/call", {"name": "session_download_file", "arguments": {"session_id": SESSION, "path": "a.txt"}}),
    rpc(9, "resources/list", {}),
    rpc(10, "resources/templates/list"),
    rpc(11, "resources/read", {"uri": "sandbox://sessions/%s/files/a.txt" % SESSION}),
    rpc(12, "tools/call", {"name": "session_list", "arguments": {}}),
    rpc(13, "tools/call", {"name": "session_close", "arguments": {"session_id": SESSION}}),
    rpc(14, "logging/setLevel", {"level": "debug"}),
    note("notifications/cancelled", {"requestId": 2, "reason": "seed"}),
    '{"jsonrpc":"2.0","id":9,"result":{}}',
    '{"jsonrpc":"2.0","id":[1],"method":"ping"}',
    '{not json',
]


def mcp_dispatcher():
    for i, v in enumerate(VERSIONS):
        write("mcp_dispatcher", "conversation-%s" % v, bytes([i]) + "\n".join(MCP_MESSAGES).encode())
    batch = "[" + ",".join([rpc(1, "ping"), note("notifications/initialized"), CALL,
                            '{"jsonrpc":"2.0","id":5,"method":5}', INIT]) + "]"
    write("mcp_dispatcher", "batch-2025-03-26", bytes([VERSIONS.index("2025-03-26")]) +
          (batch + "\n[]\n" + batch).encode())
    for m in MCP_MESSAGES:
        write("mcp_dispatcher", "one-" + hashlib.sha1(m.encode()).hexdigest()[:10], b"\x00" + m.encode())


HTTP_METHODS = ["POST", "POST", "POST", "GET", "DELETE", "PUT", "PATCH", "OPTIONS", "HEAD"]


def http_step(f, method, path_choice, flags, body=None, init_version=None, init_id=0):
    """One Conversation::Step of fuzz_http_transport (good header values where flags say so)."""
    f.int_in_range(0, 9, 1)  # a step, not a DELETE
    f.int_in_range(0, 15, 1)  # not raw bytes
    f.pick(HTTP_METHODS, method)
    f.int_in_range(0, 7, path_choice)
    f.u16(flags)
    if flags & 8192:
        f.pick(VERSIONS, init_version)
        f.u8(init_id)
    else:
        f.string(body or "")


def http_transport():
    # flags: bit 3-4 principal (1 = alice), 8192 = an initialize body.
    alice = 1 << 3
    f = Fdp().int_in_range(1, 8, 4)
    http_step(f, "POST", 0, alice | 8192, init_version="2025-11-25")
    http_step(f, "POST", 0, alice, body=note("notifications/initialized"))
    http_step(f, "POST", 0, alice, body=rpc(1, "tools/list"))
    http_step(f, "POST", 0, alice, body=CALL)
    write("http_transport", "streamable-session", f.bytes())

    f = Fdp().int_in_range(1, 8, 3)
    http_step(f, "POST", 0, alice | 8192, init_version="2025-03-26")
    http_step(f, "POST", 0, alice, body="[" + rpc(1, "ping") + "," + rpc(2, "tools/list") + "]")
    http_step(f, "GET", 0, alice, body="")
    write("http_transport", "streamable-batch", f.bytes())

    f = Fdp().int_in_range(1, 8, 3)
    http_step(f, "GET", 3, alice | 512, body="")
    http_step(f, "POST", 4, alice | 512, body=INIT)
    http_step(f, "POST", 4, alice | 512, body=CALL)
    write("http_transport", "legacy-sse", f.bytes())

    f = Fdp().int_in_range(1, 8, 2)
    http_step(f, "POST", 0, (2 << 3) | 8192, init_version="2025-06-18")  # bob
    http_step(f, "POST", 0, alice, body=rpc(1, "ping"))  # alice on bob's session
    write("http_transport", "other-principal", f.bytes())

    f = Fdp().int_in_range(1, 8, 1)
    f.int_in_range(0, 9, 1).int_in_range(0, 15, 0)
    f.string("POST /mcp HTTP/1.1\r\nHost: localhost\r\nContent-Length: 2\r\n\r\n{}")
    write("http_transport", "raw", f.bytes())


MODERN_METHODS = ["server/discover", "tools/list", "tools/call", "tools/call", "resources/list",
                  "resources/read", "resources/templates/list", "tasks/get", "initialize", "ping",
                  "notifications/cancelled", "prompts/get"]


def modern_step(f, c, method=None, id_=1, tool=0, strings=()):
    """One Conversation::Step of fuzz_http_transport sending a 2026-07-28 request (flags bit 14)
    as alice without Mcp-Session-Id, every other header good. `c`: the request's choices
    (MakeModernPost); `strings`: its fuzzed strings in the order it reads them."""
    f.int_in_range(0, 9, 1)
    f.int_in_range(0, 15, 1)
    f.pick(HTTP_METHODS, "POST")
    f.int_in_range(0, 7, 0)
    f.u16((1 << 3) | 512 | 16384)
    f.u16(c)
    if not c & 1:
        f.pick(MODERN_METHODS, method)
        if not c & 2:
            f.u8(id_)
        if method in ("tools/call", "prompts/get"):
            f.int_in_range(0, 5, tool)
    for text in strings:
        f.string(text)


def http_transport_modern():
    # c: bit 0 fuzzed body, 3-4 _meta (2: no capabilities), 5 logLevel, 6 capabilities,
    # 7-8 MCP-Protocol-Version (1: padded), 9-10 Mcp-Method and 11-12 Mcp-Name (1: base64,
    # 2: absent, 3: fuzzed), 13 fuzzed values base64-wrapped.
    f = Fdp().int_in_range(1, 8, 5)
    modern_step(f, 0, "server/discover", 1)
    modern_step(f, 0, "tools/list", 2)
    modern_step(f, 1 << 11, "tools/call", 3)
    modern_step(f, (1 << 7) | (1 << 9) | 32 | 64, "tools/call", 4)
    modern_step(f, 1 << 11, "resources/read", 5, strings=[SESSION + "/files/a.txt"])
    write("http_transport", "modern", f.bytes())

    f = Fdp().int_in_range(1, 8, 5)
    modern_step(f, 3 << 9, "server/discover", 1, strings=["tools/list"])  # Mcp-Method differs
    modern_step(f, 2 << 9, "tools/list", 2)  # Mcp-Method missing
    modern_step(f, (3 << 11) | 8192, "tools/call", 3, strings=["cnVuX3B5dGhvbg=="])  # wrapped
    modern_step(f, 2 << 3, "tools/list", 4)  # _meta without capabilities
    modern_step(f, 4, "initialize", 5)  # removed in this revision: 404, a string id
    write("http_transport", "modern-refusals", f.bytes())

    f = Fdp().int_in_range(1, 8, 2)
    modern_step(f, 1 | (1 << 11), strings=[rpc(7, "tools/list", {"_meta": {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {}}})])
    modern_step(f, 1 << 3, "tools/list", 8, strings=["2025-11-25"])  # a legacy version in _meta
    write("http_transport", "modern-raw", f.bytes())


API_METHODS = ["POST", "POST", "GET", "PUT", "DELETE", "HEAD"]


def api_step(f, method, route, flags, body, live_id=False, extra=None):
    f.pick(API_METHODS, method)
    f.boolean(live_id)
    if not live_id:
        f.string(SESSION)
    f.int_in_range(0, 7, route)
    if route == 5:
        f.string(extra or "a.txt")
    f.u8(flags)
    f.string(body)


def api_routes():
    eval_bodies = [
        {"input": "print('Hello, world!')"},
        {"args": ["-c", "import sys; print(sys.argv)", "x"]},
        {"args": ["main.py", "arg"], "files": [{"path": "main.py", "content": base64.b64encode(b"print(1)").decode()}]},
        {"input": "print(1)", "executable_path": "/snekbin/python/default/bin/python"},
        {"args": ["-m", "timeit", "1"]},
        {"input": "x", "files": [{"path": "../etc/passwd"}]},
    ]
    for i, b in enumerate(eval_bodies):
        f = Fdp().int_in_range(1, 6, 1)
        api_step(f, "POST", 0, 0, json.dumps(b))
        write("api_routes", "eval-%d" % i, f.bytes())
    execute = [
        {"code": "print(1)"},
        {"code": "print(1)", "timeout_s": 5, "memory_bytes": 268435456, "output_bytes": 1000},
        {"code": "open('a').read()", "files": [{"path": "a", "content_base64": "aGk="}], "pool": "default"},
    ]
    for i, b in enumerate(execute):
        for stream in (0, 4):
            f = Fdp().int_in_range(1, 6, 1)
            api_step(f, "POST", 1, stream, json.dumps(b))
            write("api_routes", "execute-%d-%d" % (i, stream), f.bytes())
    f = Fdp().int_in_range(1, 6, 6)
    api_step(f, "POST", 2, 0, json.dumps({"pool": "default", "timeout_s": 10}))
    api_step(f, "PUT", 5, 0, "file bytes", live_id=True, extra="dir/f.txt")
    api_step(f, "GET", 4, 0, "", live_id=True)
    api_step(f, "POST", 1, 16, json.dumps({"code": "print(2)", "session_id": "@id"}), live_id=True)
    api_step(f, "GET", 5, 0, "", live_id=True, extra="dir/f.txt")
    api_step(f, "DELETE", 3, 0, "", live_id=True)
    write("api_routes", "sessions", f.bytes())


def frame_docker(kind, payload):
    return struct.pack(">BxxxI", kind, len(payload)) + payload


def docker_stream():
    stream = (frame_docker(1, b"hello ") + frame_docker(2, b"oops\n") + frame_docker(1, b"") +
              frame_docker(1, b"world\n") + frame_docker(2, b"bye"))
    cuts = [1, 3, 8, 9, 2]
    def encode(with_head, data):
        f = Fdp().boolean(with_head).int_in_range(0, 16, len(cuts))
        for c in cuts:
            f.int_in_range(0, 64, c)
        return f.rest(data).bytes()
    write("docker_stream", "frames", encode(False, stream))
    write("docker_stream", "error-frame", encode(False, frame_docker(1, b"x") + frame_docker(3, b"no such container")))
    write("docker_stream", "truncated", encode(False, stream[:-2]))
    head = b"HTTP/1.1 101 UPGRADED\r\nContent-Type: application/vnd.docker.multiplexed-stream\r\nConnection: Upgrade\r\nUpgrade: tcp\r\n\r\n"
    write("docker_stream", "attach-101", encode(True, head + stream))
    write("docker_stream", "attach-200", encode(True, b"HTTP/1.1 200 OK\r\nContent-Type: application/vnd.docker.raw-stream\r\n\r\n" + stream))
    write("docker_stream", "attach-404", encode(True, b'HTTP/1.1 404 Not Found\r\nContent-Type: application/json\r\nContent-Length: 44\r\n\r\n{"message":"No such container: 0123456789"}'))


def tar_entry(name, content, kind=b"0"):
    header = bytearray(512)
    header[0:len(name)] = name
    header[100:108] = b"0000644\x00"
    header[108:116] = b"0000000\x00"
    header[116:124] = b"0000000\x00"
    header[124:136] = b"%011o\x00" % len(content)
    header[136:148] = b"%011o\x00" % 1700000000
    header[148:156] = b" " * 8
    header[156:157] = kind
    header[257:263] = b"ustar\x00"
    header[263:265] = b"00"
    header[148:156] = b"%06o\x00 " % sum(header)
    pad = (512 - len(content) % 512) % 512
    return bytes(header) + content + b"\x00" * pad


def docker_answers():
    tar = tar_entry(b"out/plot.png", b"\x89PNG data") + tar_entry(b"dir/", b"", b"5")
    write("docker_answers", "tar", b"\x00" + tar + b"\x00" * 1024)
    pax = b"30 path=very/long/name/here.txt\n"
    write("docker_answers", "tar-pax", b"\x00" + tar_entry(b"PaxHeader", pax, b"x") + tar_entry(b"short", b"data") + b"\x00" * 1024)
    stat = {"name": "plot.png", "size": 9, "mode": 420, "mtime": "2026-12-03T10:00:00Z", "linkTarget": ""}
    write("docker_answers", "path-stat", b"\x01" + base64.b64encode(json.dumps(stat).encode()))
    event = {"Type": "container", "Action": "die", "Actor": {"ID": "abc", "Attributes": {"exitCode": "137", "name": "x"}},
             "time": 1700000000, "timeNano": 1700000000123456789}
    write("docker_answers", "event", b"\x02" + json.dumps(event).encode())
    write("docker_answers", "error-body", b"\x03" + b'{"message":"No such container: abc"}')
    version = {"Version": "20.10.24", "ApiVersion": "1.41", "MinAPIVersion": "1.12", "Os": "linux"}
    write("docker_answers", "version", b"\x04" + json.dumps(version).encode())
    inspect = {"Id": "abc", "State": {"Status": "exited", "Running": False, "ExitCode": 137, "OOMKilled": True},
               "Config": {"Labels": {"io.sandbox-mcp.managed": "true"}}, "Name": "/x"}
    write("docker_answers", "inspect", b"\x04" + json.dumps(inspect).encode())
    write("docker_answers", "wait", b"\x04" + b'{"StatusCode":1,"Error":{"Message":"x"}}')


def frame_harness(kind, payload):
    return struct.pack(">I", len(payload)) + kind + payload


def harness_frames():
    stream = (frame_harness(b"J", b'{"ev":"ready"}') + frame_harness(b"1", b"") +
              frame_harness(b"1", b"hello\n") + frame_harness(b"2", b"e" * 70) +
              frame_harness(b"J", b'{"ev":"done","id":"run-1","verdict":"ok","exit_code":0}'))
    for name, limit, data in [("frames", None, stream), ("over-limit", 16, stream),
                              ("bad-kind", None, stream[:9] + b"X" + stream[10:]),
                              ("partial", None, stream[:-3])]:
        f = Fdp().boolean(limit is None)
        if limit is not None:
            f.int_in_range(0, 64, limit)
        f.int_in_range(0, 16, 3).int_in_range(0, 32, 1).int_in_range(0, 32, 4).int_in_range(0, 32, 6)
        write("harness_frames", name, f.rest(data).bytes())


def small():
    for i, text in enumerate([b"", b"f", b"fo", b"foo", b"Zm9v", b"Zm9vYg==", b"Zm9vYmE=", b"AAE=",
                              b"\x03\x01\x02\xe2\x82\xac caf\xc3\xa9", b"\x02\x01\xf0\x9f\x98\x80\xed\xa0\x80\xc0\xaf",
                              b"\x00\xe2\x82", b"\x05\x07\x07\x07\x07\x07\xf4\x90\x80\x80\xef\xbf\xbd"]):
        write("core_codecs", "seed-%d" % i, text)
    for i, text in enumerate([b'\x00{"a":[1,2.5,"x",null,true,{"b":{}}]}', b"\x00[[[[[[[[]]]]]]]]",
                              b"\x03[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]]", b'\x01{"a": 1 /* c */, // d\n "b": 2}',
                              b'\x00"\\u00e9\\ud83d\\ude00"', b"\x00-0.0e+12", b'\x00{"a":"[[[["}', b"\x00[1,]"]):
        write("json", "seed-%d" % i, text)
    for i, text in enumerate(["sandbox://sessions/%s/files/out/plot.png" % SESSION,
                              "sandbox://sessions/abc_-1/files/a%20b%2Fc%3F", "sandbox://sessions//files/x",
                              "sandbox://sessions/id/files/a?b", "sandbox://runs/run-1/files/x", "%00", "a%zz",
                              "dir/file name.txt"]):
        write("session_uri", "seed-%d" % i, text)


if __name__ == "__main__":
    mcp_dispatcher()
    http_transport()
    http_transport_modern()
    api_routes()
    docker_stream()
    docker_answers()
    harness_frames()
    small()
