"""The study's record format and report (perf/study_record.py, perf/report.py, docs/study.md):
the schema on small synthetic records, the bandwidth arithmetic, Pennycook's metric, the
regression view, the peers' comparison, the HTML with its plots and, with DFGNN_CLI set, `dfgnn study --quick` checked
against the schema. Run by CTest (tests/CMakeLists.txt) with Debian's python3."""

import base64
import copy
import json
import os
import re
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "perf"))
import report  # noqa: E402
import study_record as sr  # noqa: E402


def bandwidth(nbytes, ms, **extra):
    return dict(bytes=nbytes, median_ms=ms, min_ms=ms, spread_ms=0.0, gbs=sr.gb_per_s(nbytes, ms), **extra)


def case(graph, backend, strategy, ms, spread=0.01, model="gt", status="ok"):
    c = {"graph": graph, "model": model, "heads": 1, "dim": 128, "dtype": "f32", "pass": "fwd",
         "backend": backend, "strategy": strategy, "status": status}
    if status != "ok":
        return dict(c, reason="plan: not on this backend")
    nbytes = 1e6
    return dict(c, resolved="online" if strategy == "auto" else strategy, median_ms=ms, min_ms=ms,
                spread_ms=spread, bytes={"compulsory": nbytes, "gather": 2 * nbytes},
                fraction={"compulsory": sr.gb_per_s(nbytes, ms) / 100.0, "gather": sr.gb_per_s(2 * nbytes, ms) / 100.0},
                check={"sampled_rows": 16, "tolerance": 1e-4, "passed": True, "max_rel_err": 1e-7})


def record(device, commit, cases, backends=("native", "portable")):
    """A small valid record: `device` for every backend, copy bandwidth 100 GB/s."""
    micro = {"copy": bandwidth(2e9, 20.0), "gather": [bandwidth(1e8, 2.0, row_bytes=4)],
             "launch_latency": {"launches": 10, "median_us": 5.0, "min_us": 4.0, "spread_us": 0.5}}
    return {
        "schema": "dfgnn-study", "schema_version": 1, "date": "2026-12-07T12:00:00Z",
        "build": {"commit": commit, "dirty": False, "compiler": "GNU 12.2.0", "build_type": "Release",
                  "flags": "-O3", "cuda": None, "null_reasons": {"cuda": "built without it"},
                  "kokkos": {"version": "3.4.1", "backends": ["Serial"], "default_execution_space": "Serial"}},
        "host": {"vendor": "GenuineIntel", "name": "Xeon", "logical_cores": 2, "memory_bytes": 1e10,
                 "kokkos_host_space": "Serial", "kokkos_host_concurrency": 1,
                 "thread_bandwidth": [bandwidth(1e8, 10.0, threads=1)]},
        "devices": {b: {"name": device, "vendor": "NVIDIA", "microbenchmarks": copy.deepcopy(micro)} for b in backends},
        "skipped_backends": {},
        "suite": {"quick": True, "repeats": {"warmup": 1, "iters": 5}, "models": ["gt"], "shapes": ["1x128"],
                  "dtypes": ["f32"], "strategies": ["auto", "online"]},
        "graphs": [{"name": "g", "source": "generated", "nodes": 10, "edges": 40, "max_in_degree": 6,
                    "mean_in_degree": 4.0}],
        "cases": cases,
    }


def with_peer(r, cases, name="pyg"):
    """r with a peer's cases [(model, pass, ms)] on graph g, 1x128, f32."""
    r["peers"] = [{"name": name, "versions": {"torch": "2.11.0", "torch_geometric": "2.8.1"}, "device": "cpu, 2 threads",
                   "cases": [{"graph": "g", "model": m, "heads": 1, "dim": 128, "dtype": "f32", "pass": p, "status": "ok",
                              "median_ms": ms, "min_ms": ms, "spread_ms": 0.0} for m, p, ms in cases]}]
    return r


