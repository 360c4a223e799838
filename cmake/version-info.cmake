# version-info.cmake - writes version_info.h with the facts only known at build
# time: the git commit, whether the tree was clean, and the build date.
# Run as `cmake -DSOURCE_DIR=... -DOUTPUT=... -P version-info.cmake` on every
# build; configure_file rewrites the header only when its content changes.
# The build date honours SOURCE_DATE_EPOCH for reproducible builds and is
# otherwise the date (not the time), so repeated builds on one day are no-ops.

set(git_commit "")
set(git_tree_state "")
find_program(GIT git)
if(GIT AND EXISTS "${SOURCE_DIR}/.git")
  execute_process(COMMAND ${GIT} -C ${SOURCE_DIR} rev-parse HEAD
                  OUTPUT_VARIABLE git_commit OUTPUT_STRIP_TRAILING_WHITESPACE
                  ERROR_QUIET RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    set(git_commit "")
  endif()
  execute_process(COMMAND ${GIT} -C ${SOURCE_DIR} status --porcelain --untracked-files=no
                  OUTPUT_VARIABLE git_status ERROR_QUIET RESULT_VARIABLE rc)
  if(rc EQUAL 0 AND git_commit)
    if(git_status STREQUAL "")
      set(git_tree_state "clean")
    else()
      set(git_tree_state "dirty")
    endif()
  endif()
endif()

if(DEFINED ENV{SOURCE_DATE_EPOCH})
  string(TIMESTAMP build_date "%Y-%m-%dT%H:%M:%SZ" UTC)
else()
  string(TIMESTAMP build_date "%Y-%m-%dT00:00:00Z" UTC)
endif()

configure_file(${CMAKE_CURRENT_LIST_DIR}/version_info.h.in ${OUTPUT} @ONLY)
