#pragma once
// The tool's commands, one file each (dfgnn.cpp lists them; options.hpp's Command).

#include "options.hpp"

namespace dfgnn::cli {

const Command& attention_command();  // attention.cpp
const Command& spmm_command();       // message_passing_cli.cpp
const Command& sddmm_command();
const Command& info_command();  // info.cpp
const Command& gen_rmat_command();  // gen.cpp
const Command& gen_sbm_command();
const Command& gen_knn_command();
const Command& gen_suite_command();
const Command& bench_command();  // bench.cpp
const Command& study_command();  // study.cpp

}  // namespace dfgnn::cli
