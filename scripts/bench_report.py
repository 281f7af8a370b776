#!/usr/bin/env python3
"""Summarise scripts/bench.sh's raw results: medians, min-max noise and rshmem/OSHMEM ratios,
as CSV and Markdown, plus a latency-vs-size plot of both libraries."""
import collections
import statistics
import sys

raw, out = sys.argv[1], sys.argv[2]
runs = collections.defaultdict(list)  # (lib, np, bench, size) -> values
units = {}
for line in open(raw):
    f = line.split()
    if len(f) != 7:
        continue
    lib, np_, _rep, bench, size, value, unit = f
    runs[(lib, int(np_), bench, int(size))].append(float(value))
    units[bench] = unit

memcpy = runs.get(("memcpy", 1, "memcpy_bandwidth", 1 << 20))
rows = []
for (lib, np_, bench, size), vals in sorted(runs.items()):
    if lib != "rshmem":
        continue
    ours = statistics.median(vals)
    peer_vals = runs.get(("oshmem", np_, bench, size))
    peer = statistics.median(peer_vals) if peer_vals else None
    rows.append({
        "benchmark": bench, "pes": np_, "size": size, "unit": units[bench],
        "rshmem": ours, "rshmem_min": min(vals), "rshmem_max": max(vals),
        "oshmem": peer, "oshmem_min": min(peer_vals) if peer_vals else None,
        "oshmem_max": max(peer_vals) if peer_vals else None,
        "ratio": ours / peer if peer else None,
    })

def fmt(v):
    return "" if v is None else f"{v:.4g}"

cols = ["benchmark", "pes", "size", "unit", "rshmem", "rshmem_min", "rshmem_max", "oshmem", "oshmem_min", "oshmem_max", "ratio"]
with open(f"{out}/bench.csv", "w") as f:
    f.write(",".join(cols) + "\n")
    for r in rows:
        f.write(",".join(fmt(r[c]) if isinstance(r[c], float) or r[c] is None else str(r[c]) for c in cols) + "\n")

with open(f"{out}/bench.md", "w") as f:
    f.write("| benchmark | PEs | size (B) | unit | rshmem median (min-max) | OSHMEM median (min-max) | rshmem/OSHMEM |\n")
    f.write("| --- | ---: | ---: | --- | --- | --- | ---: |\n")
    for r in rows:
        peer = f"{fmt(r['oshmem'])} ({fmt(r['oshmem_min'])}-{fmt(r['oshmem_max'])})" if r["oshmem"] is not None else "n/a"
        f.write(f"| {r['benchmark']} | {r['pes']} | {r['size']} | {r['unit']} | {fmt(r['rshmem'])} ({fmt(r['rshmem_min'])}-{fmt(r['rshmem_max'])}) | {peer} | {fmt(r['ratio'])} |\n")
    if memcpy:
        f.write(f"\nSingle-core memcpy of 1 MiB in the same run: median {statistics.median(memcpy):.4g} MB/s "
                f"(min {min(memcpy):.4g}, max {max(memcpy):.4g}).\n")
print(open(f"{out}/bench.md").read())

try:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.5))
    for ax, bench in zip(axes, ["put_latency", "get_latency"]):
        for lib, style in [("rshmem", "o-"), ("oshmem", "s--")]:
            pts = sorted((s, statistics.median(v)) for (l, n, b, s), v in runs.items() if l == lib and n == 2 and b == bench)
            if pts:
                ax.plot([p[0] for p in pts], [p[1] for p in pts], style, label="rshmem" if lib == "rshmem" else "Open MPI OSHMEM")
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel("message size (bytes)")
        ax.set_ylabel("latency (us)")
        ax.set_title(f"{bench.replace('_', ' ')}, 2 PEs")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend()
    fig.tight_layout()
    fig.savefig(f"{out}/latency.png", dpi=100)
    print(f"plot: {out}/latency.png")
except ImportError:
    print("no matplotlib: plot skipped")
