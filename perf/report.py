#!/usr/bin/env python3
"""Compares `dfgnn study` records (docs/study.md) in one HTML report with embedded plots.

Usage:
  python3 perf/report.py A.json B.json ... -o report.html
  python3 perf/report.py --check A.json ...     # validate records against perf/study.schema.json

Bad input (a file that is not a valid record, no records) exits 2 with one line naming it.
"""

import argparse
import base64
import html
import io
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import study_record as sr  # noqa: E402


def _fmt(x, digits=3):
    if x is None:
        return "–"
    if isinstance(x, str):
        return html.escape(x)
    if isinstance(x, bool):
        return "yes" if x else "no"
    return f"{x:.{digits}g}" if abs(x) < 10 ** digits else f"{x:.0f}"


def _table(header, rows):
    head = "".join(f"<th>{html.escape(str(h))}</th>" for h in header)
    body = "".join("<tr>" + "".join(f"<td>{_fmt(c)}</td>" for c in r) + "</tr>" for r in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _png(fig):
    """A matplotlib figure as an <img> holding its PNG."""
    import matplotlib.pyplot as plt

    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=90, bbox_inches="tight")
    plt.close(fig)
    return f'<img alt="plot" src="data:image/png;base64,{base64.b64encode(buf.getvalue()).decode()}">'


def _shape(key):
    return f"{key[2]}x{key[3]}"


def platforms_section(records, labels):
    def device_row(r, backend):
        d = r["devices"].get(backend)
        if d is None:
            return ["–"] * 9
        m = d["microbenchmarks"]
        gather = {g["row_bytes"]: g["gbs"] for g in m["gather"]}
        return [d["name"], d.get("architecture", d.get("execution_space")), d.get("compute_units"),
                d.get("clock_mhz"), d.get("l2_bytes"), m["copy"]["gbs"], gather.get(4), gather.get(256),
                m["launch_latency"]["median_us"]]

    rows = []
    for r, lab in zip(records, labels):
        b = r["build"]
        for backend in sorted(r["devices"]):
            rows.append([lab, backend] + device_row(r, backend) +
                        [f"Kokkos {b['kokkos']['version']} ({', '.join(b['kokkos']['backends'])})", b["compiler"],
                         r["date"]])
    header = ["platform", "backend", "device", "architecture / space", "SMs / CUs", "clock MHz", "L2 bytes",
              "copy GB/s", "gather 4 B GB/s", "gather 256 B GB/s", "launch µs", "Kokkos", "compiler", "date"]
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 3.5))
    for r, lab in zip(records, labels):
        for backend, d in sorted(r["devices"].items()):
            g = d["microbenchmarks"]["gather"]
            ax.plot([x["row_bytes"] for x in g], [x["gbs"] for x in g], marker="o", label=f"{lab} {backend}")
    ax.set(xscale="log", yscale="log", xlabel="row bytes (random rows)", ylabel="gather GB/s")
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1))
    return "<h2>Platforms</h2>" + _table(header, rows) + _png(fig)


def case_plots(records, labels):
    """Per graph and H x D: Auto's time and bandwidth fraction, one bar per platform and backend."""
    import matplotlib.pyplot as plt

    ran = [sr.cases(r) for r in records]
    groups = sorted({(k[0], _shape(k)) for c in ran for k in c})
    out = ["<h2>Auto per case across platforms</h2>"]
    for graph, shape in groups:
        problems = sorted({k[1:2] + k[4:6] for c in ran for k in c if (k[0], _shape(k)) == (graph, shape)})
        series = sorted({(i, k[6]) for i, c in enumerate(ran) for k in c if k[7] == "auto"})
        fig, axes = plt.subplots(2, 1, figsize=(max(6, 0.5 * len(problems) * max(1, len(series)) / 2), 6),
                                 sharex=True)
        width = 0.8 / max(1, len(series))
        for j, (i, backend) in enumerate(series):
            times, fracs = [], []
            for model, dtype, pas in problems:
                heads, dim = shape.split("x")
                c = ran[i].get((graph, model, int(heads), int(dim), dtype, pas, backend, "auto"))
                times.append(c["median_ms"] if c else 0)
                fracs.append((c["fraction"]["gather"] or 0) if c else 0)
            xs = [p + j * width for p in range(len(problems))]
            axes[0].bar(xs, times, width, label=f"{labels[i]} {backend}")
            axes[1].bar(xs, fracs, width)
        axes[0].set(yscale="log", ylabel="median ms", title=f"{graph}, H x D = {shape}, Auto")
        axes[1].set(ylabel="fraction of copy BW\n(gather bytes)")
        axes[1].set_xticks([p + 0.4 - width / 2 for p in range(len(problems))])
        axes[1].set_xticklabels([" ".join(p) for p in problems], rotation=60, ha="right", fontsize=7)
        axes[0].legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1))
        out.append(_png(fig))
    return "\n".join(out)


