"""The harness's exceptions: whose fault a failure is decides what the server is told."""


class ProtocolError(Exception):
    """The server broke the protocol: the harness sends `fatal` and exits non-zero."""


class InputError(Exception):
    """A request's data (files, paths) is unacceptable: the run ends with verdict `error`."""


class FatalError(Exception):
    """The harness cannot continue (not the server's fault)."""
