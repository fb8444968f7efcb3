# cmake/install.cmake, included by the top-level CMakeLists.txt:
# `cmake --install <build> [--prefix <dir>]` installs the two libraries,
# the public headers, the tools, a CMake package (find_package(pld): the
# targets pld::pld, the shared library, and pld::pld_static) and a
# pkg-config file (pld.pc); `cpack -G DEB` in the build directory makes a
# Debian package of the same; the test install.exports checks what the
# shared library exports.

set(PLD_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/pld)

install(TARGETS pld pld_shared EXPORT pldTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(FILES ${PROJECT_SOURCE_DIR}/include/pld.h
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/pld
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} FILES_MATCHING PATTERN "*.h")
install(TARGETS pld-env pld-trace RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})

# ---- the CMake package ---------------------------------------------------
# Users write find_package(pld) and link pld::pld (libpld.so, which brings
# no dependency of its own into their link) or pld::pld_static (libpld.a,
# which brings Threads, libm and MPI: hence the find_dependency calls of
# pldConfig.cmake).
set_target_properties(pld PROPERTIES EXPORT_NAME pld_static)
set_target_properties(pld_shared PROPERTIES EXPORT_NAME pld)
install(EXPORT pldTargets NAMESPACE pld:: DESTINATION ${PLD_CMAKE_DIR})

include(CMakePackageConfigHelpers)
set(PLD_WITH_MPI OFF)
if(MPI_C_FOUND)
  set(PLD_WITH_MPI ON)
endif()
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/pldConfig.cmake.in
  ${PROJECT_BINARY_DIR}/pldConfig.cmake INSTALL_DESTINATION ${PLD_CMAKE_DIR})
# The ABI rule of CMakeLists.txt (the soname): while the version is 0.x a
# minor version may break compatibility, from 1.0 on only a major one.
if(PROJECT_VERSION_MAJOR EQUAL 0)
  set(PLD_COMPATIBILITY SameMinorVersion)
else()
  set(PLD_COMPATIBILITY SameMajorVersion)
endif()
write_basic_package_version_file(${PROJECT_BINARY_DIR}/pldConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY ${PLD_COMPATIBILITY})
install(FILES ${PROJECT_BINARY_DIR}/pldConfig.cmake
              ${PROJECT_BINARY_DIR}/pldConfigVersion.cmake
        DESTINATION ${PLD_CMAKE_DIR})

# ---- the pkg-config file -------------------------------------------------
# `pkg-config --cflags --libs pld` links libpld.so; `--static` adds what
# libpld.a needs: pthread, libm and MPI's libraries (each full path given
# as -L<dir> -l<name>).
set(PLD_PC_LIBS_PRIVATE "-lpthread -lm")
if(MPI_C_FOUND)
  set(pc_dirs "")
  foreach(lib IN LISTS MPI_C_LIBRARIES)
    if(lib MATCHES "^-")
      string(APPEND PLD_PC_LIBS_PRIVATE " ${lib}")
    elseif(lib MATCHES "^(.*)/lib([^/]+)\\.(so|a)(\\.[0-9.]+)?$")
      if(NOT CMAKE_MATCH_1 IN_LIST pc_dirs)
        list(APPEND pc_dirs ${CMAKE_MATCH_1})
        string(APPEND PLD_PC_LIBS_PRIVATE " -L${CMAKE_MATCH_1}")
      endif()
      string(APPEND PLD_PC_LIBS_PRIVATE " -l${CMAKE_MATCH_2}")
    else()
      string(APPEND PLD_PC_LIBS_PRIVATE " -l${lib}")
    endif()
  endforeach()
  if(MPI_C_LINK_FLAGS)
    string(APPEND PLD_PC_LIBS_PRIVATE " ${MPI_C_LINK_FLAGS}")
  endif()
endif()
# The prefix is the one of the installation (`cmake --install --prefix`
# may change it after configuring), so the file is written when installing:
# configured now with every value but the prefix, then again at install
# time with CMAKE_INSTALL_PREFIX, which is then the installation's, into
# its place (under DESTDIR, if set).
foreach(dir LIBDIR INCLUDEDIR)
  if(IS_ABSOLUTE "${CMAKE_INSTALL_${dir}}")
    set(PLD_PC_${dir} "${CMAKE_INSTALL_${dir}}")
  else()
    set(PLD_PC_${dir} "\${prefix}/${CMAKE_INSTALL_${dir}}")
  endif()
endforeach()
set(PLD_PC_PREFIX "@PLD_PC_PREFIX@")
configure_file(${PROJECT_SOURCE_DIR}/cmake/pld.pc.in
               ${PROJECT_BINARY_DIR}/pld.pc.in @ONLY)
if(IS_ABSOLUTE "${CMAKE_INSTALL_LIBDIR}")
  set(pc_dir "${CMAKE_INSTALL_LIBDIR}/pkgconfig")
else()
  set(pc_dir "\${CMAKE_INSTALL_PREFIX}/${CMAKE_INSTALL_LIBDIR}/pkgconfig")
