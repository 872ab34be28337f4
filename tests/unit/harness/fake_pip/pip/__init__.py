"""A stand-in for pip in the harness's hermetic tests (the host's pip, if any, would install into
the host's Python): `python -m pip install NAME...` does what pip does in the sandbox image,
where the system site-packages are read-only, only as far as the harness depends on it. It
refuses like PEP 668 (Debian's EXTERNALLY-MANAGED) unless PIP_BREAK_SYSTEM_PACKAGES is set,
installs into the user site of this interpreter (site.getusersitepackages(): PYTHONUSERBASE),
a package NAME whose module records its version and its own path, and reports "Successfully
installed NAME-1.0" as pip does."""
