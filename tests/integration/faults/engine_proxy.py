#!/usr/bin/env python3
"""A Unix-socket proxy between the server and a Docker engine that can slow down or stall the
engine's traffic, for the fault-injection tests (tests/integration/faults).

usage: engine_proxy.py LISTEN_SOCKET UPSTREAM_SOCKET MODE_FILE

MODE_FILE holds one line, re-read every 50 ms: "pass" (forward as is), "delay MS" (hold every
chunk in either direction MS milliseconds before forwarding it) or "stall" (accept connections
and reads but forward nothing until the mode changes: an engine that does not answer).
A missing or unreadable file means "pass". Prints "ready" once it listens.
"""
import os
import socket
import sys
import threading
import time


class Mode:
    def __init__(self, path):
        self.path = path
        self.lock = threading.Lock()
        self.value = ("pass", 0.0)
        threading.Thread(target=self._watch, daemon=True).start()

    def _watch(self):
        while True:
            try:
                with open(self.path) as f:
                    words = f.read().split()
            except OSError:
                words = []
            if words[:1] == ["stall"]:
                value = ("stall", 0.0)
            elif words[:1] == ["delay"] and len(words) > 1:
                value = ("delay", float(words[1]) / 1000.0)
            else:
                value = ("pass", 0.0)
            with self.lock:
                self.value = value
            time.sleep(0.05)

    def get(self):
        with self.lock:
            return self.value


def pump(src, dst, mode):
    try:
        while True:
            data = src.recv(65536)
            if not data:
                break
            while True:
                kind, delay = mode.get()
                if kind != "stall":
                    break
                time.sleep(0.05)
            if kind == "delay":
                time.sleep(delay)
            dst.sendall(data)
    except OSError:
        pass
    finally:
        # Half-close towards the peer, as the engine's clients expect (attach streams).
        try:
            dst.shutdown(socket.SHUT_WR)
        except OSError:
            pass


def serve(client, upstream_path, mode):
    upstream = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        upstream.connect(upstream_path)
    except OSError:
        client.close()
        return
    a = threading.Thread(target=pump, args=(client, upstream, mode), daemon=True)
    b = threading.Thread(target=pump, args=(upstream, client, mode), daemon=True)
    a.start()
    b.start()
    a.join()
    b.join()
    client.close()
    upstream.close()


def main():
    listen_path, upstream_path, mode_path = sys.argv[1:4]
    if os.path.exists(listen_path):
        os.unlink(listen_path)
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(listen_path)
    server.listen(128)
    mode = Mode(mode_path)
    print("ready", flush=True)
    while True:
        client, _ = server.accept()
        threading.Thread(target=serve, args=(client, upstream_path, mode), daemon=True).start()


if __name__ == "__main__":
    main()
