#!/usr/bin/env python3
"""The GC policy study's tables and plots from a sweep's results (bench/sweep.py
bench/grids/policy-study.toml): per workload, policy x OP with WAF, steady kIOPS and write
p99.9; plots of each against OP (the analytic models dashed under uniform writes); and a
comparison of the uniform WAF with the models at three counts of the over-provisioning.

Reads the points' kept femu-sim JSON (the sweep's results directory; default the newest
of the grid) and writes OUT/policy-study.csv (every figure per point), OUT/tables.md and
OUT/waf-vs-op.png, OUT/iops-vs-op.png, OUT/p999-vs-op.png. Points not run are left out
(and listed). Needs matplotlib for the plots (build/venv/bin/python3).

Usage: bench/policy_study.py [--grid bench/grids/policy-study.toml] [--results DIR]
                             [--out docs/policy-study] [--no-plot]
"""

import argparse
import csv
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bblib  # noqa: E402
import simlib  # noqa: E402
import sweep  # noqa: E402

HERE = Path(__file__).resolve().parent
# (csv name, meaning)
COLUMNS = [
    ("gc_policy", "victim policy"),
    ("op_pcent", "op_pcent (the drive's property)"),
    ("workload", "the grid's workload"),
    ("waf", "NAND / host pages over the measured capacities"),
    ("kiops", "write kIOPS over the measured capacities"),
    ("p50_us", "write latency median, us"),
    ("p999_us", "write latency p99.9, us"),
    ("p9999_us", "write latency p99.99, us"),
    ("p999_over_p50", "p99.9 / p50"),
    ("least_window", "least whole 1 s window's IOPS / the measured mean"),
    ("chips_busy", "chips' busy share over the measured phase"),
    ("gc_read_share", "share of the chips' busy time in reads (all GC's)"),
    ("forced_runs", "forced GC runs in the measured phase"),
    ("waf_half1", "WAF over the first half of the measured host writes"),
    ("waf_half2", "WAF over the second half"),
    ("total_lines", "lines of the drive"),
    ("free_lines", "free lines, mean over the measured phase"),
    ("phys_op", "OP % of all lines over the exposed capacity"),
    ("model_phys", "the policy's model at phys_op"),
    ("eff_op", "OP % of the lines neither free nor open (sweep.py's model_op)"),
    ("model_eff", "the model at eff_op (sweep.py's model_waf)"),
    ("eff_op_open", "eff_op with one line of the data in the two open lines"),
    ("model_eff_open", "the model at eff_op_open"),
    ("open_lines_data", "random only: the data in the open lines, in lines, that its WAF "
                        "implies"),
    ("femu_s", "femu-sim wall time of the point, s"),
]
# plot and table order; the grid's spelling
POLICY_ORDER = ["greedy", "windowed-greedy", "cost-benefit", "cost-age-time",
                "d-choices:d=10", "fifo", "d-choices:d=2", "random"]


def newest_results(g):
    pat = re.compile(re.escape("sweep-%s-" % g["name"]) + r"\d{8}-\d{6}$")
    for d in sorted((x for x in bblib.RESULTS.glob("sweep-*") if pat.match(x.name)),
                    reverse=True):
        if (d / "grid.toml").exists() and (d / "grid.toml").read_text() == g["text"]:
            return d
    sys.exit("policy_study: no results of %s under %s: run bench/sweep.py on it first"
             % (g["name"], bblib.RESULTS))


def geometry(res):
    """(pages per line, exposed pages) of a blackbox drive."""
    d = res["device"]
    b = 1
    for k in ("nchs", "luns_per_ch", "pls_per_lun", "pgs_per_blk"):
        b *= int(d[k])
    page = int(d["secs_per_pg"]) * int(d["secsz"])
    return b, float(d["devsz_mb"]) * 2**20 / page


def model_at(res, op_pcent):
    name, params = sweep.policy(res["device"].get("gc_policy"))
    if name not in sweep.MODELS or op_pcent is None or op_pcent <= 0:
        return None
    b, _ = geometry(res)
    return sweep.MODELS[name](op_pcent / 100, b, params)


