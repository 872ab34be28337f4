"""The run's interactive stdin (stdin_bridge.py): asks go out as records, answers come back as
frames on a real pipe; no harness process, no Docker."""

import builtins
import io
import os
import sys
import unittest

from sandbox_harness import stdin_bridge, wire


class Sender:
    def __init__(self):
        self.sent = []

    def send(self, obj):
        self.sent.append(obj)


class LineSourceTest(unittest.TestCase):
    def setUp(self):
        self.r, self.w = os.pipe()
        self.addCleanup(os.close, self.r)
        self.sender = Sender()

    def answer(self, record):
        os.write(self.w, wire.encode_json_frame(record))

    def test_each_read_asks_once_and_gets_one_line(self):
        self.answer({"line": "first"})
        self.answer({"line": "second\n"})
        os.close(self.w)
        stream = io.TextIOWrapper(io.BufferedReader(stdin_bridge.LineSource(self.sender, self.r, 4096)),
                                  encoding="utf-8")
        self.assertEqual(stream.readline(), "first\n")
        self.assertEqual(self.sender.sent, [{"t": "input", "prompt": None}])
        self.assertEqual(stream.readline(), "second\n")  # a newline is not doubled
        self.assertEqual(len(self.sender.sent), 2)
        self.assertEqual(stream.readline(), "")  # the channel closed: EOF
        self.assertEqual(stream.readline(), "")  # and it stays at EOF without asking again
        self.assertEqual(len(self.sender.sent), 3)

    def test_eof_answer_ends_input_for_good(self):
        self.answer({"eof": True})
        self.answer({"line": "never read"})
        source = stdin_bridge.LineSource(self.sender, self.r, 4096)
        self.assertEqual(source.read(10), b"")
        self.assertEqual(source.read(10), b"")
        self.assertEqual(len(self.sender.sent), 1)
        os.close(self.w)

    def test_a_malformed_answer_is_eof(self):
        self.answer({"line": 7})
        os.close(self.w)
        self.assertEqual(stdin_bridge.LineSource(self.sender, self.r, 4096).read(10), b"")

    def test_install_sends_input_prompts_and_restores(self):
        saved = (sys.stdin, builtins.input, sys.stdout)
        self.addCleanup(lambda: (setattr(sys, "stdin", saved[0]),
                                 setattr(builtins, "input", saved[1]),
                                 setattr(sys, "stdout", saved[2])))
        sys.stdout = io.StringIO()  # where input() writes its prompt
        self.answer({"line": "bob"})
        self.answer({"eof": True})
        restore = stdin_bridge.install(self.sender, self.r, 4096)
        self.assertEqual(input("name? "), "bob")
        self.assertEqual(self.sender.sent, [{"t": "input", "prompt": "name? "}])
        self.assertEqual(sys.stdout.getvalue(), "name? ")
        with self.assertRaises(EOFError):
            input()
        self.assertEqual(self.sender.sent[-1], {"t": "input", "prompt": ""})
        self.assertEqual(sys.stdin.read(), "")  # at EOF: no third ask
        self.assertEqual(len(self.sender.sent), 2)
        restore()
        self.assertIs(sys.stdin, saved[0])
        self.assertIs(builtins.input, saved[1])
        os.close(self.w)

    def test_the_prompt_is_bounded(self):
        self.answer({"line": "x"})
        os.close(self.w)
        source = stdin_bridge.LineSource(self.sender, self.r, 100)
        source.prompt = "p" * 10000
        source.read(1)
        self.assertEqual(len(self.sender.sent[0]["prompt"]), 100)


if __name__ == "__main__":
    unittest.main()
