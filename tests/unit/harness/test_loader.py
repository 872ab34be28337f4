"""The payload: the loader and every module packed as the server packs them (loader.py,
cmake/pack_harness.cmake), installed from memory under code filenames the traceback filter
knows, with no side effects but as the bootstrap's __main__."""

import ast
import json
import os
import subprocess
import sys
import tempfile
import unittest

import harness_payload

MODULES = sorted(name[:-3] for name in os.listdir(harness_payload.PACKAGE_DIR)
                 if name.endswith(".py"))
LOADER = os.path.join(harness_payload.ROOT, "src", "harness", "loader.py")

# Exec'd in a fresh interpreter under another __name__: installs the modules, runs nothing.
_INSPECT = r"""
import json, sys
src = sys.stdin.buffer.read()
exec(compile(src, "<harness>", "exec"), {"__name__": "inspect"})
out = {}
for name, mod in sorted(sys.modules.items()):
    if name == "sandbox_harness" or name.startswith("sandbox_harness."):
        codes = [v.__code__.co_filename for v in vars(mod).values()
                 if getattr(v, "__module__", None) == name and hasattr(v, "__code__")]
        out[name] = {"file": mod.__file__, "codes": sorted(set(codes)),
                     "source": mod.__loader__.get_source(name),
                     "harness": all(sys.modules["sandbox_harness.tracebacks"].is_harness_file(c)
                                    for c in codes + [mod.__file__])}
out["meta_path"] = [type(f).__name__ for f in sys.meta_path]
print(json.dumps(out))
"""


class LoaderTest(unittest.TestCase):
    def test_modules_installed_from_the_payload(self):
        p = subprocess.run([sys.executable, "-I", "-c", _INSPECT], input=harness_payload.pack(),
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=60)
        self.assertEqual(p.returncode, 0, p.stderr)
        out = json.loads(p.stdout)
        self.assertNotIn("_Loader", out.pop("meta_path"))  # gone once everything is loaded
        self.assertEqual(sorted(out), sorted("sandbox_harness" if m == "__init__" else
                                             "sandbox_harness." + m for m in MODULES))
        for name, info in out.items():
            key = "__init__" if name == "sandbox_harness" else name.split(".", 1)[1]
            self.assertEqual(info["file"], "<harness>/%s.py" % key)
            self.assertTrue(all(c == info["file"] for c in info["codes"]), info["codes"])
            self.assertTrue(info["harness"], name)  # so a user's traceback never shows it
            with open(os.path.join(harness_payload.PACKAGE_DIR, key + ".py")) as f:
                self.assertEqual(info["source"], f.read(), name)  # packed byte for byte

    def test_data_files_served_from_the_payload(self):
        # protocol.json travels in the payload; protocol.py reads it through the payload's loader.
        code = (r"import json, sys; exec(compile(sys.stdin.buffer.read(), '<harness>', 'exec'),"
                r" {'__name__': 'inspect'}); p = sys.modules['sandbox_harness.protocol'];"
                r" missing = 'raised'"
                "\ntry: p.__spec__.loader.get_data('<harness>/nothing.json'); missing = 'served'"
                "\nexcept OSError: pass"
                "\nprint(json.dumps({'schema': p.SCHEMA, 'missing': missing}))")
        p = subprocess.run([sys.executable, "-I", "-c", code], input=harness_payload.pack(),
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=60)
        self.assertEqual(p.returncode, 0, p.stderr)
        out = json.loads(p.stdout)
        with open(os.path.join(harness_payload.PACKAGE_DIR, "protocol.json")) as f:
            self.assertEqual(out["schema"], json.load(f))
        self.assertEqual(out["missing"], "raised")

    def test_as_main_it_runs_the_harness(self):
        # The bootstrap's payload runs main(): with the control stream closed at once, it exits
        # quietly, saying so.
        payload = harness_payload.pack()
        p = subprocess.run([sys.executable, "-I", "-u", "-c", harness_payload.BOOT],
                           input=b"%d\n" % len(payload) + payload, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, timeout=60)
        self.assertEqual((p.returncode, p.stdout), (0, b""), p.stderr)
        self.assertIn(b"the control stream ended before the config message", p.stderr)

    def test_import_has_no_side_effects(self):
        # With stdin left open, main() would block reading a config: the imports must return.
        code = "import %s; print('imported')" % ", ".join("sandbox_harness." + m for m in MODULES
                                                          if m != "__init__")
        p = subprocess.run([sys.executable, "-c", code], stdin=subprocess.PIPE,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=30,
                           env=dict(os.environ, PYTHONPATH=os.path.dirname(harness_payload.PACKAGE_DIR)))
        self.assertEqual(p.stdout, b"imported\n", p.stderr)

    def test_python38_syntax(self):
        ast.parse(harness_payload.pack(), feature_version=(3, 8))

    def test_modules_stay_small(self):
        # One job per module: a module past this has taken a second one.
        for name in MODULES + ["../loader"]:
            with open(os.path.join(harness_payload.PACKAGE_DIR, name + ".py")) as f:
                self.assertLessEqual(len(f.read().splitlines()), 400, name)

    def test_packer_refuses_what_it_cannot_quote(self):
        for bad in ("x = '''a'''\n", "x = 1"):
            with tempfile.TemporaryDirectory() as d:
                with open(os.path.join(d, "m.py"), "w") as f:
                    f.write(bad)
                p = subprocess.run([os.environ.get("SANDBOX_CMAKE", "cmake"), "-DPACKAGE_DIR=" + d,
                                    "-DLOADER=" + LOADER, "-DOUTPUT=" + os.path.join(d, "out.py"),
                                    "-P", os.path.join(harness_payload.ROOT, "cmake",
                                                       "pack_harness.cmake")],
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE)
                self.assertNotEqual(p.returncode, 0, bad)
                self.assertFalse(os.path.exists(os.path.join(d, "out.py")))
