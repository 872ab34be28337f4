"""The zygote's control channel to the server: frames on the container's stdin/stdout."""

import os
import select
import sys
import time

from .errors import ProtocolError
from .osutil import write_all
from .wire import FrameDecoder, decode_message, encode_frame, encode_json_frame


class Channel:
    """The control channel: frames on the container's stdin/stdout, moved to close-on-exec fds
    so that fds 0 and 1 of the zygote (and of everything it forks) are /dev/null."""

    def __init__(self):
        pending = b""
        stdin = getattr(sys.stdin, "buffer", None)
        if stdin is not None:
            pending = _drain_buffered(stdin)
        _KEEP_ALIVE.extend([sys.stdin, sys.stdout, sys.__stdin__, sys.__stdout__])
        self.in_fd = os.dup(0)  # os.dup makes non-inheritable (O_CLOEXEC) descriptors
        self.out_fd = os.dup(1)
        devnull = os.open("/dev/null", os.O_RDWR)
        os.dup2(devnull, 0)
        os.dup2(devnull, 1)
        os.close(devnull)
        self.decoder = FrameDecoder()
        self.decoder.feed(pending)
        self.queue = []
        self.eof = False
        self._parse()

    def _parse(self):
        for kind, payload in self.decoder.frames():
            self.queue.append(decode_message(kind, payload))

    def on_readable(self):
        data = os.read(self.in_fd, 1 << 16)
        if not data:
            self.eof = True
            if self.decoder.pending:
                raise ProtocolError("the control stream ended inside a frame")
            return
        self.decoder.feed(data)
        self._parse()

    def next_message(self, timeout=None):
        """Blocks for the next message; None at EOF or after the timeout."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while not self.queue and not self.eof:
            wait = None if deadline is None else max(deadline - time.monotonic(), 0)
            r, _, _ = select.select([self.in_fd], [], [], wait)
            if not r:
                return None
            self.on_readable()
        return self.queue.pop(0) if self.queue else None

    def send(self, obj):
        write_all(self.out_fd, encode_json_frame(obj))

    def send_output(self, kind, data):
        if data:
            write_all(self.out_fd, encode_frame(kind, data))


_KEEP_ALIVE = []  # stdio objects of fds the zygote re-points: never let GC close them


def _drain_buffered(reader):
    """Bytes the bootstrap's buffered reader already holds beyond the harness source."""
    out = []
    os.set_blocking(0, False)
    try:
        while True:
            try:
                chunk = reader.read1(1 << 16)
            except BlockingIOError:
                break
            if not chunk:
                break
            out.append(chunk)
    finally:
        os.set_blocking(0, True)
    return b"".join(out)
