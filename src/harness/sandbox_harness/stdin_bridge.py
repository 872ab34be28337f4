"""The run's stdin when the server can answer it (protocol v4, `interactive_input`): sys.stdin
reads ask the zygote for a line (an `input` record with the prompt input() was given) and block
until its answer comes on the stdin channel: a line, or EOF. Everything else keeps fd 0 at
/dev/null, so a subprocess still reads EOF, as does code when no client can answer."""

import builtins
import io
import sys

from .wire import read_request


class LineSource(io.RawIOBase):
    """Raw bytes of stdin, a line per ask. After an EOF answer it stays at EOF, like a closed
    stdin: a program reading to EOF ends instead of asking forever."""

    def __init__(self, sender, channel_fd, max_prompt_chars):
        super().__init__()
        self._sender = sender
        self._fd = channel_fd
        self._max_prompt = max_prompt_chars  # config.input; the zygote bounds it again
        self._pending = b""
        self.prompt = None  # what input() last printed, sent with the next ask
        self.eof = False

    def readable(self):
        return True

    def readinto(self, buf):
        if not self._pending and not self.eof:
            self._ask()
        n = min(len(buf), len(self._pending))
        buf[:n] = self._pending[:n]
        self._pending = self._pending[n:]
        return n

    def _ask(self):
        prompt, self.prompt = self.prompt, None
        self._sender.send({"t": "input",
                           "prompt": None if prompt is None else str(prompt)[:self._max_prompt]})
        answer = read_request(self._fd)  # None: Z closed the channel
        line = answer.get("line") if isinstance(answer, dict) else None
        if not isinstance(line, str):
            self.eof = True
            return
        self._pending = (line if line.endswith("\n") else line + "\n").encode("utf-8", "replace")


def install(sender, channel_fd, max_prompt_chars):
    """Points sys.stdin and input() at a new LineSource on `channel_fd`; returns a function that
    puts back what was there (a session's next cell may not be answerable)."""
    source = LineSource(sender, channel_fd, max_prompt_chars)
    stream = io.TextIOWrapper(io.BufferedReader(source, buffer_size=1 << 16), encoding="utf-8",
                              errors="replace", line_buffering=True)
    saved = (sys.stdin, builtins.input)
    original_input = builtins.input

    def ask_input(prompt=""):
        source.prompt = prompt
        return original_input(prompt)

    sys.stdin = stream
    builtins.input = ask_input

    def restore():
        sys.stdin, builtins.input = saved

    return restore
