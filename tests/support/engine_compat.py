"""Drives a Docker-compatible engine through the calls sandbox-mcp makes, with the container
body it sends (src/runner/sandbox_spec.cc + src/docker/container_spec.cc, default pool values,
written out by hand: keep it in step with those files), and prints PASS/FAIL per call. A manual
probe for engines other than Docker (docs/scale-out.md, "Podman"), not a CTest test.

Usage: engine_compat.py SOCKET IMAGE SECCOMP_JSON_FILE
  SOCKET             the engine's Unix socket (/var/run/docker.sock, /run/podman/podman.sock)
  SECCOMP_JSON_FILE  compact profile: jq -c . policies/seccomp-container.json > /tmp/profile.json
  SECCOMP_AS_PATH=1  send the profile's path instead of its text (what Podman 4.x expects)
Creates only containers labelled io.sandbox-mcp.instance=compat-<time> and removes them."""
import json, os, socket, struct, sys, time, urllib.parse

SOCK, IMAGE, PROFILE = sys.argv[1], sys.argv[2], sys.argv[3]
V = "/v1.41"
INSTANCE = "compat-%d" % int(time.time())

def request(method, path, body=None, timeout=30, raw=False):
    s = socket.socket(socket.AF_UNIX); s.settimeout(timeout); s.connect(SOCK)
    data = b"" if body is None else json.dumps(body).encode()
    head = f"{method} {path} HTTP/1.1\r\nHost: docker\r\nConnection: close\r\n"
    if body is not None: head += "Content-Type: application/json\r\n"
    head += f"Content-Length: {len(data)}\r\n\r\n"
    s.sendall(head.encode() + data)
    buf = b""
    while True:
        chunk = s.recv(65536)
        if not chunk: break
        buf += chunk
    s.close()
    head, _, rest = buf.partition(b"\r\n\r\n")
    status = int(head.split()[1])
    headers = {l.split(b":")[0].strip().lower().decode(): l.split(b":", 1)[1].strip().decode()
               for l in head.split(b"\r\n")[1:] if b":" in l}
    if headers.get("transfer-encoding") == "chunked":
        out = b""
        while rest:
            n, _, rest = rest.partition(b"\r\n"); n = int(n, 16)
            if n == 0: break
            out += rest[:n]; rest = rest[n + 2:]
        rest = out
    return status, headers, rest

def step(name, ok, detail=""):
    print(("PASS " if ok else "FAIL ") + name + (": " + detail if detail else ""), flush=True)

profile = json.load(open(PROFILE))
bootstrap = ("import sys;b=sys.stdin.buffer;n=int(b.readline());"
             "exec(compile(b.read(n),'<harness>','exec'))")
body = {
    "Image": IMAGE, "Cmd": ["/snekbin/python/default/bin/python", "-I", "-u", "-c", bootstrap], "Entrypoint": [],
    "User": "10001:10001", "WorkingDir": "/tmp",
    "Labels": {"io.sandbox-mcp.managed": "true", "io.sandbox-mcp.instance": INSTANCE,
               "io.sandbox-mcp.pool": "default", "io.sandbox-mcp.mode": "recycle"},
    "Tty": False, "OpenStdin": True, "AttachStdin": True, "AttachStdout": True,
    "AttachStderr": True, "StdinOnce": True, "NetworkDisabled": True,
    "HostConfig": {
        "NetworkMode": "none", "Memory": 805306368, "MemorySwap": 805306368,
        "NanoCpus": 1000000000, "PidsLimit": 136, "ReadonlyRootfs": True,
        "Tmpfs": {"/tmp": "rw,nosuid,nodev,size=268435456,mode=1777"}, "CapDrop": ["ALL"],
        "SecurityOpt": ["no-new-privileges:true", "seccomp=" + (os.path.abspath(PROFILE) if os.environ.get("SECCOMP_AS_PATH") else json.dumps(profile, separators=(",", ":")))],
        "Ulimits": [{"Name": "nproc", "Soft": 1024, "Hard": 1024},
                    {"Name": "nofile", "Soft": 1024, "Hard": 1024},
                    {"Name": "fsize", "Soft": 268435456, "Hard": 268435456},
                    {"Name": "core", "Soft": 0, "Hard": 0}],
        "Init": True, "IpcMode": "private", "ShmSize": 67108864, "AutoRemove": True}}

