# cmake -DINPUT=file -DOUTPUT=file.cpp -P embed_bytes.cmake: the file's bytes as the
# NUL-terminated array emm::conformance::nep49_bridge::kScenarios (a literal would pass the
# 4095 characters -Wpedantic allows).
file(READ "${INPUT}" _hex HEX)
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," _bytes "${_hex}")
string(REGEX REPLACE "((0x..,){16})" "\\1\n  " _bytes "${_bytes}")
file(WRITE "${OUTPUT}.tmp"
  "// Generated from numpy_scenarios.py by embed_bytes.cmake; do not edit.\n"
  "namespace emm::conformance::nep49_bridge {\n"
  "extern const unsigned char kScenarios[];\n"
  "const unsigned char kScenarios[] = {\n  ${_bytes}0x00};\n"
  "}  // namespace emm::conformance::nep49_bridge\n")
file(COPY_FILE "${OUTPUT}.tmp" "${OUTPUT}" ONLY_IF_DIFFERENT)
file(REMOVE "${OUTPUT}.tmp")
