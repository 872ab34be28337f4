"""The zygote's part of a run's interactive stdin (protocol v4): U's `input` record becomes an
`input_request` event to the server, and the server's `input_reply` becomes one answer on U's
stdin channel (stdin_bridge). One ask is outstanding at a time; a reply that does not answer it
(another run's, an earlier ask's, one that crossed the run's end) is dropped."""

import os

from .osutil import log
from .wire import encode_json_frame

# The channel's pipe holds this much (Linux's default) and U empties it before it asks again, so
# a frame no larger is written whole at once: the zygote never blocks on it.
CHANNEL_BYTES = 64 << 10


class Input:
    """A mixin of Zygote."""

    def _on_input_ask(self, state, rec):
        if state.stdin_w is None:
            return  # not an interactive run: U has no channel to wait on
        if state.input_pending is not None:
            return  # U waits for the outstanding answer already
        bounds = self.cfg["input"]
        if state.input_seq >= bounds["max_asks"]:
            log("run %r: more than %d input() calls; answering EOF"
                % (state.rid, bounds["max_asks"]))
            self._answer_stdin(state, None)
            return
        prompt = rec.get("prompt")
        state.input_seq += 1
        state.input_pending = state.input_seq
        self.chan.send({"ev": "input_request", "id": state.rid, "seq": state.input_seq,
                        "prompt": prompt[:bounds["max_prompt_chars"]]
                        if isinstance(prompt, str) else None})

    def handle_input_reply(self, state, msg):
        """`input_reply` {id, seq, line: string or null (EOF)}; `state` is the run in progress
        or None when idle."""
        if state is None or state.input_pending is None or msg.get("id") != state.rid \
                or msg.get("seq") != state.input_pending:
            log("input_reply %r/%r answers no open ask: dropped" % (msg.get("id"), msg.get("seq")))
            return
        line = msg.get("line")
        self._answer_stdin(state, line if isinstance(line, str) else None)

    def _answer_stdin(self, state, line):
        state.input_pending = None
        if line is None:
            frame = encode_json_frame({"eof": True})
        else:
            data = line.encode("utf-8", "replace")[:self.cfg["input"]["max_line_bytes"]]
            line = data.decode("utf-8", "ignore")
            frame = encode_json_frame({"line": line})
            while len(frame) > CHANNEL_BYTES:  # JSON escapes made it longer than the line
                line = line[:len(line) * CHANNEL_BYTES // len(frame) - 1]
                frame = encode_json_frame({"line": line})
        try:
            os.write(state.stdin_w, frame)
        except OSError as e:  # U is gone (EPIPE), or its channel is full of unread answers
            log("run %r: stdin answer not delivered: %s" % (state.rid, e))
