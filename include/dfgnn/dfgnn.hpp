#pragma once
/// \file dfgnn.hpp
/// Everything of the Kokkos-facing library: graph, plan, fused attention forward and backward,
/// generalized message passing (g-SpMM, g-SDDMM), reordering, references, file I/O.

#include <dfgnn/attention.hpp>
#include <dfgnn/backward.hpp>
#include <dfgnn/csr.hpp>
#include <dfgnn/graph.hpp>
#include <dfgnn/io.hpp>
#include <dfgnn/message.hpp>
#include <dfgnn/message_passing.hpp>
#include <dfgnn/plan.hpp>
#include <dfgnn/reference.hpp>
#include <dfgnn/reference_backward.hpp>
#include <dfgnn/reference_message_passing.hpp>
#include <dfgnn/reorder.hpp>
#include <dfgnn/types.hpp>
