import os
import site
import sys


def main(argv):
    if not argv or argv[0] != "install" or len(argv) < 2:
        print("usage: python -m pip install NAME...", file=sys.stderr)
        return 2
    if os.environ.get("PIP_BREAK_SYSTEM_PACKAGES") not in ("1", "true", "yes", "on"):
        print("error: externally-managed-environment", file=sys.stderr)
        return 1
    target = site.getusersitepackages()
    names = argv[1:]
    for name in names:
        package = os.path.join(target, name)
        os.makedirs(package, exist_ok=True)
        with open(os.path.join(package, "__init__.py"), "w") as f:
            f.write("VERSION = '1.0'\n")
        os.makedirs(os.path.join(target, "%s-1.0.dist-info" % name), exist_ok=True)
    print("Successfully installed " + " ".join("%s-1.0" % n for n in names))
    return 0


sys.exit(main(sys.argv[1:]))
