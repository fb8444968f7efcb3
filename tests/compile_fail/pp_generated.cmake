# cmake -DPYTHON=<python3> -DROOT=<source tree> -P pp_generated.cmake
# include/pld/pp.h must be what tools/gen_pp.py writes for the limits in
# the public headers.
execute_process(COMMAND ${PYTHON} ${ROOT}/tools/gen_pp.py
                RESULT_VARIABLE status OUTPUT_VARIABLE generated)
file(READ ${ROOT}/include/pld/pp.h checked_in)
if(NOT status EQUAL 0 OR NOT generated STREQUAL checked_in)
  message(FATAL_ERROR "include/pld/pp.h differs from the output of "
                      "tools/gen_pp.py: run python3 tools/gen_pp.py > "
                      "include/pld/pp.h")
endif()
