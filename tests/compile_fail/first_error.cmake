# cmake -DCC=<compiler> -DINCLUDE=<dir> -DSOURCE=<file.c> [-DDECLARE=<macro>]
#       -P first_error.cmake
# Compiles SOURCE as the project does (C11, warnings as errors) and prints
# the first line that reports an error and how many lines do, as
#   first error: <line>
#   errors: <count>
# then the compiler's whole output.  A test matches the first line against
# its message and the count against 1: the mistake is named first, and no
# cascade of errors follows it.
set(flags -std=c11 -Wall -Wextra -Wpedantic -Werror -fsyntax-only
          -fdiagnostics-color=never -I${INCLUDE})
if(DECLARE)
  list(APPEND flags -DDECLARE=${DECLARE})
endif()
execute_process(COMMAND ${CC} ${flags} ${SOURCE}
                RESULT_VARIABLE status OUTPUT_VARIABLE out ERROR_VARIABLE out)
string(REPLACE "\n" ";" lines "${out}")
set(first "")
set(count 0)
foreach(line IN LISTS lines)
  if(line MATCHES "(^|: )(fatal )?error: ")
    if(count EQUAL 0)
      set(first "${line}")
    endif()
    math(EXPR count "${count} + 1")
  endif()
endforeach()
if(status EQUAL 0)
  set(first "(none: the compiler accepted the file)")
endif()
message("first error: ${first}\nerrors: ${count}\n\n${out}")
