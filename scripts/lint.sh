#!/usr/bin/env bash
# Style and static checks: clang-format (must be clean) and clang-tidy with the checked-in
# .clang-tidy over the C++ sources. Needs a configured build dir for compile_commands.json.
#   scripts/lint.sh [--fix] [BUILD_DIR]        (LINT_PER_FILE=1: clang-tidy per source, slower)
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
# clang-tidy spends ~90 % of a source's time walking the AST of the headers it includes (json,
# httplib, spdlog), so sources are checked in groups: one translation unit per directory that
# includes its sources (at most 12), headers walked once per group (docs/ci.md: 2,350 s -> ~5 min
# in CI). A group that does not compile as one (two sources defining the same internal name) is
# split in halves until it does. LINT_PER_FILE=1 checks each source on its own (what a group can
# hide: a using-declaration unused in its own source but used by a later one).
tidy_args=(--root "$root" --compile-commands "$build/compile_commands.json" --jobs "$(nproc)")
[[ "${LINT_PER_FILE:-}" == 1 ]] && tidy_args+=(--per-file)
exec python3 "$root/scripts/lint_tidy.py" "${tidy_args[@]}"