class Schema(unittest.TestCase):
    def test_a_record_validates(self):
        self.assertEqual(sr.problems(record("H100", "aaa", [case("g", "native", "auto", 1.0)])), [])

    def test_malformed_records_fail(self):
        good = record("H100", "aaa", [case("g", "native", "auto", 1.0), case("g", "portable", "smmf", 0, status="x")])
        good["cases"][1]["status"] = "unsupported"
        with_peer(good, [("gt", "fwd", 5.0)])
        self.assertEqual(sr.problems(good), [])
        breakages = {
            "no build": lambda r: r.pop("build"),
            "unknown dtype": lambda r: r["cases"][0].update(dtype="f64"),
            "ok case without its time": lambda r: r["cases"][0].pop("median_ms"),
            "unsupported case without a reason": lambda r: r["cases"][1].pop("reason"),
            "a null without its reason": lambda r: r["cases"][0]["fraction"].update(gather=None),
            "gbs that is not bytes / time": lambda r: r["host"]["thread_bandwidth"][0].update(gbs=1.0),
            "another schema version": lambda r: r.update(schema_version=2),
            "a peer without its versions": lambda r: r["peers"][0].pop("versions"),
            "a peer's ok case without its time": lambda r: r["peers"][0]["cases"][0].pop("median_ms"),
            "a peer's failed case without a reason": lambda r: r["peers"][0]["cases"][0].update(status="failed"),
        }
        for what, breaking in breakages.items():
            r = copy.deepcopy(good)
            breaking(r)
            self.assertNotEqual(sr.problems(r), [], what)

    def test_without_jsonschema_the_rest_is_still_checked(self):
        r = record("H100", "aaa", [case("g", "native", "auto", 1.0)])
        r["cases"][0].update(dtype="f64")  # only the schema catches this
        broken_gbs = copy.deepcopy(record("H100", "aaa", [case("g", "native", "auto", 1.0)]))
        broken_gbs["host"]["thread_bandwidth"][0].update(gbs=1.0)
        saved = sys.modules.get("jsonschema")
        sys.modules["jsonschema"] = None  # `import jsonschema` raises ImportError
        try:
            self.assertEqual(sr.problems(r), [])
            self.assertNotEqual(sr.problems(broken_gbs), [])
        finally:
            if saved is None:
                del sys.modules["jsonschema"]
            else:
                sys.modules["jsonschema"] = saved
        self.assertNotEqual(sr.problems(r), [])

    def test_nan_is_refused_on_load(self):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "r.json")
            with open(path, "w") as f:
                f.write(json.dumps(record("H100", "aaa", [case("g", "native", "auto", 1.0)])).replace("1e-07", "NaN"))
            with self.assertRaisesRegex(sr.RecordError, "NaN"):
                sr.load(path)


class Arithmetic(unittest.TestCase):
    def test_gb_per_s(self):
        self.assertEqual(sr.gb_per_s(2e9, 1000.0), 2.0)  # 2 GB in a second
        self.assertAlmostEqual(sr.gb_per_s(3e6, 1.0), 3.0)  # 3 MB in a millisecond

    def test_pennycook(self):
        self.assertAlmostEqual(sr.pennycook([1.0, 0.5]), 2 / 3)  # harmonic mean
        self.assertEqual(sr.pennycook([1.0, None]), 0.0)  # a platform that cannot run it
        self.assertEqual(sr.pennycook([]), 0.0)

    def test_portability_across_two_platforms(self):
        a = record("H100", "aaa", [case("g", "native", "auto", 1.0), case("g", "native", "online", 1.0),
                                   case("g", "portable", "auto", 4.0)])
        b = record("Xeon", "aaa", [case("g", "portable", "auto", 2.0), case("g", "portable", "online", 1.0)],
                   backends=("portable",))
        rows = {k[6:]: (app, pp_app) for k, app, pp_app, _, _ in sr.portability([a, b])}
        self.assertEqual(rows[("native", "auto")], ([1.0, None], 0.0))  # no native kernels on b
        self.assertEqual(rows[("portable", "auto")][0], [0.25, 0.5])  # best time over the case's
        self.assertAlmostEqual(rows[("portable", "auto")][1], 2 / (4 + 2))
        self.assertEqual(sr.portable_over_native(a), [(("g", "gt", 1, 128, "f32", "fwd"), "auto", 4.0)])

    def test_summary_is_the_clis(self):
        # tools/run.cpp: nearest-rank median and quartiles of the sorted samples
        self.assertEqual(sr.summary([5.0, 1.0, 4.0, 2.0, 3.0]), (3.0, 1.0, 2.0))
        self.assertEqual(sr.summary([4.0, 1.0, 3.0, 2.0]), (3.0, 1.0, 2.0))

    def test_against_peers_takes_the_faster_backends_auto(self):
        r = with_peer(record("H100", "aaa", [case("g", "native", "auto", 2.0), case("g", "portable", "auto", 4.0),
                                             case("g", "native", "online", 1.0)]),
                      [("gt", "fwd", 10.0), ("gat", "fwd", 3.0)])  # no dfgnn gat case: left out
        self.assertEqual(sr.against_peers(r), [("pyg", ("g", "gt", 1, 128, "f32", "fwd"), 10.0, 2.0, 5.0)])
        self.assertEqual(sr.against_peers(record("H100", "aaa", [case("g", "native", "auto", 2.0)])), [])

    def test_regressions_beyond_the_spread(self):
        old = record("H100", "aaa", [case("g", "native", "auto", 1.0, 0.1), case("g", "native", "online", 1.0, 0.1)])
        new = record("H100", "bbb", [case("g", "native", "auto", 1.5, 0.1), case("g", "native", "online", 1.15, 0.1)])
        self.assertTrue(sr.same_platform(old, new))
        self.assertEqual(sr.regressions(old, new), [(("g", "gt", 1, 128, "f32", "fwd", "native", "auto"), 1.0, 1.5)])


