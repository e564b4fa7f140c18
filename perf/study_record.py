"""The records of `dfgnn study` (docs/study.md): loading and checking them, and the comparisons
the report draws from them (perf/report.py).

A case is identified across records by CASE_KEY; a problem (what a user runs, whichever kernels
run it) by PROBLEM_KEY, the case key without backend and strategy.
"""

import json
import math
import os
import sys

SCHEMA_PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "study.schema.json")
SCHEMA_VERSION = 1
PROBLEM_KEY = ("graph", "model", "heads", "dim", "dtype", "pass")
CASE_KEY = PROBLEM_KEY + ("backend", "strategy")
# gbs is bytes over median_ms through this, as the CLI's gb_per_s computes it; a record whose
# numbers disagree beyond printing precision was not made by that arithmetic.
GBS_TOLERANCE = 1e-9


class RecordError(ValueError):
    """A file that is not a valid study record: its path and the first problem."""


def gb_per_s(nbytes, ms):
    return nbytes / (ms * 1e6)


def _null_reasons(node, where, problems):
    """Every null number has a reason in its object's null_reasons (the schema cannot say so)."""
    if isinstance(node, dict):
        reasons = node.get("null_reasons", {})
        for k, v in node.items():
            if v is None and k not in reasons:
                problems.append(f"{where}/{k} is null without a null_reasons entry")
            _null_reasons(v, f"{where}/{k}", problems)
    elif isinstance(node, list):
        for i, v in enumerate(node):
            _null_reasons(v, f"{where}/{i}", problems)


def _bandwidths(record):
    """(where, bandwidth object) of every microbenchmark of the record."""
    yield from ((f"/host/thread_bandwidth/{i}", b) for i, b in enumerate(record["host"]["thread_bandwidth"]))
    for name, d in record["devices"].items():
        m = d["microbenchmarks"]
        yield f"/devices/{name}/microbenchmarks/copy", m["copy"]
        yield from ((f"/devices/{name}/microbenchmarks/gather/{i}", g) for i, g in enumerate(m["gather"]))


_warned_no_schema = False


def _schema_problems(record):
    """The record against perf/study.schema.json. Without jsonschema (Debian's python3-jsonschema,
    tools/setup.sh; a machine set up for PyG alone may lack it) the schema goes unchecked, said once on
    stderr, so that study_peers and the report still run there."""
    global _warned_no_schema
    try:
        import jsonschema
    except ImportError:
        if not _warned_no_schema:
            print("study_record: jsonschema is not installed; records are read without their schema check",
                  file=sys.stderr)
            _warned_no_schema = True
        return []
    with open(SCHEMA_PATH) as f:
        schema = json.load(f)
    return [f"{'/'.join(str(p) for p in e.absolute_path) or '(top)'}: {e.message}"
            for e in jsonschema.Draft202012Validator(schema).iter_errors(record)]


def problems(record):
    """What is wrong with a parsed record, as messages; empty when it is valid: the schema (where
    jsonschema is installed), a reason for every null, and the bandwidth arithmetic."""
    found = _schema_problems(record)
    if found:
        return found
    _null_reasons(record, "", found)
    for where, b in _bandwidths(record):
        if b["gbs"] is not None and b["median_ms"] > 0:
            want = gb_per_s(b["bytes"], b["median_ms"])
            if not math.isclose(b["gbs"], want, rel_tol=GBS_TOLERANCE):
                found.append(f"{where}: gbs {b['gbs']} is not bytes / median_ms ({want})")
    return found


def load(path):
    """The record in `path`, checked; RecordError naming the file and the first problem."""
    def no_constant(name):  # NaN and Infinity are not JSON; a record holds null instead
        raise ValueError(f"{name} is not a JSON number")

    try:
        with open(path) as f:
            record = json.load(f, parse_constant=no_constant)
    except (OSError, ValueError) as e:
        raise RecordError(f"{path}: {e}") from None
    if not isinstance(record, dict) or record.get("schema") != "dfgnn-study":
        raise RecordError(f"{path}: not a dfgnn study record (no \"schema\": \"dfgnn-study\")")
    if record.get("schema_version") != SCHEMA_VERSION:
        raise RecordError(f"{path}: schema_version {record.get('schema_version')}, this reader reads {SCHEMA_VERSION}")
    found = problems(record)
    if found:
        raise RecordError(f"{path}: {found[0]}" + (f" (and {len(found) - 1} more)" if len(found) > 1 else ""))
    return record


def device_name(record):
    """The platform's device: the GPU where the native backend ran, else the portable one's."""
    devices = record["devices"]
    d = devices.get("native") or devices["portable"]
    space = devices.get("portable", {}).get("execution_space")
    return d["name"] + (f" ({space})" if "native" not in devices and space else "")


