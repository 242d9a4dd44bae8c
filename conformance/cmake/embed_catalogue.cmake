# Writes OUTPUT, a C++ source defining emm::conformance::detail::kCatalogueTsv with the bytes of
# INPUT (conformance/catalogue.tsv), NUL-terminated. Run as: cmake -DINPUT=.. -DOUTPUT=.. -P this.
# A byte array rather than a string literal: the catalogue is longer than the 4095 characters
# -Wpedantic allows a literal.
file(READ "${INPUT}" _hex HEX)
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," _bytes "${_hex}")
string(REPLACE "0x0a," "0x0a,\n  " _bytes "${_bytes}")  # one source line per catalogue line
file(WRITE "${OUTPUT}.tmp"
"// Generated from conformance/catalogue.tsv by conformance/cmake/embed_catalogue.cmake.\n"
"// Do not edit: edit the catalogue.\n"
"namespace emm::conformance::detail {\n"
"extern const unsigned char kCatalogueTsv[];\n"
"const unsigned char kCatalogueTsv[] = {\n  ${_bytes}0x00};\n"
"}  // namespace emm::conformance::detail\n")
file(COPY_FILE "${OUTPUT}.tmp" "${OUTPUT}" ONLY_IF_DIFFERENT)
file(REMOVE "${OUTPUT}.tmp")
