# Seeds matplotlib's cache directory (on the /tmp tmpfs, since the root filesystem is
# read-only) with the font cache built when the image was made, so that importing
# matplotlib never rebuilds it. Runs at every interpreter start: keep it cheap and silent.
import os as _os


def _seed_matplotlib_cache():
    target = _os.environ.get("MPLCONFIGDIR")
    source = "/opt/sandbox/matplotlib"
    if not target or not _os.path.isdir(source):
        return
    try:
        names = [n for n in _os.listdir(source) if n.startswith("fontlist-")]
        if all(_os.path.exists(_os.path.join(target, n)) for n in names):
            return
        _os.makedirs(target, mode=0o700, exist_ok=True)
        for name in names:
            with open(_os.path.join(source, name), "rb") as src:
                data = src.read()
            with open(_os.path.join(target, name), "wb") as dst:
                dst.write(data)
    except OSError:
        pass  # Not fatal: matplotlib falls back to building its own cache.


_seed_matplotlib_cache()
del _seed_matplotlib_cache