def label(record):
    """A record's name in tables: its device and commit."""
    build = record["build"]
    return f"{device_name(record)} @ {build['commit'][:12]}{'+dirty' if build['dirty'] else ''}"


def cases(record):
    """{case key: case} of the cases that ran."""
    return {tuple(c[k] for k in CASE_KEY): c for c in record["cases"] if c["status"] == "ok"}


def summary(ms):
    """(median, min, spread) of timed runs as the CLI computes them (tools/run.cpp): the
    nearest-rank median and quartiles of the sorted samples, the spread their difference."""
    ms = sorted(ms)
    n = len(ms)
    return ms[n // 2], ms[0], ms[3 * n // 4] - ms[n // 4]


def peer_cases(record):
    """{(peer name, problem key): case} of the peers' cases that ran (the record's "peers")."""
    return {(p["name"],) + tuple(c[k] for k in PROBLEM_KEY): c
            for p in record.get("peers", []) for c in p["cases"] if c["status"] == "ok"}


def against_peers(record):
    """[(peer name, problem key, peer ms, dfgnn ms, peer ms / dfgnn ms)] for each peer case whose
    problem dfgnn ran with Auto: dfgnn's time is the faster backend's Auto."""
    auto = {}
    for key, c in cases(record).items():
        if key[-1] == "auto":
            problem = key[:len(PROBLEM_KEY)]
            auto[problem] = min(auto.get(problem, math.inf), c["median_ms"])
    rows = []
    for (name, *problem), c in sorted(peer_cases(record).items(), key=lambda kv: tuple(str(x) for x in kv[0])):
        ours = auto.get(tuple(problem))
        if ours:
            rows.append((name, tuple(problem), c["median_ms"], ours, c["median_ms"] / ours))
    return rows


def copy_gbs(record, backend):
    return record["devices"][backend]["microbenchmarks"]["copy"]["gbs"]


def efficiencies(record):
    """{case key: (application, architectural)} efficiencies of the cases that ran: the best
    time of the case's problem on this platform over the case's time, and the compulsory
    bytes' fraction of the copy bandwidth, capped at 1 (None where it is null)."""
    ran = cases(record)
    best = {}
    for key, c in ran.items():
        problem = key[:len(PROBLEM_KEY)]
        best[problem] = min(best.get(problem, math.inf), c["median_ms"])
    result = {}
    for key, c in ran.items():
        app = best[key[:len(PROBLEM_KEY)]] / c["median_ms"] if c["median_ms"] > 0 else None
        arch = c["fraction"]["compulsory"]
        result[key] = (app, None if arch is None else min(1.0, arch))
    return result


def pennycook(values):
    """Pennycook's performance portability: the harmonic mean of the efficiencies over the
    platforms, 0 when any platform does not run the case (None or 0)."""
    if not values or any(not e for e in values):
        return 0.0
    return len(values) / sum(1.0 / e for e in values)


def portability(records):
    """[(case key, [application efficiency per record], PP application, [architectural...], PP
    architectural)] over the case keys that any record ran, sorted."""
    effs = [efficiencies(r) for r in records]
    keys = sorted(set().union(*effs), key=lambda k: tuple(str(x) for x in k))
    rows = []
    for key in keys:
        app = [e.get(key, (None, None))[0] for e in effs]
        arch = [e.get(key, (None, None))[1] for e in effs]
        rows.append((key, app, pennycook(app), arch, pennycook(arch)))
    return rows


def portable_over_native(record):
    """[(problem key, strategy, portable ms / native ms)] where both backends ran a strategy."""
    ran = cases(record)
    out = []
    for key, c in sorted(ran.items(), key=lambda kv: tuple(str(x) for x in kv[0])):
        if key[-2] != "portable":
            continue
        native = ran.get(key[:-2] + ("native", key[-1]))
        if native and native["median_ms"] > 0:
            out.append((key[:len(PROBLEM_KEY)], key[-1], c["median_ms"] / native["median_ms"]))
    return out


def same_platform(a, b):
    """Whether two records were made on the same devices (the regression view's condition)."""
    names = lambda r: sorted((k, d["name"]) for k, d in r["devices"].items())
    return names(a) == names(b) and a["host"]["name"] == b["host"]["name"]


def regressions(old, new):
    """[(case key, old ms, new ms)] of the cases both ran whose medians moved by more than the
    two spreads together (the interquartile ranges), slowest change first."""
    before, after = cases(old), cases(new)
    moved = []
    for key in before.keys() & after.keys():
        a, b = before[key], after[key]
        if abs(b["median_ms"] - a["median_ms"]) > a["spread_ms"] + b["spread_ms"]:
            moved.append((key, a["median_ms"], b["median_ms"]))
    return sorted(moved, key=lambda m: -m[2] / m[1] if m[1] > 0 else 0)