st, h, out = request("GET", "/_ping"); step("ping", st == 200, "Api-Version " + h.get("api-version", "?"))
st, h, out = request("GET", V + "/images/" + urllib.parse.quote(IMAGE, safe="") + "/json")
labels = json.loads(out).get("Config", {}).get("Labels") if st == 200 else None
step("image inspect", st == 200, f"status {st}, labels {labels}")
st, h, out = request("POST", V + "/containers/create", body)
step("create with the server's body", st == 201, f"status {st} {out[:300].decode(errors='replace')}")
if st != 201: sys.exit(1)
cid = json.loads(out)["Id"]
st, h, out = request("GET", V + f"/containers/{cid}/json")
hc = json.loads(out)["HostConfig"]
checks = {k: hc.get(k) for k in ["NetworkMode", "Memory", "MemorySwap", "NanoCpus", "PidsLimit",
                                  "ReadonlyRootfs", "Tmpfs", "CapDrop", "Init", "IpcMode", "ShmSize",
                                  "AutoRemove", "Ulimits"]}
sec = [o[:40] for o in (hc.get("SecurityOpt") or [])]
step("inspect (HostConfig as the engine kept it)", st == 200, json.dumps(checks) + " SecurityOpt " + json.dumps(sec) + " Config.User " + json.dumps(json.loads(out)["Config"].get("User")))

# attach with stdin, before start, as runner/harness_sandbox.cc does (Upgrade: tcp)
a = socket.socket(socket.AF_UNIX); a.settimeout(20); a.connect(SOCK)
a.sendall((f"POST {V}/containers/{cid}/attach?stream=1&stdin=1&stdout=1&stderr=1 HTTP/1.1\r\n"
           "Host: docker\r\nConnection: Upgrade\r\nUpgrade: tcp\r\nContent-Length: 0\r\n\r\n").encode())
resp = b""
while b"\r\n\r\n" not in resp: resp += a.recv(1)
line = resp.split(b"\r\n")[0].decode()
ctype = [l for l in resp.decode().split("\r\n") if l.lower().startswith("content-type")]
step("attach (hijack) before start", line.split()[1] in ("101", "200"), f"{line} {ctype}")
st, h, out = request("POST", V + f"/containers/{cid}/start")
step("start", st in (204, 304), f"status {st} {out[:200].decode(errors='replace')}")
code = ("import os,resource,sys\nprint('hello', os.getuid(), resource.getrlimit(resource.RLIMIT_NPROC))\n"
        "print('to stderr', file=sys.stderr)\nprint(sys.stdin.buffer.read())\n").encode()
a.sendall(str(len(code)).encode() + b"\n" + code + b"rest of stdin")
a.shutdown(socket.SHUT_WR)  # closes the container's stdin (EOF for the harness)
raw = b""
try:
    while True:
        c = a.recv(65536)
        if not c: break
        raw += c
except socket.timeout:
    step("output ends at exit", False, "timed out")
frames, i = [], 0
while i + 8 <= len(raw):
    kind, size = raw[i], struct.unpack(">I", raw[i + 4:i + 8])[0]
    frames.append((kind, raw[i + 8:i + 8 + size])); i += 8 + size
stdout = b"".join(p for k, p in frames if k == 1); stderr = b"".join(p for k, p in frames if k == 2)
step("multiplexed stdout/stderr frames", b"hello 10001" in stdout and b"to stderr" in stderr and b"rest of stdin" in stdout,
     f"stdout={stdout!r} stderr={stderr!r}" + ("" if frames else f" unframed={raw[:80]!r}"))
time.sleep(1)
st, h, out = request("GET", V + f"/containers/{cid}/json")
step("AutoRemove removed it after exit", st == 404, f"inspect status {st}")

