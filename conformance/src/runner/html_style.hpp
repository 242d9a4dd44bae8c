// html_style.hpp — private to the runner: what the HTML certificate and the multi-plugin index
// share: the style sheet, HTML text escaping and the verdict's colour.
#pragma once

#include <string>
#include <string_view>

#include "emm/conformance/text_escaping.hpp"
#include "emm/conformance/verdict.hpp"

namespace emm::conformance {

inline constexpr std::string_view kHtmlStyle =
    "body{font-family:system-ui,sans-serif;margin:2em;color:#1d1d1f;background:#fff}"
    "h1{font-size:1.5em}h2{font-size:1.15em;margin-top:1.6em}"
    "table{border-collapse:collapse;margin:.5em 0}"
    "th,td{border:1px solid #ccc;padding:.25em .6em;text-align:left;vertical-align:top}"
    "th{background:#f3f3f3}.matrix th,.matrix td:first-child{white-space:nowrap}"
    ".verdict{font-size:1.3em;font-weight:bold;padding:.5em 1em;display:inline-block}"
    ".certified{background:#d8f5d8;color:#0b5d0b}.partial{background:#fff2c8;color:#6b5000}"
    ".not-certified{background:#fbd6d6;color:#8a0000}"
    "td.pass{background:#c9efc9}td.fail,td.crash,td.timeout,td.not_run{background:#f7b9b9;"
    "font-weight:bold}td.warn{background:#ffe7a8}td.not_supported{background:#e4e4e4}"
    "td.none{background:#fafafa;color:#888}"
    "ul.capabilities li.yes{color:#0b5d0b}ul.capabilities li.no{color:#888}"
    ".problem{color:#8a0000;font-weight:bold}pre{white-space:pre-wrap;background:#f7f7f7;"
    "padding:.5em}";

// Plugin text for HTML: made visible (text_escaping.hpp), then & < > " ' escaped.
inline std::string html_text(std::string_view text) {
  std::string out;
  for (const char c : visible_text(text)) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

inline std::string_view verdict_class(const Verdict& verdict) {
  switch (verdict.kind) {
    case Verdict::Word::certified:
      return "certified";
    case Verdict::Word::partial:
      return "partial";
    case Verdict::Word::not_certified:
      break;
  }
  return "not-certified";
}

}  // namespace emm::conformance
