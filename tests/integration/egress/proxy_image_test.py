#!/usr/bin/env python3
"""The egress proxy's image (images/egress) in a pool network behind the host firewall.

  proxy_image_test.py BINARY

Builds $SANDBOX_EGRESS_IMAGE (default sandbox-mcp-egress:test, kept as the cache) from BINARY
with images/egress/build.sh, starts it at .2 of a pool network as the server will (read-only,
no capabilities, no-new-privileges, the unprivileged-port sysctl, stdin attached), and checks:
its user and capabilities, the ready event, a sandbox's CONNECT answered 403 (no policy for
its address), a DNS query answered NXDOMAIN, and the stopped event and exit 0 when stdin ends.
Uses firewall_test.py's network and containers (labelled io.sandbox-mcp.test=egress-host,
removed at the end); needs the ruleset installed (CTest RESOURCE_LOCK egress_host_firewall).
"""
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import firewall_test as fw  # noqa: E402

IMAGE = os.environ.get("SANDBOX_EGRESS_IMAGE", "sandbox-mcp-egress:test")

CLIENT = r"""
import json, socket, sys
proxy = sys.argv[1]
s = socket.create_connection((proxy, 3128), timeout=10)
s.sendall(b"CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n")
head = b""
while b"\r\n\r\n" not in head:
    chunk = s.recv(4096)
    if not chunk:
        break
    head += chunk
u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); u.settimeout(10)
query = b"\xab\xcd\x01\x00\x00\x01\x00\x00\x00\x00\x00\x00\x07example\x03com\x00\x00\x01\x00\x01"
u.sendto(query, (proxy, 53))
answer, _ = u.recvfrom(512)
print(json.dumps({"status": head.split(b"\r\n")[0].decode(errors="replace"),
                  "dns_id": answer[:2].hex(), "rcode": answer[3] & 15}))
"""


def main():
    if len(sys.argv) != 2:
        print("usage: proxy_image_test.py BINARY", file=sys.stderr)
        return 2
    if fw.firewall("check").returncode != 0:
        fw.log("the host firewall is not installed (deploy/egress/host-firewall.sh install)")
        return 1
    build = subprocess.run(["bash", os.path.join(fw.SOURCE, "images/egress/build.sh"), sys.argv[1]],
                           env=dict(os.environ, SANDBOX_EGRESS_IMAGE=IMAGE), text=True,
                           capture_output=True)
    fw.log(build.stderr.strip())
    if build.returncode != 0:
        return 1
    tag = f"eghimg{os.getpid()}"
    proxy = f"{tag}-proxy"
    try:
        net = fw.Network(f"{tag}-pool", "sbxeg")
        fw.docker("create", "-i", "--name", proxy, "--label", fw.LABEL, "--network", net.name,
                  "--ip", net.addr(2), "--read-only", "--cap-drop", "ALL",
                  "--security-opt", "no-new-privileges",
                  "--sysctl", "net.ipv4.ip_unprivileged_port_start=53",
                  "--memory", "64m", "--pids-limit", "64", IMAGE)
        # Attached as the server attaches it: its stdin is the control channel.
        attached = subprocess.Popen(["docker", "start", "-ai", proxy], stdin=subprocess.PIPE,
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        ready = json.loads(attached.stdout.readline() or "{}")
        fw.expect_equal("first event", "ready", ready.get("ev"))
        fw.expect_equal("ready: listen, dns_port", ["0.0.0.0:3128", 53],
                        [ready.get("listen"), ready.get("dns_port")])
        state = json.loads(fw.docker("inspect", proxy).stdout)[0]
        fw.expect_equal("user", "65534:65534", state["Config"]["User"])
        fw.expect_equal("read-only root", True, state["HostConfig"]["ReadonlyRootfs"])
        caps = fw.docker("exec", proxy, "grep", "-E", "^Cap(Prm|Eff|Bnd)",
                         "/proc/1/status").stdout.split()
        fw.expect_equal("capabilities (permitted, effective, bounding)", ["0" * 16] * 3,
                        caps[1::2])

        fw.start(f"{tag}-s1", net, net.addr(10), "10001:10001")
        client = fw.docker("exec", f"{tag}-s1", "python3", "-c", CLIENT, net.addr(2))
        answer = json.loads(client.stdout)
        fw.expect_equal("sandbox's CONNECT (no policy for its address)", "HTTP/1.1 403 Forbidden",
                        answer["status"])
        fw.expect_equal("sandbox's DNS query: id, rcode", ["abcd", 3],
                        [answer["dns_id"], answer["rcode"]])

        try:
            out, err = attached.communicate(timeout=30)  # closes stdin first
        except subprocess.TimeoutExpired:
            attached.kill()
            out, err = attached.communicate()
        events = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
        fw.expect_equal("last event when stdin ends", "stopped",
                        events[-1]["ev"] if events else None)
        fw.expect_equal("exit code", 0, attached.returncode)
        conns = [e for e in events if e.get("ev") == "conn"]
        fw.expect_equal("conn event: addr, verdict", [net.addr(10), "refused"],
                        [conns[0].get("addr"), conns[0].get("verdict")] if conns else None)
        if fw.failures:
            fw.log("proxy stderr:\n" + err)
    finally:
        fw.docker("rm", "-f", proxy, f"{tag}-s1", check=False)
        made = fw.docker("network", "ls", "-q", "--filter", f"name={tag}-",
                         "--filter", f"label={fw.LABEL}", check=False).stdout.split()
        if made:
            fw.docker("network", "rm", *made, check=False)
    if fw.failures:
        fw.log(f"{len(fw.failures)} failed: {', '.join(fw.failures)}")
        return 1
    fw.log("all passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
