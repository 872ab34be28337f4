#!/usr/bin/env python3
"""docs/configuration.md against the configuration code.

Fails when a key the code reads (every r.Read / r.ReadObject of src/config/config_json.cc,
followed from ApplyJson down) is missing from the doc's key tables, when a table lists a key the
code does not read, when a key's documented default differs from its initializer in
include/sandbox/config/config.h, or when a command-line flag of src/config/command_line.cc is not
documented. So a new key cannot land without its line in the doc, and a changed default cannot
leave the doc behind.

The doc's key tables are the Markdown tables whose header starts `| key | default |`. The key
cell holds the full dotted key in backticks (`server.listen`, `pools[].limits.timeout_s`); the
first backticked token of the default cell is the default as JSON (`30`, `"info"`, `[]`), or the
cell has no backticks where the default is computed (a few keys, listed in COMPUTED below).

Usage: check_config_doc.py SOURCE_DIR
"""
import json
import re
import sys
from pathlib import Path

# Keys whose default is not one initializer: the doc says in words what it follows.
COMPUTED = {
    "server.listen": "split into listen_host and listen_port",
    "pools[].mode": "an enum, read through a string",
    "pools[].skip_preload_when_queued": "follows mode",
    "pools[].refill_after_run": "follows mode",
    "pools[].network.mode": "an enum of NetworkPolicy, read through a string",
    "pools[].network.allow": "strings parsed into NetworkPolicy's rules (network_policy.h)",
    "pools[].network.deny": "strings parsed into NetworkPolicy's rules (network_policy.h)",
    "pools[].network.pip_index_url": "a member of NetworkPolicy (network_policy.h), read into a local",
    "pools[].network.inject[].host": "CredentialInjection is in network_policy.h",
    "pools[].network.inject[].header": "CredentialInjection is in network_policy.h",
    "pools[].network.inject[].value_env": "CredentialInjection is in network_policy.h",
}


def fail(problems):
    for p in problems:
        print("FAIL:", p)
    print(f"\n{len(problems)} problem(s). docs/configuration.md must list every key the code "
          "reads, with its default, in a `| key | default | ...` table.")
    sys.exit(1)


def strip_comments(text):
    """C++ without its comments; string literals (which may hold "//") kept."""
    return re.sub(r'("(?:\\.|[^"\\\n])*")|//[^\n]*|/\*.*?\*/',
                  lambda m: m.group(1) or "", text, flags=re.S)


def functions(source):
    """name -> (parameter type of the object read into, its parameter name, body)."""
    out = {}
    heads = list(re.finditer(
        r"^(?:Status|Result<Config>) (\w+)\(([^)]*)\) \{", source, flags=re.M))
    for i, head in enumerate(heads):
        end = heads[i + 1].start() if i + 1 < len(heads) else len(source)
        params = head.group(2)
        m = re.search(r"(\w+)& (\w+)$", params.strip())
        ptype, pname = (m.group(1), m.group(2)) if m else ("Config", "base")
        if head.group(1) == "ApplyJson":
            ptype, pname = "Config", "base"
        out[head.group(1)] = (ptype, pname, source[head.start():end])
    return out


def code_keys(source):
    """Every key ApplyJson reads: full dotted key -> (struct type, member expression)."""
    funcs = functions(source)
    keys = {}

    def walk(fname, prefix):
        ptype, pname, body = funcs[fname]
        calls = list(re.finditer(r'r\.(Read|ReadObject)\(\s*"(\w+)",', body))
        for i, m in enumerate(calls):
            kind, key = m.groups()
            rest = body[m.end():calls[i + 1].start() if i + 1 < len(calls) else len(body)]
            full = prefix + key
            if kind == "Read":
                member = re.match(r"\s*([\w.]+)\)", rest).group(1)
                if member.startswith(pname + "."):
                    keys[full] = (ptype, member[len(pname) + 1:])
                else:
                    keys[full] = (None, member)  # a local, e.g. listen
                continue
            child = re.search(r"\b(Apply\w+)\(", rest)
            if child is None:
                raise SystemExit(f"config_json.cc: cannot tell what reads {full}")
            array = "v[i]" in rest
            walk(child.group(1), full + ("[]." if array else "."))

    walk("ApplyJson", "")
    return keys


def eval_cpp(expr):
    """A C++ initializer as a JSON value, or None when it is not a plain literal."""
    expr = expr.strip()
    if expr in ("true", "false"):
        return expr == "true"
    m = re.fullmatch(r"(\d+)(?:LL)?\s*<<\s*(\d+)", expr)
    if m:
        return int(m.group(1)) << int(m.group(2))
    if re.fullmatch(r"-?\d+", expr):
        return int(expr)
    if re.fullmatch(r"-?\d+\.\d*", expr):
        return float(expr)
    if re.fullmatch(r'"[^"]*"', expr):
        return expr[1:-1]
    m = re.fullmatch(r"\{(.*)\}", expr, flags=re.S)
    if m and all(re.fullmatch(r'\s*"[^"]*"\s*', p) for p in m.group(1).split(",") if p.strip()):
        return [p.strip()[1:-1] for p in m.group(1).split(",") if p.strip()]
    return None


