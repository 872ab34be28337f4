"""The control channel (channel.py), in a child process whose stdin/stdout are pipes."""

import subprocess
import sys
import unittest

from sandbox_harness import wire

# The child builds a Channel over its stdin/stdout with bytes already buffered by the
# bootstrap's reader (as after the harness source), then reports what it saw on fd 2.
_CHILD = r"""
import json, os, sys
sys.stdin.buffer.readline()  # the bootstrap's length line: the reader now holds more
from sandbox_harness.channel import Channel
chan = Channel()
report = {"fd0": os.readlink("/proc/self/fd/0"), "fd1": os.readlink("/proc/self/fd/1"),
          "cloexec": not os.get_inheritable(chan.in_fd) and not os.get_inheritable(chan.out_fd)}
msgs = []
while True:
    m = chan.next_message(timeout=10)
    if m is None:
        break
    msgs.append(m)
    if m["op"] == "ping":
        chan.send({"ev": "pong"})
        chan.send_output(b"1", b"out")
report["msgs"] = msgs
report["eof"] = chan.eof
os.write(2, json.dumps(report).encode())
"""


class ChannelTest(unittest.TestCase):
    def run_child(self, data):
        return subprocess.run([sys.executable, "-c", _CHILD], input=data, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, timeout=30)

    def test_messages_after_the_bootstrap_and_replies(self):
        import json
        data = (b"5\n" + wire.encode_json_frame({"op": "ping"})
                + wire.encode_json_frame({"op": "run", "id": "a"}))
        p = self.run_child(data)
        self.assertEqual(p.returncode, 0, p.stderr)
        report = json.loads(p.stderr)
        self.assertEqual(report["msgs"], [{"op": "ping"}, {"op": "run", "id": "a"}])
        self.assertTrue(report["eof"])
        self.assertEqual((report["fd0"], report["fd1"]), ("/dev/null", "/dev/null"))
        self.assertTrue(report["cloexec"])
        dec = wire.FrameDecoder()
        dec.feed(p.stdout)
        self.assertEqual(dec.frames(), [(b"J", b'{"ev":"pong"}'), (b"1", b"out")])

    def test_eof_inside_a_frame_is_a_protocol_error(self):
        p = self.run_child(b"1\n" + wire.encode_json_frame({"op": "ping"})[:-2])
        self.assertNotEqual(p.returncode, 0)
        self.assertIn(b"ProtocolError: the control stream ended inside a frame", p.stderr)
