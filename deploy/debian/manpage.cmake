# Writes gdrmesh.1.gz from the real program's --help: help2man over `gdrmesh --help`, with every
# subcommand's own --help (one level below: `sweep run`, `certs issue`, ...) as a COMMANDS
# section, so the page cannot drift from the options the program takes.
#   cmake -DGDRMESH=path/to/gdrmesh -DHELP2MAN=/usr/bin/help2man -DOUT=dir -P manpage.cmake
foreach(v GDRMESH HELP2MAN OUT)
  if(NOT DEFINED ${v})
    message(FATAL_ERROR "manpage.cmake: -D${v}= is required")
  endif()
endforeach()
file(MAKE_DIRECTORY "${OUT}")

# The names under "Subcommands:" of one --help text.
function(gdrmesh_subcommands help out_var)
  string(REPLACE "\n" ";" lines "${help}")
  set(in_list FALSE)
  set(names "")
  foreach(line IN LISTS lines)
    if(line MATCHES "^Subcommands:")
      set(in_list TRUE)
    elseif(in_list AND line MATCHES "^  ([a-z][a-z0-9-]*)")
      list(APPEND names "${CMAKE_MATCH_1}")
    elseif(in_list AND NOT line MATCHES "^ ")
      set(in_list FALSE)
    endif()
  endforeach()
  set(${out_var} "${names}" PARENT_SCOPE)
endfunction()

# One --help text as roff: verbatim, with roff's escape and control characters made literal.
function(gdrmesh_roff_block title text out_var)
  string(REPLACE "\\" "\\e" text "${text}")
  string(REGEX REPLACE "(^|\n)([.'])" "\\1\\\\&\\2" text "${text}")
  set(${out_var} ".SS \"${title}\"\n.nf\n${text}\n.fi\n" PARENT_SCOPE)
endfunction()

execute_process(COMMAND "${GDRMESH}" --help OUTPUT_VARIABLE top RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "manpage.cmake: ${GDRMESH} --help failed (${rc})")
endif()
gdrmesh_subcommands("${top}" commands)
string(CONCAT include "[DESCRIPTION]\n"
    "gdrmesh tells GPU cluster operators whether GPUDirect RDMA works across their fleet, and\n"
    "how fast. A worker on every host owns its GPUs and RDMA NICs; a coordinator talks gRPC to\n"
    "the workers, runs pair tests and sweeps, judges them and stores every result in SQLite; the\n"
    "other subcommands are its command-line client.\n\n[COMMANDS]\n"
    "Each subcommand's own \\fB--help\\fR, as the program prints it.\n")
foreach(cmd IN LISTS commands)
  execute_process(COMMAND "${GDRMESH}" ${cmd} --help OUTPUT_VARIABLE help RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "manpage.cmake: ${GDRMESH} ${cmd} --help failed (${rc})")
  endif()
  gdrmesh_roff_block("gdrmesh ${cmd}" "${help}" block)
  string(APPEND include "${block}")
  gdrmesh_subcommands("${help}" subs)
  foreach(sub IN LISTS subs)
    execute_process(COMMAND "${GDRMESH}" ${cmd} ${sub} --help OUTPUT_VARIABLE subhelp
                    RESULT_VARIABLE rc)
    if(NOT rc EQUAL 0)
      message(FATAL_ERROR "manpage.cmake: ${GDRMESH} ${cmd} ${sub} --help failed (${rc})")
    endif()
    gdrmesh_roff_block("gdrmesh ${cmd} ${sub}" "${subhelp}" block)
    string(APPEND include "${block}")
  endforeach()
endforeach()
string(APPEND include
       "\n[FILES]\n"
       ".TP\n/etc/default/gdrmesh-coordinator, /etc/default/gdrmesh-worker\n"
       "Settings of the systemd units gdrmesh-coordinator.service and gdrmesh-worker.service.\n"
       ".TP\n/etc/gdrmesh/coordinator.yaml\nThe coordinator's cluster config (thresholds, "
       "schedules, retention).\n"
       ".TP\n/var/lib/gdrmesh/results.db\nThe coordinator's SQLite results database.\n"
       "\n[SEE ALSO]\n"
       "/usr/share/doc/gdrmesh/operations.md, security.md, config.md.\n")
file(WRITE "${OUT}/gdrmesh.h2m" "${include}")
execute_process(
  COMMAND "${HELP2MAN}" --no-info --no-discard-stderr --section 1
          "--name=GPUDirect RDMA cluster tests: worker, coordinator and client"
          "--include=${OUT}/gdrmesh.h2m" "--output=${OUT}/gdrmesh.1" "${GDRMESH}"
  RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "manpage.cmake: help2man failed (${rc})")
endif()
file(REMOVE "${OUT}/gdrmesh.1.gz")
execute_process(COMMAND gzip -9n "${OUT}/gdrmesh.1" RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "manpage.cmake: gzip failed (${rc})")
endif()
