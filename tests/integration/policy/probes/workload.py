# Probe: the workload the container seccomp profile must allow. Run inside the sandbox image with the
# profile applied (see policies/README.md, "Checking by hand"); prints "workload ok" on success.
import os
import socket
import subprocess
import tempfile
import threading
import multiprocessing

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import scipy.linalg
import scipy.optimize

a = np.random.default_rng(1).random((300, 300))
assert np.allclose(a @ np.linalg.inv(a), np.eye(300), atol=1e-6)
assert abs(scipy.optimize.brentq(lambda x: x * x - 2, 0, 2) - 2**0.5) < 1e-9
scipy.linalg.eigh(a + a.T)
df = pd.DataFrame({"x": range(10), "y": [i * i for i in range(10)]})
assert df.groupby(df.x % 2).y.sum().tolist() == [120, 165]

fig, ax = plt.subplots()
ax.plot(df.x, df.y)
path = os.path.join(tempfile.gettempdir(), "probe.png")
fig.savefig(path)
with open(path, "rb") as f:
    assert f.read(8) == b"\x89PNG\r\n\x1a\n"

out = subprocess.run(["ls", "/"], capture_output=True, check=True).stdout
assert b"usr" in out
subprocess.run(["sh", "-c", "echo hi | cat >/dev/null"], check=True)

results = []
threads = [threading.Thread(target=lambda i=i: results.append(i * i)) for i in range(8)]
for t in threads:
    t.start()
for t in threads:
    t.join()
assert sorted(results) == [i * i for i in range(8)]

with multiprocessing.get_context("fork").Pool(2) as pool:
    assert pool.map(abs, [-1, -2, 3]) == [1, 2, 3]
lock = multiprocessing.get_context("fork").Lock()  # POSIX semaphore in /dev/shm
with lock:
    pass

srv = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
srv.bind(("127.0.0.1", 0))
srv.listen(1)
cli = socket.create_connection(srv.getsockname())
conn, _ = srv.accept()
cli.sendall(b"ping")
assert conn.recv(4) == b"ping"
for s in (cli, conn, srv):
    s.close()
assert socket.getaddrinfo("localhost", 80, proto=socket.IPPROTO_TCP)
a, b = socket.socketpair()
a.close()
b.close()
assert os.cpu_count() >= 1
print("workload ok")
