# find_package(<name> CONFIG) or stop configuring with the one line that fixes it.
function(ninodes_require name debian_package)
  find_package(${name} CONFIG QUIET)
  if(NOT ${name}_FOUND)
    message(FATAL_ERROR "ninodes: ${name} not found. Install it: sudo apt-get install -y ${debian_package}  (or run: bash scripts/setup.sh)")
  endif()
  set(${name}_VERSION "${${name}_VERSION}" PARENT_SCOPE)
endfunction()