class Report(unittest.TestCase):
    def test_two_records_render_with_plots(self):
        a = record("H100", "aaa", [case("g", "native", "auto", 1.0), case("g", "portable", "auto", 3.0)])
        b = record("H100", "bbb", [case("g", "native", "auto", 2.0), case("g", "portable", "auto", 3.0)])
        with_peer(a, [("gt", "fwd", 7.0)])
        with tempfile.TemporaryDirectory() as d:
            paths = [os.path.join(d, n) for n in ("a.json", "b.json")]
            for p, r in zip(paths, (a, b)):
                with open(p, "w") as f:
                    json.dump(r, f)
            out = os.path.join(d, "report.html")
            self.assertEqual(report.main(paths + ["-o", out]), 0)
            with open(out) as f:
                text = f.read()
        pngs = re.findall(r'src="data:image/png;base64,([^"]+)"', text)
        self.assertGreaterEqual(len(pngs), 3)  # platforms, the case plot, portable over native
        for p in pngs:
            self.assertTrue(base64.b64decode(p).startswith(b"\x89PNG"))
        for section in ("Platforms", "Side by side", "Portable over CUDA-native", "Pennycook",
                        "1 of 2 cases moved beyond their spread", "Against the peers", "torch_geometric 2.8.1",
                        "<td>7</td><td>1</td><td>7</td>"):  # PyG's ms, ours, the speedup
            self.assertIn(section, text)

    def test_bad_input_exits_2(self):
        with tempfile.TemporaryDirectory() as d:
            bad = os.path.join(d, "bad.json")
            with open(bad, "w") as f:
                f.write("{}")
            self.assertEqual(report.main([bad, "-o", os.path.join(d, "r.html")]), 2)
            self.assertEqual(report.main([os.path.join(d, "missing.json"), "--check"]), 2)


@unittest.skipUnless(os.environ.get("DFGNN_CLI"), "DFGNN_CLI names the dfgnn binary")
class QuickStudy(unittest.TestCase):
    def run_cli(self, *args):
        return subprocess.run([os.environ["DFGNN_CLI"], "study", *args], capture_output=True, text=True)

    def test_quick_record_validates(self):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "quick.json")
            r = self.run_cli("--quick", "--out", path)
            self.assertEqual(r.returncode, 0, r.stderr)
            rec = sr.load(path)  # the schema, the reasons of nulls, the microbenchmarks' arithmetic
        ran = [c for c in rec["cases"] if c["status"] == "ok"]
        self.assertTrue(ran)
        for c in ran:  # the fractions are the bytes over the time, over the copy bandwidth
            self.assertTrue(c["check"]["passed"], c)
            copy_gbs = sr.copy_gbs(rec, c["backend"])
            for model in ("compulsory", "gather"):
                want = sr.gb_per_s(c["bytes"][model], c["median_ms"]) / copy_gbs
                self.assertAlmostEqual(c["fraction"][model] / want, 1.0, places=9)

    def test_bad_options_exit_2_with_one_line(self):
        with tempfile.TemporaryDirectory() as d:
            out = os.path.join(d, "x.json")
            for args, words in ((["--graphs", "nope"], "unknown graph 'nope'"),
                                (["--graphs", "cora"], "needs --data"),
                                (["--backends", "gpu"], "unknown backend 'gpu'"),
                                (["--data", os.path.join(d, "none")], "not a directory"),
                                (["--quick"], "missing --out")):
                r = self.run_cli(*(args if "--quick" in args else args + ["--out", out]))
                self.assertEqual(r.returncode, 2, args)
                self.assertEqual(len(r.stderr.splitlines()), 1, r.stderr)
                self.assertIn(words, r.stderr)
            r = self.run_cli("--out", os.path.join(d, "no", "such", "dir.json"))
            self.assertEqual(r.returncode, 2)
            self.assertIn("cannot open for writing", r.stderr)


if __name__ == "__main__":
    unittest.main()
