// The study's platform facts and microbenchmarks (platform.hpp).

#include "platform.hpp"

#include "build_info.hpp"

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <fstream>
#include <random>
#include <thread>
#include <unistd.h>

namespace dfgnn::cli {

void put(nlohmann::json& obj, const std::string& key, double x, const std::string& why) {
  if (std::isfinite(x)) {
    obj[key] = x;
    return;
  }
  obj[key] = nullptr;
  obj["null_reasons"][key] = why;
}

namespace {

// The value of the first "key : value" line of /proc/cpuinfo with that key ("" if none).
std::string cpuinfo(const std::string& key) {
  std::ifstream f("/proc/cpuinfo");
  for (std::string line; std::getline(f, line);) {
    const std::size_t colon = line.find(':');
    if (colon == std::string::npos || line.compare(0, key.size(), key) != 0) continue;
    const std::size_t at = line.find_first_not_of(" \t", colon + 1);
    return at == std::string::npos ? "" : line.substr(at);
  }
  return "";
}

// The Kokkos backends this build enabled, by their macros.
std::vector<std::string> kokkos_backends() {
  std::vector<std::string> r;
#ifdef KOKKOS_ENABLE_SERIAL
  r.push_back("Serial");
#endif
#ifdef KOKKOS_ENABLE_OPENMP
  r.push_back("OpenMP");
#endif
#ifdef KOKKOS_ENABLE_THREADS
  r.push_back("Threads");
#endif
#ifdef KOKKOS_ENABLE_CUDA
  r.push_back("Cuda");
#endif
#ifdef KOKKOS_ENABLE_HIP
  r.push_back("HIP");
#endif
#ifdef KOKKOS_ENABLE_SYCL
  r.push_back("SYCL");
#endif
  return r;
}

}  // namespace

nlohmann::json build_facts() {
  const int v = KOKKOS_VERSION;  // e.g. 30401 for 3.4.1
  nlohmann::json b{{"commit", DFGNN_GIT_COMMIT},
                   {"dirty", bool(DFGNN_GIT_DIRTY)},
                   {"compiler", DFGNN_BUILD_COMPILER},
                   {"build_type", DFGNN_BUILD_TYPE},
                   {"flags", DFGNN_BUILD_FLAGS},
                   {"kokkos",
                    {{"version", std::to_string(v / 10000) + "." + std::to_string(v / 100 % 100) + "." +
                                     std::to_string(v % 100)},
                     {"backends", kokkos_backends()},
                     {"default_execution_space", Kokkos::DefaultExecutionSpace::name()}}}};
  if (std::strlen(DFGNN_BUILD_CUDA) == 0) {
    b["cuda"] = nullptr;
    b["null_reasons"]["cuda"] = "built without the CUDA-native backend (DFGNN_ENABLE_CUDA)";
  } else {
    b["cuda"] = DFGNN_BUILD_CUDA;
  }
  return b;
}

std::string version_line() {
  const nlohmann::json b = build_facts();
  std::string backends;
  for (const auto& name : b["kokkos"]["backends"]) backends += (backends.empty() ? "" : ", ") + name.get<std::string>();
  return "dfgnn " DFGNN_VERSION " (" + b["commit"].get<std::string>() + (b["dirty"].get<bool>() ? ", dirty" : "") +
         "); Kokkos " + b["kokkos"]["version"].get<std::string>() + " (" + backends +
         "); CUDA-native kernels: " + (b["cuda"].is_null() ? "off" : b["cuda"].get<std::string>());
}

nlohmann::json host_facts() {
  using Host = Kokkos::DefaultHostExecutionSpace;
  const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  nlohmann::json h{{"vendor", cpuinfo("vendor_id")},
                   {"name", cpuinfo("model name")},
                   {"logical_cores", std::thread::hardware_concurrency()},
                   {"memory_bytes", pages > 0 && page > 0 ? double(pages) * double(page) : 0.0},
                   {"kokkos_host_space", Host::name()},
                   {"kokkos_host_concurrency", Host().concurrency()}};
  return h;
}

std::vector<double> samples(Device& d, Repeats r, const std::function<void()>& body) {
  std::vector<double> ms;
  for (int i = 0; i < r.warmup + r.iters; ++i) {
    d.mark(0);
    body();
    d.mark(1);
    if (i >= r.warmup) ms.push_back(d.elapsed(0, 1));
  }
  return ms;
}

nlohmann::json bandwidth(double bytes, const std::vector<double>& ms) {
  const Timing t = summary(ms);
  nlohmann::json j{{"bytes", bytes}, {"median_ms", t.median_ms}, {"min_ms", t.min_ms}, {"spread_ms", t.spread_ms}};
  put(j, "gbs", gb_per_s(bytes, t.median_ms), "the median time is zero");
  return j;
}

nlohmann::json measure_copy(Device& d, std::size_t bytes, Repeats r) {
  const auto from = d.memory(bytes), to = d.memory(bytes);
  return bandwidth(2.0 * double(bytes), samples(d, r, [&] { d.copy(to.get(), from.get(), bytes); }));
}

nlohmann::json microbenchmarks(Device& d, bool quick, Repeats r) {
  nlohmann::json m;
  m["copy"] = measure_copy(d, quick ? std::size_t(64) << 20 : std::size_t(1) << 30, r);
  // Each gather reads `table` bytes' worth of random rows (every row of the table about once)
  // and writes them in order, with one 4-byte index a row: bytes = rows * (2 * row + 4).
  const std::size_t table = quick ? std::size_t(16) << 20 : std::size_t(256) << 20;
  const auto from = d.memory(table), to = d.memory(table);
  for (std::size_t row = 4; row <= 256; row *= 2) {
    const std::size_t rows = table / row;
    std::vector<std::int32_t> index(rows);
    std::mt19937 rng{std::uint32_t(row)};
    std::uniform_int_distribution<std::int32_t> pick(0, std::int32_t(rows - 1));
    for (auto& i : index) i = pick(rng);
    const auto ids = d.memory(rows * sizeof(std::int32_t), index.data());
    nlohmann::json g = bandwidth(double(rows) * double(2 * row + 4), samples(d, r, [&] {
                                   d.gather(to.get(), from.get(), static_cast<const std::int32_t*>(ids.get()), rows, row);
                                 }));
    g["row_bytes"] = row;
    m["gather"].push_back(g);
  }
  // Launch latency: the host's time from a launch to its end, per kernel (a mark's fence or
  // event would time the device side alone).
  const int launches = quick ? 200 : 2000;
  std::vector<double> us;
  for (int i = 0; i < launches; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    d.empty_kernel();
    us.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count());
  }
  const Timing t = summary(us);
  m["launch_latency"] = {{"launches", launches}, {"median_us", t.median_ms}, {"min_us", t.min_ms}, {"spread_us", t.spread_ms}};
  return m;
}

nlohmann::json host_thread_bandwidth(bool quick, Repeats r) {
  const std::size_t bytes = quick ? std::size_t(64) << 20 : std::size_t(1) << 30;
  std::vector<char> from(bytes, 1), to(bytes, 0);  // written once, so the pages are mapped
  const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  std::vector<unsigned> counts;
  for (unsigned t = 1; t < cores; t *= 2) counts.push_back(t);
  counts.push_back(cores);
  nlohmann::json all = nlohmann::json::array();
  for (const unsigned t : counts) {
    std::vector<double> ms;
    for (int i = 0; i < r.warmup + r.iters; ++i) {
      const auto t0 = std::chrono::steady_clock::now();
      std::vector<std::thread> threads;
      for (unsigned k = 0; k < t; ++k)
        threads.emplace_back([&, k] {
          const std::size_t begin = bytes * k / t, end = bytes * (k + 1) / t;
          std::memcpy(to.data() + begin, from.data() + begin, end - begin);
        });
      for (auto& th : threads) th.join();
      if (i >= r.warmup)
        ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    }
    nlohmann::json b = bandwidth(2.0 * double(bytes), ms);
    b["threads"] = t;
    all.push_back(b);
  }
  return all;
}

}  // namespace dfgnn::cli