def side_by_side(records, labels):
    ran = [sr.cases(r) for r in records]
    keys = sorted(set().union(*ran), key=lambda k: tuple(str(x) for x in k))
    header = ["graph", "model", "HxD", "dtype", "pass", "backend", "strategy"]
    header += [f"{lab} ms" for lab in labels] + [f"{lab} fraction" for lab in labels]
    rows = []
    for k in keys:
        cs = [c.get(k) for c in ran]
        rows.append([k[0], k[1], _shape(k), k[4], k[5], k[6], k[7]] + [c and c["median_ms"] for c in cs] +
                    [c and c["fraction"]["gather"] for c in cs])
    auto = [r for r in rows if r[6] == "auto"]
    return ("<h2>Side by side (median ms; fraction of the copy bandwidth, gather bytes)</h2><h3>Auto</h3>" +
            _table(header, auto) + "<details><summary>every strategy</summary>" + _table(header, rows) +
            "</details>")


def portable_section(records, labels):
    import matplotlib.pyplot as plt

    out, fig, ax, any_bars = ["<h2>Portable over CUDA-native (time ratio, &gt; 1: portable slower)</h2>"], None, None, False
    for r, lab in zip(records, labels):
        ratios = [x for x in sr.portable_over_native(r) if x[1] == "auto"]
        if not ratios:
            out.append(f"<p>{html.escape(lab)}: one backend only.</p>")
            continue
        if fig is None:
            fig, ax = plt.subplots(figsize=(max(6, 0.25 * len(ratios)), 3.5))
        ax.plot(range(len(ratios)), [x[2] for x in ratios], marker="o", linestyle="", label=lab)
        any_bars = True
        out.append(f"<h3>{html.escape(lab)}</h3>" + _table(
            ["graph", "model", "heads", "dim", "dtype", "pass", "portable / native (Auto)"],
            [list(p) + [x] for p, _, x in ratios]))
    if any_bars:
        ax.set(yscale="log", ylabel="portable ms / native ms", xlabel="case (tables below)")
        ax.axhline(1, color="grey", linewidth=0.5)
        ax.legend(fontsize=7)
        out.insert(1, _png(fig))
    return "\n".join(out)


def peers_section(records, labels):
    out = ["<h2>Against the peers (float32; dfgnn: Auto, the faster backend)</h2>"]
    for r, lab in zip(records, labels):
        rows = sr.against_peers(r)
        if not rows:
            out.append(f"<p>{html.escape(lab)}: no peer was timed (perf/study_peers.py adds them).</p>")
            continue
        versions = "; ".join(f"{p['name']} on {p['device']}: " + ", ".join(f"{k} {v}" for k, v in p["versions"].items())
                             for p in r["peers"])
        out.append(f"<h3>{html.escape(lab)}</h3><p>{html.escape(versions)}</p>" + _table(
            ["peer", "graph", "model", "HxD", "dtype", "pass", "peer ms", "dfgnn ms", "speedup"],
            [[name, p[0], p[1], f"{p[2]}x{p[3]}", p[4], p[5], theirs, ours, x] for name, p, theirs, ours, x in rows]))
    return "\n".join(out)


