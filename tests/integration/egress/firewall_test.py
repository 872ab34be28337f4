#!/usr/bin/env python3
"""The egress host firewall (deploy/egress/host-firewall.sh) against real containers.

A pool network as the server makes it (internal, ICC off, IPv6 off, bridge sbxeg<N>, a /24 of
10.213.0.0/16 unused at the time), a stand-in proxy at .2 (python3 listening on 3128 and 53,
plus a port the rules must hide), two sandbox-like containers, and a second pool network with
a proxy of its own (reached only from its own bridge). Each check states its
expected verdict: "open", "answered", "refused" (ECONNREFUSED), "unreachable" (EHOSTUNREACH),
or "refused/unreachable"; a refusal must come within 1 s, never as a timeout.

  firewall_test.py            installs the tree's ruleset (idempotent), then the checks
  firewall_test.py --toggle   the server's probe (.2 -> gateway:1) with the rules installed
                              (EHOSTUNREACH), removed (ECONNREFUSED) and installed again;
                              it takes the rules away from the whole host for a few seconds,
                              hence its own test (CTest RESOURCE_LOCK egress_host_firewall)

Needs root, the engine and the sandbox image ($SANDBOX_IMAGE, default
sandbox-mcp-python:latest). Everything it creates is labelled io.sandbox-mcp.test=egress-host
and removed at the end.
"""
import errno
import ipaddress
import json
import os
import random
import socket
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.environ.get("SANDBOX_SOURCE_DIR") or os.path.normpath(os.path.join(HERE, "../../.."))
FIREWALL = os.path.join(SOURCE, "deploy/egress/host-firewall.sh")
IMAGE = os.environ.get("SANDBOX_IMAGE", "sandbox-mcp-python:latest")
CONNLIMIT = int(os.environ.get("SANDBOX_EGRESS_CONNLIMIT", "40"))
PROXY_PORT = 3128
HIDDEN_PORT = 8080  # the stand-in proxy and sandbox 2 listen here too: only the rules hide it
LABEL = "io.sandbox-mcp.test=egress-host"
FAST_MS = 1000  # "refused immediately"

# Runs in the stand-in proxy and in sandbox 2: accepts TCP connections and holds each until its
# peer closes it (then closes too, as a proxy does: a half-closed connection would still count
# against the connection limit); echoes what arrives, over TCP and UDP.
LISTENER = r"""
import selectors, socket, sys
sel = selectors.DefaultSelector()
for spec in sys.argv[1:]:
    proto, port = spec.split(":")
    if proto == "tcp":
        s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind(("0.0.0.0", int(port))); s.listen(256)
    else:
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.bind(("0.0.0.0", int(port)))
    sel.register(s, selectors.EVENT_READ, proto)
print("listening", flush=True)
while True:
    for key, _ in sel.select():
        s = key.fileobj
        if key.data == "tcp":
            sel.register(s.accept()[0], selectors.EVENT_READ, "conn")
        elif key.data == "conn":
            try:
                data = s.recv(4096)
            except OSError:
                data = b""
            if data:
                s.sendall(data)
            else:
                sel.unregister(s); s.close()
        else:
            data, peer = s.recvfrom(2048); s.sendto(data, peer)
"""

