// emm/conformance/text_escaping.hpp — text from a plugin, made safe for each report format.
//
// A certificate quotes what a plugin said (its name, its defer_cleanup text, exception messages,
// its output). Those bytes may be invalid UTF-8, hold characters a format forbids (U+FFFE and
// U+FFFF in XML), or carry terminal escape sequences and bidirectional overrides that would
// rewrite what a reader sees. Every writer passes plugin text through one of these:
//
//   sanitize_utf8("a\xFF")        == "a\uFFFD"            (valid UTF-8, nothing else changed)
//   xml_text("x\x1B[31m")          == "x\uFFFD[31m"        (XML 1.0 characters only, escaped)
//   visible_text("x\x1B[31m\n")    == "x\\x1b[31m\n"       (console, Markdown: controls shown)
//
// Pure functions.
#pragma once

#include <string>
#include <string_view>

namespace emm::conformance {

// Valid UTF-8: each byte that is not part of a well-formed sequence becomes U+FFFD.
std::string sanitize_utf8(std::string_view text);

// Text for an XML attribute or element: & < > " ' escaped; every code point XML 1.0 does not
// allow (C0 controls but tab, LF, CR; surrogates; U+FFFE, U+FFFF) becomes U+FFFD.
std::string xml_text(std::string_view text);

// Text for a terminal or a Markdown file: valid UTF-8 in which nothing is invisible or acts on
// the display: C0 and C1 controls (but LF and tab), DEL, and the bidirectional formatting
// characters are written as "\xNN" or "\uNNNN"; noncharacters (U+FFFE, U+FFFF, U+FDD0..FDEF,
// ...) become U+FFFD.
std::string visible_text(std::string_view text);

}  // namespace emm::conformance
