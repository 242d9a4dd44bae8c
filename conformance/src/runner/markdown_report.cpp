// The Markdown certificate (report_writers.hpp).
#include <algorithm>
#include <cctype>
#include <sstream>

#include "emm/conformance/report_writers.hpp"
#include "emm/conformance/text_escaping.hpp"
#include "runner/report_format.hpp"

namespace emm::conformance {
namespace {

using namespace report_format;

bool word_character(char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0; }

bool starts_with_www(std::string_view text, std::size_t dot) {
  if (dot < 3) return false;
  for (std::size_t i = dot - 3; i < dot; ++i) {
    if (text[i] != 'w' && text[i] != 'W') return false;
  }
  return true;
}

// Plugin text in a table cell or a list item: visible (no control or escape sequence acts on a
// viewer), one line, and inert: a backslash before every character through which Markdown (as
// GitHub renders it: CommonMark with the GFM extensions) would turn text into HTML, a link, an
// image, emphasis, a math span or a table cell — raw HTML and autolinks (< > &), link and image
// brackets ([ ]), emphasis and code (* ~ `, and _ but inside a word), math ($), cell bars (|),
// email autolinks (@), and the ':' of "://" and the '.' of "www." that start GFM's bare-URL
// autolinks. The rendered text reads as the plugin wrote it.
std::string markdown_text(std::string_view text) {
  constexpr std::string_view kInert = "\\`*~[]<>&|$@";
  const std::string visible = visible_text(text);
  std::string out;
  for (std::size_t i = 0; i < visible.size(); ++i) {
    const char c = visible[i];
    if (c == '\n' || c == '\r') {
      out += ' ';
      continue;
    }
    const bool url = c == ':' && std::string_view(visible).substr(i + 1, 2) == "//";
    const bool www = c == '.' && starts_with_www(visible, i);
    // '_' between letters or digits never starts emphasis: identifiers stay as they are.
    const bool underscore =
        c == '_' && !(i > 0 && i + 1 < visible.size() && word_character(visible[i - 1]) &&
                      word_character(visible[i + 1]));
    if (kInert.find(c) != std::string_view::npos || url || www || underscore) out += '\\';
    out += c;
  }
  return out;
}

// Plugin text inside a code span (a library path): nothing in a code span is markup, so only
// the span's own end needs care — delimited by more backticks than any run in the text.
std::string markdown_code(std::string_view text) {
  std::string inner;
  std::size_t longest = 0;
  std::size_t run = 0;
  for (const char c : visible_text(text)) {
    run = c == '`' ? run + 1 : 0;
    longest = std::max(longest, run);
    if (c == '|') {
      inner += "\\|";  // GFM splits table cells on '|' even inside a code span
    } else {
      inner += c == '\n' || c == '\r' ? ' ' : c;
    }
  }
  const std::string ticks(longest + 1, '`');
  return ticks + " " + inner + " " + ticks;
}

// A fence longer than any run of backticks in `text`, so the text cannot end the block.
std::string code_fence(std::string_view text) {
  std::size_t longest = 0;
  std::size_t run = 0;
  for (const char c : text) {
    run = c == '`' ? run + 1 : 0;
    longest = std::max(longest, run);
  }
  return std::string(std::max<std::size_t>(3, longest + 1), '`');
}

// Every line of `text` (ending in a newline) prefixed with `prefix`: a block inside a list item.
std::string indent_lines(std::string_view text, std::string_view prefix) {
  std::string out;
  bool at_start = true;
  for (const char c : visible_text(text)) {
    if (at_start) out += prefix;
    out += c;
    at_start = c == '\n';
  }
  if (!at_start) out += '\n';
  return out;
}

}  // namespace

std::string to_markdown(const Certificate& certificate) {
  const CertificationReport& report = certificate.report;
  const Verdict& verdict = certificate.verdict;
  const PluginDescription& plugin = report.plugin.description;
  std::ostringstream md;
  md << "# emm-certify certificate: " << markdown_text(plugin.name) << "\n\n";
  md << "**" << verdict.word() << "** — " << markdown_text(verdict.line()) << ". "
     << markdown_text(covered(report)) << ".\n\n";
  const bool handler = report.subject == SubjectKind::nep49_handler;
  if (!report.plugin_loaded) {
    md << "The " << subject_noun(report.subject)
       << " could not be loaded: " << markdown_text(report.load_failure) << "\n\n";
  }
  md << "| | |\n|---|---|\n";
  md << (handler ? "| NEP 49 handler | " : "| Plugin | ") << markdown_text(plugin.name) << " |\n";
  md << (handler ? "| Handler | " : "| Library | ") << markdown_code(plugin.path) << " |\n";
  if (!handler) {
    md << "| Interface version | "
       << (report.plugin.interface_version ? std::to_string(*report.plugin.interface_version)
                                           : std::string("unknown"))
       << " |\n";
  }
  md << "| Kit version | " << markdown_text(report.kit_version) << " |\n";
  md << "| Catalogue version | " << markdown_text(report.catalogue_version) << " |\n\n";

  if (!handler) {
    md << "## Declared capabilities\n\n| Capability | Declared |\n|---|---|\n";
    for (const CapabilityField& field : kCapabilityFields) {
      md << "| " << field.name << " | " << (declared(plugin.capabilities, field) ? "yes" : "no")
         << " |\n";
    }
    md << "\n**defer_cleanup behaviour:** "
       << (plugin.defer_cleanup_behaviour.empty() ? std::string("_(not documented)_")
                                                  : markdown_text(plugin.defer_cleanup_behaviour))
       << "\n\n";
  }

  md << "## Results\n\n| Clause | Level | Title |";
  for (const BackendStatus& b : report.backends) md << " " << to_string(b.kind) << " |";
  md << "\n|---|---|---|";
  for (std::size_t i = 0; i < report.backends.size(); ++i) md << "---|";
  md << "\n";
  for (const Clause* clause : clause_order(report)) {
    md << "| " << clause->id << " | " << row_level(report, *clause) << " | "
       << markdown_text(clause->title) << " |";
    for (const BackendStatus& b : report.backends) {
      md << " " << cell(find_result(report, *clause, b.kind), b) << " |";
    }
    md << "\n";
  }

  auto items = [&](std::string_view heading, const std::vector<std::size_t>& indices) {
    if (indices.empty()) return;
    md << "\n## " << heading << "\n\n";
    for (const std::size_t i : indices) {
      const ClauseResult& r = report.results[i];
      md << "- **" << r.clause->id << "** (" << to_string(r.backend) << ", " << to_string(r.outcome)
         << "): " << markdown_text(r.message) << "\n";
      if (!r.reproducer) continue;
      const Reproducer& reproducer = *r.reproducer;
      std::string calls;
      std::size_t number = 0;
      for (const std::string& call : reproducer.calls) {
        calls += std::to_string(++number) + ". " + call + "\n";
      }
      const std::string code = reproducer_code(reproducer);
      const std::string fence = code_fence(calls + code);
      md << "\n  " << markdown_text(reproducer_heading(reproducer)) << "; "
         << markdown_code(replay_command(report, r)) << " replays it:\n\n"
         << "  " << fence << "text\n"
         << indent_lines(calls, "  ") << "  " << fence << "\n\n"
         << "  <details><summary>" << r.clause->id << " reproducer ("
         << (reproducer.for_python ? "Python" : "GoogleTest") << ")</summary>\n\n"
         << "  " << fence << reproducer_language(reproducer) << "\n"
         << indent_lines(code, "  ") << "  " << fence << "\n\n  </details>\n\n";
    }
  };
  items("Failed MUST clauses", verdict.failures);
  items("Warnings (SHOULD clauses)", verdict.warnings);
  bool unobserved = false;
  for (const ClauseResult& r : report.results) {
    for (const std::string& what : r.unobserved) {
      if (!unobserved) md << "\n## Not observable (those parts were not checked there)\n\n";
      unobserved = true;
      md << "- " << markdown_text(unobserved_note(r, what)) << "\n";
    }
  }
  bool measurements = false;
  for (const ClauseResult& r : report.results) {
    if (r.properties.empty()) continue;
    if (!measurements) {
      md << "\n## Measurements and recorded figures\n\n| Clause | Backend | Figure | Value |\n"
            "|---|---|---|---|\n";
      measurements = true;
    }
    for (const auto& [key, value] : r.properties) {
      md << "| " << r.clause->id << " | " << to_string(r.backend) << " | " << markdown_text(key)
         << " | " << markdown_text(value) << " |\n";
    }
  }
  bool outputs = false;
  for (const ClauseResult& r : report.results) {
    if (r.output.empty()) continue;
    if (!outputs) md << "\n## Output of the clauses (stdout and stderr)\n";
    outputs = true;
    const std::string text = visible_text(r.output);
    const std::string fence = code_fence(text);
    md << "\n<details><summary>" << r.clause->id << " (" << to_string(r.backend)
       << ")</summary>\n\n"
       << fence << "text\n"
       << text << "\n"
       << fence << "\n\n</details>\n";
  }
  md << "\n" << verdict.line() << "\n";
  return md.str();
}

}  // namespace emm::conformance
