"""The loader at the head of the harness payload.

The server sends the harness into the container as one Python source (the bootstrap compiles it
as "<harness>" and exec()s it as __main__, docs/harness-protocol.md "Bootstrap"): this file,
then a call `_boot({module: source, ...}, {file: text, ...})` with every module of the
sandbox_harness package and its data files (the protocol's schema, protocol.json), appended by
cmake/pack_harness.cmake. The container's root file system is read-only, so the modules are
served from those sources by an import hook and the data files by its get_data, never written
anywhere.
"""

import sys

_PACKAGE = "sandbox_harness"


class _Loader:
    """Finder and loader of the harness's modules. Each is compiled with the code filename
    "<payload>/<module>.py": all in one directory, the payload's name, which is how the
    traceback filter (tracebacks.is_harness_file) knows every harness frame. get_source gives
    linecache the lines of the harness's own tracebacks (its log); get_data the package's data
    files, by the path they have beside the modules (as Python's file loader reads them)."""

    def __init__(self, sources, directory, data):
        self.sources = sources
        self.directory = directory
        self.data = data

    def _key(self, name):
        if name == _PACKAGE:
            return "__init__"
        prefix = _PACKAGE + "."
        if name.startswith(prefix) and "." not in name[len(prefix):]:
            return name[len(prefix):]
        return None

    def find_spec(self, name, path=None, target=None):
        key = self._key(name)
        if key not in self.sources:
            return None
        from importlib.machinery import ModuleSpec
        spec = ModuleSpec(name, self, origin="%s/%s.py" % (self.directory, key),
                          is_package=key == "__init__")
        spec.has_location = True  # sets __file__ to the origin
        return spec

    def create_module(self, spec):
        return None  # the default module object

    def exec_module(self, module):
        source = self.sources[self._key(module.__name__)]
        exec(compile(source, module.__spec__.origin, "exec", dont_inherit=True), module.__dict__)

    def get_source(self, name):
        return self.sources.get(self._key(name))

    def get_data(self, path):
        directory, _, name = path.rpartition("/")
        if directory != self.directory or name not in self.data:
            raise OSError("%r is not in the harness payload" % path)
        return self.data[name].encode("utf-8")


def _boot(sources, data=None):
    """Installs every module from `sources` (and the data files `data`), then, as the
    bootstrap's payload, runs the harness."""
    loader = _Loader(sources, _boot.__code__.co_filename, data or {})
    sys.meta_path.insert(0, loader)
    try:
        import importlib
        for key in sorted(sources):
            importlib.import_module(_PACKAGE if key == "__init__" else _PACKAGE + "." + key)
    finally:
        # Every module is loaded: the user's imports never go through this hook.
        sys.meta_path.remove(loader)
    if __name__ == "__main__":
        sys.modules[_PACKAGE + ".zygote"].main()
