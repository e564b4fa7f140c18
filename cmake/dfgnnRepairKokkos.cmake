# Debian's Kokkos 3.4 package (Trilinos 13.2) gives Kokkos::kokkos a non-existent include
# directory (its prefix misses the multiarch level) while Kokkos_INCLUDE_DIRS is right.
# Point the target at the right one when the listed directory is missing.
get_target_property(_dfgnn_kokkos_inc Kokkos::kokkos INTERFACE_INCLUDE_DIRECTORIES)
foreach(_dir IN LISTS _dfgnn_kokkos_inc)
  if(NOT _dir MATCHES "\\$<" AND NOT EXISTS "${_dir}")
    set_target_properties(Kokkos::kokkos PROPERTIES INTERFACE_INCLUDE_DIRECTORIES "${Kokkos_INCLUDE_DIRS}")
    break()
  endif()
endforeach()
