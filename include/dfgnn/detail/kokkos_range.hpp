#pragma once
/// \file kokkos_range.hpp
/// The range policy of every flat loop of the Kokkos code (the portable kernels, the
/// distributed calls). A RangePolicy without an IndexType counts in its space's size_type,
/// unsigned int on Kokkos::Cuda, so a loop over 2^32 entries or more (N x H x D features, a rank's
/// E x H x D edge features) would wrap there; this one counts in 64 bits on every space.

#include <Kokkos_Core.hpp>

#include <cstdint>

namespace dfgnn::kokkos_impl {

template <class Exec>
using Range = Kokkos::RangePolicy<Exec, Kokkos::IndexType<std::int64_t>>;

}  // namespace dfgnn::kokkos_impl