def struct_defaults(header):
    """struct name -> member -> JSON default (or None when not a literal)."""
    header = strip_comments(header)
    structs = {}
    for m in re.finditer(r"^struct (\w+) \{(.*?)^\};", header, flags=re.S | re.M):
        members = {}
        for line in m.group(2).split(";"):
            line = " ".join(line.split())
            if not line or "(" in line.split("{")[0].split("=")[0] or line.startswith(
                    ("bool operator", "static")):
                continue
            d = re.fullmatch(r"([\w:<>, ]+?) (\w+)\s*(?:=\s*(.+)|\{(.*)\})?", line)
            if not d:
                continue
            ctype, name, eq, brace = d.groups()
            if eq is not None:
                members[name] = eval_cpp(eq)
            elif brace is not None:
                members[name] = eval_cpp(brace) if brace else None
            elif "vector" in ctype:
                members[name] = []
            elif "map" in ctype:
                members[name] = {}
            elif "string" in ctype:
                members[name] = ""
            else:
                members[name] = None
        structs[m.group(1)] = members
    # Limits::DefaultMaxima(): the max_limits defaults, assigned member by member.
    maxima = re.search(r"static Limits DefaultMaxima\(\) \{(.*?)\n  \}", header, flags=re.S)
    structs["Limits::DefaultMaxima"] = {
        k: eval_cpp(v) for k, v in re.findall(r"max\.(\w+) = ([^;]+);", maxima.group(1))}
    return structs


def default_of(key, where, structs):
    ptype, member = where
    if ptype is None:
        return None
    if ".max_limits." in key:
        maxima = structs["Limits::DefaultMaxima"]
        if member in maxima:
            return maxima[member]
    return structs.get(ptype, {}).get(member)


def doc_tables(doc):
    """Full key -> the default cell, for every row of every key table."""
    rows = {}
    problems = []
    in_table = False
    for number, line in enumerate(doc.splitlines(), 1):
        if not line.startswith("|"):
            in_table = False
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if re.fullmatch(r"key", cells[0]) and len(cells) > 1 and cells[1] == "default":
            in_table = True
            continue
        if not in_table or set(cells[0]) <= set("-: "):
            continue
        names = re.findall(r"`([^`]+)`", cells[0])
        if not names:
            problems.append(f"docs/configuration.md:{number}: a key row without a `key`")
        for name in names:
            if name in rows:
                problems.append(f"docs/configuration.md:{number}: {name} listed twice")
            rows[name] = (number, cells[1] if len(cells) > 1 else "")
    return rows, problems


def same(documented, actual):
    if isinstance(actual, (int, float)) and not isinstance(actual, bool):
        return isinstance(documented, (int, float)) and not isinstance(documented, bool) \
            and float(documented) == float(actual)
    return documented == actual


def main():
    root = Path(sys.argv[1] if len(sys.argv) > 1 else ".")
    source = strip_comments((root / "src/config/config_json.cc").read_text())
    header = (root / "include/sandbox/config/config.h").read_text()
    command_line = (root / "src/config/command_line.cc").read_text()
    doc = (root / "docs/configuration.md").read_text()

    keys = code_keys(source)
    structs = struct_defaults(header)
    rows, problems = doc_tables(doc)

    for key in sorted(set(keys) - set(rows)):
        problems.append(f"{key}: read by src/config/config_json.cc, missing from "
                        "docs/configuration.md")
    for key in sorted(set(rows) - set(keys)):
        problems.append(f"{key}: in docs/configuration.md:{rows[key][0]}, but the code reads "
                        "no such key")
    for key in sorted(set(keys) & set(rows)):
        number, cell = rows[key]
        tokens = re.findall(r"`([^`]+)`", cell)
        if key in COMPUTED:
            continue
        actual = default_of(key, keys[key], structs)
        if actual is None:
            problems.append(f"{key}: its default in config.h is not a literal this check reads; "
                            "make it one, or list the key in COMPUTED with the reason")
            continue
        if not tokens:
            problems.append(f"docs/configuration.md:{number}: {key}: the default cell has no "
                            f"`value` (the code says {json.dumps(actual)})")
            continue
        try:
            documented = json.loads(tokens[0])
        except ValueError:
            problems.append(f"docs/configuration.md:{number}: {key}: `{tokens[0]}` is not JSON")
            continue
        if not same(documented, actual):
            problems.append(f"docs/configuration.md:{number}: {key}: documented default "
                            f"{tokens[0]}, the code's is {json.dumps(actual)}")

    flags = set(re.findall(r'arg == "(--[\w-]+)"', command_line))
    for flag in sorted(flags):
        if f"`{flag}" not in doc:
            problems.append(f"{flag}: a flag of src/config/command_line.cc, missing from "
                            "docs/configuration.md")
    for env in sorted(set(re.findall(r'env\.find\("(\w+)"\)', command_line))):
        if f"`{env}`" not in doc:
            problems.append(f"{env}: read by src/config/command_line.cc, missing from "
                            "docs/configuration.md")

    if problems:
        fail(problems)
    print(f"docs/configuration.md: {len(keys)} keys, their defaults and {len(flags)} flags "
          "match the code")


if __name__ == "__main__":
    main()
