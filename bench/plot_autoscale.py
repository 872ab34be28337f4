#!/usr/bin/env python3
"""Plots bench/autoscale.mjs's JSON: clients, containers (idle, all) and the target over time,
and the latency p95 per 2-second bin, for each sizing.

    python3 bench/plot_autoscale.py bench/results/DATE-autoscale.json   # writes DATE-autoscale.png
"""
import json
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def p95(values):
    values = sorted(values)
    return values[max(0, min(len(values) - 1, -(-95 * len(values) // 100) - 1))]


def main(path):
    with open(path) as f:
        data = json.load(f)
    colors = {"fixed": "tab:orange", "autoscaled": "tab:blue"}
    fig, axes = plt.subplots(3, 1, figsize=(9, 8), sharex=True)
    for result in data["results"]:
        name = result["name"]
        samples = result["samples"]
        t = [s["t"] for s in samples]
        color = colors.get(name)
        if name == data["results"][0]["name"]:
            axes[0].step(t, [s["clients"] for s in samples], where="post", color="black")
        axes[1].plot(t, [s["idle"] for s in samples], color=color, label=f"{name}: idle")
        axes[1].plot(t, [s["idle"] + s["leased"] + s["starting"] for s in samples], color=color,
                     linestyle="--", linewidth=0.8, label=f"{name}: all (idle+leased+starting)")
        target = "target (idle + in use)" if name == "autoscaled" else "min_idle"
        axes[1].plot(t, [s["min_idle_target"] for s in samples], color=color, linestyle=":",
                     label=f"{name}: {target}")
        bins = {}
        for r in result["requests"]:
            if r["status"] == 200:
                bins.setdefault(int(r["t"] // 2) * 2, []).append(r["ms"])
        xs = sorted(bins)
        axes[2].plot([x + 1 for x in xs], [p95(bins[x]) for x in xs], color=color, marker=".",
                     label=name)
    axes[0].set_ylabel("clients")
    axes[1].set_ylabel("containers")
    axes[1].legend(fontsize=7, loc="upper left")
    axes[2].set_ylabel("latency p95 (ms, 2 s bins)")
    axes[2].set_yscale("log")
    axes[2].legend(fontsize=8)
    axes[2].set_xlabel("seconds")
    fig.suptitle(f"Step load {' -> '.join(map(str, data['steps']))} clients, "
                 f"{data['phase_s']} s each: fixed min_idle 2 vs autoscaled "
                 f"(window {data['window_s']} s)", fontsize=10)
    fig.tight_layout()
    out = path.rsplit(".", 1)[0] + ".png"
    fig.savefig(out, dpi=100)
    print(out)


if __name__ == "__main__":
    main(sys.argv[1])
