#pragma once
// What `dfgnn study` records of a platform besides its suite (docs/study.md): the facts of the
// build and the host, and the microbenchmarks that a case's bandwidth fractions divide by,
// measured on a Device's own kernels (run.hpp) and the host's threads.

#include "run.hpp"

#include <nlohmann/json.hpp>

#include <functional>
#include <string>
#include <vector>

namespace dfgnn::cli {

/// GB/s of `bytes` moved in `ms` milliseconds: the one conversion of every bandwidth the study
/// reports (a record's gbs is its bytes over its median_ms through this).
constexpr double gb_per_s(double bytes, double ms) { return bytes / (ms * 1e6); }

/// obj[key] = x when x is finite; else null, with `why` in obj["null_reasons"][key], so that a
/// record holds no NaN or infinity and says why a number is missing.
void put(nlohmann::json& obj, const std::string& key, double x, const std::string& why);

/// The repetitions of a measurement: untimed warm-ups, then timed samples.
struct Repeats {
  int warmup = 3, iters = 10;
};

/// The build that made this binary: commit and dirty flag (read at build time), compiler and
/// flags, the CUDA compiler where built with it, Kokkos's version and enabled backends.
nlohmann::json build_facts();
/// `dfgnn --version`'s line: the version, commit (and whether the tree was dirty), Kokkos's
/// version and backends, and the CUDA-native kernels' compiler or "off".
std::string version_line();
/// The host: CPU vendor and model, logical cores, memory, the Kokkos host execution space and
/// its concurrency.
nlohmann::json host_facts();

/// `body`'s milliseconds between the device's marks 0 and 1, iters samples after warmup.
std::vector<double> samples(Device& d, Repeats r, const std::function<void()>& body);
/// {bytes, median_ms, min_ms, spread_ms, gbs} of `bytes` moved per sample.
nlohmann::json bandwidth(double bytes, const std::vector<double>& ms);
/// A device-to-device copy of `bytes` (bytes read + written): its bandwidth record.
nlohmann::json measure_copy(Device& d, std::size_t bytes, Repeats r);

/// The device's microbenchmarks: copy bandwidth; gather bandwidth of random rows of 4 to 256
/// bytes (the kernels' access pattern: a feature row per edge); the launch latency of an
/// empty kernel, waited for. `quick`: buffers small enough for a laptop CPU.
nlohmann::json microbenchmarks(Device& d, bool quick, Repeats r);
/// The host's copy bandwidth with 1, 2, 4, ... up to every logical core copying its own slice.
nlohmann::json host_thread_bandwidth(bool quick, Repeats r);

}  // namespace dfgnn::cli
