# libFuzzer harnesses (tests/fuzz/<name>/): each folder includes this file and calls
# gdrmesh_add_fuzzer(). tests/CMakeLists.txt adds every tests/fuzz/<name>/ that has a
# CMakeLists.txt, so this helper lives beside the folders rather than in a top-level list.
#
# Off by default. With -DGDRMESH_FUZZ=ON and clang, every target that links gdrmesh_flags is
# built with -fsanitize=fuzzer-no-link,address,undefined (coverage for libFuzzer in the code
# under test, not only in the harness), so configure a build dir of its own for it
# (tests/fuzz/run_ci.sh uses build-fuzz). Each harness is one ctest with LABELS fuzz that runs
# a bounded session over a copy of tests/fuzz/corpus/<name>/ and fails on a crash.
include_guard(GLOBAL)

option(GDRMESH_FUZZ "Build the libFuzzer harnesses in tests/fuzz (clang only)" OFF)
set(GDRMESH_FUZZ_SECONDS 10 CACHE STRING "Seconds each fuzz ctest runs its harness")

set(fuzz_ok FALSE)
if(NOT GDRMESH_FUZZ)
  # Silent: the default build has no fuzz targets.
elseif(NOT CMAKE_CXX_COMPILER_ID MATCHES "Clang")
  message(STATUS "GDRMESH_FUZZ: libFuzzer needs clang (this is ${CMAKE_CXX_COMPILER_ID}); "
                 "skipping tests/fuzz. Configure with CC=clang CXX=clang++.")
elseif(GDRMESH_TSAN)
  message(STATUS "GDRMESH_FUZZ: cannot be combined with GDRMESH_TSAN; skipping tests/fuzz")
else()
  include(CheckCXXSourceCompiles)
  set(CMAKE_REQUIRED_FLAGS -fsanitize=fuzzer,address,undefined)
  set(CMAKE_REQUIRED_LINK_OPTIONS -fsanitize=fuzzer,address,undefined)
  check_cxx_source_compiles(
    "#include <cstddef>
     #include <cstdint>
     extern \"C\" int LLVMFuzzerTestOneInput(const uint8_t*, size_t) { return 0; }"
    GDRMESH_HAVE_LIBFUZZER)
  unset(CMAKE_REQUIRED_FLAGS)
  unset(CMAKE_REQUIRED_LINK_OPTIONS)
  if(GDRMESH_HAVE_LIBFUZZER)
    set(fuzz_ok TRUE)
  else()
    message(STATUS "GDRMESH_FUZZ: clang cannot link -fsanitize=fuzzer (the libclang-rt-dev "
                   "package is missing?); skipping tests/fuzz")
  endif()
endif()

set_property(GLOBAL PROPERTY GDRMESH_FUZZ_ENABLED ${fuzz_ok})
if(fuzz_ok)
  # Instrument the code under test through the shared flags target (no global flags).
  target_compile_options(gdrmesh_flags INTERFACE
    -fsanitize=fuzzer-no-link,address,undefined -fno-omit-frame-pointer
    -fno-sanitize-recover=all)
  target_link_options(gdrmesh_flags INTERFACE -fsanitize=address,undefined)
  message(STATUS "GDRMESH_FUZZ: building libFuzzer harnesses (${GDRMESH_FUZZ_SECONDS} s each)")
endif()
unset(fuzz_ok)

# gdrmesh_add_fuzzer(NAME <name> SOURCES <files...> LIBS <targets...>)
# Builds fuzz_<name> and registers ctest `fuzz.<name>` (LABELS fuzz) that fuzzes a copy of
# tests/fuzz/corpus/<name>/ for GDRMESH_FUZZ_SECONDS; crash inputs land in
# <build>/fuzz-runs/<name>/artifacts/ and the log in <build>/fuzz-runs/<name>/log.
function(gdrmesh_add_fuzzer)
  get_property(enabled GLOBAL PROPERTY GDRMESH_FUZZ_ENABLED)
  if(NOT enabled)
    return()
  endif()
  cmake_parse_arguments(F "" "NAME" "SOURCES;LIBS" ${ARGN})
  set(exe fuzz_${F_NAME})
  add_executable(${exe} ${F_SOURCES})
  target_link_libraries(${exe} PRIVATE ${F_LIBS} gdrmesh_flags)
  target_include_directories(${exe} PRIVATE ${PROJECT_SOURCE_DIR})
  target_compile_options(${exe} PRIVATE -fsanitize=fuzzer)
  target_link_options(${exe} PRIVATE -fsanitize=fuzzer)
  add_test(NAME fuzz.${F_NAME}
           COMMAND ${PROJECT_SOURCE_DIR}/tests/fuzz/run_fuzzer.sh $<TARGET_FILE:${exe}>
                   ${PROJECT_SOURCE_DIR}/tests/fuzz/corpus/${F_NAME}
                   ${CMAKE_BINARY_DIR}/fuzz-runs/${F_NAME} ${GDRMESH_FUZZ_SECONDS})
  math(EXPR timeout "${GDRMESH_FUZZ_SECONDS} + 60")
  set_tests_properties(fuzz.${F_NAME} PROPERTIES LABELS fuzz TIMEOUT ${timeout})
endfunction()
