# cmake -DHK_BUILD=... -DHK_SOURCE=... -DWORK=... [-DPYTHON=python3 -DPYTHON_DIR=lib/hk/python] -P run_downstream.cmake
file(REMOVE_RECURSE ${WORK})
function(step)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
  message("${out}")
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "failed (${rc}): ${ARGN}")
  endif()
endfunction()
step(${CMAKE_COMMAND} --install ${HK_BUILD} --prefix ${WORK}/prefix)
# A clean environment: the program must find vgpu's runtime through hk::hk alone, not through LD_LIBRARY_PATH.
step(${CMAKE_COMMAND} -E env --unset=LD_LIBRARY_PATH ${CMAKE_COMMAND} -S ${HK_SOURCE} -B ${WORK}/build -G Ninja
     -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH=${WORK}/prefix)
step(${CMAKE_COMMAND} --build ${WORK}/build)
step(${CMAKE_COMMAND} -E env --unset=LD_LIBRARY_PATH ${WORK}/build/downstream_gemm)
# The installed Python package finds libhk and vgpu's runtime through its run path as well: one checked GEMM.
if(PYTHON)
  step(${CMAKE_COMMAND} -E env --unset=LD_LIBRARY_PATH PYTHONPATH=${WORK}/prefix/${PYTHON_DIR} PYTHONDONTWRITEBYTECODE=1
       ${PYTHON} ${CMAKE_CURRENT_LIST_DIR}/installed_package.py)
endif()
