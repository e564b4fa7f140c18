#pragma once
// The execution spaces the portable kernels are instantiated for: every one the installed Kokkos
// enables. DFGNN_FOR_EACH_EXECUTION_SPACE(M) applies M to each.

#include <Kokkos_Core.hpp>

#ifdef KOKKOS_ENABLE_SERIAL
#define DFGNN_ON_SERIAL(M) M(Kokkos::Serial)
#else
#define DFGNN_ON_SERIAL(M)
#endif
#ifdef KOKKOS_ENABLE_OPENMP
#define DFGNN_ON_OPENMP(M) M(Kokkos::OpenMP)
#else
#define DFGNN_ON_OPENMP(M)
#endif
#ifdef KOKKOS_ENABLE_THREADS
#define DFGNN_ON_THREADS(M) M(Kokkos::Threads)
#else
#define DFGNN_ON_THREADS(M)
#endif
#ifdef KOKKOS_ENABLE_CUDA
#define DFGNN_ON_CUDA(M) M(Kokkos::Cuda)
#else
#define DFGNN_ON_CUDA(M)
#endif
#define DFGNN_FOR_EACH_EXECUTION_SPACE(M) DFGNN_ON_SERIAL(M) DFGNN_ON_OPENMP(M) DFGNN_ON_THREADS(M) DFGNN_ON_CUDA(M)
