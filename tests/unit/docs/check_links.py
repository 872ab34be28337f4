#!/usr/bin/env python3
"""Every relative link of the project's Markdown resolves.

For README.md, docs/**/*.md and bench/results/*.md: each `[text](target)` or `![alt](target)`
outside code blocks whose target is not a URL must name a file or directory that exists
(relative to the linking file), and a `#anchor` (alone or after a .md path) must be a heading of
that file, slugged as GitHub does. So moving a section or renaming a page cannot leave a dead
link behind.

Usage: check_links.py SOURCE_DIR
"""
import re
import sys
from pathlib import Path

LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(([^()\s]+)(?:\s+\"[^\"]*\")?\)")


def slug(heading):
    """GitHub's anchor of a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"`", "", heading.strip().lower())
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def prose_lines(text):
    """(line number, line) outside fenced code blocks."""
    fence = None
    for number, line in enumerate(text.splitlines(), 1):
        m = re.match(r"\s*(```+|~~~+)", line)
        if m:
            if fence is None:
                fence = m.group(1)
            elif m.group(1).startswith(fence):
                fence = None
            continue
        if fence is None and not line.startswith("    "):
            yield number, line


def anchors(path, cache={}):
    if path not in cache:
        found = set()
        seen = {}
        for _, line in prose_lines(path.read_text()):
            m = re.match(r"#{1,6}\s+(.*?)\s*#*\s*$", line)
            if not m:
                continue
            base = slug(m.group(1))
            n = seen.get(base, 0)
            seen[base] = n + 1
            found.add(base if n == 0 else f"{base}-{n}")
        cache[path] = found
    return cache[path]


def main():
    root = Path(sys.argv[1] if len(sys.argv) > 1 else ".").resolve()
    files = [root / "README.md", *sorted((root / "docs").rglob("*.md")),
             *sorted((root / "bench/results").glob("*.md"))]
    problems = []
    links = 0
    for source in files:
        for number, line in prose_lines(source.read_text()):
            # Inline code is not a link.
            for target in LINK.findall(re.sub(r"`[^`]*`", "", line)):
                if re.match(r"[a-z][a-z0-9+.-]*:", target):
                    continue  # a URL (https:, mailto:, ...)
                links += 1
                where = f"{source.relative_to(root)}:{number}"
                path_part, _, anchor = target.partition("#")
                dest = (source.parent / path_part).resolve() if path_part else source
                if not dest.exists():
                    problems.append(f"{where}: {target}: no such file")
                    continue
                if anchor and dest.suffix == ".md" and anchor not in anchors(dest):
                    problems.append(f"{where}: {target}: no heading #{anchor} in "
                                    f"{dest.relative_to(root)}")
    for p in problems:
        print("FAIL:", p)
    if problems:
        print(f"\n{len(problems)} dead link(s) of {links}")
        sys.exit(1)
    print(f"{links} relative links in {len(files)} files resolve")


if __name__ == "__main__":
    main()
