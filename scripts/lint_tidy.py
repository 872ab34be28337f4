#!/usr/bin/env python3
"""clang-tidy over the C++ sources of src/, for scripts/lint.sh.

Sources are checked in groups: one translation unit per directory (at most GROUP_MAX sources)
that #includes them, so the third-party headers every source parses are walked by the checks
once per group instead of once per source (they are ~90 % of clang-tidy's time). A group that
does not compile cleanly as one translation unit (two sources define or shadow the same internal
name) is split in halves until it does. --per-file checks every source on its own, as a compiler would see it.

Prints the findings (sorted, unique) and exits 1 if there are any.
"""
import argparse
import concurrent.futures
import json
import os
import re
import subprocess
import sys
import tempfile

GROUP_MAX = 12


def strip_pch(command):
    """The compile command without the precompiled header: GCC's .gch is no PCH to clang, and
    each source must include what it uses without the PCH's help anyway."""
    args, kept, i = command.split(" "), [], 0
    while i < len(args):
        if args[i] == "-include" and i + 1 < len(args) and args[i + 1].endswith("cmake_pch.hxx"):
            i += 2
        elif (args[i] == "-Xclang" and i + 3 < len(args)
              and args[i + 1] in ("-include-pch", "-include")
              and args[i + 3].split("/")[-1].startswith("cmake_pch.hxx")):
            i += 4
        elif args[i] == "-Winvalid-pch":
            i += 1
        else:
            kept.append(args[i])
            i += 1
    return kept


def without_io(args, source):
    """The flags alone: what must be equal for sources to share a translation unit."""
    out, i = [], 0
    while i < len(args):
        if args[i] == "-o":
            i += 2
        elif args[i] == source or args[i] == "-c":
            i += 1
        else:
            out.append(args[i])
            i += 1
    return out


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--root", required=True)
    parser.add_argument("--compile-commands", required=True)
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--per-file", action="store_true")
    parser.add_argument("only", nargs="*", help="check only the sources under these paths")
    opts = parser.parse_args()

    root = os.path.realpath(opts.root)
    sources = subprocess.run(["git", "ls-files", "src/*.cc"], cwd=root, check=True,
                             capture_output=True, text=True).stdout.split()
    sources = [os.path.join(root, s) for s in sources
               if not opts.only or any(s.startswith(p.rstrip("/") + "/") or s == p for p in opts.only)]
    entries = {}
    for entry in json.load(open(opts.compile_commands)):
        path = os.path.realpath(os.path.join(entry["directory"], entry["file"]))
        entries[path] = entry
    missing = [s for s in sources if s not in entries]
    if missing:
        print("lint: not in compile_commands.json (reconfigure the build): " + " ".join(missing),
              file=sys.stderr)
        return 2

    work = tempfile.mkdtemp(prefix="lint-tidy-")
    # Diagnostics in the project's headers (as .clang-tidy's HeaderFilterRegex says: public ones in
    # include/sandbox/, private ones beside their sources in src/) and in the sources a group
    # includes, which clang-tidy counts as headers there.
    header_filter = "(%s/include/sandbox/.*|%s/src/.*\\.(cc|h))$" % (re.escape(root), re.escape(root))
    database, counter = [], [0]

    def unit_for(group):
        """A compile-commands entry for the group: the source itself, or a unity file."""
        first = entries[group[0]]
        args = strip_pch(first["command"])
        if len(group) == 1:
            return group[0], {"directory": first["directory"], "file": group[0],
                              "command": " ".join(args)}
        counter[0] += 1
        unity = os.path.join(work, "group%d.cc" % counter[0])
        with open(unity, "w") as f:
            f.writelines('#include "%s"  // NOLINT(bugprone-suspicious-include)\n' % s
                         for s in group)
        flags = without_io(args, group[0])
        command = " ".join(flags + ["-o", "/dev/null", "-c", unity])
        return unity, {"directory": first["directory"], "file": unity, "command": command}

    groups = []
    if opts.per_file:
        groups = [[s] for s in sources]
    else:
        by_key = {}
        for s in sources:
            key = (os.path.dirname(s), tuple(without_io(strip_pch(entries[s]["command"]),
                                                         entries[s]["file"])))
            by_key.setdefault(key, []).append(s)
        for members in by_key.values():
            for i in range(0, len(members), GROUP_MAX):
                groups.append(members[i:i + GROUP_MAX])

    # Every unit the bisection may need is written up front: clang-tidy reads one database.
    def plan(group, out):
        out.append(group)
        if len(group) > 1:
            half = len(group) // 2
            plan(group[:half], out)
            plan(group[half:], out)

    units = {}
    for group in groups:
        every = []
        plan(group, every)
        for g in every:
            path, entry = unit_for(g)
            units[tuple(g)] = path
            database.append(entry)
    with open(os.path.join(work, "compile_commands.json"), "w") as f:
        json.dump(database, f)

    def tidy(group):
        # The checks come from the repository's .clang-tidy: clang-tidy looks for it beside the
        # main file, and a group's file lives in a scratch directory.
        run = subprocess.run(["clang-tidy", "-p", work, "--quiet",
                              "--config-file=" + os.path.join(root, ".clang-tidy"),
                              "--header-filter=" + header_filter, units[tuple(group)]],
                             capture_output=True, text=True)
        lines = [l for l in run.stdout.splitlines() if re.search(r"(warning|error):", l)]
        return lines

    findings, splits = set(), [0]
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, opts.jobs)) as pool:
        pending = {pool.submit(tidy, g): g for g in groups}
        while pending:
            done, _ = concurrent.futures.wait(pending, return_when=concurrent.futures.FIRST_COMPLETED)
            for fut in done:
                group = pending.pop(fut)
                lines = fut.result()
                # A compiler diagnostic in a group may come from the grouping itself (two
                # sources' internal names colliding or shadowing): only a source alone decides.
                if len(group) > 1 and any("[clang-diagnostic-" in l for l in lines):
                    splits[0] += 1
                    half = len(group) // 2
                    for part in (group[:half], group[half:]):
                        pending[pool.submit(tidy, part)] = part
                    continue
                findings.update(lines)
    subprocess.run(["rm", "-rf", work])
    if findings:
        print("\n".join(sorted(findings)))
        return 1
    print("lint: clean (clang-tidy over %d sources in %d groups, %d split)"
          % (len(sources), len(groups), splits[0]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
