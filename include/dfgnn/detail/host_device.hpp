#pragma once
/// \file host_device.hpp
/// DFGNN_HOST_DEVICE marks a function that the host and CUDA or HIP device code both call (the
/// dropout hash, message passing's operators, the two-byte conversions).

#if defined(__CUDACC__) || defined(__HIPCC__)
#define DFGNN_HOST_DEVICE __host__ __device__
#else
#define DFGNN_HOST_DEVICE
#endif