def pennycook_section(records, labels):
    rows = sr.portability(records)
    header = ["graph", "model", "HxD", "dtype", "pass", "backend", "strategy"]
    header += [f"app. eff. {lab}" for lab in labels] + ["PP app."]
    header += [f"arch. eff. {lab}" for lab in labels] + ["PP arch."]
    body = [[k[0], k[1], _shape(k), k[4], k[5], k[6], k[7]] + app + [pp_app] + arch + [pp_arch]
            for k, app, pp_app, arch, pp_arch in rows]
    means = {}
    for k, _, pp_app, _, pp_arch in rows:
        means.setdefault((k[6], k[7]), []).append((pp_app, pp_arch))
    summary = [[b, s, len(v), sum(x[0] for x in v) / len(v), sum(x[1] for x in v) / len(v)]
               for (b, s), v in sorted(means.items())]
    return ("<h2>Performance portability (Pennycook) across these platforms</h2><p>Harmonic mean of the efficiencies"
            " over the platforms, 0 where a platform does not run the case. Application efficiency: the platform's"
            " best time for the problem over the case's; architectural: the compulsory bytes' fraction of the copy"
            " bandwidth (capped at 1).</p>" +
            _table(["backend", "strategy", "cases", "mean PP app.", "mean PP arch."], summary) +
            "<details><summary>per case</summary>" + _table(header, body) + "</details>")


def regression_section(records, labels):
    out = []
    for i, a in enumerate(records):
        for j in range(i + 1, len(records)):
            b = records[j]
            if not sr.same_platform(a, b) or a["build"]["commit"] == b["build"]["commit"]:
                continue
            moved = sr.regressions(a, b)
            out.append(f"<h3>{html.escape(labels[i])} → {html.escape(labels[j])}: {len(moved)} of "
                       f"{len(sr.cases(a).keys() & sr.cases(b).keys())} cases moved beyond their spread</h3>")
            out.append(_table(["graph", "model", "HxD", "dtype", "pass", "backend", "strategy", "before ms",
                               "after ms", "after / before"],
                              [[k[0], k[1], _shape(k), k[4], k[5], k[6], k[7], x, y, y / x if x else None]
                               for k, x, y in moved]))
    if not out:
        return "<h2>Regressions</h2><p>No two records of one platform at different commits.</p>"
    return "<h2>Regressions (one platform, two commits)</h2>" + "\n".join(out)


def render(records):
    import matplotlib

    matplotlib.use("Agg")  # files, no display
    labels = [sr.label(r) for r in records]
    parts = [platforms_section(records, labels), case_plots(records, labels), side_by_side(records, labels),
             portable_section(records, labels), peers_section(records, labels),
             pennycook_section(records, labels),
             regression_section(records, labels)]
    style = ("body{font-family:sans-serif;margin:2em}table{border-collapse:collapse;font-size:12px;margin:1em 0}"
             "td,th{border:1px solid #ccc;padding:2px 6px;text-align:right}img{display:block;margin:1em 0}")
    return (f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>dfgnn study</title><style>{style}</style>"
            f"</head><body><h1>dfgnn study: {len(records)} record(s)</h1>" + "\n".join(parts) + "</body></html>\n")


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("records", nargs="+", metavar="RECORD.json")
    p.add_argument("-o", "--out", help="the HTML report to write")
    p.add_argument("--check", action="store_true", help="only validate the records")
    a = p.parse_args(argv)
    if not a.check and not a.out:
        p.error("-o REPORT.html is needed (or --check)")
    try:
        records = [sr.load(path) for path in a.records]
    except sr.RecordError as e:
        print(f"report: error: {e}", file=sys.stderr)
        return 2
    if a.check:
        print(f"{len(records)} valid record(s)")
        return 0
    with open(a.out, "w") as f:
        f.write(render(records))
    print(f"{a.out}: {len(records)} record(s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