# second container: update, list by label, kill, wait next-exit, remove force, wait removed, events
body2 = json.loads(json.dumps(body)); body2["HostConfig"]["AutoRemove"] = False
body2["Cmd"] = ["/snekbin/python/default/bin/python", "-c", "import time; time.sleep(300)"]; body2["StdinOnce"] = False
st, h, out = request("POST", V + "/containers/create", body2); cid = json.loads(out)["Id"]
request("POST", V + f"/containers/{cid}/start")
st, h, out = request("POST", V + f"/containers/{cid}/update", {"Memory": 536870912, "MemorySwap": 536870912, "PidsLimit": 64})
step("update (narrow Memory, PidsLimit)", st == 200, f"status {st} {out[:200].decode(errors='replace')}")
st, h, out = request("GET", V + f"/containers/{cid}/json")
hc = json.loads(out)["HostConfig"]; step("update took effect", hc.get("Memory") == 536870912 and hc.get("PidsLimit") == 64,
                                        f"Memory {hc.get('Memory')} PidsLimit {hc.get('PidsLimit')}")
flt = urllib.parse.quote(json.dumps({"label": ["io.sandbox-mcp.managed=true", "io.sandbox-mcp.instance=" + INSTANCE]}))
st, h, out = request("GET", V + f"/containers/json?all=1&filters={flt}")
listed = [c["Id"] for c in json.loads(out)] if st == 200 else []
step("list by two label filters", st == 200 and listed == [cid], f"status {st}, {len(listed)} listed")
# events stream filtered by label, read in the background
ev = socket.socket(socket.AF_UNIX); ev.settimeout(15); ev.connect(SOCK)
eflt = urllib.parse.quote(json.dumps({"type": ["container"], "label": ["io.sandbox-mcp.instance=" + INSTANCE]}))
ev.sendall(f"GET {V}/events?filters={eflt} HTTP/1.1\r\nHost: docker\r\n\r\n".encode())
time.sleep(0.5)
w = socket.socket(socket.AF_UNIX); w.settimeout(30); w.connect(SOCK)
w.sendall(f"POST {V}/containers/{cid}/wait?condition=next-exit HTTP/1.1\r\nHost: docker\r\nContent-Length: 0\r\n\r\n".encode())
time.sleep(0.5)
st, h, out = request("POST", V + f"/containers/{cid}/kill?signal=SIGKILL")
step("kill SIGKILL", st == 204, f"status {st}")
wres = b""
try:
    while b"StatusCode" not in wres: wres += w.recv(4096)
except socket.timeout: pass
step("wait next-exit returns the exit code", b'"StatusCode":137' in wres.replace(b" ", b""), repr(wres[-160:]))
st, h, out = request("POST", V + f"/containers/{cid}/kill?signal=SIGKILL")
step("kill a stopped container answers 409", st == 409, f"status {st}")
# archive get (not used by the server today, checked anyway)
st, h, out = request("GET", V + f"/containers/{cid}/archive?path=/etc/hostname")
step("archive get on a stopped container", st == 200 and "x-docker-container-path-stat" in h, f"status {st}")
w2 = socket.socket(socket.AF_UNIX); w2.settimeout(30); w2.connect(SOCK)
w2.sendall(f"POST {V}/containers/{cid}/wait?condition=removed HTTP/1.1\r\nHost: docker\r\nContent-Length: 0\r\n\r\n".encode())
time.sleep(0.3)
st, h, out = request("DELETE", V + f"/containers/{cid}?force=1&v=1")
step("remove force", st == 204, f"status {st}")
wres = b""
try:
    while b"StatusCode" not in wres:
        c = w2.recv(4096)
        if not c: break
        wres += c
except socket.timeout: pass
step("wait condition=removed returns", b"StatusCode" in wres, repr(wres[-160:]))
evs = b""
try:
    while True:
        c = ev.recv(65536)
        if not c: break
        evs += c
        if b'"destroy"' in evs or b'"remove"' in evs: break
except socket.timeout: pass
actions = [a for a in ["create", "start", "kill", "die", "destroy", "remove"] if f'"{a}"'.encode() in evs]
step("events filtered by label (kill/die/destroy after subscribing)", "die" in actions and ("destroy" in actions or "remove" in actions), f"actions seen: {actions}")
st, h, out = request("GET", V + "/containers/json?all=1&filters=" + flt)
step("nothing left", st == 200 and json.loads(out) == [], out[:100].decode(errors="replace"))
