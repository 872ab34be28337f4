"""Interactive stdin end to end through the whole harness as a host process (isolate=false):
input() asks the server (input_request), the server's input_reply resumes the code."""

import unittest

from harness_testing import Zygote

CODE = "name = input('name? ')\nprint('hi', name)\nprint(repr(input()))\n"


def json_events(frames):
    return [p for k, p in frames if k == b"J"]


def stdout(frames):
    return b"".join(p for k, p in frames if k == b"1")


class InteractiveInputTest(unittest.TestCase):
    def test_asks_answers_and_eof(self):
        z = Zygote(self, interactive_input=True)
        z.frames("ready")
        z.send({"op": "run", "id": "r1", "code": CODE, "stdin": "interactive"})
        frames = z.frames("input_request")
        ask = json_events(frames)[-1]
        self.assertEqual(ask, {"ev": "input_request", "id": "r1", "seq": 1, "prompt": "name? "})
        # Replies that answer nothing are dropped: another run's, a later seq.
        z.send({"op": "input_reply", "id": "other", "seq": 1, "line": "mallory"})
        z.send({"op": "input_reply", "id": "r1", "seq": 2, "line": "mallory"})
        z.send({"op": "input_reply", "id": "r1", "seq": 1, "line": "bob"})
        more = z.frames("input_request")
        self.assertEqual(json_events(more)[-1]["seq"], 2)
        self.assertEqual(json_events(more)[-1]["prompt"], "")
        z.send({"op": "input_reply", "id": "r1", "seq": 2, "line": None})  # EOF
        rest = z.frames("done")
        done = json_events(rest)[-1]
        self.assertEqual(done["verdict"], "error")
        self.assertEqual(done["traceback"]["type"], "EOFError")
        # Only the cell's lines: the harness's input() wrapper is hidden like every harness frame.
        self.assertEqual([f["line"] for f in done["traceback"]["frames"]], [3])
        self.assertEqual(stdout(frames + more + rest), b"name? hi bob\n")
        z.frames("ready")
        # A reply that crossed the run's end is dropped while idle, not a protocol error.
        z.send({"op": "input_reply", "id": "r1", "seq": 2, "line": "late"})
        _, _, ev = z.run("print('still here')", id="r2")
        self.assertEqual(ev[-1]["verdict"], "ok")

    def test_a_run_that_is_not_interactive_reads_eof_without_asking(self):
        z = Zygote(self, interactive_input=True)
        z.frames("ready")
        _, _, ev = z.run("import sys\nprint(repr(sys.stdin.read()))\ninput()", id="r")
        self.assertNotIn("input_request", [e["ev"] for e in ev])
        self.assertEqual(ev[-1]["traceback"]["type"], "EOFError")

    def test_without_the_config_option_interactive_runs_read_eof(self):
        z = Zygote(self)  # interactive_input false: no stdin channel at all
        z.frames("ready")
        _, _, ev = z.run("input()", id="r", stdin="interactive")
        self.assertNotIn("input_request", [e["ev"] for e in ev])
        self.assertEqual(ev[-1]["traceback"]["type"], "EOFError")

    def test_a_bad_stdin_field_is_a_protocol_error(self):
        z = Zygote(self, interactive_input=True)
        z.frames("ready")
        z.send({"op": "run", "id": "r", "code": "1", "stdin": "tty"})
        fatal = json_events(z.frames("fatal"))[-1]
        self.assertIn("run.stdin", fatal["message"])

    def test_the_timeout_counts_while_waiting(self):
        z = Zygote(self, interactive_input=True)
        z.frames("ready")
        z.send({"op": "run", "id": "r", "code": "input()", "stdin": "interactive",
                "limits": {"timeout_s": 0.5}})
        frames = z.frames("done")
        events = json_events(frames)
        self.assertEqual([e["ev"] for e in events][-2:], ["input_request", "done"])
        self.assertEqual(events[-1]["verdict"], "timeout")

    def test_asks_and_prompts_are_bounded_by_the_config(self):
        n = 5
        z = Zygote(self, interactive_input=True, input={"max_asks": n, "max_prompt_chars": 3})
        z.frames("ready")
        z.send({"op": "run", "id": "r", "stdin": "interactive",
                "code": "for i in range(%d):\n    input('prompt')\n" % (n + 5)})
        for seq in range(1, n + 1):
            ask = json_events(z.frames("input_request"))[-1]
            self.assertEqual((ask["seq"], ask["prompt"]), (seq, "pro"))
            z.send({"op": "input_reply", "id": "r", "seq": seq, "line": "x"})
        done = json_events(z.frames("done"))[-1]
        self.assertEqual(done["traceback"]["type"], "EOFError")  # ask n+1 answered EOF

    def test_a_line_of_escapes_is_cut_to_fit_the_channel_not_lost(self):
        z = Zygote(self, interactive_input=True)
        z.frames("ready")
        z.send({"op": "run", "id": "r", "stdin": "interactive",
                "code": "line = input()\nprint(len(line), set(line))"})
        z.frames("input_request")
        # 61440 bytes, each escaped as 6 in the JSON frame: 360 KiB, more than the pipe holds.
        z.send({"op": "input_reply", "id": "r", "seq": 1, "line": "\x01" * 61440})
        frames = z.frames("done")
        self.assertEqual(json_events(frames)[-1]["verdict"], "ok")
        count, chars = stdout(frames).split(b" ", 1)
        self.assertTrue(10000 < int(count) < 61440, count)
        self.assertEqual(chars, b"{'\\x01'}\n")

    def test_session_cells_choose_per_cell(self):
        z = Zygote(self, mode="session", interactive_input=True)
        z.frames("ready")
        z.send({"op": "run", "id": "a", "code": "x = input('x? ')", "stdin": "interactive"})
        ask = json_events(z.frames("input_request"))[-1]
        self.assertEqual((ask["id"], ask["seq"], ask["prompt"]), ("a", 1, "x? "))
        z.send({"op": "input_reply", "id": "a", "seq": 1, "line": "41"})
        self.assertEqual(json_events(z.frames("done"))[-1]["verdict"], "ok")
        z.frames("ready")
        _, _, ev = z.run("print(int(x) + 1)\ninput()", id="b")  # not interactive: EOF
        self.assertNotIn("input_request", [e["ev"] for e in ev])
        self.assertEqual(ev[-1]["traceback"]["type"], "EOFError")
        z.frames("ready")
        z.send({"op": "run", "id": "c", "code": "y = input()", "stdin": "interactive"})
        ask = json_events(z.frames("input_request"))[-1]
        self.assertEqual((ask["id"], ask["seq"]), ("c", 1))  # each cell counts from 1
        z.send({"op": "input_reply", "id": "c", "seq": 1, "line": "z"})
        self.assertEqual(json_events(z.frames("done"))[-1]["verdict"], "ok")


if __name__ == "__main__":
    unittest.main()
