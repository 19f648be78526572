# The Debian package: `cmake --build build --target package` writes build/gdrmesh_VERSION_ARCH.deb
# with CPack's DEB generator. One package (the coordinator and the worker are one program; their
# units and settings are a few small files, not worth a package each): the stripped `gdrmesh`,
# systemd units, their /etc/default files and the coordinator's config (conffiles), a man page
# made by help2man from the program's own --help, bash completion, the operator docs, and the
# maintainer scripts (system user, state directory, purge). Dependencies come from dpkg-shlibdeps.
# Tested by tests/package (lintian, install into a clean Debian 12 root, run, purge).
set(GDRMESH_DEB_DIR ${PROJECT_SOURCE_DIR}/deploy/debian)
set(GDRMESH_DEB_MAINTAINER "gdrmesh developers <gdrmesh@example.org>")
set(GDRMESH_DEB_RELEASE 1)
set(GDRMESH_DEB_VERSION ${PROJECT_VERSION}-${GDRMESH_DEB_RELEASE})

include(GNUInstallDirs)
install(TARGETS gdrmesh RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})

# Absolute destinations: Debian 12 keeps units in /lib/systemd/system, settings in /etc.
install(FILES ${PROJECT_SOURCE_DIR}/deploy/systemd/gdrmesh-coordinator.service
              ${PROJECT_SOURCE_DIR}/deploy/systemd/gdrmesh-worker.service
        DESTINATION /lib/systemd/system)
install(FILES ${PROJECT_SOURCE_DIR}/deploy/systemd/gdrmesh-coordinator.default
        DESTINATION /etc/default RENAME gdrmesh-coordinator)
install(FILES ${PROJECT_SOURCE_DIR}/deploy/systemd/gdrmesh-worker.default
        DESTINATION /etc/default RENAME gdrmesh-worker)
install(FILES ${PROJECT_SOURCE_DIR}/deploy/systemd/coordinator.yaml DESTINATION /etc/gdrmesh)
set(GDRMESH_CONFFILES /etc/default/gdrmesh-coordinator /etc/default/gdrmesh-worker
                      /etc/gdrmesh/coordinator.yaml)

install(FILES ${PROJECT_SOURCE_DIR}/deploy/bash-completion/gdrmesh
        DESTINATION ${CMAKE_INSTALL_DATAROOTDIR}/bash-completion/completions)
install(FILES ${GDRMESH_DEB_DIR}/gdrmesh.lintian-overrides
        DESTINATION ${CMAKE_INSTALL_DATAROOTDIR}/lintian/overrides RENAME gdrmesh)

# /usr/share/doc/gdrmesh: copyright, changelog.Debian.gz (Debian policy 12.5, 12.7) and the
# pages an operator needs on the host.
set(gdrmesh_deb_gen ${CMAKE_CURRENT_BINARY_DIR}/deb)
configure_file(${GDRMESH_DEB_DIR}/changelog.Debian.in ${gdrmesh_deb_gen}/changelog.Debian @ONLY)
add_custom_command(
  OUTPUT ${gdrmesh_deb_gen}/changelog.Debian.gz
  COMMAND gzip -9nc ${gdrmesh_deb_gen}/changelog.Debian > ${gdrmesh_deb_gen}/changelog.Debian.gz
  DEPENDS ${gdrmesh_deb_gen}/changelog.Debian
  VERBATIM)
set(gdrmesh_doc_dir ${CMAKE_INSTALL_DATAROOTDIR}/doc/gdrmesh)
install(FILES ${GDRMESH_DEB_DIR}/copyright ${gdrmesh_deb_gen}/changelog.Debian.gz
              ${PROJECT_SOURCE_DIR}/README.md ${PROJECT_SOURCE_DIR}/docs/operations.md
              ${PROJECT_SOURCE_DIR}/docs/security.md ${PROJECT_SOURCE_DIR}/docs/config.md
        DESTINATION ${gdrmesh_doc_dir})

# The man page: help2man over the built program (deploy/debian/manpage.cmake). Without help2man
# the package has none (install-deps.sh installs it; tests/package checks the page is there).
find_program(GDRMESH_HELP2MAN help2man)
set(gdrmesh_deb_outputs ${gdrmesh_deb_gen}/changelog.Debian.gz)
if(GDRMESH_HELP2MAN)
  add_custom_command(
    OUTPUT ${gdrmesh_deb_gen}/man/gdrmesh.1.gz
    COMMAND ${CMAKE_COMMAND} -DGDRMESH=$<TARGET_FILE:gdrmesh> -DHELP2MAN=${GDRMESH_HELP2MAN}
            -DOUT=${gdrmesh_deb_gen}/man -P ${GDRMESH_DEB_DIR}/manpage.cmake
    DEPENDS gdrmesh ${GDRMESH_DEB_DIR}/manpage.cmake
    COMMENT "man page gdrmesh.1 (help2man)"
    VERBATIM)
  list(APPEND gdrmesh_deb_outputs ${gdrmesh_deb_gen}/man/gdrmesh.1.gz)
  install(FILES ${gdrmesh_deb_gen}/man/gdrmesh.1.gz DESTINATION ${CMAKE_INSTALL_MANDIR}/man1)
else()
  message(STATUS "help2man not found: the package will have no man page")
endif()
# Part of `all` (the package target builds `all` first); a few runs of --help.
add_custom_target(gdrmesh_package_files ALL DEPENDS ${gdrmesh_deb_outputs})

# Maintainer scripts and the conffiles list, with the permissions dpkg wants.
file(WRITE ${gdrmesh_deb_gen}/conffiles.in "")
foreach(f IN LISTS GDRMESH_CONFFILES)
  file(APPEND ${gdrmesh_deb_gen}/conffiles.in "${f}\n")
endforeach()
configure_file(${gdrmesh_deb_gen}/conffiles.in ${gdrmesh_deb_gen}/conffiles COPYONLY)

set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME gdrmesh)
set(CPACK_PACKAGE_VENDOR "gdrmesh developers")
set(CPACK_PACKAGE_CONTACT "${GDRMESH_DEB_MAINTAINER}")
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_STRIP_FILES ON)
set(CPACK_PACKAGE_DIRECTORY ${CMAKE_BINARY_DIR}/package)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_RELEASE ${GDRMESH_DEB_RELEASE})
set(CPACK_DEBIAN_PACKAGE_SECTION net)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
# adduser: the postinst's system user. The verbs providers are loaded at run time (no link).
set(CPACK_DEBIAN_PACKAGE_DEPENDS "adduser")
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS "ibverbs-providers, rdma-core")
string(CONCAT CPACK_DEBIAN_PACKAGE_DESCRIPTION
       "GPUDirect RDMA cluster tests: worker, coordinator and client\n"
       "gdrmesh tells GPU cluster operators whether GPUDirect RDMA works across their\n"
       "fleet, and how fast. A worker on every host owns its GPUs and RDMA NICs; a\n"
       "coordinator runs pair tests and sweeps over the workers, judges them and keeps\n"
       "every result in SQLite; the gdrmesh command runs tests and queries history.\n"
       "Ships systemd units for the coordinator and the worker (not enabled: each\n"
       "needs its certificate first).")
set(CPACK_DEBIAN_PACKAGE_CONTROL_EXTRA
    ${GDRMESH_DEB_DIR}/postinst ${GDRMESH_DEB_DIR}/prerm ${GDRMESH_DEB_DIR}/postrm
    ${gdrmesh_deb_gen}/conffiles)
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION TRUE)
include(CPack)
