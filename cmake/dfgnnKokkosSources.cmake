# A Kokkos built with CUDA as a CMake language (Kokkos_ENABLE_COMPILE_AS_CMAKE_LANGUAGE=ON)
# expects every source that includes its headers to be compiled as CUDA.
# Include this file after find_package(Kokkos); then dfgnn_kokkos_sources(<target>...) marks
# the C++ sources of each target LANGUAGE CUDA. With any other Kokkos (Debian's Serial 3.4,
# an nvcc_wrapper build) both do nothing.
if(Kokkos_ENABLE_CUDA AND Kokkos_ENABLE_COMPILE_AS_CMAKE_LANGUAGE)
  if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES AND Kokkos_CUDA_ARCHITECTURES)
    set(CMAKE_CUDA_ARCHITECTURES ${Kokkos_CUDA_ARCHITECTURES})  # the architecture Kokkos was built for
  endif()
  enable_language(CUDA)
endif()

function(dfgnn_kokkos_sources)
  if(NOT (Kokkos_ENABLE_CUDA AND Kokkos_ENABLE_COMPILE_AS_CMAKE_LANGUAGE))
    return()
  endif()
  foreach(_target IN LISTS ARGN)
    get_target_property(_sources ${_target} SOURCES)
    get_target_property(_dir ${_target} SOURCE_DIR)
    foreach(_src IN LISTS _sources)
      if(_src MATCHES "\\.(cpp|cxx|cc)$" AND NOT _src MATCHES "\\$<")
        cmake_path(ABSOLUTE_PATH _src BASE_DIRECTORY "${_dir}")
        set_source_files_properties("${_src}" TARGET_DIRECTORY ${_target} PROPERTIES LANGUAGE CUDA)
      endif()
    endforeach()
    target_compile_features(${_target} PRIVATE cuda_std_17)
  endforeach()
endfunction()
