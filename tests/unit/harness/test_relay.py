"""The one relay loop of both modes (relay.py), driven through real pipes with the test playing
the run's process tree: no harness process, no Docker."""

import json
import os
import threading
import time
import unittest

import harness_config
from harness_testing import exited
from sandbox_harness import config, errors, relay, wire
from sandbox_harness.zygote_children import Prepared
from sandbox_harness.zygote_records import Records, RunState
from sandbox_harness.zygote_runs import Runs


class FakeChannel:
    """The control channel: what the zygote sends is recorded; messages come from `queue`."""

    def __init__(self, test):
        r, w = os.pipe()  # never written: the server says nothing unless queued
        test.addCleanup(os.close, r)
        test.addCleanup(os.close, w)
        self.in_fd = r
        self.queue = []
        self.eof = False
        self.sent = []
        self.output = []

    def on_readable(self):
        raise AssertionError("the control channel was never written")

    def send(self, obj):
        self.sent.append(obj)

    def send_output(self, kind, data):
        if data:
            self.output.append((kind, data))


class RelayHost(relay.Relay, Records, Runs):
    """The parts of the zygote the relay loop uses; the run's tree is the test's pipes."""

    def __init__(self, test, session=False, isolate=True, limits=None):
        self.cfg = config.parse_config(harness_config.config(limits and {"limits": limits}))
        self.chan = FakeChannel(test)
        self.session = session
        self.isolate = isolate
        self.exit_requested = False
        self.prepared = None
        self.kills = 0
        self.writers = {}

    def child(self, test, request_pipe=False):
        """A prepared child whose other ends (the tree's) the test holds in self.writers."""
        ends = {}
        for tag in ("out", "err", "res", "st", "req"):
            r, w = os.pipe()
            ends[tag] = (r, w)
        req_r, req_w = ends.pop("req")
        p = Prepared(4242, None, req_w if request_pipe else None, ends["out"][0], ends["err"][0],
                     ends["res"][0], ends["st"][0])
        self.req_r = req_r
        if request_pipe:
            os.set_blocking(req_w, False)
        else:
            os.close(req_w)
        self.writers = {tag: w for tag, (_, w) in ends.items()}

        def close_all():
            for fd in p.fds() + [req_r] + list(self.writers.values()):
                try:
                    os.close(fd)
                except OSError:
                    pass
        test.addCleanup(close_all)
        p.watch(self._max_result_record())
        return p

    def write(self, tag, data):
        os.write(self.writers[tag], data)

    def record(self, tag, obj):
        self.write(tag, wire.encode_json_frame(obj))

    def end(self, *tags):
        for tag in tags or list(self.writers):
            if tag in self.writers:
                os.close(self.writers.pop(tag))

    def _kill_tree(self, p):
        """The tree dies: every pipe end it held closes."""
        self.kills += 1
        self.end()

    def _pong(self, busy):
        return {"ev": "pong", "busy": busy}


def later(seconds, fn):
    """fn() on another thread after `seconds`: the tree's next step, once Z has read the last."""
    t = threading.Timer(seconds, fn)
    t.start()
    return t


