// The cuSPARSE peer of `dfgnn spmm` (sum): out = A X with A the adjacency by destination (row v
// lists the sources of the edges u -> v), values 1 (copy_u) or per-edge weights (u_mul_e with
// [E] weights), X [N, D] row-major. Set up as a careful user would: the CSR, the descriptors, the
// SpMM buffer and its preprocessing are made once, outside the timed loop; CSR_ALG2 (the
// deterministic row-split algorithm for row-major dense matrices). Times cusparseSpMM with CUDA
// events (median), checks sampled rows and the heaviest against float64, and prints one JSON
// line with the time, the device memory beyond X and out, and the bytes a kernel must move.
//
// Graphs are read with dfgnn's reader (edge lists, Matrix Market, gzip), so it links dfgnn_host:
// Build: nvcc -std=c++17 -O3 -gencode arch=compute_90,code=sm_90 -Iinclude perf/cusparse_spmm.cu
//          build/cuda/libdfgnn_host.a -lcusparse -lz -o build-perf/cusparse_spmm
// Run:   cusparse_spmm --graph G [--nodes N] [--symmetrize] --dim D [--weighted] [--name NAME]
//          [--warmup 5] [--iters 20] [--seed S]

#include <dfgnn/csr.hpp>
#include <dfgnn/io.hpp>

#include <cuda_runtime.h>
#include <cusparse.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(e));
}
void check(cusparseStatus_t s, const char* what) {
  if (s != CUSPARSE_STATUS_SUCCESS) throw std::runtime_error(std::string(what) + ": " + cusparseGetErrorString(s));
}
#define CHECK(call) check((call), #call)

struct Args {
  std::string graph, name;
  long long nodes = -1;
  int dim = 128, warmup = 5, iters = 20;
  unsigned seed = 1;
  bool weighted = false, symmetrize = false;
};

Args parse(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    const std::string k = argv[i];
    if (k == "--weighted") { a.weighted = true; continue; }
    if (k == "--symmetrize") { a.symmetrize = true; continue; }
    if (i + 1 >= argc) throw std::runtime_error("missing value after " + k);
    const std::string v = argv[++i];
    if (k == "--graph") a.graph = v;
    else if (k == "--name") a.name = v;
    else if (k == "--nodes") a.nodes = std::stoll(v);
    else if (k == "--dim") a.dim = std::stoi(v);
    else if (k == "--warmup") a.warmup = std::stoi(v);
    else if (k == "--iters") a.iters = std::stoi(v);
    else if (k == "--seed") a.seed = unsigned(std::stoul(v));
    else throw std::runtime_error("unknown option " + k);
  }
  if (a.graph.empty() || a.dim < 1 || a.iters < 1 || a.warmup < 0)
    throw std::runtime_error("need --graph, --dim >= 1, --iters >= 1, --warmup >= 0");
  return a;
}

std::vector<float> uniform(std::size_t n, unsigned seed, float lo, float hi) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(lo, hi);
  std::vector<float> v(n);
  for (float& x : v) x = d(rng);
  return v;
}

template <class T>
T* upload(const std::vector<T>& h) {
  void* p = nullptr;
  CHECK(cudaMalloc(&p, std::max<std::size_t>(h.size(), 1) * sizeof(T)));
  CHECK(cudaMemcpy(p, h.data(), h.size() * sizeof(T), cudaMemcpyHostToDevice));
  return static_cast<T*>(p);
}

std::size_t used_bytes() {
  std::size_t free = 0, total = 0;
  CHECK(cudaMemGetInfo(&free, &total));
  return total - free;
}

}  // namespace

