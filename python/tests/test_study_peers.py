"""perf/study_peers.py: PyG's suite added to a real `dfgnn study` record, on the CPU. It needs the
dfgnn CLI (DFGNN_CLI; .ci/run passes the serial build's), whose `gen suite` writes the record's
graphs; without it the tests skip, unless $CI is set, where that is a failure."""

import copy
import json
import os
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
PERF = os.path.join(HERE, "..", "..", "perf")
CLI = os.environ.get("DFGNN_CLI")
if os.environ.get("CI") and not CLI:
    raise RuntimeError("CI is set but DFGNN_CLI does not name the dfgnn CLI (.ci/run passes build/serial/dfgnn)")
pytestmark = pytest.mark.skipif(not CLI, reason="DFGNN_CLI names the dfgnn CLI")
sys.path.insert(0, PERF)


@pytest.fixture(scope="module")
def quick_record(tmp_path_factory):
    """A quick study of one small graph on the CLI's backends."""
    path = str(tmp_path_factory.mktemp("study") / "quick.json")
    subprocess.run([CLI, "study", "--quick", "--graphs", "mnist-16", "--out", path], check=True,
                   stdout=subprocess.DEVNULL)
    return path


def peers(*args):
    import study_peers

    return study_peers.main([*args, "--dfgnn", CLI, "--threads", "1"])


def test_every_case_of_the_record_gets_pyg(quick_record, tmp_path):
    import study_record as sr

    out = str(tmp_path / "with_peers.json")
    assert peers(quick_record, "-o", out) == 0
    record = sr.load(out)  # checked against the schema
    (pyg,) = record["peers"]
    assert pyg["name"] == "pyg" and set(pyg["versions"]) == {"torch", "torch_geometric"}
    want = {(g["name"], m, *map(int, s.split("x")), p) for g in record["graphs"] for m in record["suite"]["models"]
            for s in record["suite"]["shapes"] for p in ("fwd", "fwd+bwd")}
    got = {(c["graph"], c["model"], c["heads"], c["dim"], c["pass"]) for c in pyg["cases"] if c["status"] == "ok"}
    assert got == want
    assert all(c["median_ms"] > 0 and c["min_ms"] <= c["median_ms"] for c in pyg["cases"])
    rows = sr.against_peers(record)
    assert len(rows) == len(want) and all(r[4] > 0 for r in rows)
    # Run again on its own output: the PyG entry is replaced, not added.
    assert peers(out) == 0
    with open(out) as f:
        assert [p["name"] for p in json.load(f)["peers"]] == ["pyg"]


def test_a_graph_that_differs_from_the_records_exits_2(quick_record, tmp_path, capsys):
    with open(quick_record) as f:
        record = json.load(f)
    bad = copy.deepcopy(record)
    bad["graphs"][0]["edges"] += 1
    path = str(tmp_path / "bad.json")
    with open(path, "w") as f:
        json.dump(bad, f)
    assert peers(path) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "graph mnist-16" in err[0] and "the record has" in err[0]


def test_bad_input_exits_2(tmp_path, capsys):
    missing = str(tmp_path / "missing.json")
    assert peers(missing) == 2
    assert "missing.json" in capsys.readouterr().err
