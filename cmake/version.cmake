# Bakes the harness identity (version, git commit, dirty flag, build type) into
# a generated header at every build, so a record always names the exact source.
add_custom_target(dyno_version_header ALL
  COMMAND ${CMAKE_COMMAND}
          -DSRC_DIR=${PROJECT_SOURCE_DIR}
          -DOUT=${PROJECT_BINARY_DIR}/generated/dyno/build_info.h
          -DVERSION=${PROJECT_VERSION}
          -DBUILD_TYPE=${CMAKE_BUILD_TYPE}
          -P ${PROJECT_SOURCE_DIR}/cmake/write_build_info.cmake
  BYPRODUCTS ${PROJECT_BINARY_DIR}/generated/dyno/build_info.h
  COMMENT "dyno build info")
