// Secrets a run leaves and a scanner that looks for them everywhere a later run can look:
// the attack suite (tests/integration/attack) and the session tests use it.
#pragma once

#include <cstdio>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "sandbox/core/base64.h"
#include "sandbox/exec/run_types.h"

namespace sandbox::testing {

// Run A puts unique secrets in its code, an input file, its stdout, its value and a returned
// file; run B (the same container in recycle mode: the suite's pool has one) scans all of its
// readable memory (/proc/self/maps + /proc/self/mem) and every file and process it can see
// (/proc/*/cmdline and environ, /tmp, /dev/shm, the work dir) for them, plain and in base64 (as
// they crossed the zygote). The scanner never holds a secret itself: each is searched with a
// regular expression whose source has one character in brackets, and whose compiled form holds
// characters as 32-bit codes, so B's own memory cannot match.
struct Secrets {
  explicit Secrets(const std::string& tag) {
    std::random_device rd;
    char hex[17];
    std::snprintf(hex, sizeof hex, "%08x%08x", rd(), rd());
    token = tag + hex;
  }
  std::string token;
  std::string Code() const { return "sk-live-" + token; }      // in A's code
  std::string Input() const { return "csv-secret-" + token; }  // A's input file
  std::string Out() const { return "out-secret-" + token; }    // A's stdout (built at run time)
  std::string Value() const { return "val-secret-" + token; }  // A's value
  std::string Ret() const { return "ret-secret-" + token; }    // A's returned file

  // Code for run A (or a session's cell). Out, Value, Ret and Input appear in it only in two
  // pieces, so each label says which way a secret travelled.
  std::string ProducerCode() const {
    auto split = [](const std::string& v) {
      return "'" + v.substr(0, 4) + "' + '" + v.substr(4) + "'";
    };
    return "api_key = '" + Code() + "'\n" + "assert open('in.csv').read() == " + split(Input()) +
           "\nprint(" + split(Out()) + ")\nopen('ret.txt', 'w').write(" + split(Ret()) + ")\n" +
           split(Value()) + "\n";
  }
  std::vector<exec::InputFile> InputFiles() const { return {{"in.csv", Input()}}; }

  // Code for run B: prints "found [...]" (labels of the secrets seen) and whether it scanned a
  // real amount of memory.
  std::string ScannerCode() const {
    auto pattern = [](const std::string& needle) {
      std::string p;
      for (std::size_t i = 0; i < needle.size(); ++i) {
        const char c = needle[i];
        const std::string lit = c == '+' ? "\\+" : std::string(1, c);
        p += i == 3 ? "[" + std::string(1, c) + "]" : lit;
      }
      return "re.compile(rb'" + p + "')";
    };
    const std::vector<std::pair<std::string, std::string>> needles = {
        {"code", Code()},
        {"input", Input()},
        {"input_b64", Base64Encode(Input())},
        {"stdout", Out()},
        {"value", Value()},
        {"returned_file", Ret()},
        {"returned_file_b64", Base64Encode(Ret())},
    };
    std::string code = "import os, re, stat\nPATS = {\n";
    for (const auto& [label, needle] : needles) {
      code += "    '" + label + "': " + pattern(needle) + ",\n";
    }
    code += R"PY(}
found = set()
def scan(where, data):
    for name, pat in PATS.items():
        if pat.search(data):
            found.add(name + '@' + where)
mem = 0
import ctypes
ctypes.CDLL(None).prctl(4, 1, 0, 0, 0)  # PR_SET_DUMPABLE: the run's own /proc/self/mem
fd = os.open('/proc/self/mem', os.O_RDONLY)
for line in open('/proc/self/maps').read().splitlines():
    parts = line.split()
    if 'r' not in parts[1] or parts[-1] in ('[vvar]', '[vsyscall]'):
        continue
    lo, hi = (int(x, 16) for x in parts[0].split('-'))
    tail = b''
    while lo < hi:
        try:
            chunk = os.pread(fd, min(1 << 20, hi - lo), lo)
        except OSError:
            break
        if not chunk:
            break
        mem += len(chunk)
        scan('memory', tail + chunk)
        tail = chunk[-64:]
        lo += len(chunk)
def walk(root):
    for dirpath, dirs, names in os.walk(root):
        for n in names:
            path = os.path.join(dirpath, n)
            try:
                if stat.S_ISREG(os.lstat(path).st_mode):
                    with open(path, 'rb') as f:
                        scan('file ' + path, f.read(64 << 20))
            except OSError:
                pass
for root in ('/tmp', '/dev/shm', os.getcwd()):
    walk(root)
for p in os.listdir('/proc'):
    if p.isdigit():
        for what in ('cmdline', 'environ'):
            try:
                with open('/proc/%s/%s' % (p, what), 'rb') as f:
                    scan('/proc/' + what, f.read())
            except OSError:
                pass
print('found', sorted(found))
print('scanned', mem > (64 << 20))
)PY";
    return code;
  }
};

// What the scanner prints when it found none of the secrets.
constexpr const char* kNothingFound = "found []\nscanned True\n";

}  // namespace sandbox::testing
