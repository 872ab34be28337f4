# Runs in the sandbox-like client container of smoke.sh: the proxy is 10.213.250.2.
import socket
import struct
import urllib.error
import urllib.request

PROXY = "10.213.250.2"
opener = urllib.request.build_opener(urllib.request.ProxyHandler({"http": f"http://{PROXY}:3128"}))

def get(url):
    try:
        with opener.open(url, timeout=10) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()

status, body = get("http://upstream.test:8080/")
print("ok allowed" if status == 200 else f"FAIL allowed {status} {body!r}")
status, body = get("http://evil.upstream.test:8080/")
print("ok refused" if status == 403 and 'pool "data"' in body else f"FAIL refused {status} {body!r}")
print("  " + body.strip())

def hello(sni):
    name = sni.encode()
    entry = b"\x00" + struct.pack(">H", len(name)) + name
    ext = b"\x00\x00" + struct.pack(">H", len(entry) + 2) + struct.pack(">H", len(entry)) + entry
    body = b"\x03\x03" + b"r" * 32 + b"\x00" + b"\x00\x02\x13\x01" + b"\x01\x00"
    body += struct.pack(">H", len(ext)) + ext
    hs = b"\x01" + struct.pack(">I", len(body))[1:] + body
    return b"\x16\x03\x01" + struct.pack(">H", len(hs)) + hs

s = socket.create_connection((PROXY, 3128), timeout=10)
s.sendall(b"CONNECT upstream.test:8080 HTTP/1.1\r\nHost: upstream.test:8080\r\n\r\n")
got = b""
while b"\r\n\r\n" not in got:
    got += s.recv(4096)
rest = got.split(b"\r\n\r\n", 1)[1]
s.sendall(hello("other.test"))
while True:
    chunk = s.recv(4096)
    if not chunk:
        break
    rest += chunk
ok = got.startswith(b"HTTP/1.1 200") and rest == b"\x15\x03\x03\x00\x02\x02\x31"
print("ok sni" if ok else f"FAIL sni {got!r} {rest!r}")

u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
u.settimeout(10)
query = b"\xab\xcd\x01\x00\x00\x01\x00\x00\x00\x00\x00\x00\x04pypi\x03org\x00\x00\x01\x00\x01"
u.sendto(query, (PROXY, 53))
answer, _ = u.recvfrom(512)
ok = answer[:2] == b"\xab\xcd" and answer[3] & 0x0F == 3 and answer[12:] == query[12:]
print("ok dns" if ok else f"FAIL dns {answer!r}")
