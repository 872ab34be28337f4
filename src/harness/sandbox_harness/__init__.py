"""The in-container harness of sandbox-mcp: a zygote that runs untrusted Python cells.

A package of modules with one job each (docs/harness-protocol.md, "Layout"). The server sends it
into the container as one payload: src/harness/loader.py followed by every module's source
(cmake/pack_harness.cmake), which the container's bootstrap exec()s; the loader installs the
modules under this package's name and runs zygote.main(). From then on the harness speaks
length-prefixed frames on the container's stdin/stdout.

Standard library and ctypes only; Python >= 3.8. Importing any module has no side effects (the
unit tests import them from the source tree).
"""
