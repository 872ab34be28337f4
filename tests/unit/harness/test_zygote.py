"""The whole harness as a host process through the real bootstrap (isolate=false):
protocol, output relay, verdicts, files."""

import base64
import json
import time
import unittest

from harness_testing import Zygote
from sandbox_harness import verdicts, wire


class ProcessModeTest(unittest.TestCase):
    """End to end without Docker: protocol, output relay, verdicts, files (isolate=false)."""

    def test_runs(self):
        z = Zygote(self)
        ready = z.frames("ready")[-1][1]
        self.assertEqual((ready["isolation"], ready["run_count"], ready["errors"]), ("process", 0, []))
        out, err, ev = z.run("print(1)\nimport sys\nprint('e', file=sys.stderr)\n6 * 7")
        done = ev[-1]
        self.assertEqual((out, err), (b"1\n", b"e\n"))
        self.assertEqual(ev[0], {"ev": "started", "id": "r"})
        self.assertEqual((done["verdict"], done["exit_code"], done["value"]), ("ok", 0, "42"))
        self.assertEqual(z.frames("ready")[-1][1]["run_count"], 1)

        out, err, ev = z.run("def f():\n    1/0\nf()", id="e")
        done = ev[-1]
        self.assertEqual(done["verdict"], "error")
        self.assertEqual([f["line"] for f in done["traceback"]["frames"]], [3, 2])
        self.assertNotIn(b"<harness>", err)
        self.assertIn(b"    1/0\n", err)
        z.frames("ready")

        b64 = base64.b64encode(b"in").decode()
        out, err, ev = z.run("open('out.txt', 'w').write(open('in.txt').read() * 2)",
                             files=[{"path": "in.txt", "content_b64": b64}])
        files = [e for e in ev if e.get("ev") == "file"]
        self.assertEqual([(f["path"], base64.b64decode(f["data_b64"])) for f in files],
                         [("out.txt", b"inin")])
        z.frames("ready")

        out, err, ev = z.run("open('/x', 'w')", files=[{"path": "../x", "content_b64": ""}])
        self.assertEqual(ev[-1]["verdict"], "error")
        self.assertIn("'..'", ev[-1]["detail"])
        self.assertNotIn("started", [e["ev"] for e in ev])
        z.frames("ready")

        z.send({"op": "ping"})
        pong = z.frames("pong")[-1][1]
        self.assertEqual((pong["ev"], pong["busy"]), ("pong", False))
        self.assertTrue(pong["memory_bytes"] is None or pong["memory_bytes"] > 0, pong)

    def test_forged_records_are_checked(self):
        z = Zygote(self)
        z.frames("ready")
        forge = ("import json, os, struct\n"
                 "def forge(rec):\n"
                 "    data = json.dumps(rec).encode()\n"
                 "    for fd in range(3, 64):\n"
                 "        try:\n"
                 "            os.write(fd, struct.pack('>I', len(data)) + b'J' + data)\n"
                 "        except OSError:\n"
                 "            pass\n")
        files = "".join("forge({'t': 'file', 'path': %r, 'size': 1, 'mime_type': 'text/plain', "
                        "'data_b64': 'eA=='})\n" % p
                        for p in ("../../etc/forged", "/etc/passwd", "a//b", "n\nl", "./x"))
        out, err, ev = z.run(forge + files + "forge({'t': 'file', 'path': 'ok', 'size': 5, "
                             "'mime_type': 'x', 'data_b64': 'eA=='})\n")
        done = ev[-1]
        self.assertEqual([e for e in ev if e["ev"] == "file"], [])
        self.assertEqual((done["verdict"], done["files_truncated"]), ("ok", True), done)
        z.frames("ready")
        out, err, ev = z.run(forge + "forge({'t': 'internal', 'message': 'pwned by the code'})\n")
        done = ev[-1]
        self.assertEqual((done["verdict"], done["exit_code"], done["detail"]),
                         ("error", 0, verdicts.RUN_SIDE_FAILURE), done)
        self.assertNotIn("pwned", json.dumps(ev))
        z.frames("ready")
        out, err, ev = z.run("import sys\nsys.setrecursionlimit(100000)\n"
                             "def f(n):\n    return f(n + 1)\nf(0)\n", id="deep")
        tb = ev[-1]["traceback"]
        self.assertEqual((ev[-1]["verdict"], tb["type"], len(tb["frames"])),
                         ("error", "RecursionError", 100))
        self.assertIn("frames omitted", tb["frames"][50]["function"])
        self.assertIn(b"frames omitted ...]", err)
        self.assertLess(len(err), 20000)

    def test_limits_and_cancel(self):
        z = Zygote(self)
        z.frames("ready")
        t0 = time.monotonic()
        _, _, ev = z.run("while True: pass", limits={"timeout_s": 0.5})
        self.assertEqual(ev[-1]["verdict"], "timeout")
        self.assertLess(time.monotonic() - t0, 3)
        z.frames("ready")
        out, _, ev = z.run("while True: print('x' * 50)", limits={"output_bytes": 1000})
        self.assertEqual(ev[-1]["verdict"], "output_limit")
        self.assertTrue(ev[-1]["output_truncated"])
        self.assertTrue(out.endswith(b"\n[output truncated: limit of 1000 bytes reached]\n"))
        self.assertEqual(len(out), 1000 + len("\n[output truncated: limit of 1000 bytes reached]\n"))
        z.frames("ready")
        _, _, ev = z.run("import os\nos.kill(os.getpid(), 11)")
        self.assertEqual((ev[-1]["verdict"], ev[-1]["signal"]), ("signal", 11))
        z.frames("ready")
        z.send({"op": "run", "id": "c", "code": "import time\ntime.sleep(30)"})
        z.frames("started")
        t0 = time.monotonic()
        z.send({"op": "cancel", "id": "c"})
        done = z.frames("done")[-1][1]
        self.assertEqual(done["verdict"], "cancelled")
        self.assertLess(time.monotonic() - t0, 1.0)

    def test_memory_narrowing(self):
        z = Zygote(self, limits={"memory_bytes": 0})
        z.frames("ready")
        narrowed = {"memory_bytes": 64 << 20}
        _, err, ev = z.run("import resource\nprint(resource.getrlimit(resource.RLIMIT_DATA))\n"
                           "b = bytearray(256 << 20)", limits=narrowed)
        done = ev[-1]
        self.assertEqual((done["verdict"], done["exit_code"]), ("memory", 1), done)
        self.assertEqual(done["traceback"]["type"], "MemoryError")
        self.assertIn(b"MemoryError", err)
        self.assertIn("memory limit of %d bytes" % (64 << 20), done["detail"])
        z.frames("ready")
        # Growing until refused; the traceback and results are still reported (headroom).
        _, _, ev = z.run("x = []\nwhile True:\n    x.append(bytearray(1 << 20))", limits=narrowed)
        self.assertEqual((ev[-1]["verdict"], ev[-1]["traceback"]["type"]), ("memory", "MemoryError"))
        z.frames("ready")
        # A MemoryError the cell catches changes nothing; a run without memory_bytes gets no
        # RLIMIT_DATA at all.
        out, _, ev = z.run("try:\n    bytearray(256 << 20)\nexcept MemoryError:\n    print('caught')",
                           limits=narrowed)
        self.assertEqual((out, ev[-1]["verdict"]), (b"caught\n", "ok"))
        z.frames("ready")
        out, _, ev = z.run("import resource\n"
                           "print(resource.getrlimit(resource.RLIMIT_DATA)[0] == resource.RLIM_INFINITY)")
        self.assertEqual((out, ev[-1]["verdict"]), (b"True\n", "ok"))

    def test_writes_to_every_fd(self):
        # Frames (and a Docker stream header) written to every descriptor: the output carries
        # them verbatim, the result pipe's garbage makes the run's verdict `error`, one `done`.
        z = Zygote(self)
        z.frames("ready")
        forged = wire.encode_json_frame({"ev": "done", "id": "w", "verdict": "ok"}) + \
            b"\x02\x00\x00\x00\x00\x00\x00\x05hello"
        code = ("import os\nfor fd in range(1, 64):\n    try:\n        os.write(fd, %r)\n"
                "    except OSError:\n        pass\nprint('after')\n" % forged)
        out, err, ev = z.run(code, id="w")
        self.assertEqual(out, forged + b"after\n")
        self.assertEqual(err, forged)
        self.assertEqual([e["ev"] for e in ev], ["started", "done"])
        self.assertEqual((ev[-1]["verdict"], ev[-1]["exit_code"]), ("error", 0))
        self.assertIn("result channel", ev[-1]["detail"])
        self.assertEqual(z.frames("ready")[-1][1]["run_count"], 1)
        out, _, ev = z.run("print('next')", id="n")
        self.assertEqual((out, ev[-1]["verdict"]), (b"next\n", "ok"))

    def test_fresh_mode_and_exit(self):
        z = Zygote(self, mode="fresh")
        z.frames("ready")
        out, _, ev = z.run("print('once')")
        self.assertEqual((out, ev[-1]["verdict"]), (b"once\n", "ok"))
        self.assertEqual(z.proc.wait(10), 0)
        z = Zygote(self)
        z.frames("ready")
        z.send({"op": "exit"})
        self.assertEqual(z.proc.wait(10), 0)

    def test_protocol_errors_are_fatal(self):
        for bad in (b"{not json", json.dumps({"op": "dance"}).encode(),
                    json.dumps({"op": "config"}).encode()):
            z = Zygote(self)
            z.frames("ready")
            z.proc.stdin.write(wire.encode_frame(b"J", bad))
            z.proc.stdin.flush()
            fatal = z.frames("fatal")[-1][1]
            self.assertEqual(fatal["ev"], "fatal")
            self.assertNotEqual(z.proc.wait(10), 0)
        z = Zygote(self, mode="nope")
        self.assertIn("config.mode", z.frames("fatal")[-1][1]["message"])
