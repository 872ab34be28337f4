"""The zygote's part of a run's interactive stdin (protocol v4): U's `input` record becomes an
`input_request` event to the server, and the server's `input_reply` becomes one answer on U's
stdin channel (stdin_bridge). One ask is outstanding at a time; a reply that does not answer it
(another run's, an earlier ask's, one that crossed the run's end) is dropped."""

import os

from .osutil import log
from .wire import encode_json_frame

MAX_ASKS = 1000  # per run; past it U's asks are answered EOF without asking the server
MAX_PROMPT_CHARS = 4096
MAX_LINE_BYTES = 60 << 10  # an answer fits the channel's pipe, so writing it never blocks


class Input:
    """A mixin of Zygote."""

    def _on_input_ask(self, state, rec):
        if state.stdin_w is None:
            return  # not an interactive run: U has no channel to wait on
        if state.input_pending is not None:
            return  # U waits for the outstanding answer already
        if state.input_seq >= MAX_ASKS:
            log("run %r: more than %d input() calls; answering EOF" % (state.rid, MAX_ASKS))
            self._answer_stdin(state, None)
            return
        prompt = rec.get("prompt")
        state.input_seq += 1
        state.input_pending = state.input_seq
        self.chan.send({"ev": "input_request", "id": state.rid, "seq": state.input_seq,
                        "prompt": prompt[:MAX_PROMPT_CHARS] if isinstance(prompt, str) else None})

    def handle_input_reply(self, state, msg):
        """`input_reply` {id, seq, line: string or null (EOF)}; `state` is the run in progress
        or None when idle."""
        if state is None or msg.get("id") != state.rid or msg.get("seq") != state.input_pending \
                or state.input_pending is None:
            log("input_reply %r/%r answers no open ask: dropped" % (msg.get("id"), msg.get("seq")))
            return
        line = msg.get("line")
        self._answer_stdin(state, line if isinstance(line, str) else None)

    def _answer_stdin(self, state, line):
        state.input_pending = None
        if line is not None:
            data = line.encode("utf-8", "replace")[:MAX_LINE_BYTES]
            record = {"line": data.decode("utf-8", "ignore")}
        else:
            record = {"eof": True}
        try:
            os.write(state.stdin_w, encode_json_frame(record))
        except OSError as e:  # U is gone (EPIPE), or its channel is full of unread answers
            log("run %r: stdin answer not delivered: %s" % (state.rid, e))