# Runs in a sandbox (or the proxy): argv[1] is a JSON list of checks; prints one JSON result
# a check. {"op": "tcp"|"udp", "host", "port", "pause_ms", "echo": sends bytes on the TCP
# connection and expects them back}; {"op": "hold", "host", "port",
# "count"} opens count connections, then one more (its result is printed), and holds them until
# stdin ends.
PROBE = r"""
import errno, json, socket, sys, time
def tcp(host, port, timeout=3.0):
    s = socket.socket(); s.settimeout(timeout); t = time.monotonic()
    try:
        s.connect((host, port)); result = 0
    except socket.timeout:
        result = "timeout"
    except OSError as e:
        result = e.errno
    ms = round((time.monotonic() - t) * 1000)
    return s, {"errno": result, "ms": ms}
def udp(host, port, timeout=3.0):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.settimeout(timeout)
    t = time.monotonic(); payload = b"egress-host-probe"
    try:
        s.connect((host, port)); s.send(payload); reply = s.recv(2048)
        result = 0 if reply == payload else "wrong reply"
    except socket.timeout:
        result = "timeout"
    except OSError as e:
        result = e.errno
    s.close()
    return {"errno": result, "ms": round((time.monotonic() - t) * 1000)}
for check in json.loads(sys.argv[1]):
    time.sleep(check.get("pause_ms", 0) / 1000)
    if check["op"] == "tcp":
        s, r = tcp(check["host"], check["port"])
        if r["errno"] == 0 and check.get("echo"):
            try:
                s.sendall(b"x" * 65536); got = b""
                while len(got) < 65536:
                    chunk = s.recv(65536)
                    if not chunk:
                        break
                    got += chunk
                r["errno"] = 0 if got == b"x" * 65536 else "echo: %d bytes back" % len(got)
            except OSError as e:
                r["errno"] = e.errno
        s.close()
    elif check["op"] == "udp":
        r = udp(check["host"], check["port"])
    else:
        held = []
        for _ in range(check["count"]):
            s, r = tcp(check["host"], check["port"])
            if r["errno"] != 0:
                break
            held.append(s)
        r = dict(tcp(check["host"], check["port"])[1], held=len(held))
        print(json.dumps(r), flush=True)
        sys.stdin.read()
        continue
    print(json.dumps(r), flush=True)
"""

VERDICTS = {
    "open": {0},
    "answered": {0},
    "refused": {errno.ECONNREFUSED},
    "unreachable": {errno.EHOSTUNREACH},
    "refused/unreachable": {errno.ECONNREFUSED, errno.EHOSTUNREACH},
}

failures = []


def log(message):
    print(message, flush=True)


def run(*args, check=True, **kwargs):
    return subprocess.run(args, check=check, text=True, capture_output=True, **kwargs)


def docker(*args, **kwargs):
    return run("docker", *args, **kwargs)


def firewall(command):
    return run("bash", FIREWALL, command, check=False)


def expect(name, verdict, result):
    ok = result["errno"] in VERDICTS[verdict]
    if ok and verdict not in ("open", "answered") and result["ms"] > FAST_MS:
        ok = False  # a refusal must be immediate
    got = result["errno"]
    got = errno.errorcode.get(got, got) if isinstance(got, int) and got else got
    log(f"{'ok  ' if ok else 'FAIL'} {name}: expected {verdict}, got {got or 'connected'}"
        f" in {result['ms']} ms")
    if not ok:
        failures.append(name)


def expect_equal(name, want, got):
    ok = want == got
    log(f"{'ok  ' if ok else 'FAIL'} {name}: expected {want}, got {got}")
    if not ok:
        failures.append(name)


def used_subnets():
    nets = []
    ids = docker("network", "ls", "-q").stdout.split()
    for net in json.loads(docker("network", "inspect", *ids).stdout) if ids else []:
        for config in (net.get("IPAM") or {}).get("Config") or []:
            if config.get("Subnet"):
                nets.append(ipaddress.ip_network(config["Subnet"], strict=False))
    for line in run("ip", "-4", "route", "show", "table", "all").stdout.splitlines():
        word = line.split()[0] if line.split() else ""
        if word and word[0].isdigit():
            try:
                nets.append(ipaddress.ip_network(word, strict=False))
            except ValueError:
                pass
    return nets


