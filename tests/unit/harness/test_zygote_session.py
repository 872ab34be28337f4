"""Session mode end to end (isolate=false)."""

import base64
import time
import unittest

from harness_testing import Zygote, b64
from sandbox_harness import config, errors, protocol, wire


class SessionModeTest(unittest.TestCase):
    """Session mode end to end without Docker (isolate=false: U is a plain process)."""

    def op(self, z, **msg):
        z.send(msg)
        frames = z.frames("reply")
        return frames[-1][1]

    def test_state_files_and_tracebacks(self):
        z = Zygote(self, mode="session")
        ready = z.frames("ready")[-1][1]
        self.assertEqual((ready["protocol"], ready["mode"], ready["cells"], ready["session_started"]),
                         (wire.PROTOCOL_VERSION, "session", 0, False))
        # Session mode sends every field of the schema's `ready`, the optional ones too.
        self.assertEqual(set(ready) - {"ev"}, set(protocol.EVENTS["ready"]["fields"]))
        out, _, ev = z.run("x = 41\nimport json\ndef f(a):\n    return a * 2\nprint('one')", id="a")
        self.assertEqual((out, ev[-1]["verdict"], ev[-1]["session_reset"], ev[-1]["cells"]),
                         (b"one\n", "ok", False, 1))
        ready = z.frames("ready")[-1][1]
        self.assertEqual((ready["run_count"], ready["cells"], ready["session_started"]), (1, 1, True))
        _, _, ev = z.run("json.dumps(f(x + 1) // 2)", id="b")
        self.assertEqual((ev[-1]["value"], ev[-1]["cells"]), ("'42'", 2))
        z.frames("ready")
        # A function of cell 3 failing when called from cell 4: each frame shows its own line.
        z.run("def g():\n    return 1 / 0\n", id="c")
        z.frames("ready")
        _, err, ev = z.run("y = 1\ng()", id="d")
        self.assertEqual([f["line"] for f in ev[-1]["traceback"]["frames"]], [2, 2])
        self.assertIn(b"line 2, in <module>\n    g()\n", err)
        self.assertIn(b"line 2, in g\n    return 1 / 0\n", err)
        z.frames("ready")
        # Files: put, then only what a cell creates or changes comes back, once.
        reply = self.op(z, op="put_files", id="p", files=[{"path": "in/a.csv", "content_b64": b64(b"a\n1\n")}])
        self.assertEqual(reply, {"ev": "reply", "id": "p", "ok": True,
                                 "result": {"files": [{"path": "in/a.csv", "size": 4}]}})
        _, _, ev = z.run("import os\nos.chdir('/')\n"
                         "open(os.path.join(%r, 'out.txt'), 'w').write('x')" % z.cfg_workdir, id="e",
                         files=[{"path": "req.txt", "content_b64": b64(b"r")},
                                {"path": "in/a.csv", "content_b64": b64(b"a\n2\n")}])
        self.assertEqual([e["path"] for e in ev if e["ev"] == "file"], ["out.txt"])
        z.frames("ready")
        out, _, ev = z.run("import os\nprint(os.getcwd())", id="f")  # cell e's chdir persists
        self.assertEqual(out, b"/\n")
        z.frames("ready")
        _, _, ev = z.run("import os\nos.chdir(%r)\nopen('req.txt', 'a').write('!')" % z.cfg_workdir,
                         id="g")
        self.assertEqual([(e["path"], b64(b"r!")) for e in ev if e["ev"] == "file"],
                         [("req.txt", e["data_b64"]) for e in ev if e["ev"] == "file"])
        z.frames("ready")
        reply = self.op(z, op="list_files", id="l")
        self.assertEqual([(f["path"], f["size"]) for f in reply["result"]["files"]],
                         [("in/a.csv", 4), ("out.txt", 1), ("req.txt", 2)])
        reply = self.op(z, op="get_file", id="g1", path="in/a.csv")
        self.assertEqual(base64.b64decode(reply["result"]["data_b64"]), b"a\n2\n")
        reply = self.op(z, op="get_file", id="g2", path="req.txt", max_bytes=1)
        self.assertEqual(reply, {"ev": "reply", "id": "g2", "ok": False,
                                 "error": "req.txt is 2 bytes, more than the limit of 1 bytes"})
        self.assertEqual(self.op(z, op="get_file", id="g3", path="../x")["error"],
                         "file path '../x' contains '..'")
        self.assertEqual(self.op(z, op="delete_file", id="d", path="out.txt")["ok"], True)
        self.assertEqual(self.op(z, op="get_file", id="g4", path="out.txt")["error"],
                         "no such file: out.txt")
        z.send({"op": "ping"})
        pong = z.frames("pong")[-1][1]
        self.assertEqual((pong["busy"], pong["cells"], pong["session_started"]), (False, 7, True))

    def test_exit_codes_memory_and_limits(self):
        z = Zygote(self, mode="session")
        z.frames("ready")
        self.assertEqual(self.op(z, op="session", id="s", limits={"memory_bytes": 64 << 20}),
                         {"ev": "reply", "id": "s", "ok": True})
        out, _, ev = z.run("import resource\nkeep = 'kept'\n"
                           "print(resource.getrlimit(resource.RLIMIT_CPU)[0] == resource.RLIM_INFINITY)\n"
                           "import sys\nsys.exit(2)", limits={"cpu_s": 1})
        self.assertEqual((out, ev[-1]["verdict"], ev[-1]["exit_code"], ev[-1]["session_reset"]),
                         (b"True\n", "error", 2, False))
        z.frames("ready")
        z.send({"op": "session", "limits": {"nproc": 50}})  # no id: null; only for a next U
        self.assertEqual(z.frames("reply")[-1][1], {"ev": "reply", "id": None, "ok": True})
        _, _, ev = z.run("raise SystemExit")
        self.assertEqual((ev[-1]["verdict"], ev[-1]["exit_code"]), ("ok", 0))
        z.frames("ready")
        for i in range(2):  # the narrowed budget holds for every cell, not only the first
            _, err, ev = z.run("b = bytearray(256 << 20)", id="m%d" % i)
            self.assertEqual((ev[-1]["verdict"], ev[-1]["session_reset"], ev[-1]["exit_code"]),
                             ("memory", False, 1), ev[-1])
            self.assertIn(b"MemoryError", err)
            self.assertIn("memory limit of %d bytes" % (64 << 20), ev[-1]["detail"])
            z.frames("ready")
        out, _, ev = z.run("small = bytearray(8 << 20)\nprint(keep)")
        self.assertEqual((out, ev[-1]["verdict"]), (b"kept\n", "ok"))
        z.frames("ready")

    def test_put_files_limits(self):
        z = Zygote(self, mode="session", files_in={"max_count": 2, "max_total_bytes": 4096})
        z.frames("ready")
        self.op(z, op="session", id="s", limits={"fsize_bytes": 1000})
        reply = self.op(z, op="put_files", id="p", files=[{"path": "ok", "content_b64": b64(b"x")},
                                                          {"path": "big", "content_b64": b64(b"y" * 2000)}])
        self.assertEqual(reply["error"], "cannot write big: it is more than the limit of 1000 bytes per file")
        listed = self.op(z, op="list_files", id="l")["result"]["files"]
        self.assertEqual([f["path"] for f in listed], ["ok"])  # the failed file is removed
        reply = self.op(z, op="put_files", id="p2", files=[{"path": "a", "content_b64": b64(b"z" * 5000)}])
        self.assertEqual(reply["error"], "input files exceed the limit of 4096 bytes in total")
        reply = self.op(z, op="put_files", id="p3", files=[{"path": str(i), "content_b64": ""}
                                                           for i in range(3)])
        self.assertEqual(reply["error"], "3 input files exceed the limit of 2")
        _, _, ev = z.run("print(1)", files=[{"path": "big", "content_b64": b64(b"y" * 2000)}])
        self.assertEqual((ev[-1]["verdict"], ev[-1]["exit_code"], [e["ev"] for e in ev]),
                         ("error", None, ["done"]))
        self.assertEqual(ev[-1]["detail"], "input files could not be written: cannot write big: "
                                           "it is more than the limit of 1000 bytes per file")

    def test_resets(self):
        z = Zygote(self, mode="session")
        z.frames("ready")
        reset_note = "the session was restarted empty (variables and files are lost)"
        killers = (("while True: pass", {"timeout_s": 0.5}, "timeout"),
                   ("import os\nprint('bye', flush=True)\nos._exit(3)", {}, "error"),
                   ("while True: print('x' * 99)", {"output_bytes": 1000}, "output_limit"),
                   ("import os\nos.kill(os.getpid(), 11)", {}, "signal"))
        for i, (code, limits, verdict) in enumerate(killers):
            self.op(z, op="put_files", id="p", files=[{"path": "f.txt", "content_b64": ""}])
            z.run("x = 1")
            z.frames("ready")
            out, _, ev = z.run(code, limits=limits, id="k")
            done = ev[-1]
            self.assertEqual((done["verdict"], done["session_reset"], done["cells"]),
                             (verdict, True, 2 if i == 0 else 3), done)
            self.assertTrue(done["detail"].endswith(reset_note), done["detail"])
            if verdict == "error":
                self.assertEqual((out, done["exit_code"]), (b"bye\n", 3))
            ready = z.frames("ready")[-1][1]
            self.assertEqual((ready["cells"], ready["session_started"]), (0, False))
            _, err, ev = z.run("print(os.listdir('.'))\nx")
            self.assertEqual((ev[-1]["verdict"], ev[-1]["cells"]), ("error", 1))
            self.assertIn(b"NameError", err)
            z.frames("ready")
        # cancel
        z.send({"op": "run", "id": "c", "code": "import time\ntime.sleep(30)"})
        z.frames("started")
        z.send({"op": "cancel", "id": "c"})
        done = z.frames("done")[-1][1]
        self.assertEqual((done["verdict"], done["session_reset"]), ("cancelled", True))
        z.frames("ready")
        # Death between cells: a session_reset event, then ready; the next cell runs in a new U.
        _, _, ev = z.run("import threading, os, time\nv = 1\n"
                         "threading.Thread(target=lambda: (time.sleep(0.5), os._exit(4))).start()")
        self.assertEqual(ev[-1]["session_reset"], False)
        z.frames("ready")
        t0 = time.monotonic()
        frames = z.frames("ready")
        self.assertEqual(frames[0][1], {"ev": "session_reset", "reason":
                                        "the session's process exited with status 4; " + reset_note})
        self.assertLess(time.monotonic() - t0, 3)
        _, err, ev = z.run("v")
        self.assertIn(b"NameError", err)

    def test_background_output_and_threads(self):
        z = Zygote(self, mode="session")
        z.frames("ready")
        # A thread writing 200 KB/s between cells (more than a pipe holds) must block nothing.
        _, _, ev = z.run("import threading, time, sys\nstop = False\n"
                         "def spam():\n    while not stop:\n        sys.stdout.write('y' * 20000 + '\\n')\n"
                         "        time.sleep(0.1)\n"
                         "t = threading.Thread(target=spam, daemon=True)\nt.start()\nprint('started')")
        self.assertEqual(ev[-1]["verdict"], "ok")
        z.frames("ready")
        time.sleep(1.0)
        out, _, ev = z.run("stop = True\nt.join()\nprint('joined')", limits={"timeout_s": 5})
        self.assertEqual(ev[-1]["verdict"], "ok")
        self.assertTrue(out.endswith(b"joined\n"))
        z.frames("ready")
        # A thread still running when its cell ends is not joined.
        t0 = time.monotonic()
        _, _, ev = z.run("import threading, time\nthreading.Thread(target=time.sleep, args=(5,)).start()")
        self.assertLess(time.monotonic() - t0, 2)
        z.frames("ready")
        z.send({"op": "exit"})
        self.assertEqual(z.proc.wait(10), 0)
        self.assertIn(b"bytes written between cells", z.proc.stderr.read())

    def test_resume_returns_the_record_and_the_watchdog_ends_an_abandoned_session(self):
        z = Zygote(self, mode="session", watchdog_s=60)
        z.frames("ready")
        record = {"v": 1, "principal": "alice", "mac": "00"}
        self.assertEqual(self.op(z, op="session", id="s", record=record)["ok"], True)
        out, _, ev = z.run("x = 41\nprint(x)")
        self.assertEqual(out, b"41\n")
        z.frames("ready")
        reply = self.op(z, op="resume", id="r")
        self.assertEqual(reply["ok"], True)
        result = reply["result"]
        self.assertEqual(set(result), set(protocol.REQUESTS["resume"]["result"]))
        self.assertEqual(result["record"], record)
        self.assertEqual((result["protocol"], result["watchdog_s"]), (wire.PROTOCOL_VERSION, 60.0))
        self.assertGreaterEqual(result["idle_s"], 0)
        self.assertEqual(result["session_started"], True)
        out, _, ev = z.run("print(x + 1)")
        self.assertEqual(out, b"42\n")  # a resume changes nothing of the session
        z.frames("ready")
        # A short watchdog and no server any more: the harness exits by itself.
        self.assertEqual(self.op(z, op="session", id="w", watchdog_s=0.5)["ok"], True)
        self.assertEqual(z.proc.wait(30), 0)
        self.assertIn(b"no message from a server", z.proc.stderr.read())

    def test_record_and_watchdog_are_checked(self):
        self.assertIsNone(config.parse_session_record({"op": "session"}))
        for bad in ("text", [1], {"big": "x" * 5000}):
            with self.assertRaises(errors.ProtocolError, msg=repr(bad)[:40]):
                config.parse_session_record({"op": "session", "record": bad})
        self.assertEqual(config.parse_watchdog({"watchdog_s": 0}, "config"), 0.0)
        for bad in (-1, "5", True, float("inf")):
            with self.assertRaises(errors.ProtocolError, msg=repr(bad)):
                config.parse_watchdog({"watchdog_s": bad}, "config")
        with self.assertRaises(errors.ProtocolError):
            config.parse_watchdog({}, "config")

    def test_op_timeout_and_untrusted_replies(self):
        z = Zygote(self, mode="session", op_timeout_s=1)
        z.frames("ready")
        self.op(z, op="put_files", id="p", files=[{"path": "a.txt", "content_b64": b64(b"abc")}])
        # The cell reaches the harness's globals in its own process and forges answers.
        # (through the stack: the harness's objects are frozen, so gc.get_objects() omits them)
        z.run("import sys\nf = sys._getframe()\nwhile 'get_file' not in f.f_globals:\n    f = f.f_back\n"
              "H = f.f_globals\n"
              "H['list_files'] = lambda w, n: ([{'path': 'p', 'size': -5, 'mime_type': 'x', 'mtime': 1}], False)\n"
              "H['get_file'] = lambda w, r, m: {'path': r, 'size': 1, 'mime_type': 'x', 'data_b64': 'QUJD' * (1 << 20)}\n"
              "x = 'alive'")
        z.frames("ready")
        reply = self.op(z, op="list_files", id="l")
        self.assertEqual(reply["ok"], False)
        self.assertIn("invalid answer", reply["error"])
        out, _, ev = z.run("print(x)")
        self.assertEqual(out, b"alive\n")  # an invalid but well-framed answer keeps the session
        z.frames("ready")
        z.send({"op": "get_file", "id": "g", "path": "a.txt", "max_bytes": 10})
        frames = z.frames("ready")
        events = [p for k, p in frames if k == b"J"]
        self.assertEqual([e["ev"] for e in events], ["reply", "session_reset", "ready"])
        self.assertEqual(events[0]["ok"], False)
        self.assertIn("exceeded", events[0]["error"])
        # A thread holding the GIL: the op times out, the session is reset.
        z.run("import threading, re, time\npat = re.compile(r'(a+)+$')\n"
              "def hog():\n    time.sleep(0.3)\n    pat.match('a' * 60 + 'b')\n"
              "threading.Thread(target=hog, daemon=True).start()")
        z.frames("ready")
        time.sleep(0.6)
        t0 = time.monotonic()
        z.send({"op": "list_files", "id": "t"})
        frames = z.frames("ready")
        events = [p for k, p in frames if k == b"J"]
        self.assertEqual([e["ev"] for e in events], ["reply", "session_reset", "ready"])
        self.assertIn("did not finish within 1 s", events[0]["error"])
        self.assertLess(time.monotonic() - t0, 4)

    def test_protocol(self):
        z = Zygote(self)  # recycle: file ops are answered, the session op is a protocol error
        z.frames("ready")
        self.assertEqual(self.op(z, op="get_file", id="g", path="a"),
                         {"ev": "reply", "id": "g", "ok": False,
                          "error": "file operations need session mode"})
        done = z.run("pass")[2][-1]
        self.assertEqual(done["session_reset"], False)
        self.assertNotIn("cells", done)
        z.frames("ready")
        z.send({"op": "session"})
        self.assertIn("session mode", z.frames("fatal")[-1][1]["message"])
        z = Zygote(self, mode="session")
        z.frames("ready")
        # A run sent right behind a file op waits for the op's reply.
        z.send({"op": "put_files", "id": "p", "files": []})
        z.send({"op": "run", "id": "r", "code": "print('ran')"})
        frames = z.frames("done")
        self.assertEqual([p["ev"] for k, p in frames if k == b"J"], ["reply", "started", "done"])
        z.frames("ready")
        # The session op is also answered during a run; a file op during a run is a protocol error.
        z.send({"op": "run", "id": "r2", "code": "import time\ntime.sleep(0.5)"})
        z.frames("started")
        z.send({"op": "session", "id": "s"})
        self.assertEqual(z.frames("reply")[-1][1]["id"], "s")
        z.send({"op": "list_files", "id": "l"})
        self.assertIn("in progress", z.frames("fatal")[-1][1]["message"])
        z = Zygote(self, mode="session")
        z.frames("ready")
        z.send({"op": "list_files"})
        self.assertIn("list_files.id", z.frames("fatal")[-1][1]["message"])

if __name__ == "__main__":
    unittest.main()