endif()
install(CODE "
  set(PLD_PC_PREFIX \"\${CMAKE_INSTALL_PREFIX}\")
  set(pc \"\$ENV{DESTDIR}${pc_dir}/pld.pc\")
  message(STATUS \"Installing: \${pc}\")
  configure_file(\"${PROJECT_BINARY_DIR}/pld.pc.in\" \"\${pc}\" @ONLY)
  list(APPEND CMAKE_INSTALL_MANIFEST_FILES \"\${pc}\")")

# ---- the Debian package (cpack -G DEB) -----------------------------------
# One package, named pld, holding everything installed above: the runtime
# library (libpld.so.0) and the tools as well as the development files.
# Debian's names would split these into libpld0, libpld-dev and a tools
# package; calling the whole libpld-dev would claim one of those names
# for what it is not, while pld claims none, and such a split can come
# later.
set(CPACK_PACKAGE_NAME pld)
set(CPACK_PACKAGE_VENDOR "pld")
# The maintainers, as the repository's commits name them.
set(CPACK_PACKAGE_CONTACT
    "pld maintainers <maintainers@users.noreply.a-seed-94839152.example>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY
    "distributed tile programming model: C library, runtime and simulator")
set(CPACK_PACKAGE_DESCRIPTION
    "pld runs three-level programs (a host orchestrator, per-device
orchestrations, tile kernels) on simulated devices, one process per
device or one MPI process per rank.  This package holds the shared and
static libraries, the headers, the CMake and pkg-config packages, and the
tools pld-env and pld-trace.")
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION libdevel)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
# The package installs under /usr.  CPack installs with DESTDIR and
# CMAKE_INSTALL_PREFIX=/usr, so that pld.pc, written when installing, says
# /usr rather than CPack's staging directory.
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_INSTALL_PREFIX /usr)
set(CPACK_SET_DESTDIR ON)
# Depends: the libraries libpld.so and the tools link (libc6, Open MPI's
# libopenmpi3), found by dpkg-shlibdeps (dpkg-dev) where it is installed;
# and, in a build with MPI, MPI's development package, which
# find_package(pld) (find_dependency(MPI)) and static links need.
find_program(PLD_DPKG_SHLIBDEPS dpkg-shlibdeps)
if(PLD_DPKG_SHLIBDEPS)
  set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
else()
  set(pld_depends "libc6")
  if(MPI_C_FOUND)
    string(APPEND pld_depends ", libopenmpi3")
  endif()
  message(STATUS "dpkg-shlibdeps not found (dpkg-dev): the Debian package "
                 "depends on ${pld_depends}")
endif()
if(MPI_C_FOUND)
  find_program(PLD_DPKG dpkg)
  if(PLD_DPKG)
    execute_process(COMMAND ${PLD_DPKG} -S ${MPI_C_HEADER_DIR}/mpi.h
                    OUTPUT_VARIABLE mpi_owner ERROR_QUIET
                    OUTPUT_STRIP_TRAILING_WHITESPACE)
  endif()
  if(mpi_owner MATCHES "^([a-z0-9.+-]+)(:[a-z0-9]+)?:")
    set(mpi_dev ${CMAKE_MATCH_1})
  else()
    set(mpi_dev mpi-default-dev)
  endif()
  if(pld_depends)
    string(APPEND pld_depends ", ${mpi_dev}")
  else()
    set(pld_depends ${mpi_dev})
  endif()
endif()
set(CPACK_DEBIAN_PACKAGE_DEPENDS "${pld_depends}")
# A shlibs file, so that packages built against libpld.so depend on this
# exact version (the 0.x rule of CMakeLists.txt); CPack also makes the
# maintainer scripts run ldconfig after installing and removing.
set(CPACK_DEBIAN_PACKAGE_GENERATE_SHLIBS ON)
set(CPACK_DEBIAN_PACKAGE_GENERATE_SHLIBS_POLICY "=")
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)
set(CPACK_GENERATOR DEB)
include(CPack)

# ---- the test of the exports ---------------------------------------------
# install.exports: `nm -D --defined-only` of libpld.so against the set of
# functions and data objects the public headers declare, which the
# compiler itself lists (gcc -aux-info), independently of cmake/pld.map.
if(PLD_TESTS AND CMAKE_C_COMPILER_ID STREQUAL "GNU")
  enable_testing()
  add_test(NAME install.exports
           COMMAND sh ${PROJECT_SOURCE_DIR}/cmake/check_exports.sh
                   ${CMAKE_C_COMPILER} ${CMAKE_NM}
                   ${PROJECT_SOURCE_DIR}/include $<TARGET_FILE:pld_shared>)
  set_tests_properties(install.exports PROPERTIES TIMEOUT 60 LABELS install)
endif()
# install.consumer, install.consumer_static: the program of tests/consumer,
# built in the tree against pld::pld and pld::pld_static, prints OK
# (tools/consumer.sh builds it against installed copies).
foreach(prog consumer consumer_static)
  if(PLD_TESTS AND TARGET ${prog})
    add_test(NAME install.${prog} COMMAND ${prog})
    set_tests_properties(install.${prog} PROPERTIES TIMEOUT 60 LABELS install
                         PASS_REGULAR_EXPRESSION "^OK\n$")
  endif()
endforeach()