int main(int argc, char** argv) try {
  const Args a = parse(argc, argv);
  dfgnn::io::EdgeList edges = dfgnn::io::read_graph(a.graph, a.nodes);
  if (a.symmetrize) dfgnn::symmetrize(edges.src, edges.dst);
  const dfgnn::HostGraph g = dfgnn::graph_from_edges(edges.num_nodes, edges.src, edges.dst);
  const int n = g.num_nodes, D = a.dim;
  const long long E = g.num_edges();
  if (E >= (1LL << 31)) throw std::runtime_error("more than 2^31 edges");
  std::vector<int> row_ptr(g.row_ptr.begin(), g.row_ptr.end()), col(g.src.begin(), g.src.end());
  const std::vector<float> w = a.weighted ? uniform(std::size_t(E), a.seed + 1, 0.5f, 1.5f) : std::vector<float>(std::size_t(E), 1.f);
  const std::vector<float> x = uniform(std::size_t(n) * D, a.seed, -1.f, 1.f);

  float* d_x = upload(x);
  float* d_out = upload(std::vector<float>(std::size_t(n) * D, 0.f));
  const std::size_t before = used_bytes();  // beyond X and out: the CSR, its values, the buffer
  int* d_row = upload(row_ptr);
  int* d_col = upload(col);
  float* d_w = upload(w);
  cusparseHandle_t handle;
  CHECK(cusparseCreate(&handle));
  cusparseSpMatDescr_t A;
  cusparseDnMatDescr_t X, O;
  CHECK(cusparseCreateCsr(&A, n, n, E, d_row, d_col, d_w, CUSPARSE_INDEX_32I, CUSPARSE_INDEX_32I,
                          CUSPARSE_INDEX_BASE_ZERO, CUDA_R_32F));
  CHECK(cusparseCreateDnMat(&X, n, D, D, d_x, CUDA_R_32F, CUSPARSE_ORDER_ROW));
  CHECK(cusparseCreateDnMat(&O, n, D, D, d_out, CUDA_R_32F, CUSPARSE_ORDER_ROW));
  const float one = 1.f, zero = 0.f;
  const auto op = CUSPARSE_OPERATION_NON_TRANSPOSE;
  std::size_t bytes = 0;
  CHECK(cusparseSpMM_bufferSize(handle, op, op, &one, A, X, &zero, O, CUDA_R_32F, CUSPARSE_SPMM_CSR_ALG2, &bytes));
  void* buffer = nullptr;
  CHECK(cudaMalloc(&buffer, std::max<std::size_t>(bytes, 1)));
  CHECK(cusparseSpMM_preprocess(handle, op, op, &one, A, X, &zero, O, CUDA_R_32F, CUSPARSE_SPMM_CSR_ALG2, buffer));
  const double extra_mib = double(used_bytes() - before) / (1 << 20);

  cudaEvent_t t0, t1;
  CHECK(cudaEventCreate(&t0));
  CHECK(cudaEventCreate(&t1));
  std::vector<double> ms;
  for (int it = 0; it < a.warmup + a.iters; ++it) {
    CHECK(cudaEventRecord(t0));
    CHECK(cusparseSpMM(handle, op, op, &one, A, X, &zero, O, CUDA_R_32F, CUSPARSE_SPMM_CSR_ALG2, buffer));
    CHECK(cudaEventRecord(t1));
    CHECK(cudaEventSynchronize(t1));
    float t = 0;
    CHECK(cudaEventElapsedTime(&t, t0, t1));
    if (it >= a.warmup) ms.push_back(t);
  }
  std::sort(ms.begin(), ms.end());

  // float64 check of 256 evenly spaced rows and the heaviest one.
  std::vector<float> out(std::size_t(n) * D);
  CHECK(cudaMemcpy(out.data(), d_out, out.size() * sizeof(float), cudaMemcpyDeviceToHost));
  std::vector<int> rows;
  for (int i = 0; i < std::min(n, 256); ++i) rows.push_back(int((long long)i * n / std::min(n, 256)));
  int heavy = 0;
  for (int i = 0; i < n; ++i)
    if (row_ptr[i + 1] - row_ptr[i] > row_ptr[heavy + 1] - row_ptr[heavy]) heavy = i;
  if (n) rows.push_back(heavy);
  double err = 0, scale = 1e-30;
  for (int r : rows)
    for (int d = 0; d < D; ++d) {
      double s = 0;
      for (int e = row_ptr[r]; e < row_ptr[r + 1]; ++e) s += double(w[e]) * x[std::size_t(col[e]) * D + d];
      err = std::max(err, std::abs(s - out[std::size_t(r) * D + d]));
      scale = std::max(scale, std::abs(s));
    }
  const double compulsory = (n + 1.0) * 4 + E * (4.0 + (a.weighted ? 4 : 0)) + 2.0 * n * D * 4;
  const double gather = compulsory + double(E) * D * 4;  // anchors.md: plus one row read per edge
  std::printf("{\"peer\": \"cusparse\", \"kernel\": \"spmm\", \"op\": \"%s sum\", \"name\": \"%s\", \"N\": %d, "
              "\"E\": %lld, \"H\": 1, \"D\": %d, \"ms\": %.6f, \"min_ms\": %.6f, \"extra_mib\": %.2f, "
              "\"compulsory_bytes\": %.0f, \"gather_bytes\": %.0f, \"max_rel_err\": %.3g}\n",
              a.weighted ? "u_mul_e" : "copy_u", (a.name.empty() ? a.graph : a.name).c_str(), n, E, D,
              ms[ms.size() / 2], ms.front(), extra_mib, compulsory, gather, err / scale);
  cusparseDestroySpMat(A);
  cusparseDestroyDnMat(X);
  cusparseDestroyDnMat(O);
  cusparseDestroy(handle);
  return err / scale < 1e-4 ? 0 : 1;
} catch (const std::exception& e) {
  std::fprintf(stderr, "cusparse_spmm: %s\n", e.what());
  return 1;
}