class RelayTest(unittest.TestCase):
    def test_output_limit_arithmetic(self):
        self.assertEqual(relay.apply_output_limit(0, 10, b"12345"), (b"12345", False))
        self.assertEqual(relay.apply_output_limit(5, 10, b"12345"), (b"12345", False))
        self.assertEqual(relay.apply_output_limit(8, 10, b"12345"), (b"12", True))
        self.assertEqual(relay.apply_output_limit(10, 10, b"1"), (b"", True))

    def run_pool(self, z, p, state, timeout_s=5.0):
        return z._exchange(p, state, time.monotonic() + timeout_s, True, z._pool_records)

    def test_a_run_ends_with_its_tree(self):
        z = RelayHost(self)
        p = z.child(self)
        state = RunState("r", z.cfg["limits"])
        z.record("res", {"t": "started"})
        z.write("out", b"hi\n")
        z.write("err", b"oops\n")
        z.record("res", {"t": "result", "value": "42"})
        z.end("out", "err", "res")  # U closes its pipes before it exits: I reports it after

        def exits():
            z.record("st", {"t": "ustatus", "status": exited(0), "cpu_ms": 3})
            z.end("st")
        later(0.1, exits)
        self.assertIsNone(self.run_pool(z, p, state))
        self.assertEqual(z.chan.sent, [{"ev": "started", "id": "r"}])
        self.assertEqual(z.chan.output, [(wire.KIND_STDOUT, b"hi\n"), (wire.KIND_STDERR, b"oops\n")])
        self.assertEqual((state.ustatus, state.cpu_ms, state.result["value"]), (0, 3, "42"))
        # contained by its PID namespace and holding no pipe: ended after `done`, not here
        self.assertEqual((z.kills, state.kill_reason), (0, None))

    def test_leftovers_holding_pipes_are_killed(self):
        for isolate in (True, False):
            z = RelayHost(self, isolate=isolate)
            p = z.child(self)
            state = RunState("r", z.cfg["limits"])
            z.record("st", {"t": "ustatus", "status": exited(0)})  # U ended, a child holds out
            self.assertIsNone(self.run_pool(z, p, state))
            self.assertEqual((z.kills, state.kill_reason), (1, None))
        z = RelayHost(self, isolate=False)  # without a namespace the run ends with U: killed
        p = z.child(self)
        z.record("st", {"t": "ustatus", "status": exited(0)})
        z.end("out", "err", "res")
        self.run_pool(z, p, RunState("r", z.cfg["limits"]))
        self.assertEqual(z.kills, 1)

    def test_timeout(self):
        z = RelayHost(self)
        p = z.child(self)
        state = RunState("r", z.cfg["limits"])
        t0 = time.monotonic()
        self.run_pool(z, p, state, timeout_s=0.2)
        self.assertGreaterEqual(time.monotonic() - t0, 0.2)
        self.assertEqual((state.kill_reason, z.kills), ("timeout", 1))

    def test_output_limit(self):
        z = RelayHost(self, limits={"output_bytes": 5})
        p = z.child(self)
        state = RunState("r", z.cfg["limits"])
        z.write("out", b"123456789")
        self.run_pool(z, p, state)
        self.assertEqual(z.chan.output[0], (wire.KIND_STDOUT, b"12345"))
        self.assertIn(b"output truncated", z.chan.output[1][1])
        self.assertEqual((state.kill_reason, state.output_cut), ("output_limit", True))

    def test_result_budget(self):
        z = RelayHost(self)
        z._result_budget = lambda: 100
        p = z.child(self)
        state = RunState("r", z.cfg["limits"])
        z.record("res", {"t": "result", "value": "x" * 200})
        self.run_pool(z, p, state)
        self.assertEqual(state.kill_reason, "result_limit")

    def test_corrupt_result_channel(self):
        z = RelayHost(self)
        p = z.child(self)
        state = RunState("r", z.cfg["limits"])
        z.write("res", b"\x00\x00\x00\x02Zxx")  # not a frame of ours
        z.record("st", {"t": "ustatus", "status": exited(0)})
        z.end()
        self.run_pool(z, p, state)
        self.assertIsNotNone(state.corrupt)
        self.assertIsNone(state.kill_reason)  # a pool run keeps going; its verdict says it

    def test_control_messages(self):
        z = RelayHost(self)
        p = z.child(self)
        state = RunState("r", z.cfg["limits"])
        z.chan.queue = [{"op": "ping"}, {"op": "cancel", "id": "other"}, {"op": "cancel", "id": "r"}]
        self.run_pool(z, p, state)
        self.assertEqual(z.chan.sent, [{"ev": "pong", "busy": True}])
        self.assertEqual(state.kill_reason, "cancel")
        for msg in ({"op": "run", "id": "b"}, {"op": "config"}, {"op": "nope"}):
            z = RelayHost(self)
            p = z.child(self)
            z.chan.queue = [msg]
            with self.assertRaises(errors.ProtocolError, msg=str(msg)):
                self.run_pool(z, p, RunState("r", z.cfg["limits"]))

    def test_answer_ends_a_session_request(self):
        z = RelayHost(self, session=True)
        p = z.child(self, request_pipe=True)
        state = RunState("op", {})
        request = wire.encode_json_frame({"t": "op", "seq": 1})
        p.pending += request
        z.write("out", b"between")  # during a file op, output is dropped

        def answers():  # U reads the request, then answers
            data = b""
            while len(data) < len(request):
                data += os.read(z.req_r, 1 << 16)
            self.assertEqual(data, request)
            z.record("res", {"t": "reply", "seq": 1, "ok": True})
        t = later(0, answers)
        # file ops and runs that arrive meanwhile wait for the answer
        z.chan.queue = [{"op": "list_files", "id": "l"}]

        def answer(st, pp, data):
            pp.res_decoder.feed(data)
            for _, payload in pp.res_decoder.frames():
                return json.loads(payload)
            return None
        got = z._exchange(p, state, time.monotonic() + 60, False, answer)  # generous: a loaded machine
        t.join()
        self.assertEqual(got, {"t": "reply", "seq": 1, "ok": True})
        self.assertEqual(p.pending, b"")
        self.assertEqual(z.chan.queue, [{"op": "list_files", "id": "l"}])
        self.assertEqual((z.chan.output, p.discarded), ([], len(b"between")))
        self.assertEqual(z.kills, 0)  # the session's U lives on

    def test_gone_during_a_session_request(self):
        z = RelayHost(self, session=True)
        p = z.child(self, request_pipe=True)
        state = RunState("r", z.cfg["limits"])
        z.record("st", {"t": "ustatus", "status": exited(1)})
        z.end("st")
        self.assertIsNone(z._exchange(p, state, time.monotonic() + 5, True, lambda *a: None))
        self.assertEqual((state.ustatus, z.kills), (exited(1), 1))  # pipes were open: killed