def extras(res, p, fig):
    """What sweep.figures does not give: the section-2 figures, the WAF's steadiness, and
    the models at other counts of the OP."""
    wins = simlib.windows(res, "measure")
    before = [j for j in res["jobs"] if not j["jobname"].startswith("measure")]
    s0 = max(before, key=lambda j: j["job_start_ns"] + j["elapsed_ns"])["stats"]
    s1 = wins[-1]["stats"]
    t = wins[-1]["t1_ns"] - wins[0]["t0_ns"]
    busy = {k: s1[k] - s0[k] for k in ("nand_read_busy_ns", "nand_program_busy_ns",
                                       "nand_erase_busy_ns")}
    chips = sum(1 for k in s1 if re.fullmatch(r"chip\d+_busy_ns", k))
    total_busy = sum(busy.values())
    measured = [j for j in res["jobs"] if j["jobname"].startswith("measure")]
    iops = [x for j in measured for x in j["series"]["write_iops"][1:-1]]  # whole windows
    # cumulative page counts at each 1 s sample: split the measured writes in two halves
    host = [s0["host_pages_written"]] + [x for j in measured
                                         for x in j["series"]["host_pages_written"]] + \
        [s1["host_pages_written"]]
    nand = [s0["nand_pages_written"]] + [x for j in measured
                                         for x in j["series"]["nand_pages_written"]] + \
        [s1["nand_pages_written"]]
    mid = min(range(len(host)), key=lambda i: abs(host[i] - (host[0] + host[-1]) / 2))
    r = dict(
        p999_over_p50=fig["p999_us"] / fig["p50_us"] if fig["p50_us"] else None,
        least_window=min(iops) / (sum(iops) / len(iops)) if iops else None,
        chips_busy=total_busy / (chips * t) if chips and t else None,
        gc_read_share=busy["nand_read_busy_ns"] / total_busy if total_busy else None,
        forced_runs=s1["gc_forced_runs"] - s0["gc_forced_runs"],
        waf_half1=(nand[mid] - nand[0]) / (host[mid] - host[0]),
        waf_half2=(nand[-1] - nand[mid]) / (host[-1] - host[mid]),
        total_lines=res["stats"]["total_lines"],
        eff_op=fig["model_op"], model_eff=fig["model_waf"])
    if not p["uniform"] or res["device"]["femu_mode"] != "1" or fig["free_lines"] is None:
        return r        # the models are for uniform overwrites of a blackbox drive
    b, exposed = geometry(res)
    lines = r["total_lines"]
    nopen = 2 if res["device"].get("streams") == "host-gc" else 1
    cand = lines - fig["free_lines"] - nopen
    r["phys_op"] = (lines * b / exposed - 1) * 100
    r["model_phys"] = model_at(res, r["phys_op"])
    r["model_eff"] = model_at(res, r["eff_op"])
    # the open lines fill from empty to full: on average half each, nearly all valid
    # (written last), so the full lines GC chooses from hold that much less of the data
    r["eff_op_open"] = (cand * b / (exposed - b) - 1) * 100
    r["model_eff_open"] = model_at(res, r["eff_op_open"])
    if sweep.policy(res["device"].get("gc_policy"))[0] == "random":
        # a random victim holds the candidates' mean valid share u = 1 - 1/WAF, so the
        # valid pages outside them are exposed - u * cand * b
        u = 1 - 1 / fig["waf"]
        r["open_lines_data"] = (exposed - u * cand * b) / b
    return r


def collect(g, results):
    pts = sweep.points(g, simlib.FEMU_SIM)
    rows, missing = [], []
    for p in pts:
        res = sweep.load_point(results / (p["name"] + ".json"), p)
        if res is None:
            missing.append(p["name"])
            continue
        fig = sweep.figures(res, p)
        r = dict(p["coords"], **fig, femu_s=res["sweep"]["wall_s"],
                 sha=res["sweep"]["femu_sim_sha256"])
        r.update(extras(res, p, fig))
        rows.append(r)
    return rows, missing


def fmt(v, f):
    return "-" if v is None else f % v


def ordered(values, order):
    return sorted(values, key=lambda v: (order.index(v) if v in order else len(order), v))


