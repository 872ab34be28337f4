#!/usr/bin/env python3
"""The dependency rule of src/README.md holds.

Reads CMake's record of the targets (the manifest cmake/target_manifest.cmake writes at
configure time: each target's sources and the link libraries its target_link_libraries
declared) and the rule file, src/README.md, then checks:

1. Includes cross only declared dependencies. The library of src/<dir> (one static library,
   sandbox_<dir> by convention) owns include/sandbox/<dir>/. A file of a product target (under
   src/: a library's sources and headers, include/sandbox/<dir>/ and src/<dir>/, or an
   executable's sources) may include "sandbox/<dir>/..." of another library only when the
   target declares that library directly; any other target (tests/, bench/) only when it links
   that library, directly or through others. A test's quoted includes that resolve in tests/
   (fakes, fixtures) are checked as its own.
2. No library reaches into another one's private headers ("<dir>/name.h" through src/, or a
   relative path out of its directory); tests only into the private headers of what they link.
3. Each library declares only what its "Depends on" line in src/README.md allows, and every
   library has a section there.
4. Headers are where the header rule puts them: one in include/sandbox/<dir>/ must be public
   (included by another target that is not a test, or by a public header of its own library),
   except those the README lists as not yet moved (a listed one that is public now, or gone,
   fails too).
5. Every C++ file under src/ belongs to a target, so none escapes these checks.

Usage: check_dependencies.py SOURCE_DIR MANIFEST
"""
import re
import sys
from pathlib import Path

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
PROJECT_INCLUDE = re.compile(r"^sandbox/(\w+)/")


class Target:
    def __init__(self, name, kind, source_dir, sources, links):
        self.name = name
        self.kind = kind
        self.source_dir = Path(source_dir)
        self.sources = [self.source_dir / s if not Path(s).is_absolute() else Path(s)
                        for s in sources if s]
        self.links = [link for link in links if link]


def read_manifest(path):
    targets = {}
    for line in Path(path).read_text().splitlines():
        if not line.strip():
            continue
        name, kind, source_dir, sources, links = line.split("\t")
        targets[name] = Target(name, kind, source_dir, sources.split(","), links.split(","))
    return targets


def read_rule(readme):
    """{module: the modules it may depend on}, from each "### <module>" section's "Depends on:"
    paragraph, and the headers listed as not yet moved."""
    text = readme.read_text()
    allowed = {}
    for section in re.finditer(r"^###\s+(\w+)\s*\n(.*?)(?=^#|\Z)", text, re.M | re.S):
        depends = re.search(r"^Depends on:(.*?)(?:\n\s*\n|\Z)", section.group(2), re.M | re.S)
        if depends:
            allowed[section.group(1)] = set(re.findall(r"`(\w+)`", depends.group(1)))
    not_moved = set(re.findall(r"^- `(include/sandbox/[\w/]+\.h)`", text, re.M))
    return allowed, not_moved


def includes(path):
    try:
        return INCLUDE.findall(path.read_text(errors="replace"))
    except FileNotFoundError:
        return []


