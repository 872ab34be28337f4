"""Run-time `pip install` (docs/network.md, "pip install"): where installs go and how imports
find them.

It matters only when the image has pip and the pool has a network: the container's environment
names a proxy or a package index (the server sets `http_proxy`, `https_proxy`, their upper-case
forms and, when the pool names one, `PIP_INDEX_URL`). Otherwise nothing here does anything,
and a run is exactly what it is without it.

Installs go to Python's own user site, `$PYTHONUSERBASE/lib/pythonX.Y/site-packages`, where the
user base is on the run's private /tmp (`/tmp/.local` in the sandbox image, whose HOME is /tmp):

- pip installs there without being told: the image's site-packages are read-only, so pip
  "defaults to user installation" (PEP 668's EXTERNALLY-MANAGED marker of Debian's Python is
  answered by PIP_BREAK_SYSTEM_PACKAGES, which here breaks nothing: the system's directories are
  read-only and the user site is the run's). Unlike `--target`, a user install sees what the
  image already has: `pip install seaborn` adds seaborn, not a second numpy, pandas and
  matplotlib on a tmpfs of a few hundred MiB. `--target` and `--prefix` still work when asked
  for (PIP_USER is not set).
- every interpreter the code starts (`python3 -m pip`, `subprocess.run([sys.executable, ...])`,
  an installed console script) puts the user site on its path by itself, after the standard
  library and before the image's site-packages; so `pip list`, `pip show` and a second
  `pip install` see what the run installed.
- the run process itself (started with -I, no user site) gets the same directory at the same
  place on sys.path before the code runs. It is created first: a sys.path entry that does not
  exist when an import first looks at it is cached as having no finder, and a package pip
  installs there later would never be found by this process.

Per run: the directory is on the run's /tmp, which the next run of a pool does not see (a fresh
tmpfs per run with namespaces, emptied between runs without them); a session's run process and
its /tmp last as long as the session, so its installs stay for its later cells. Bounded like
everything the run writes: /tmp's size (tmpfs_size_bytes), RLIMIT_FSIZE per file, the run's
timeout, memory and pids for pip's process. pip keeps no cache (PIP_NO_CACHE_DIR: a cache would
only double what a run stores, and no later run could use it).

What cannot work: a module the zygote preloaded (numpy, matplotlib, ...) is already imported, so
installing another version of it changes what new interpreters import, not this process.
"""

import importlib.util
import os
import sys

# Any of these set and non-empty: the pool has a network (docs/network.md).
PROXY_VARS = ("http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY")
NETWORK_VARS = PROXY_VARS + ("PIP_INDEX_URL",)

# Set for the run unless the pool's environment already sets them (its values win).
PIP_ENV = (
    ("PIP_BREAK_SYSTEM_PACKAGES", "1"),  # PEP 668: the user site is the run's own
    ("PIP_NO_CACHE_DIR", "1"),
    ("PIP_DISABLE_PIP_VERSION_CHECK", "1"),  # no request to PyPI nobody asked for
    ("PIP_NO_INPUT", "1"),  # no prompt (credentials, confirmations): there is no terminal
)
# With a proxy: loopback is never reached through it (a server the code starts on 127.0.0.1
# would otherwise get the proxy's refusal), unless the pool's environment says otherwise.
NO_PROXY_DEFAULT = "localhost,127.0.0.1,::1"

TMP = "/tmp/"


def has_network(environ):
    return any(environ.get(name) for name in NETWORK_VARS)


def user_base(environ):
    """Python's user base as a new interpreter with this environment computes it
    (site._getuserbase on POSIX): PYTHONUSERBASE, else ~/.local."""
    base = environ.get("PYTHONUSERBASE")
    if base:
        return base
    home = environ.get("HOME")
    if not home:
        return os.path.expanduser("~/.local")
    return os.path.join(home, ".local")


def user_site(base):
    """The user site of a user base, as site.py and pip's user scheme (posix_user) have it."""
    return os.path.join(base, "lib", "python%d.%d" % sys.version_info[:2], "site-packages")


def _under(path, parent):
    return path == parent or path.startswith(parent.rstrip("/") + "/")


class PipSite:
    """The plan the zygote makes once at start-up: the user base and its site, the top-level
    name under /tmp that holds them (see for_run)."""

    def __init__(self, base):
        self.base = base
        self.site = user_site(base)
        self.bin = os.path.join(base, "bin")
        self.top = base[len(TMP):].split("/")[0]

    def __repr__(self):
        return "PipSite(%r)" % self.base


def plan(environ, workdir, find_spec=None):
    """Z, once, after the preload: a PipSite, or (None, why) when run-time installs are not set
    up. Returns (site, reason): reason is None when there is nothing to say (no network: the
    ordinary sandbox), else why a pool with a network gets no installs (logged once)."""
    if not has_network(environ):
        return None, None
    find_spec = find_spec or importlib.util.find_spec
    try:
        have_pip = find_spec("pip") is not None
    except (ImportError, ValueError):
        have_pip = False
    if not have_pip:
        return None, "the image has no pip"
    base = os.path.normpath(user_base(environ))
    if not base.startswith(TMP) or base == TMP.rstrip("/"):
        return None, ("the user base %s is not on the run's /tmp (set HOME or PYTHONUSERBASE "
                      "under /tmp)" % base)
    if _under(base, workdir) or _under(workdir, base):
        return None, "the user base %s and the work dir %s overlap" % (base, workdir)
    return PipSite(base), None


def for_run(site, isolate, in_container, tmp_keep):
    """F, per run: the plan if this run's /tmp is its own, else None. With namespaces the run
    has a fresh tmpfs on /tmp; without them, in a container, F empties /tmp between runs except
    the names there at start-up (tmp_keep: a user base among them would outlive its run); on a
    developer's host without namespaces /tmp is the host's and nothing is set up."""
    if site is None:
        return None
    if isolate:
        return site
    if in_container and site.top not in tmp_keep:
        return site
    return None


def apply(site, environ=None, path=None):
    """U, before the request: the user site created and on sys.path, pip's environment set.
    environ and path default to os.environ and sys.path (the tests pass their own)."""
    environ = os.environ if environ is None else environ
    path = sys.path if path is None else path
    os.makedirs(site.site, mode=0o700, exist_ok=True)
    if site.site not in path:
        path.insert(_site_index(path), site.site)
    environ["PYTHONUSERBASE"] = site.base  # what the plan assumed, whatever HOME becomes
    for name, value in PIP_ENV:
        if name not in environ:
            environ[name] = value
    if any(environ.get(name) for name in PROXY_VARS) and \
            "no_proxy" not in environ and "NO_PROXY" not in environ:
        environ["no_proxy"] = environ["NO_PROXY"] = NO_PROXY_DEFAULT
    parts = (environ.get("PATH") or os.defpath).split(os.pathsep)
    if site.bin not in parts:
        environ["PATH"] = os.pathsep.join(parts + [site.bin])


def _site_index(path):
    """Where site.py puts the user site: before the first site-packages (Debian: dist-packages)
    directory, so after the standard library; at the end when there is none."""
    for i, entry in enumerate(path):
        if os.path.basename(entry.rstrip("/")) in ("site-packages", "dist-packages"):
            return i
    return len(path)
