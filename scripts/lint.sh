#!/usr/bin/env bash
# Style and static checks: clang-format (must be clean) and clang-tidy with the checked-in
# .clang-tidy over the C++ sources. Needs a configured build dir for compile_commands.json.
#   scripts/lint.sh [--fix] [BUILD_DIR]
set -euo pipefail
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
# clang-tidy exits non-zero on compiler diagnostics too, so judge by its output, not its status.
findings="$(clang-tidy -p "$build" --quiet "${sources[@]}" 2>/dev/null | grep -E 'warning:|error:' | sort -u || true)"
if [[ -n "$findings" ]]; then
  echo "$findings"
  exit 1
fi
echo "lint: clean"