def main():
    root = Path(sys.argv[1]).resolve()
    targets = read_manifest(sys.argv[2])
    src, tests, include = root / "src", root / "tests", root / "include" / "sandbox"
    failures = []

    def rel(path):
        return path.relative_to(root) if path.is_relative_to(root) else path

    # The product's libraries: the one of src/<dir>, its public headers in include/sandbox/<dir>.
    libraries = {}
    for t in targets.values():
        if t.kind == "STATIC_LIBRARY" and t.source_dir.parent == src:
            module = t.source_dir.name
            if module in libraries:
                failures.append(f"src/{module}: two libraries, {libraries[module].name} and "
                                f"{t.name}; one directory is one library")
            libraries[module] = t
    module_of_library = {t.name: module for module, t in libraries.items()}
    for directory in sorted(p for p in include.iterdir() if p.is_dir()):
        if directory.name not in libraries:
            failures.append(f"include/sandbox/{directory.name}: no library in "
                            f"src/{directory.name}")

    def module_of(target):
        """The library a product target's files belong to (None for an executable)."""
        return target.source_dir.name if target.kind == "STATIC_LIBRARY" else None

    def files_of(target):
        files = {s for s in target.sources if s.suffix in (".cc", ".h") and s.is_relative_to(root)}
        module = module_of(target)
        if module:
            files |= set((include / module).glob("*.h")) | set((src / module).glob("*.h"))
        return files

    def closure(names):
        seen, stack = set(), list(names)
        while stack:
            name = stack.pop()
            if name in seen:
                continue
            seen.add(name)
            if name in targets:
                stack.extend(targets[name].links)
        return seen

    product = [t for t in targets.values() if t.source_dir.is_relative_to(src)]
    others = [t for t in targets.values() if not t.source_dir.is_relative_to(src)]

    # 1 and 2 for the product: direct declarations.
    used_from_outside = set()
    owned = set()
    for t in product:
        own = module_of(t)
        for path in sorted(files_of(t)):
            owned.add(path)
            for name in includes(path):
                m = PROJECT_INCLUDE.match(name)
                if m:
                    dep = m.group(1)
                    if dep == own:
                        continue
                    used_from_outside.add(include.parent / name)
                    if dep not in libraries:
                        failures.append(f"{rel(path)}: includes {name}, of no library")
                    elif libraries[dep].name not in t.links:
                        failures.append(f"{rel(path)}: includes {name}, but {t.name} does not "
                                        f"declare {libraries[dep].name} (target_link_libraries)")
                    continue
                beside = (path.parent / name).resolve()
                if beside.exists():
                    if not beside.is_relative_to(src / own if own else path.parent):
                        failures.append(f"{rel(path)}: includes {name}, a private header "
                                        "outside its library")
                    continue
                first = Path(name).parts[0]
                if (src / name).exists() and first != own:
                    failures.append(f"{rel(path)}: includes {name}, a private header of "
                                    f"src/{first}")
                elif not (src / name).exists():
                    failures.append(f"{rel(path)}: includes \"{name}\", which is no header of "
                                    "the project")

    # 1 and 2 for the tests and benchmarks: what they link, directly or not.
    for t in others:
        reach = closure(t.links)
        is_test = t.source_dir.is_relative_to(tests)
        pending = [s for s in t.sources if s.suffix in (".cc", ".h") and s.is_relative_to(root)]
        seen = set()
        while pending:
            path = pending.pop()
            if path in seen:
                continue
            seen.add(path)
            for name in includes(path):
                m = PROJECT_INCLUDE.match(name)
                if m:
                    if not is_test:
                        used_from_outside.add(include.parent / name)
                    library = libraries.get(m.group(1))
                    if library is None or library.name not in reach:
                        failures.append(f"{rel(path)} (of {t.name}): includes {name}, but "
                                        f"{t.name} does not link the library of src/{m.group(1)}")
                    continue
                for base in (path.parent, tests):
                    if (base / name).exists():
                        pending.append((base / name).resolve())
                        break
                else:
                    first = Path(name).parts[0]
                    library = libraries.get(first)
                    if (src / name).exists() and (library is None or library.name not in reach):
                        failures.append(f"{rel(path)} (of {t.name}): includes {name}, a "
                                        f"private header of src/{first}, whose library it does "
                                        "not link")

    # 3: what each library declares, against the rule.
    allowed, not_moved = read_rule(src / "README.md")
    for module, t in sorted(libraries.items()):
        if module not in allowed:
            failures.append(f"src/README.md: no section \"### {module}\" with a \"Depends on:\" "
                            f"line for {t.name} (src/{module})")
            continue
        for link in t.links:
            dep = module_of_library.get(link)
            if dep is not None and dep not in allowed[module]:
                failures.append(f"{t.name} declares {link} (src/{dep}), which src/README.md "
                                f"does not allow for {module} (Depends on: "
                                f"{', '.join(sorted(allowed[module])) or 'nothing'})")
    for module in sorted(set(allowed) - set(libraries)):
        failures.append(f"src/README.md: a section for \"{module}\", which is no library")

    # 4: public headers are public; the rest live beside their sources.
    public = {h for h in used_from_outside if h.is_relative_to(include)}
    stack = list(public)
    while stack:
        header = stack.pop()
        for name in includes(header):
            candidate = include.parent / name
            if (PROJECT_INCLUDE.match(name) and candidate.parent == header.parent
                    and candidate not in public):
                public.add(candidate)
                stack.append(candidate)
    private = {rel(h).as_posix() for h in include.glob("*/*.h") if h not in public}
    for header in sorted(private - not_moved):
        module = Path(header).parent.name
        failures.append(f"{header}: no other target includes it, so it is private to "
                        f"{libraries[module].name if module in libraries else module}: move it "
                        f"to src/{module}/ (src/README.md)")
    for header in sorted(not_moved - private):
        failures.append(f"src/README.md lists {header} as not yet moved, but it is public now "
                        "or gone: take it off the list")

    # 5: nothing under src/ escapes the checks.
    for path in sorted(src.rglob("*")):
        if path.suffix in (".cc", ".h") and path.resolve() not in {p.resolve() for p in owned}:
            failures.append(f"{rel(path)}: belongs to no target, so nothing checks it")

    for failure in failures:
        print(f"dependency_rule: {failure}")
    if failures:
        print(f"dependency_rule: {len(failures)} violation(s) of src/README.md")
        return 1
    print(f"dependency_rule: {len(libraries)} libraries, {len(product)} product and "
          f"{len(others)} test and benchmark targets keep src/README.md")
    return 0


if __name__ == "__main__":
    sys.exit(main())
