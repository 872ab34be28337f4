"""Builds the test package index (run in the index image's build, index/Dockerfile):

    build_index.py ROOT [FILES_URL]

Writes the sources of the test distributions, builds their wheels with Debian's python3-build
(`--no-isolation`: no download, the build backend is Debian's setuptools), and lays out under
ROOT a PEP 503 simple index:

    ROOT/simple/index.html             one link per project
    ROOT/simple/<project>/index.html   one link per wheel: FILES_URL/<wheel>#sha256=<hex>
    ROOT/packages/<wheel>

FILES_URL defaults to https://files.index.test/packages: like PyPI (pypi.org lists, files
.pythonhosted.org serves), the listing and the files are on two names, both in the test's
allowlist.

The distributions (each module's MARKER says which one was imported):
- sbxtestpkg 1.0 and 1.1: `sbxtestpkg.MARKER`, `__version__`, and a console script
  `sbxtestpkg` that prints the marker (installed scripts are on PATH);
- sbxtestapp 1.0: requires sbxtestpkg>=1.0 (pip resolves it from the same index).
"""

import hashlib
import html
import os
import shutil
import subprocess
import sys
import tempfile

DISTRIBUTIONS = [
    ("sbxtestpkg", "1.0", []),
    ("sbxtestpkg", "1.1", []),
    ("sbxtestapp", "1.0", ["sbxtestpkg>=1.0"]),
]

MODULES = {
    "sbxtestpkg": '''"""A distribution of the sandbox-mcp egress test index."""
__version__ = "{version}"
MARKER = "sbxtestpkg {version} from the test index"


def main():
    print(MARKER)
''',
    "sbxtestapp": '''"""A distribution of the sandbox-mcp egress test index that needs sbxtestpkg."""
import sbxtestpkg

__version__ = "{version}"
MARKER = "sbxtestapp {version} with " + sbxtestpkg.MARKER
''',
}


def write_source(top, name, version, requires):
    src = os.path.join(top, "%s-%s" % (name, version))
    os.makedirs(os.path.join(src, name))
    with open(os.path.join(src, name, "__init__.py"), "w") as f:
        f.write(MODULES[name].format(version=version))
    deps = "".join('    "%s",\n' % r for r in requires)
    scripts = ('[project.scripts]\n%s = "%s:main"\n' % (name, name)) if name == "sbxtestpkg" else ""
    with open(os.path.join(src, "pyproject.toml"), "w") as f:
        f.write('[build-system]\nrequires = ["setuptools>=61", "wheel"]\n'
                'build-backend = "setuptools.build_meta"\n\n'
                '[project]\nname = "%s"\nversion = "%s"\nrequires-python = ">=3.8"\n'
                'description = "sandbox-mcp egress test distribution"\n'
                'dependencies = [\n%s]\n\n%s'
                '[tool.setuptools]\npackages = ["%s"]\n'
                % (name, version, deps, scripts, name))
    return src


def build_wheel(src, dist):
    subprocess.run([sys.executable, "-m", "build", "--no-isolation", "--wheel",
                    "--outdir", dist, src], check=True, stdout=subprocess.DEVNULL)


def page(title, links):
    body = "".join('    <a href="%s"%s>%s</a><br/>\n' % (html.escape(href), attrs, html.escape(text))
                   for href, text, attrs in links)
    return ("<!DOCTYPE html>\n<html>\n  <head><meta name=\"pypi:repository-version\" "
            "content=\"1.0\"><title>%s</title></head>\n  <body>\n%s  </body>\n</html>\n"
            % (html.escape(title), body))


def main(argv):
    root = argv[1]
    files_url = argv[2] if len(argv) > 2 else "https://files.index.test/packages"
    work = tempfile.mkdtemp()
    dist = os.path.join(work, "dist")
    for name, version, requires in DISTRIBUTIONS:
        build_wheel(write_source(work, name, version, requires), dist)
    packages = os.path.join(root, "packages")
    os.makedirs(packages)
    by_project = {}
    for wheel in sorted(os.listdir(dist)):
        shutil.copy(os.path.join(dist, wheel), packages)
        with open(os.path.join(packages, wheel), "rb") as f:
            digest = hashlib.sha256(f.read()).hexdigest()
        project = wheel.split("-")[0].lower().replace("_", "-")
        by_project.setdefault(project, []).append(
            ("%s/%s#sha256=%s" % (files_url, wheel, digest), wheel,
             ' data-requires-python="&gt;=3.8"'))
    simple = os.path.join(root, "simple")
    os.makedirs(simple)
    with open(os.path.join(simple, "index.html"), "w") as f:
        f.write(page("Simple index", [(p + "/", p, "") for p in sorted(by_project)]))
    for project, links in sorted(by_project.items()):
        os.makedirs(os.path.join(simple, project))
        with open(os.path.join(simple, project, "index.html"), "w") as f:
            f.write(page("Links for " + project, links))
    with open(os.path.join(root, "index.html"), "w") as f:
        f.write(page("sandbox-mcp egress test index", [("simple/", "simple", "")]))
    shutil.rmtree(work)
    for project, links in sorted(by_project.items()):
        print(project, " ".join(text for _, text, _ in links))


if __name__ == "__main__":
    main(sys.argv)
