#pragma once
// The execution spaces the portable kernels are instantiated for: every one the installed Kokkos
// enables. DFGNN_FOR_EACH_EXECUTION_SPACE(M) applies M to each. HIP and SYCL left Kokkos'
// Experimental namespace in 4.0 and 4.5; each is named as the installed Kokkos spells it.

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
#if defined(KOKKOS_ENABLE_HIP) && KOKKOS_VERSION >= 40000
#define DFGNN_ON_HIP(M) M(Kokkos::HIP)
#elif defined(KOKKOS_ENABLE_HIP)
#define DFGNN_ON_HIP(M) M(Kokkos::Experimental::HIP)
#else
#define DFGNN_ON_HIP(M)
#endif
#if defined(KOKKOS_ENABLE_SYCL) && KOKKOS_VERSION >= 40500
#define DFGNN_ON_SYCL(M) M(Kokkos::SYCL)
#elif defined(KOKKOS_ENABLE_SYCL)
#define DFGNN_ON_SYCL(M) M(Kokkos::Experimental::SYCL)
#else
#define DFGNN_ON_SYCL(M)
#endif
#define DFGNN_FOR_EACH_EXECUTION_SPACE(M) \
  DFGNN_ON_SERIAL(M) DFGNN_ON_OPENMP(M) DFGNN_ON_THREADS(M) DFGNN_ON_CUDA(M) DFGNN_ON_HIP(M) DFGNN_ON_SYCL(M)
