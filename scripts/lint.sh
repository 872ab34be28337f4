#!/usr/bin/env bash
# Style and static checks: clang-format (must be clean) and clang-tidy with the checked-in
# .clang-tidy over the C++ sources. Needs a configured build dir for compile_commands.json.
#   scripts/lint.sh [--fix] [BUILD_DIR]
set -euo pipefail
for tool in clang-format clang-tidy; do
  command -v "$tool" >/dev/null || { echo "lint: $tool is not installed (scripts/host.sh installs it)" >&2; exit 2; }
done
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
fix=0
if [[ "${1:-}" == --fix ]]; then fix=1; shift; fi
build="${1:-$root/build}"
cd "$root"
mapfile -t files < <(git ls-files '*.h' '*.cc')
if ((fix)); then
  clang-format -i "${files[@]}"
else
  clang-format --dry-run --Werror "${files[@]}"
fi
[[ -f "$build/compile_commands.json" ]] || cmake -S "$root" -B "$build" >/dev/null
mapfile -t sources < <(git ls-files 'src/*.cc')
# One clang-tidy per source, as many at once as there are cores, each into its own file so
# parallel output cannot interleave. clang-tidy exits non-zero on compiler diagnostics too, so
# judge by its output, not its status.
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
# clang-tidy reads the compile commands without the precompiled header (SANDBOX_PCH): GCC's .gch
# is no PCH to clang, and each source must include what it uses without the PCH's help anyway.
python3 - "$build/compile_commands.json" "$out/compile_commands.json" <<'PY'
import json, sys
commands = json.load(open(sys.argv[1]))
for entry in commands:
    args = entry["command"].split(" ")
    kept, i = [], 0
    while i < len(args):
        if args[i] == "-include" and args[i + 1].endswith("cmake_pch.hxx"):
            i += 2
        elif args[i] == "-Xclang" and args[i + 1] in ("-include-pch", "-include") and \
                args[i + 3].split("/")[-1].startswith("cmake_pch.hxx"):
            i += 4
        elif args[i] == "-Winvalid-pch":
            i += 1
        else:
            kept.append(args[i])
            i += 1
    entry["command"] = " ".join(kept)
json.dump(commands, open(sys.argv[2], "w"), indent=1)
PY
printf '%s\n' "${sources[@]}" | xargs -P "$(nproc)" -I{} sh -c \
  'clang-tidy -p "$1" --quiet "$2" >"$1/$(printf %s "$2" | tr / _).txt" 2>/dev/null || true' \
  sh "$out" {}
findings="$(cat "$out"/*.txt | grep -E 'warning:|error:' | sort -u || true)"
if [[ -n "$findings" ]]; then
  echo "$findings"
  exit 1
fi
echo "lint: clean"
