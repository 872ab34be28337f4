#!/usr/bin/env python3
"""The plot of bench/egress.py's results: first-byte latency (CDF), large-download throughput and
per-sandbox start times, proxy (or policy) against direct (or none).

  python3 bench/plot_egress.py RESULTS.json OUT.png   (bench/egress.py runs it in the sandbox image)
"""
import json
import statistics
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

COLORS = {"proxy": "tab:red", "direct": "tab:blue"}


def main(src, dst):
    with open(src) as f:
        r = json.load(f)
    dl = r.get("downloads")
    su = r.get("startup")
    panels = (2 if dl else 0) + (1 if su else 0)
    fig, axes = plt.subplots(1, panels, figsize=(5.2 * panels, 4.2), squeeze=False)
    axes = list(axes[0])
    if dl:
        ax = axes.pop(0)
        styles = {"first_byte_http": "-", "first_byte_http_addr": ":", "first_byte_https": "--"}
        names = {"first_byte_http": "HTTP", "first_byte_http_addr": "HTTP by address",
                 "first_byte_https": "HTTPS"}
        for path in ("proxy", "direct"):
            for kind, style in styles.items():
                xs = sorted(x["first_ms"] for x in dl["samples"][path].get(kind, []))
                if not xs:
                    continue
                ys = [(i + 1) / len(xs) for i in range(len(xs))]
                ax.step(xs, ys, where="post", color=COLORS[path], linestyle=style,
                        label=f"{path}, {names[kind]}")
        ax.set_xscale("log")
        ax.set_xlabel("first byte (ms, log)")
        ax.set_ylabel("fraction of requests")
        ax.set_title("first-byte latency, 100 B file")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=7)

        ax = axes.pop(0)
        kinds = [k for k in ("large_http", "large_https") if k in dl["samples"]["proxy"]]
        for i, kind in enumerate(kinds):
            for j, path in enumerate(("direct", "proxy")):
                xs = [x["bytes"] / x["total_ms"] / 1e3 for x in dl["samples"][path][kind]]
                pos = i * 3 + j
                ax.scatter([pos] * len(xs), xs, color=COLORS[path], alpha=0.6, s=18)
                ax.hlines(statistics.median(xs), pos - 0.3, pos + 0.3, color=COLORS[path])
        ax.set_xticks([i * 3 + j for i in range(len(kinds)) for j in range(2)])
        ax.set_xticklabels([f"{k.split('_')[1].upper()}\n{p}" for k in kinds
                            for p in ("direct", "proxy")], fontsize=8)
        ax.set_ylim(bottom=0)
        ax.set_ylabel("MB/s (10^6 B/s)")
        mib = r["meta"]["large_mib"]
        ax.set_title(f"{mib} MiB download (each point one; bar: median)")
        ax.grid(True, axis="y", alpha=0.3)
    if su:
        ax = axes.pop(0)
        # The first two starts of a server (with a policy: they waited for the gateway) and the
        # later ones, with and without a policy.
        def starts(key, first):
            out = []
            for rd in su[key]:
                ordered = sorted(rd["starts"], key=lambda s: s["begin_s"])
                out += [s["ms"] / 1e3 for s in (ordered[:2] if first else ordered[2:])]
            return out
        groups = [("without policy: first two", starts("none", True), "tab:blue"),
                  ("policy: first two (waited for gateway)", starts("policy", True), "tab:orange"),
                  ("without policy: later", starts("none", False), "tab:blue"),
                  ("policy: later", starts("policy", False), "tab:red")]
        for i, (label, xs, color) in enumerate(groups):
            ax.scatter([i] * len(xs), xs, color=color, alpha=0.6, s=18)
            if xs:
                ax.hlines(statistics.median(xs), i - 0.3, i + 0.3, color=color)
        ax.set_xticks(range(len(groups)))
        ax.set_xticklabels([g[0].replace(": ", ":\n").replace(" (", "\n(") for g in groups], fontsize=7)
        ax.set_ylim(bottom=0)
        ax.set_ylabel("seconds")
        ax.set_title("per-sandbox start (bar: median)")
        ax.grid(True, axis="y", alpha=0.3)
    m = r["meta"]
    fig.suptitle(f"egress proxy cost, {m['started_utc']}, load {m['load_start']} -> "
                 f"{m.get('load_end', '?')} (2-core VM)", fontsize=9)
    fig.tight_layout()
    fig.savefig(dst, dpi=100)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
