"""Run-time pip installs (pip_site): the plan, where it applies, what a run gets, and end to end
through the zygote with a stand-in for pip (fake_pip)."""

import json
import os
import shutil
import stat
import sys
import tempfile
import unittest

from harness_testing import FAKE_PIP, Zygote, user_namespaces_work
from sandbox_harness import pip_site

PY = "python%d.%d" % sys.version_info[:2]
PROXY = "http://10.213.1.2:3128"


def _no_spec(name):
    raise AssertionError("pip looked for without a network")


class PlanTest(unittest.TestCase):
    def test_without_a_network_nothing_is_planned_or_looked_for(self):
        for environ in ({}, {"HOME": "/tmp"}, {"https_proxy": "", "PIP_INDEX_URL": ""}):
            self.assertEqual(pip_site.plan(environ, "/tmp/work", _no_spec), (None, None))

    def test_each_network_variable_turns_it_on(self):
        for name in ("http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY", "PIP_INDEX_URL"):
            site, why = pip_site.plan({name: "x", "HOME": "/tmp"}, "/tmp/work", lambda n: object())
            self.assertIsNone(why)
            self.assertEqual((site.base, site.site, site.bin, site.top),
                             ("/tmp/.local", "/tmp/.local/lib/%s/site-packages" % PY,
                              "/tmp/.local/bin", ".local"), name)

    def test_no_pip_in_the_image(self):
        def broken(name):
            raise ImportError("pip is half there")
        for find in (lambda n: None, broken):
            self.assertEqual(pip_site.plan({"https_proxy": PROXY, "HOME": "/tmp"}, "/tmp/work",
                                           find), (None, "the image has no pip"))

    def test_the_user_base_must_be_on_tmp_and_apart_from_the_work_dir(self):
        have = lambda n: object()  # noqa: E731
        site, _ = pip_site.plan({"https_proxy": PROXY, "HOME": "/home/u",
                                 "PYTHONUSERBASE": "/tmp/ub"}, "/tmp/work", have)
        self.assertEqual(site.base, "/tmp/ub")  # PYTHONUSERBASE wins over HOME, as in site.py
        for env, workdir, says in (
                ({"HOME": "/home/u"}, "/tmp/work", "/home/u/.local is not on the run's /tmp"),
                ({"PYTHONUSERBASE": "/tmp"}, "/tmp/work", "/tmp is not on the run's /tmp"),
                ({"PYTHONUSERBASE": "/tmp/../etc"}, "/tmp/work", "/etc is not on"),
                ({"PYTHONUSERBASE": "/tmp/work/.local"}, "/tmp/work", "overlap"),
                ({"PYTHONUSERBASE": "/tmp/w"}, "/tmp/w/work", "overlap"),
                ({"PYTHONUSERBASE": "/tmp/w"}, "/tmp/w", "overlap")):
            env["https_proxy"] = PROXY
            site, why = pip_site.plan(env, workdir, have)
            self.assertIsNone(site, env)
            self.assertIn(says, why)
        # a sibling of the work dir is not inside it
        site, _ = pip_site.plan({"https_proxy": PROXY, "PYTHONUSERBASE": "/tmp/work2"},
                                "/tmp/work", have)
        self.assertEqual(site.base, "/tmp/work2")


class ForRunTest(unittest.TestCase):
    def test_only_where_the_run_owns_its_tmp(self):
        site = pip_site.PipSite("/tmp/.local")
        self.assertIs(pip_site.for_run(site, True, False, set()), site)  # a fresh tmpfs per run
        self.assertIs(pip_site.for_run(site, True, True, {".local"}), site)
        # without namespaces in a container, F empties /tmp except what was there at start-up
        self.assertIs(pip_site.for_run(site, False, True, {".matplotlib"}), site)
        self.assertIsNone(pip_site.for_run(site, False, True, {".local"}))
        # a developer's host without namespaces: /tmp is the host's
        self.assertIsNone(pip_site.for_run(site, False, False, set()))
        self.assertIsNone(pip_site.for_run(None, True, True, set()))


class ApplyTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="pip-site-test-", dir="/tmp")
        self.addCleanup(shutil.rmtree, self.tmp)
        self.site = pip_site.PipSite(os.path.join(self.tmp, ".local"))

    def test_the_user_site_is_created_and_put_where_site_py_puts_it(self):
        path = ["/tmp/work", "/usr/lib/python311.zip", "/usr/lib/python3.11",
                "/usr/lib/python3.11/lib-dynload", "/usr/local/lib/python3.11/dist-packages",
                "/usr/lib/python3/dist-packages"]
        pip_site.apply(self.site, {}, path)
        st = os.stat(self.site.site)
        self.assertTrue(stat.S_ISDIR(st.st_mode))
        self.assertEqual(stat.S_IMODE(st.st_mode) & 0o077, 0)
        self.assertEqual(path.index(self.site.site), 4)  # after the stdlib, before the image's
        pip_site.apply(self.site, {}, path)  # again (nothing twice), over an existing directory
        self.assertEqual(path.count(self.site.site), 1)
        other = ["/tmp/work", "/usr/lib/python3.11"]
        pip_site.apply(self.site, {}, other)
        self.assertEqual(other[-1], self.site.site)
        venv = ["/w", "/v/lib/python3.11/site-packages/"]
        pip_site.apply(self.site, {}, venv)
        self.assertEqual(venv.index(self.site.site), 1)

    def test_the_environment(self):
        env = {"https_proxy": PROXY, "PATH": "/usr/bin:/bin"}
        pip_site.apply(self.site, env, [])
        self.assertEqual(env, {
            "https_proxy": PROXY, "PATH": "/usr/bin:/bin:" + self.site.bin,
            "PYTHONUSERBASE": self.site.base, "PIP_BREAK_SYSTEM_PACKAGES": "1",
            "PIP_NO_CACHE_DIR": "1", "PIP_DISABLE_PIP_VERSION_CHECK": "1", "PIP_NO_INPUT": "1",
            "no_proxy": "localhost,127.0.0.1,::1", "NO_PROXY": "localhost,127.0.0.1,::1"})
        pip_site.apply(self.site, env, [])
        self.assertEqual(env["PATH"], "/usr/bin:/bin:" + self.site.bin)
        # The pool's own settings win; an index without a proxy sets no no_proxy; no PATH is
        # the default search path plus the scripts' directory.
        env = {"PIP_INDEX_URL": "https://index.test/simple/", "PIP_NO_CACHE_DIR": "0",
               "PIP_BREAK_SYSTEM_PACKAGES": "0", "PYTHONUSERBASE": "/elsewhere"}
        pip_site.apply(self.site, env, [])
        self.assertEqual((env["PIP_NO_CACHE_DIR"], env["PIP_BREAK_SYSTEM_PACKAGES"]), ("0", "0"))
        self.assertEqual(env["PYTHONUSERBASE"], self.site.base)  # the plan's, always
        self.assertNotIn("no_proxy", env)
        self.assertEqual(env["PATH"], os.defpath + os.pathsep + self.site.bin)
        env = {"HTTP_PROXY": PROXY, "NO_PROXY": "internal.example"}
        pip_site.apply(self.site, env, [])
        self.assertEqual((env["NO_PROXY"], "no_proxy" in env), ("internal.example", False))


# What a run reports: its pip environment, where the user site is on its path, what it sees.
PROBE = r"""
import json, os, sys
site = [p for p in sys.path if p.endswith("site-packages") and "/.local/" in p]
print(json.dumps({"env": {k: v for k, v in os.environ.items()
                          if k.startswith("PIP_") or k in ("PYTHONUSERBASE", "no_proxy")},
                  "site": site, "path": sys.path}))
"""

INSTALL = r"""
import os, subprocess, sys
try:
    import sbxfake
except ImportError:
    print("absent before")
r = subprocess.run([sys.executable, "-m", "pip", "install", "sbxfake"], capture_output=True,
                   text=True)
print(r.returncode, r.stdout.strip(), r.stderr.strip())
import sbxfake
print(sbxfake.VERSION, sbxfake.__file__)
r = subprocess.run([sys.executable, "-c", "import sbxfake, site; print(site.getusersitepackages())"],
                   capture_output=True, text=True)
print("child", r.returncode, r.stdout.strip())
"""

IMPORT = r"""
import os, sys
site = [p for p in sys.path if p.endswith("site-packages") and "/.local/" in p][0]
print(sorted(os.listdir(site)))
import sbxfake
"""


def _env(**extra):
    env = {"PATH": os.environ.get("PATH", os.defpath), "HOME": "/nonexistent",
           "PYTHONPATH": FAKE_PIP}  # the code's interpreters find the stand-in pip
    env.update(extra)
    return env


