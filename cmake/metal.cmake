# The Metal backend (docs/metal.md). Its kernels form one library source:
# the Metal prelude, the op bodies shared with OpenCL (kernels/gpu, helpers
# first, in the order the OpenCL program has them), then Metal's own entry
# points. The source is generated on every platform: the host embeds it,
# and tests/metal compiles and runs it through the Metal shim.
set(POCKET_METAL_KERNEL_FILES dequant.cl reduce.cl hadamard.cl embed.cl linear.cl rms_norm.cl
    rope.cl elementwise.cl kv_append.cl kv_shift.cl attention.cl)
list(TRANSFORM POCKET_METAL_KERNEL_FILES PREPEND ${CMAKE_CURRENT_SOURCE_DIR}/kernels/gpu/)
list(PREPEND POCKET_METAL_KERNEL_FILES ${CMAKE_CURRENT_SOURCE_DIR}/kernels/metal/prelude.metal)
list(APPEND POCKET_METAL_KERNEL_FILES ${CMAKE_CURRENT_SOURCE_DIR}/kernels/metal/linear_rows.metal
     ${CMAKE_CURRENT_SOURCE_DIR}/kernels/metal/linear_mma.metal)

set(POCKET_METAL_GENERATED ${CMAKE_CURRENT_BINARY_DIR}/generated/metal)
set(POCKET_METAL_SOURCE ${POCKET_METAL_GENERATED}/pocket_kernels.metal)
set(POCKET_METAL_EMBEDDED ${POCKET_METAL_GENERATED}/metal_kernels.cc)
set(POCKET_METAL_NAMES ${POCKET_METAL_GENERATED}/metal_kernel_names.inc)
string(REPLACE ";" "|" _pocket_metal_arg "${POCKET_METAL_KERNEL_FILES}")
add_custom_command(OUTPUT ${POCKET_METAL_SOURCE} ${POCKET_METAL_EMBEDDED} ${POCKET_METAL_NAMES}
  COMMAND ${CMAKE_COMMAND} -DSOURCES=${_pocket_metal_arg} -DMETAL=${POCKET_METAL_SOURCE}
          -DEMBED=${POCKET_METAL_EMBEDDED} -DNAMES=${POCKET_METAL_NAMES}
          -P ${CMAKE_CURRENT_SOURCE_DIR}/cmake/MetalLibrarySource.cmake
  DEPENDS ${POCKET_METAL_KERNEL_FILES} ${CMAKE_CURRENT_SOURCE_DIR}/cmake/MetalLibrarySource.cmake
  COMMENT "Generating the Metal library source" VERBATIM)
add_custom_target(metal_library_source DEPENDS ${POCKET_METAL_SOURCE} ${POCKET_METAL_EMBEDDED}
                                               ${POCKET_METAL_NAMES})

# The backend itself, on Apple platforms: the op layer (plain C++) and the
# host (Objective-C++ with ARC over Metal.framework), registered as "metal".
if(POCKET_METAL)
  enable_language(OBJCXX)
  file(GLOB _pocket_metal_host CONFIGURE_DEPENDS
       ${CMAKE_CURRENT_SOURCE_DIR}/src/backends/metal/*.mm)
  pocket_module(metal DIRS backends/metal DEPS pocket_graph pocket_format pocket_quant
                SRCS ${_pocket_metal_host} ${POCKET_METAL_EMBEDDED})
  add_dependencies(pocket_metal metal_library_source)
  target_compile_options(pocket_metal PRIVATE $<$<COMPILE_LANGUAGE:OBJCXX>:-fobjc-arc>)
  target_link_libraries(pocket_metal PUBLIC "-framework Metal" "-framework Foundation")
  pocket_register_backend(pocket_metal MetalBackendEntry)
endif()
