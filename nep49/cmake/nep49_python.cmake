# Finds the CPython and NumPy the NEP 49 bridge embeds, by asking an interpreter (not
# FindPython3: the kit's other Python3 lookups keep the interpreter on PATH, which may be a pyenv
# build without NumPy). Sets EMM_NEP49_NUMPY_FOUND, EMM_NEP49_PYTHON_INCLUDE,
# EMM_NEP49_NUMPY_INCLUDE, EMM_NEP49_PYTHON_LIBRARY and EMM_NEP49_NUMPY_VERSION.
if(EXISTS /usr/bin/python3)
  set(_emm_default_python /usr/bin/python3)
else()
  set(_emm_default_python python3)
endif()
set(EMM_NEP49_PYTHON "${_emm_default_python}" CACHE STRING
    "The Python whose CPython and NumPy the NEP 49 bridge embeds")
set(EMM_NEP49_NUMPY_FOUND FALSE)
execute_process(
  COMMAND "${EMM_NEP49_PYTHON}" -c
    "import sysconfig, numpy, os; v = sysconfig.get_config_var; print(sysconfig.get_paths()['include']); print(numpy.get_include()); print(os.path.join(v('LIBDIR'), v('LDLIBRARY'))); print(numpy.__version__); import sys; print(sys.executable)"
  OUTPUT_VARIABLE _emm_py_out ERROR_VARIABLE _emm_py_err RESULT_VARIABLE _emm_py_rc
  OUTPUT_STRIP_TRAILING_WHITESPACE)
if(_emm_py_rc EQUAL 0)
  string(REPLACE "\n" ";" _emm_py_lines "${_emm_py_out}")
  list(GET _emm_py_lines 0 EMM_NEP49_PYTHON_INCLUDE)
  list(GET _emm_py_lines 1 EMM_NEP49_NUMPY_INCLUDE)
  list(GET _emm_py_lines 2 EMM_NEP49_PYTHON_LIBRARY)
  list(GET _emm_py_lines 3 EMM_NEP49_NUMPY_VERSION)
  list(GET _emm_py_lines 4 EMM_NEP49_PYTHON_EXECUTABLE)
  if(EXISTS "${EMM_NEP49_PYTHON_INCLUDE}/Python.h" AND EXISTS "${EMM_NEP49_PYTHON_LIBRARY}"
     AND EXISTS "${EMM_NEP49_NUMPY_INCLUDE}/numpy/arrayobject.h"
     AND EMM_NEP49_NUMPY_VERSION VERSION_GREATER_EQUAL 1.22)
    set(EMM_NEP49_NUMPY_FOUND TRUE)
    message(STATUS "NEP 49 bridge: NumPy ${EMM_NEP49_NUMPY_VERSION} with ${EMM_NEP49_PYTHON_LIBRARY}")
  endif()
endif()
if(NOT EMM_NEP49_NUMPY_FOUND)
  message(STATUS "NEP 49 bridge: not built (${EMM_NEP49_PYTHON} has no NumPy >= 1.22 with "
                 "CPython's headers and shared library: install python3-numpy and python3-dev, "
                 "or set EMM_NEP49_PYTHON); the NEP49 clauses that need NumPy report not_supported")
endif()
# For the suites' directories too (the NEP 49 zoo's extension modules).
foreach(_emm_var EMM_NEP49_NUMPY_FOUND EMM_NEP49_PYTHON_INCLUDE EMM_NEP49_NUMPY_INCLUDE
                 EMM_NEP49_PYTHON_LIBRARY EMM_NEP49_NUMPY_VERSION EMM_NEP49_PYTHON_EXECUTABLE)
  set(${_emm_var} "${${_emm_var}}" CACHE INTERNAL "")
endforeach()