class ZygoteTest(unittest.TestCase):
    """The harness as a host process (harness_testing.Zygote) with the stand-in pip first on its
    path and on its interpreters' (PYTHONPATH)."""

    def probe(self, z):
        out, err, ev = z.run(PROBE)
        self.assertEqual(ev[-1]["verdict"], "ok", (err, ev[-1]))
        z.frames("ready")
        return json.loads(out)

    def test_without_a_network_a_run_is_unchanged(self):
        z = Zygote(self, boot_path=FAKE_PIP, env=_env(PYTHONUSERBASE="/tmp/.local"))
        z.frames("ready")
        got = self.probe(z)  # the environment as the container has it, no user site
        self.assertEqual((got["env"], got["site"]), ({"PYTHONUSERBASE": "/tmp/.local"}, []))

    def test_off_on_a_developer_host_without_namespaces(self):
        z = Zygote(self, boot_path=FAKE_PIP,
                   env=_env(https_proxy=PROXY, PYTHONUSERBASE="/tmp/.local"))
        z.frames("ready")
        got = self.probe(z)  # the environment as the container has it, no user site
        self.assertEqual((got["env"], got["site"]), ({"PYTHONUSERBASE": "/tmp/.local"}, []))

    def test_off_when_the_user_base_is_not_on_tmp(self):
        z = Zygote(self, boot_path=FAKE_PIP, isolate="auto", env=_env(https_proxy=PROXY))
        z.frames("ready")
        self.assertEqual(self.probe(z)["site"], [])
        z.proc.kill()
        z.proc.wait()
        self.assertIn(b"run-time pip installs are off: the user base /nonexistent/.local is not "
                      b"on the run's /tmp", z.proc.stderr.read())


@unittest.skipUnless(user_namespaces_work(), "no user namespaces on this host")
class IsolatedZygoteTest(unittest.TestCase):
    """With namespaces each run has a fresh tmpfs on /tmp: installs last for the run (a session's
    for the session), and are gone for the next run."""

    def zygote(self, **config):
        z = Zygote(self, boot_path=FAKE_PIP, isolate=True,
                   env=_env(https_proxy=PROXY, PYTHONUSERBASE="/tmp/.local"), **config)
        self.assertEqual(z.frames("ready")[-1][1]["isolation"], "namespaces")
        return z

    def assert_installed(self, out):
        lines = out.decode().splitlines()
        site = "/tmp/.local/lib/%s/site-packages" % PY
        self.assertEqual(lines, ["absent before", "0 Successfully installed sbxfake-1.0 ",
                                 "1.0 %s/sbxfake/__init__.py" % site, "child 0 " + site])

    def test_install_then_import_in_one_run_and_gone_for_the_next(self):
        z = self.zygote()
        out, err, ev = z.run(PROBE)
        z.frames("ready")
        got = json.loads(out)
        site = "/tmp/.local/lib/%s/site-packages" % PY
        self.assertEqual(got["site"], [site])
        self.assertEqual(got["env"], {
            "PYTHONUSERBASE": "/tmp/.local", "PIP_BREAK_SYSTEM_PACKAGES": "1",
            "PIP_NO_CACHE_DIR": "1", "PIP_DISABLE_PIP_VERSION_CHECK": "1", "PIP_NO_INPUT": "1",
            "no_proxy": "localhost,127.0.0.1,::1"})
        path = got["path"]
        stdlib = os.path.dirname(os.__file__)
        first_site = min(i for i, p in enumerate(path)
                         if p.endswith(("site-packages", "dist-packages")) and p != site)
        self.assertLess(path.index(stdlib), path.index(site))
        self.assertLess(path.index(site), first_site)
        self.assertEqual(path[0], z.cfg_workdir)
        out, err, ev = z.run(INSTALL)
        self.assertEqual(ev[-1]["verdict"], "ok", (out, err, ev[-1]))
        self.assert_installed(out)
        self.assertEqual([e for e in ev if e["ev"] == "file"], [])  # nothing of it in the work dir
        z.frames("ready")
        out, err, ev = z.run(IMPORT)
        self.assertEqual(out, b"[]\n")
        self.assertEqual(ev[-1]["verdict"], "error")
        self.assertIn(b"No module named 'sbxfake'", err)

    def test_a_session_keeps_its_installs(self):
        z = self.zygote(mode="session")
        out, err, ev = z.run(INSTALL)
        self.assertEqual(ev[-1]["verdict"], "ok", (out, err, ev[-1]))
        self.assert_installed(out)
        z.frames("ready")
        out, err, ev = z.run(IMPORT)
        self.assertEqual((out, ev[-1]["verdict"]),
                         (b"['sbxfake', 'sbxfake-1.0.dist-info']\n", "ok"), err)


if __name__ == "__main__":
    unittest.main()