class Network:
    """An internal ICC-off network on a bridge named PREFIX<N>, a free /24 of 10.213.0.0/16."""

    def __init__(self, name, prefix):
        self.name = name
        for _ in range(20):
            used = used_subnets()
            third = random.randrange(100, 250)
            subnet = ipaddress.ip_network(f"10.213.{third}.0/24")
            bridge = f"{prefix}{random.randrange(9000, 10000)}"
            if any(subnet.overlaps(n) for n in used) or os.path.exists(f"/sys/class/net/{bridge}"):
                continue
            made = docker("network", "create", "--label", LABEL, "--internal",
                          "-o", "com.docker.network.bridge.enable_icc=false",
                          "-o", f"com.docker.network.bridge.name={bridge}",
                          "--subnet", str(subnet), "--gateway", str(subnet[1]), name, check=False)
            if made.returncode == 0:
                self.subnet, self.bridge, self.gateway = subnet, bridge, str(subnet[1])
                log(f"network {name}: bridge {bridge}, subnet {subnet}")
                return
            log(f"network create {subnet} {bridge}: {made.stderr.strip()} (trying another)")
        raise RuntimeError("no free subnet and bridge name for the test network")

    def addr(self, host):
        return str(self.subnet[host])


def start(name, net, ip, user, listen=()):
    """A container like a sandbox (or the proxy, by its user): read-only, no capabilities."""
    args = ["run", "-d", "--name", name, "--label", LABEL, "--network", net.name, "--ip", ip,
            "--read-only", "--tmpfs", "/tmp:rw,nosuid,nodev,size=16m", "--cap-drop", "ALL",
            "--security-opt", "no-new-privileges", "--user", user, "--memory", "256m",
            "--pids-limit", "128"]
    if user.startswith("65534"):
        args += ["--sysctl", "net.ipv4.ip_unprivileged_port_start=53"]
    if listen:
        args += [IMAGE, "python3", "-c", LISTENER, *listen]
    else:
        args += [IMAGE, "sleep", "infinity"]
    docker(*args)
    if listen:
        for _ in range(100):
            if "listening" in docker("logs", name, check=False).stdout:
                return
            time.sleep(0.1)
        raise RuntimeError(f"{name} did not listen: {docker('logs', name, check=False).stderr}")


def probe(container, checks):
    out = docker("exec", container, "python3", "-c", PROBE, json.dumps(checks), timeout=120)
    results = [json.loads(line) for line in out.stdout.splitlines()]
    if len(results) != len(checks):
        raise RuntimeError(f"the probe in {container} answered {len(results)} of {len(checks)}"
                           f" checks: {out.stdout} {out.stderr}")
    return results


def host_addresses():
    out = run("ip", "-4", "-o", "addr", "show").stdout.splitlines()
    addrs = {}
    for line in out:
        parts = line.split()
        dev, addr = parts[1], parts[3].split("/")[0]
        if not addr.startswith("127."):
            addrs[addr] = dev
    return addrs