def markdown(g, rows, femu_s):
    """tables.md: per workload, policy x OP: WAF / kIOPS / p99.9 ms; then the uniform WAF
    against the models."""
    ops = g["axes"]["op_pcent"]
    pols = ordered({r["gc_policy"] for r in rows}, POLICY_ORDER)
    by = {(r["gc_policy"], r["op_pcent"], r["workload"]): r for r in rows}
    out = ["<!-- bench/policy_study.py from %d points, %.0f s of femu-sim, femu-sim sha256 %s "
           "-->" % (len(rows), femu_s, " ".join(sorted({r["sha"] for r in rows})))]
    for wl in g["workloads"]:
        out += ["", "**%s**: WAF / kIOPS / p99.9 ms, by `op_pcent`" % wl, "",
                "| `gc_policy` | " + " | ".join("%s %%" % o for o in ops) + " |",
                "|---|" + "---|" * len(ops)]
        for pol in pols:
            cells = []
            for o in ops:
                r = by.get((pol, o, wl))
                cells.append("%.2f / %.1f / %.0f" % (r["waf"], r["kiops"], r["p999_us"] / 1e3)
                             if r else "not run")
            out.append("| `%s` | %s |" % (pol, " | ".join(cells)))
    out += ["", "Issue 33's section-2 figures, lowest-highest over the OPs: p99.9 / p50, the "
            "least whole 1 s window's IOPS over the mean, the chips' busy share and the share "
            "of their busy time in (GC) reads, over the measured capacities", "",
            "| workload | `gc_policy` | p99.9 / p50 | least 1 s window | chips busy | "
            "GC reads |", "|---|---|---|---|---|---|"]
    for wl in g["workloads"]:
        for pol in pols:
            rr = [by[k] for k in by if k[0] == pol and k[2] == wl]
            if not rr:
                continue

            def span(k, f):
                v = [r[k] for r in rr if r[k] is not None]
                return (f + "-" + f) % (min(v), max(v)) if v else "-"
            out.append("| %s | `%s` | %s | %s | %s | %s |" % (
                wl, pol, span("p999_over_p50", "%.1f"), span("least_window", "%.2f"),
                span("chips_busy", "%.2f"), span("gc_read_share", "%.3f")))
    uni = [r for r in rows if r.get("model_eff") is not None]
    if uni:
        out += ["", "**uniform**, WAF against the models: measured; the model at the OP "
                "of all lines (phys), of the lines neither free nor open (eff), and eff with "
                "one line of the data in the open lines (eff-open); the deviation of the "
                "measured from each, %", "",
                "| `gc_policy` | `op_pcent` | WAF | phys OP % | model | dev | eff OP % | "
                "model | dev | eff-open OP % | model | dev | free lines |",
                "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
        for r in sorted(uni, key=lambda r: (POLICY_ORDER.index(r["gc_policy"])
                                            if r["gc_policy"] in POLICY_ORDER else 99,
                                            r["op_pcent"])):
            def dev(m):
                return "%+.1f" % ((r["waf"] / m - 1) * 100) if m else "-"
            out.append("| `%s` | %s | %.3f | %.2f | %s | %s | %.2f | %s | %s | %.2f | %s | %s "
                       "| %.1f |" % (
                           r["gc_policy"], r["op_pcent"], r["waf"], r["phys_op"],
                           fmt(r["model_phys"], "%.3f"), dev(r["model_phys"]), r["eff_op"],
                           fmt(r["model_eff"], "%.3f"), dev(r["model_eff"]),
                           r["eff_op_open"], fmt(r["model_eff_open"], "%.3f"),
                           dev(r["model_eff_open"]), r["free_lines"]))
    if uni:
        ops_u = sorted({r["op_pcent"] for r in uni})
        out += ["", "**uniform**, the measured WAF's deviation from the model, %: at phys / "
                "eff / eff-open OP", "",
                "| `gc_policy` | " + " | ".join("%s %%" % o for o in ops_u) + " |",
                "|---|" + "---|" * len(ops_u)]
        for pol in ordered({r["gc_policy"] for r in uni}, POLICY_ORDER):
            cells = []
            for o in ops_u:
                r = by.get((pol, o, "uniform"))
                cells.append(" / ".join("%+.1f" % ((r["waf"] / r[k] - 1) * 100)
                                        for k in ("model_phys", "model_eff", "model_eff_open"))
                             if r and r.get("model_eff") else "-")
            out.append("| `%s` | %s |" % (pol, " | ".join(cells)))
    return "\n".join(out) + "\n"


def plots(g, rows, out):
    plt = bblib.pyplot()
    if not plt:
        return []
    from matplotlib import ticker
    wls = list(g["workloads"])
    pols = ordered({r["gc_policy"] for r in rows}, POLICY_ORDER)
    names = POLICY_ORDER + [p for p in pols if p not in POLICY_ORDER]
    style = {p: ("C%d" % (i % 10), "osD^vx+*"[i % 8]) for i, p in enumerate(names)}
    paths = []
    for key, ylabel, title, scale, log in (
            ("waf", "WAF", "WAF", 1, True),
            ("kiops", "kIOPS", "steady write kIOPS", 1, False),
            ("p999_us", "ms", "write latency p99.9", 1e-3, True)):
        fig, axs = plt.subplots(1, len(wls), figsize=(5 * len(wls), 4.6), squeeze=False,
                                sharey=True)
        for ax, wl in zip(axs[0], wls):
            for pol in pols:
                pts = sorted((r["op_pcent"], r) for r in rows
                             if r["workload"] == wl and r["gc_policy"] == pol)
                if not pts:
                    continue
                color, marker = style[pol]
                ax.plot([o for o, _ in pts], [r[key] * scale for _, r in pts], "-",
                        marker=marker, ms=4, color=color, label=pol)
                if key == "waf":
                    m = [(o, r["model_eff"]) for o, r in pts if r.get("model_eff")]
                    if m:
                        ax.plot(*zip(*m), "--", color=color, lw=1)
            ax.set_title("%s: %s%s" % (wl, title,
                                       " (dashed: model)" if key == "waf" and wl == "uniform"
                                       else ""))
            ax.set_xlabel("op_pcent")
            if log:
                ax.set_yscale("log")
                ax.yaxis.set_major_locator(ticker.LogLocator(subs=(1, 2, 5)))
                ax.yaxis.set_major_formatter(ticker.FormatStrFormatter("%g"))
                ax.yaxis.set_minor_formatter(ticker.NullFormatter())
            ax.grid(True, which="both", alpha=0.3)
        axs[0][0].set_ylabel(ylabel)
        axs[0][-1].legend(fontsize=7)
        fig.tight_layout()
        path = out / ("%s-vs-op.png" % {"waf": "waf", "kiops": "iops", "p999_us": "p999"}[key])
        fig.savefig(path, dpi=100)
        plt.close(fig)
        paths.append(path)
    return paths


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--grid", default=str(HERE / "grids" / "policy-study.toml"),
                    help="the sweep's grid (default: %(default)s)")
    ap.add_argument("--results", metavar="DIR", help="the sweep's results directory "
                    "(default: the newest of the grid under bench/results)")
    ap.add_argument("--out", default=str(HERE.parent / "docs" / "policy-study"),
                    metavar="DIR", help="where the CSV, tables.md and plots go "
                    "(default: %(default)s)")
    ap.add_argument("--no-plot", action="store_true", help="CSV and tables.md only")
    a = ap.parse_args()
    g = sweep.load_grid(a.grid)
    results = Path(a.results) if a.results else newest_results(g)
    rows, missing = collect(g, results)
    if not rows:
        sys.exit("policy_study: no point of %s has run in %s" % (g["name"], results))
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    with open(out / "policy-study.csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow([k for k, _ in COLUMNS])
        for r in rows:
            w.writerow(["" if r.get(k) is None else
                        ("%.6g" % r[k] if isinstance(r[k], float) else r[k])
                        for k, _ in COLUMNS])
    femu_s = sum(r["femu_s"] for r in rows)
    text = markdown(g, rows, femu_s)
    (out / "tables.md").write_text(text)
    print(text)
    for path in [out / "policy-study.csv", out / "tables.md"] + \
            ([] if a.no_plot else plots(g, rows, out)):
        print("wrote", path)
    print("%d points from %s, %.0f s of femu-sim" % (len(rows), results, femu_s))
    if missing:
        print("not run (%d): %s%s" % (len(missing), ", ".join(missing[:5]),
                                        ", ..." if len(missing) > 5 else ""))


if __name__ == "__main__":
    main()
