# `cmake --install`: hk's headers (the tile library and the kernels' host APIs), libhk, vgpu's HIP runtime and an
# hkConfig.cmake, so another project writes find_package(hk) and target_link_libraries(app hk::hk).
#
#   <prefix>/include/hk/...                 the tile library (device code)
#   <prefix>/include/hk/kernels/NAME/NAME.h the kernels' host APIs (#include <hk/kernels/gemm/gemm.h>)
#   <prefix>/lib/libhk.so                   the kernels, compiled for HK_ARCHS
#   <prefix>/lib/hk/vgpu/libamdhip64.so.6   vgpu's runtime (not with HK_USE_ROCM): hk::hk links it, and programs that
#                                           link hk::hk find it through their run path, so they run on vgpu as built
#   <prefix>/lib/cmake/hk/                  hkConfig.cmake, hkTargets.cmake
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(HK_INSTALL_CMAKEDIR ${CMAKE_INSTALL_LIBDIR}/cmake/hk)
set(HK_INSTALL_RUNTIMEDIR ${CMAKE_INSTALL_LIBDIR}/hk/vgpu)

install(DIRECTORY include/hk DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
foreach(api common/api.h gemm/gemm.h attention/attention.h rotary/rotary.h norm/norm.h)
  get_filename_component(dir ${api} DIRECTORY)
  install(FILES kernels/${api} DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/hk/kernels/${dir})
endforeach()

install(TARGETS hk EXPORT hkTargets LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
if(NOT HK_USE_ROCM)
  install(TARGETS vgpu_hip LIBRARY DESTINATION ${HK_INSTALL_RUNTIMEDIR})
  set_target_properties(hk PROPERTIES INSTALL_RPATH "$ORIGIN/hk/vgpu")
endif()
install(EXPORT hkTargets NAMESPACE hk:: DESTINATION ${HK_INSTALL_CMAKEDIR})

configure_package_config_file(cmake/hkConfig.cmake.in ${CMAKE_CURRENT_BINARY_DIR}/hkConfig.cmake
  INSTALL_DESTINATION ${HK_INSTALL_CMAKEDIR} PATH_VARS HK_INSTALL_RUNTIMEDIR)
write_basic_package_version_file(${CMAKE_CURRENT_BINARY_DIR}/hkConfigVersion.cmake
  VERSION 0.1.0 COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/hkConfig.cmake ${CMAKE_CURRENT_BINARY_DIR}/hkConfigVersion.cmake
  DESTINATION ${HK_INSTALL_CMAKEDIR})