def main_checks(tag, containers):
    # Twice: install is idempotent (one jump each, the chains rebuilt, not appended to).
    for _ in range(2):
        if firewall("install").returncode != 0 or firewall("check").returncode != 0:
            log(firewall("check").stdout)
            raise RuntimeError("host-firewall.sh install did not leave the ruleset installed")
    expect_equal("install twice: check exits", 0, firewall("check").returncode)
    jumps = run("iptables", "-w", "-S", "DOCKER-USER").stdout.count("-j SBX-EGRESS\n")
    jumps += run("iptables", "-w", "-S", "INPUT").stdout.count("-j SBX-EGRESS-IN\n")
    expect_equal("install twice: jumps to the chains (DOCKER-USER, INPUT)", 2, jumps)
    net = Network(f"{tag}-pool", "sbxeg")
    proxy, gw = net.addr(2), net.gateway
    s1_ip, s2_ip = net.addr(10), net.addr(11)
    containers += [f"{tag}-proxy", f"{tag}-s1", f"{tag}-s2"]
    start(f"{tag}-proxy", net, proxy, "65534:65534",
          listen=[f"tcp:{PROXY_PORT}", "udp:53", "tcp:53", f"tcp:{HIDDEN_PORT}",
                  f"udp:{HIDDEN_PORT}"])
    start(f"{tag}-s1", net, s1_ip, "10001:10001")
    start(f"{tag}-s2", net, s2_ip, "10001:10001", listen=[f"tcp:{HIDDEN_PORT}"])
    # A second pool with its own proxy: its .2 is reached only from its own bridge.
    other = Network(f"{tag}-other", "sbxeg")
    containers.append(f"{tag}-other-proxy")
    start(f"{tag}-other-proxy", other, other.addr(2), "65534:65534",
          listen=[f"tcp:{PROXY_PORT}", "udp:53"])

    # A listener of the host's own on every address (0.0.0.0): the INPUT rule must hide it.
    host_listener = socket.socket()
    host_listener.bind(("0.0.0.0", 0))
    host_listener.listen(16)
    host_port = host_listener.getsockname()[1]
    addrs = host_addresses()
    log("host addresses: " + ", ".join(f"{a} ({d})" for a, d in sorted(addrs.items())))

    checks = [
        ("sandbox -> proxy:3128 (tcp, 64 KiB each way)", "open",
         {"op": "tcp", "host": proxy, "port": PROXY_PORT, "echo": True}),
        ("sandbox -> proxy:53 (udp)", "answered", {"op": "udp", "host": proxy, "port": 53}),
        ("sandbox -> proxy:53 (tcp)", "open", {"op": "tcp", "host": proxy, "port": 53}),
        (f"sandbox -> proxy:{HIDDEN_PORT} (tcp, a listener there)", "refused",
         {"op": "tcp", "host": proxy, "port": HIDDEN_PORT}),
        (f"sandbox -> proxy:{HIDDEN_PORT} (udp, a listener there)", "unreachable",
         {"op": "udp", "host": proxy, "port": HIDDEN_PORT}),
        (f"sandbox -> other sandbox:{HIDDEN_PORT} (tcp, a listener there)",
         "refused/unreachable", {"op": "tcp", "host": s2_ip, "port": HIDDEN_PORT}),
        ("sandbox -> the other pool's proxy:3128 (tcp, routed, not bridged)", "refused",
         {"op": "tcp", "host": other.addr(2), "port": PROXY_PORT}),
        ("sandbox -> the other pool's proxy:53 (udp)", "unreachable",
         {"op": "udp", "host": other.addr(2), "port": 53}),
        ("sandbox -> gateway:1 (tcp)", "unreachable", {"op": "tcp", "host": gw, "port": 1}),
        ("sandbox -> gateway:22 (tcp)", "unreachable", {"op": "tcp", "host": gw, "port": 22}),
        (f"sandbox -> gateway:{host_port} (tcp, a host listener on 0.0.0.0)", "unreachable",
         {"op": "tcp", "host": gw, "port": host_port}),
        ("sandbox -> gateway:53 (udp)", "unreachable", {"op": "udp", "host": gw, "port": 53}),
    ]
    for addr, dev in sorted(addrs.items()):
        if addr == gw:
            continue
        checks.append((f"sandbox -> host {addr} ({dev}):{host_port} (tcp, a host listener)",
                       "unreachable", {"op": "tcp", "host": addr, "port": host_port}))
    checks += [
        ("sandbox -> 169.254.169.254:80 (metadata)", "refused",
         {"op": "tcp", "host": "169.254.169.254", "port": 80}),
        ("sandbox -> 1.1.1.1:443 (internet)", "refused",
         {"op": "tcp", "host": "1.1.1.1", "port": 443}),
        ("sandbox -> 1.1.1.1:53 (udp, internet)", "unreachable",
         {"op": "udp", "host": "1.1.1.1", "port": 53}),
    ]
    # The kernel rate-limits the ICMP errors REJECT sends, per destination (net.ipv4.
    # icmp_ratelimit: a burst of 6, then one a second): one a second, each is immediate.
    for _, verdict, check in checks:
        if verdict == "unreachable":
            check["pause_ms"] = 1000
    for (name, verdict, _), result in zip(checks, probe(f"{tag}-s1", [c[2] for c in checks])):
        expect(name, verdict, result)
    host_listener.close()

    # connlimit: sandbox 1 holds CONNLIMIT connections to the proxy, one more is reset, and
    # sandbox 2 still connects.
    hold = subprocess.Popen(
        ["docker", "exec", "-i", f"{tag}-s1", "python3", "-c", PROBE,
         json.dumps([{"op": "hold", "host": proxy, "port": PROXY_PORT, "count": CONNLIMIT}])],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        extra = json.loads(hold.stdout.readline() or '{"errno": "no answer", "ms": 0, "held": 0}')
        held = extra.pop("held")
        log(f"{'ok  ' if held == CONNLIMIT else 'FAIL'} sandbox 1 holds {held} connections to "
            f"the proxy (expected {CONNLIMIT})")
        if held != CONNLIMIT:
            failures.append("connlimit: connections held")
        expect(f"sandbox 1 -> proxy:3128, connection {CONNLIMIT + 1}", "refused", extra)
        expect("sandbox 2 -> proxy:3128 meanwhile", "open",
               probe(f"{tag}-s2", [{"op": "tcp", "host": proxy, "port": PROXY_PORT}])[0])
    finally:
        hold.stdin.close()
        hold.wait(timeout=60)

    # The server's start-up probe: from the proxy at .2 to the gateway's port 1.
    expect("proxy (.2) -> gateway:1 (the server's probe)", "unreachable",
           probe(f"{tag}-proxy", [{"op": "tcp", "host": gw, "port": 1}])[0])

    # The same probe where the rules do not apply (a bridge outside the sbxeg prefix): the
    # answer a host without the rules gives.
    bare = Network(f"{tag}-bare", "sbxtst")
    containers.append(f"{tag}-bare-proxy")
    start(f"{tag}-bare-proxy", bare, bare.addr(2), "65534:65534")
    expect("proxy (.2) -> gateway:1 on a bridge outside sbxeg+", "refused",
           probe(f"{tag}-bare-proxy", [{"op": "tcp", "host": bare.gateway, "port": 1}])[0])


def toggle_checks(tag, containers):
    net = Network(f"{tag}-pool", "sbxeg")
    containers.append(f"{tag}-proxy")
    start(f"{tag}-proxy", net, net.addr(2), "65534:65534")
    server_probe = [{"op": "tcp", "host": net.gateway, "port": 1}]
    try:
        if firewall("install").returncode != 0:
            raise RuntimeError("host-firewall.sh install failed")
        expect_equal("installed: check exits", 0, firewall("check").returncode)
        expect("installed: proxy (.2) -> gateway:1", "unreachable",
               probe(f"{tag}-proxy", server_probe)[0])
        firewall("remove")
        missing = firewall("check")
        log("check without the rules says:\n  " + missing.stdout.strip().replace("\n", "\n  "))
        expect_equal("removed: check exits", 1, missing.returncode)
        if "chain SBX-EGRESS is missing" not in missing.stdout:
            failures.append("removed: check names the chain")
            log("FAIL removed: check does not name the missing chain")
        expect("removed: proxy (.2) -> gateway:1", "refused",
               probe(f"{tag}-proxy", server_probe)[0])
    finally:
        restored = firewall("install")
        if restored.returncode != 0:
            log("FAIL could not install the ruleset again: " + restored.stderr)
            failures.append("restore")
    expect_equal("installed again: check exits", 0, firewall("check").returncode)
    expect("installed again: proxy (.2) -> gateway:1", "unreachable",
           probe(f"{tag}-proxy", server_probe)[0])


def main():
    if os.geteuid() != 0:
        log("needs root (iptables)")
        return 2
    toggle = sys.argv[1:] == ["--toggle"]
    tag = f"egh{os.getpid()}"
    containers = []
    try:
        (toggle_checks if toggle else main_checks)(tag, containers)
    finally:
        if containers:
            docker("rm", "-f", *containers, check=False)
        made = docker("network", "ls", "-q", "--filter", f"name={tag}-",
                      "--filter", f"label={LABEL}", check=False).stdout.split()
        if made:
            docker("network", "rm", *made, check=False)
    if failures:
        log(f"{len(failures)} failed: {', '.join(failures)}")
        return 1
    log("all passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
