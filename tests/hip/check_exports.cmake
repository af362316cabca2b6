# Compares the dynamic symbols of our libamdhip64.so.6 with ROCm's: the same names, each under the same version
# node, so that any program linked against the real runtime resolves every symbol against ours. vgpu's own
# extension is the only addition.
# Usage: cmake -DNM=<nm> -DOURS=<our library> -DREAL=<ROCm's library> -P check_exports.cmake
function(exported_symbols library out)
  execute_process(COMMAND ${NM} -D --defined-only ${library} OUTPUT_VARIABLE text RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${NM} failed on ${library}")
  endif()
  string(REPLACE "\n" ";" lines "${text}")
  set(symbols "")
  foreach(line IN LISTS lines)
    # "<address> <type> <name>@@<node>"; the version nodes themselves appear as absolute (A) symbols.
    if(line MATCHES "^[0-9a-f]+ [A-Za-z] ([^ ]+)$")
      list(APPEND symbols "${CMAKE_MATCH_1}")
    endif()
  endforeach()
  list(SORT symbols)
  set(${out} "${symbols}" PARENT_SCOPE)
endfunction()

exported_symbols(${OURS} ours)
exported_symbols(${REAL} real)
# vgpu's own extensions (the vgpu* functions in node vgpu_1.0) are the only additions allowed.
list(FILTER ours EXCLUDE REGEX "^vgpu")
set(missing ${real})
list(REMOVE_ITEM missing ${ours})
set(extra ${ours})
list(REMOVE_ITEM extra ${real})
list(LENGTH real real_count)
list(LENGTH ours our_count)
if(missing OR extra)
  list(JOIN missing "\n  " missing_text)
  list(JOIN extra "\n  " extra_text)
  message(FATAL_ERROR "exports differ from ROCm's (${real_count} there, ${our_count} here)\n"
                      "missing:\n  ${missing_text}\nnot in ROCm's library:\n  ${extra_text}")
endif()
message(STATUS "${our_count} exported symbols and version nodes, the same as ${REAL}")
