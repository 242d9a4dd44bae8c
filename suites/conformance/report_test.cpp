// The report writers and the verdict (spec §3, §5): JSON text and escaping, JUnit elements,
// Markdown certificate, the console verdict line, and the child-to-parent result encoding.
#include <gtest/gtest.h>

#include <algorithm>
#include <emm/conformance/json_writer.hpp>
#include <emm/conformance/report_writers.hpp>
#include <emm/conformance/result_codec.hpp>
#include <emm/conformance/testing/expect_throw.hpp>
#include <emm/conformance/text_escaping.hpp>
#include <emm/errors.hpp>
#include <limits>
#include <optional>
#include <string>

namespace emm::conformance {
namespace {

ClauseResult result(const char* clause, BackendKind backend, Level level, Outcome outcome,
                    std::string message = "") {
  ClauseResult r;
  r.clause = catalogue().find(clause);
  if (r.clause == nullptr) throw std::runtime_error(std::string(clause) + " is not catalogued");
  r.backend = backend;
  r.level = level;
  r.outcome = outcome;
  r.message = std::move(message);
  r.duration_ms = 2.0;
  return r;
}

CertificationReport small_report() {
  CertificationReport report;
  // Not the kit's version: the writers copy whatever the report holds (certify_end_to_end.cmake
  // checks that emm-certify reports the real one).
  report.kit_version = "9.8.7-test";
  report.catalogue_version = "1.0";
  report.plugin = PluginInfo{
      PluginDescription{"x", "/p/libx.so", Capabilities{.memory_info = true}, "queues frees"}, 1};
  report.backends = {{BackendKind::fake, true, "emmkit fake device", ""},
                     {BackendKind::gpu, false, "", "no GPU: none"}};
  report.results = {result("REG-1", BackendKind::fake, Level::must, Outcome::pass)};
  return report;
}

// small_report() with a passing result for every other plugin clause too: a full run.
CertificationReport full_report() {
  CertificationReport report = small_report();
  for (const Clause* clause : catalogue().plugin_clauses()) {
    if (clause->id != "REG-1") {
      report.results.push_back(
          result(clause->id.c_str(), BackendKind::fake, clause->level, Outcome::pass));
    }
  }
  return report;
}

// Replaces the result of `id` on the fake backend.
void set_result(CertificationReport& report, ClauseResult replacement) {
  for (ClauseResult& r : report.results) {
    if (r.clause == replacement.clause && r.backend == replacement.backend) {
      r = std::move(replacement);
      return;
    }
  }
  report.results.push_back(std::move(replacement));
}

Certificate certify(CertificationReport report) { return make_certificate(std::move(report)); }

TEST(JsonWriter, WritesNestedDocumentsWithEscapes) {
  JsonWriter json(0);
  json.begin_object()
      .key("s")
      .value("a\"b\\c\n\t\x01")
      .key("n")
      .value(std::int64_t{-3})
      .key("u")
      .value(std::uint64_t{7})
      .key("d")
      .value(1.5)
      .key("inf")
      .value(1.0 / 0.0)
      .key("b")
      .value(true)
      .key("z")
      .null()
      .key("a")
      .begin_array()
      .value(1)
      .value("x")
      .end_array()
      .key("e")
      .begin_object()
      .end_object()
      .end_object();
  EXPECT_EQ(json.str(),
            "{\"s\":\"a\\\"b\\\\c\\n\\t\\u0001\",\"n\":-3,\"u\":7,\"d\":1.5,\"inf\":null,"
            "\"b\":true,\"z\":null,\"a\":[1,\"x\"],\"e\":{}}");
}

TEST(JsonWriter, PrettyPrintsWithTwoSpaces) {
  JsonWriter json;
  json.begin_object().key("a").begin_array().value(1).end_array().end_object();
  EXPECT_EQ(json.str(), "{\n  \"a\": [\n    1\n  ]\n}");
}

TEST(JsonWriter, RejectsMisuse) {
  EMM_EXPECT_THROW(Error, JsonWriter().begin_object().value(1),
                   "JsonWriter: a value inside an object needs a key first");
  EMM_EXPECT_THROW(Error, JsonWriter().key("a"),
                   "JsonWriter: key() outside an object or where a value is expected");
  EMM_EXPECT_THROW(Error, JsonWriter().begin_array().end_object(),
                   "JsonWriter: end_object() without a matching begin_object() or after a key");
  EMM_EXPECT_THROW(Error, (void)JsonWriter().begin_array().str(),
                   "JsonWriter: an object or array is still open");
  EMM_EXPECT_THROW(Error, JsonWriter().value(1).value(2),
                   "JsonWriter: the document is already complete");
}

TEST(JsonWriter, SanitizesInvalidUtf8) {
  EXPECT_EQ(sanitize_utf8("ok \xC3\xA9"), "ok \xC3\xA9");  // é stays
  EXPECT_EQ(sanitize_utf8("a\xFF"
                          "b"),
            "a\xEF\xBF\xBD"
            "b");                                                    // stray byte
  EXPECT_EQ(sanitize_utf8("\xE2\x82"), "\xEF\xBF\xBD\xEF\xBF\xBD");  // truncated sequence
  EXPECT_EQ(sanitize_utf8("\xED\xA0\x80"), "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD");  // surrogate
  EXPECT_EQ(json_quote("\xC0\xAF"), "\"\xEF\xBF\xBD\xEF\xBF\xBD\"");                 // overlong
}

TEST(XmlEscape, EscapesMarkupAndReplacesForbiddenCharacters) {
  EXPECT_EQ(xml_text("<a href='x'>&\"</a>"), "&lt;a href=&apos;x&apos;&gt;&amp;&quot;&lt;/a&gt;");
  EXPECT_EQ(xml_text("tab\tnl\nbell\x07"), "tab\tnl\nbell\xEF\xBF\xBD");
}

TEST(Report, JsonHasTheSpecifiedShape) {
  CertificationReport report = small_report();
  report.results[0].properties = {{"seed", "7"}};
  EXPECT_EQ(to_json(certify(report)),
            "{\n"
            "  \"kit_version\": \"9.8.7-test\",\n"
            "  \"catalogue_version\": \"1.0\",\n"
            "  \"subject\": \"emm_plugin\",\n"
            "  \"plugin\": {\n"
            "    \"path\": \"/p/libx.so\",\n"
            "    \"name\": \"x\",\n"
            "    \"interface_version\": 1,\n"
            "    \"capabilities\": {\n"
            "      \"memory_info\": true,\n"
            "      \"ipc\": false,\n"
            "      \"host_only_derived\": false,\n"
            "      \"thread_safe\": false,\n"
            "      \"runs_on_fake_driver\": true,\n"
            "      \"pooling\": false,\n"
            "      \"no_caching\": false,\n"
            "      \"managed_memory\": false,\n"
            "      \"defer_cleanup_behaviour\": \"queues frees\"\n"
            "    }\n"
            "  },\n"
            "  \"backends\": [\n"
            "    {\n"
            "      \"name\": \"fake\",\n"
            "      \"ran\": true,\n"
            "      \"device\": \"emmkit fake device\"\n"
            "    },\n"
            "    {\n"
            "      \"name\": \"gpu\",\n"
            "      \"ran\": false,\n"
            "      \"reason\": \"no GPU: none\"\n"
            "    }\n"
            "  ],\n"
            "  \"verdict\": \"PARTIAL\",\n"
            "  \"verdict_backends\": [\n"
            "    \"fake\"\n"
            "  ],\n"
            "  \"verdict_line\": \"VERDICT: PARTIAL (1 of " +
                std::to_string(catalogue().plugin_clauses().size()) +
                " clauses; fake)\",\n"
                "  \"clauses_run\": 1,\n"
                "  \"clauses_in_catalogue\": " +
                std::to_string(catalogue().plugin_clauses().size()) +
                ",\n"
                "  \"results\": [\n"
                "    {\n"
                "      \"clause\": \"REG-1\",\n"
                "      \"level\": \"MUST\",\n"
                "      \"backend\": \"fake\",\n"
                "      \"outcome\": \"pass\",\n"
                "      \"meaning\": \"passed\",\n"
                "      \"message\": \"\",\n"
                "      \"notes\": [],\n"
                "      \"duration_ms\": 2,\n"
                "      \"properties\": {\n"
                "        \"seed\": \"7\"\n"
                "      }\n"
                "    }\n"
                "  ]\n"
                "}\n");
}

// A NEP 49 handler's report speaks a handler's terms: its subject, no EMM plugin fields, and
// "the handler" in the verdict line and every writer.
TEST(Report, HandlerReportsCarryNoPluginFields) {
  CertificationReport report = small_report();
  report.subject = SubjectKind::nep49_handler;
  report.plugin.description.path = "libh.so:emm_nep49_handler";
  report.results = {result("NEP49-1", BackendKind::fake, Level::must, Outcome::pass)};
  const std::string json = to_json(certify(report));
  EXPECT_NE(json.find("\"subject\": \"nep49_handler\",\n  \"plugin\": {\n    \"path\": "
                      "\"libh.so:emm_nep49_handler\",\n    \"name\": \"x\"\n  },"),
            std::string::npos)
      << json;
  EXPECT_EQ(json.find("capabilities"), std::string::npos) << json;
  EXPECT_EQ(json.find("interface_version"), std::string::npos) << json;
  const Certificate certificate = certify(report);
  const std::string markdown = to_markdown(certificate);
  EXPECT_NE(markdown.find("| NEP 49 handler | x |"), std::string::npos) << markdown;
  EXPECT_EQ(markdown.find("Declared capabilities"), std::string::npos) << markdown;
  const std::string html = to_html(certificate);
  EXPECT_NE(html.find("<h2>NEP 49 handler</h2>"), std::string::npos);
  EXPECT_EQ(html.find("Declared capabilities"), std::string::npos);

  report.plugin_loaded = false;
  report.load_failure = "no such symbol";
  EXPECT_EQ(certify(report).verdict.line(),
            "VERDICT: NOT CERTIFIED (the handler could not be loaded)");
}

TEST(Report, InterfaceVersionIsNullWhenUnknown) {
  CertificationReport report = small_report();
  report.plugin.interface_version.reset();
  EXPECT_NE(to_json(certify(report)).find("\"interface_version\": null"), std::string::npos);
}

TEST(Verdict, MustFailuresCrashesAndTimeoutsDecide) {
  CertificationReport report = full_report();
  set_result(report, result("LIFE-2", BackendKind::fake, Level::must, Outcome::fail, "[LIFE-2] x"));
  set_result(report,
             result("LIFE-5", BackendKind::fake, Level::must, Outcome::crash, "[LIFE-5] y"));
  set_result(report,
             result("LIFE-6", BackendKind::fake, Level::must, Outcome::timeout, "[LIFE-6] z"));
  set_result(report, result("IPC-1", BackendKind::fake, Level::must, Outcome::not_supported));
  const Verdict verdict = certify(report).verdict;
  EXPECT_FALSE(verdict.certified);
  EXPECT_EQ(verdict.must_failures, 3u);
  EXPECT_EQ(verdict.word(), "NOT CERTIFIED");
  EXPECT_EQ(verdict.line(), "VERDICT: NOT CERTIFIED (3 MUST clauses failed; fake)");
  EXPECT_EQ(verdict.exit_status(), kExitNotCertified);
  EXPECT_NE(to_json(certify(report)).find("\"verdict\": \"NOT CERTIFIED\""), std::string::npos);
}

TEST(Verdict, AFullCleanRunIsCertifiedAndNamesItsBackends) {
  CertificationReport report = full_report();
  Verdict verdict = certify(report).verdict;
  EXPECT_TRUE(verdict.certified);
  EXPECT_EQ(verdict.line(), "VERDICT: CERTIFIED (fake)");
  EXPECT_EQ(verdict.exit_status(), kExitCertified);
  report.backends[1].ran = true;
  for (const Clause* clause : catalogue().plugin_clauses()) {
    report.results.push_back(
        result(clause->id.c_str(), BackendKind::gpu, clause->level, Outcome::pass));
  }
  verdict = certify(report).verdict;
  EXPECT_EQ(verdict.line(), "VERDICT: CERTIFIED (fake, gpu)");
}

TEST(Verdict, AnOnlyRunIsPartialNeverCertified) {
  CertificationReport report = small_report();
  const Verdict verdict = certify(report).verdict;
  EXPECT_FALSE(verdict.certified);
  EXPECT_EQ(verdict.word(), "PARTIAL");
  EXPECT_EQ(verdict.line(), "VERDICT: PARTIAL (1 of " +
                                std::to_string(catalogue().plugin_clauses().size()) +
                                " clauses; fake)");
  EXPECT_EQ(verdict.exit_status(), kExitPartial);
  report.results.push_back(
      result("LIFE-2", BackendKind::fake, Level::must, Outcome::fail, "[LIFE-2] x"));
  EXPECT_EQ(certify(report).verdict.word(), "NOT CERTIFIED") << "a partial run with a failure";
}

TEST(Verdict, AnUnloadablePluginIsNotCertifiedWithExitTwo) {
  CertificationReport report = full_report();
  report.plugin_loaded = false;
  report.load_failure = "dlopen failed";
  const Certificate certificate = certify(report);
  EXPECT_EQ(certificate.verdict.line(), "VERDICT: NOT CERTIFIED (the plugin could not be loaded)");
  EXPECT_EQ(certificate.verdict.exit_status(), kExitUsage);
  EXPECT_NE(to_json(certificate).find("\"load_failure\": \"dlopen failed\""), std::string::npos);
}

// What emm-certify reports for a plugin it could not load: every selected clause not_run.
CertificationReport unloadable_report() {
  CertificationReport report = small_report();
  report.plugin_loaded = false;
  report.load_failure = "dlopen failed";
  report.plugin = PluginInfo{PluginDescription{"", "/p/libx.so", Capabilities{}, ""}, {}};
  report.backends = {{BackendKind::fake, false, "", "the plugin could not be loaded"}};
  report.results.clear();
  for (const Clause* clause : catalogue().plugin_clauses()) {
    report.results.push_back(
        result(clause->id.c_str(), BackendKind::fake, clause->level, Outcome::not_run,
               "[" + clause->id + "] not run: the plugin could not be loaded: dlopen failed"));
  }
  return report;
}

TEST(Verdict, AnUnloadablePluginsClausesAreNotRunNeverFailuresOrWarnings) {
  const CertificationReport report = unloadable_report();
  const Certificate certificate = certify(report);
  const Verdict& verdict = certificate.verdict;
  EXPECT_TRUE(verdict.failures.empty());
  EXPECT_TRUE(verdict.warnings.empty()) << "SHOULD clauses that did not run are not warnings";
  EXPECT_EQ(verdict.must_failures, 0u);
  EXPECT_EQ(verdict.clauses_run, 0u);
  EXPECT_EQ(verdict.line(), "VERDICT: NOT CERTIFIED (the plugin could not be loaded)");

  const std::string text = to_text(certificate);
  EXPECT_EQ(text.find("Warnings"), std::string::npos) << text;
  EXPECT_EQ(text.find("warning:"), std::string::npos) << text;
  EXPECT_NE(text.find("The plugin could not be loaded: dlopen failed"), std::string::npos);
  EXPECT_NE(text.find("ALLOC-11   SHOULD  not run"), std::string::npos) << text;

  const std::string md = to_markdown(certificate);
  EXPECT_EQ(md.find("Warnings"), std::string::npos) << md;
  EXPECT_EQ(md.find("Failed MUST clauses"), std::string::npos) << md;
  EXPECT_NE(md.find("The plugin could not be loaded: dlopen failed"), std::string::npos);
  EXPECT_NE(md.find("| ALLOC-11 | SHOULD | "), std::string::npos) << md;
  EXPECT_NE(md.find(" not run |\n"), std::string::npos) << md;

  const std::string html = to_html(certificate);
  EXPECT_EQ(html.find("Warnings"), std::string::npos);
  EXPECT_EQ(html.find("Failed MUST clauses"), std::string::npos);
  EXPECT_NE(html.find("The plugin could not be loaded: dlopen failed"), std::string::npos);
  EXPECT_NE(html.find("[ALLOC-11] not run: the plugin could not be loaded: dlopen failed"),
            std::string::npos);

  const std::string json = to_json(certificate);
  EXPECT_EQ(json.find("\"outcome\": \"fail\""), std::string::npos);
  EXPECT_NE(json.find("\"message\": \"[ALLOC-11] not run: the plugin could not be loaded: "
                      "dlopen failed\""),
            std::string::npos)
      << json;
  EXPECT_NE(json.find("\"clauses_run\": 0,"), std::string::npos);

  // JUnit, by the verdict's policy: each MUST clause an error of type not_run (it did not
  // run), each SHOULD or INFO clause skipped, none a failure.
  const std::string xml = to_junit(certificate);
  const std::string count = std::to_string(report.results.size());
  const auto musts = std::count_if(report.results.begin(), report.results.end(),
                                   [](const ClauseResult& r) { return r.level == Level::must; });
  EXPECT_NE(
      xml.find("tests=\"" + count + "\" failures=\"0\" errors=\"" + std::to_string(musts) +
               "\" skipped=\"" +
               std::to_string(report.results.size() - static_cast<std::size_t>(musts)) + "\""),
      std::string::npos)
      << xml;
  EXPECT_GT(musts, 0);
  EXPECT_NE(xml.find("<error type=\"not_run\" message=\"[LIFE-2] not run: the plugin could "
                     "not be loaded: dlopen failed\">"),
            std::string::npos)
      << xml;
  EXPECT_NE(xml.find("<skipped message=\"[ALLOC-11] not run: the plugin could not be loaded: "
                     "dlopen failed\"/>"),
            std::string::npos)
      << xml;
}

TEST(Verdict, ShouldFailuresAreWarningsAndInfoNeverDecides) {
  CertificationReport report = full_report();
  set_result(report,
             result("ALLOC-11", BackendKind::fake, Level::should, Outcome::fail, "[ALLOC-11] a"));
  set_result(report, result("ALLOC-10", BackendKind::fake, Level::should, Outcome::not_supported));
  set_result(report, result("PERF-1", BackendKind::fake, Level::info, Outcome::fail, "[PERF-1] b"));
  const Verdict verdict = certify(report).verdict;
  EXPECT_TRUE(verdict.certified);
  EXPECT_EQ(verdict.line(), "VERDICT: CERTIFIED (fake)");
  ASSERT_EQ(verdict.warnings.size(), 2u);
  EXPECT_EQ(report.results[verdict.warnings[0]].clause->id, "ALLOC-10");
  EXPECT_EQ(report.results[verdict.warnings[1]].clause->id, "ALLOC-11");
  const std::string text = to_text(certify(report));
  EXPECT_NE(text.find("warning: ALLOC-11 (fake, fail): [ALLOC-11] a"), std::string::npos) << text;

  // The same policy everywhere (meaning_of): JUnit is not red for a CERTIFIED plugin; the
  // SHOULD failure passes with its warning, the SHOULD not supported is skipped.
  const std::string xml = to_junit(certify(report));
  EXPECT_NE(xml.find("failures=\"0\" errors=\"0\""), std::string::npos) << xml;
  EXPECT_NE(xml.find("<system-out>warning (SHOULD, fail): [ALLOC-11] a</system-out>"),
            std::string::npos)
      << xml;
  EXPECT_NE(xml.find("<system-out>warning (INFO, fail): [PERF-1] b</system-out>"),
            std::string::npos)
      << xml;
  const std::string json = to_json(certify(report));
  EXPECT_NE(json.find("\"outcome\": \"fail\",\n      \"meaning\": \"warning\""), std::string::npos)
      << json;
  EXPECT_NE(json.find("\"outcome\": \"fail\",\n      \"meaning\": \"noted\""), std::string::npos)
      << json;
}

TEST(Verdict, NoBackendRanIsNotCertified) {
  CertificationReport report = small_report();
  report.backends = {{BackendKind::gpu, false, "", "no GPU: none"}};
  report.results.clear();
  const Verdict verdict = certify(report).verdict;
  EXPECT_FALSE(verdict.certified);
  EXPECT_EQ(verdict.line(), "VERDICT: NOT CERTIFIED (no backend ran)");
}

TEST(Report, JUnitHasOneTestcasePerResultWithFailuresErrorsAndSkips) {
  CertificationReport report = small_report();
  report.results.push_back(
      result("LIFE-2", BackendKind::fake, Level::must, Outcome::fail, "[LIFE-2] <bad> & \"x\""));
  report.results.push_back(
      result("LIFE-5", BackendKind::fake, Level::must, Outcome::crash, "[LIFE-5] SIGSEGV"));
  report.results.push_back(
      result("IPC-7", BackendKind::fake, Level::must, Outcome::not_supported, "[IPC-7] no"));
  const std::string xml = to_junit(certify(report));
  EXPECT_NE(xml.find("<testsuites name=\"emm-certify\" tests=\"4\" failures=\"1\" errors=\"1\" "
                     "skipped=\"1\""),
            std::string::npos)
      << xml;
  EXPECT_NE(xml.find("<testcase classname=\"REG\" name=\"REG-1 fake\" time=\"0.002\"/>"),
            std::string::npos)
      << xml;
  EXPECT_NE(
      xml.find("<failure type=\"MUST\" message=\"[LIFE-2] &lt;bad&gt; &amp; &quot;x&quot;\">"),
      std::string::npos)
      << xml;
  EXPECT_NE(xml.find("<error type=\"crash\" message=\"[LIFE-5] SIGSEGV\">"), std::string::npos)
      << xml;
  EXPECT_NE(xml.find("<skipped message=\"[IPC-7] no\"/>"), std::string::npos) << xml;
  EXPECT_NE(xml.find("<property name=\"verdict\" value=\"NOT CERTIFIED\"/>"), std::string::npos);
}

TEST(Report, MarkdownCertificateNamesPluginCapabilitiesBackendsAndVerdict) {
  CertificationReport report = full_report();
  set_result(report,
             result("ALLOC-11", BackendKind::fake, Level::should, Outcome::fail, "[ALLOC-11] a|b"));
  const std::string md = to_markdown(certify(report));
  EXPECT_NE(md.find("# emm-certify certificate: x\n"), std::string::npos) << md;
  EXPECT_NE(md.find("**CERTIFIED** — VERDICT: CERTIFIED (fake). Backends covered: fake (emmkit "
                    "fake device). Not run: gpu (no GPU: none)."),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("| memory_info | yes |"), std::string::npos);
  EXPECT_NE(md.find("**defer_cleanup behaviour:** queues frees"), std::string::npos);
  EXPECT_NE(md.find("| REG-1 | MUST | "), std::string::npos);
  EXPECT_NE(md.find("| pass | not run |"), std::string::npos) << md;
  EXPECT_NE(md.find("- **ALLOC-11** (fake, fail): \\[ALLOC-11\\] a\\|b"), std::string::npos) << md;
  EXPECT_NE(md.find("VERDICT: CERTIFIED"), std::string::npos);
}

TEST(Report, MarkdownKeepsPluginTextInert) {
  // Each of these would become HTML, a link, an image, emphasis, math or a cell of its own in a
  // rendered Markdown report if written as it is.
  constexpr const char* kHostile =
      "<img src=x onerror=alert(1)> <script>x</script> [click](https://evil.example/a) "
      "![i](http://e.example/p.png) <https://auto.example> www.evil.example mail@evil.example "
      "*em* _em_ ~~s~~ `code` $x^2$ &lt;b&gt; a|b \\ snake_case";
  CertificationReport report = full_report();
  report.plugin.description.name = kHostile;
  report.plugin.description.defer_cleanup_behaviour = kHostile;
  report.plugin.description.path = "/p/a`b|c <i>.so";
  set_result(report, result("ALLOC-11", BackendKind::fake, Level::should, Outcome::fail,
                            std::string("[ALLOC-11] ") + kHostile));
  const std::string md = to_markdown(certify(report));
  constexpr const char* kInert =
      "\\<img src=x onerror=alert(1)\\> \\<script\\>x\\</script\\> \\[click\\](https\\://"
      "evil.example/a) !\\[i\\](http\\://e.example/p.png) \\<https\\://auto.example\\> "
      "www\\.evil.example mail\\@evil.example \\*em\\* \\_em\\_ \\~\\~s\\~\\~ \\`code\\` "
      "\\$x^2\\$ \\&lt;b\\&gt; a\\|b \\\\ snake_case";
  EXPECT_NE(md.find(std::string("# emm-certify certificate: ") + kInert + "\n"), std::string::npos)
      << md;
  EXPECT_NE(md.find(std::string("**defer_cleanup behaviour:** ") + kInert), std::string::npos);
  EXPECT_NE(md.find(std::string("- **ALLOC-11** (fake, fail): \\[ALLOC-11\\] ") + kInert),
            std::string::npos);
  EXPECT_NE(md.find("| Library | `` /p/a`b\\|c <i>.so `` |"), std::string::npos) << md;
  // Outside code spans and fences no '<' comes from the plugin unescaped.
  for (std::size_t at = md.find('<'); at != std::string::npos; at = md.find('<', at + 1)) {
    const bool ours = md.compare(at, 9, "<details>") == 0 ||
                      md.compare(at, 10, "</details>") == 0 ||
                      md.compare(at, 9, "<summary>") == 0 || md.compare(at, 10, "</summary>") == 0;
    const bool escaped = at > 0 && md[at - 1] == '\\';
    const bool in_path = md.compare(at, 3, "<i>") == 0 &&
                         md.rfind("| Library |", at) != std::string::npos &&
                         md.find('\n', md.rfind("| Library |", at)) > at;
    EXPECT_TRUE(ours || escaped || in_path) << "an unescaped '<' at " << md.substr(at, 40);
  }
}

TEST(ResultEncoding, AnswersCarryTheirNonceAndKind) {
  const ClauseResult r = result("ALLOC-1", BackendKind::fake, Level::must, Outcome::pass, "ok");
  const std::optional<ChildAnswer> loaded =
      decode_answer(encode_answer(ChildAnswer::loaded("n1", r)));
  ASSERT_TRUE(loaded.has_value());
  EXPECT_EQ(loaded->kind, ChildAnswer::Kind::result);
  EXPECT_EQ(loaded->nonce, "n1");
  EXPECT_EQ(loaded->result.clause, nullptr) << "the parent stamps the clause, not the child";
  EXPECT_EQ(loaded->result.outcome, Outcome::pass);
  EXPECT_EQ(loaded->result.message, "ok");
  ClauseResult stamped = loaded->result;
  stamp_result(stamped, *catalogue().find("ALLOC-10"), BackendKind::gpu, Level::should);
  EXPECT_EQ(stamped.clause->id, "ALLOC-10");
  EXPECT_EQ(stamped.backend, BackendKind::gpu);
  EXPECT_EQ(stamped.level, Level::should);
  EXPECT_EQ(encode_answer(ChildAnswer::loaded("n1", r)).find("ALLOC-1"), std::string::npos)
      << "an answer names no clause: a child cannot answer for another";
  EXPECT_TRUE(loaded->reusable);
  ChildAnswer retiring = ChildAnswer::loaded("n3", r);
  retiring.reusable = false;
  const std::optional<ChildAnswer> retired = decode_answer(encode_answer(retiring));
  ASSERT_TRUE(retired.has_value());
  EXPECT_FALSE(retired->reusable);

  const std::string failed = encode_answer(ChildAnswer::not_loaded("n2", "dlopen: no such file"));
  const std::optional<ChildAnswer> not_loaded = decode_answer(failed);
  ASSERT_TRUE(not_loaded.has_value());
  EXPECT_EQ(not_loaded->kind, ChildAnswer::Kind::load_failure);
  EXPECT_EQ(not_loaded->nonce, "n2");
  EXPECT_EQ(not_loaded->load_failure, "dlopen: no such file");
  EXPECT_FALSE(not_loaded->reusable) << "a process that could not load the plugin is replaced";

  EXPECT_FALSE(decode_answer("").has_value());
  EXPECT_FALSE(decode_answer(encode_result(r)).has_value()) << "a bare result is not an answer";
  EXPECT_FALSE(decode_answer(failed.substr(0, failed.size() - 1)).has_value());
  EXPECT_FALSE(decode_answer(failed + "x").has_value());
  std::string unknown_kind = failed;
  unknown_kind.replace(unknown_kind.find("12:load_failure"), 15, "12:load_success");
  EXPECT_FALSE(decode_answer(unknown_kind).has_value()) << "an answer kind the codec does not have";
  std::string unknown_reuse = failed;
  unknown_reuse.replace(unknown_reuse.rfind("6:retire"), 8, "6:rehire");
  EXPECT_FALSE(decode_answer(unknown_reuse).has_value()) << "neither reusable nor retire";
  std::string bad_result = encode_answer(ChildAnswer::loaded("n1", r));
  bad_result.replace(bad_result.find("4:pass"), 6, "4:pats");
  EXPECT_FALSE(decode_answer(bad_result).has_value()) << "a result that does not decode";
}

TEST(ResultEncoding, RoundTripsEveryField) {
  ClauseResult r =
      result("ALLOC-10", BackendKind::gpu, Level::should, Outcome::timeout, "[ALLOC-10] 12:34\nx");
  r.properties = {{"a", "1"}, {"b:c", ""}};
  r.notes = {"n1", ""};
  r.unobserved = {"host-free deferral"};
  const std::optional<ClauseResult> back = decode_result(encode_result(r));
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(back->clause, r.clause);
  EXPECT_EQ(back->backend, r.backend);
  EXPECT_EQ(back->level, r.level);
  EXPECT_EQ(back->outcome, r.outcome);
  EXPECT_EQ(back->message, r.message);
  EXPECT_DOUBLE_EQ(back->duration_ms, r.duration_ms);
  EXPECT_EQ(back->properties, r.properties);
  EXPECT_EQ(back->notes, r.notes);
  EXPECT_EQ(back->unobserved, r.unobserved);
  EXPECT_FALSE(back->reproducer.has_value());

  Reproducer reproducer;
  reproducer.seed = 18446744073709551615u;
  reproducer.budget = 500;
  reproducer.sequences = 12;
  reproducer.shrinks = 40;
  reproducer.calls = {"auto m1 = context().memalloc(4097);", "for (...)\n  x();", ""};
  reproducer.gtest = "TEST(EmmReproducer, ALLOC_10) {\n}\n";
  reproducer.python = "m1 = ctx.memalloc(4097)\n";
  reproducer.for_python = true;
  r.reproducer = reproducer;
  const std::optional<ClauseResult> with = decode_result(encode_result(r));
  ASSERT_TRUE(with.has_value());
  ASSERT_TRUE(with->reproducer.has_value());
  EXPECT_EQ(with->reproducer->seed, reproducer.seed);
  EXPECT_EQ(with->reproducer->budget, reproducer.budget);
  EXPECT_EQ(with->reproducer->sequences, reproducer.sequences);
  EXPECT_EQ(with->reproducer->shrinks, reproducer.shrinks);
  EXPECT_EQ(with->reproducer->calls, reproducer.calls);
  EXPECT_EQ(with->reproducer->gtest, reproducer.gtest);
  EXPECT_EQ(with->reproducer->python, reproducer.python);
  EXPECT_TRUE(with->reproducer->for_python);
}

TEST(ResultEncoding, RejectsTruncatedOrForeignPayloads) {
  const std::string good =
      encode_result(result("REG-1", BackendKind::fake, Level::must, Outcome::pass));
  EXPECT_FALSE(decode_result("").has_value());
  EXPECT_FALSE(decode_result("hello").has_value());
  EXPECT_FALSE(decode_result(good.substr(0, good.size() - 1)).has_value());
  EXPECT_FALSE(decode_result(good + "x").has_value());
  EXPECT_TRUE(decode_result(good).has_value());
  std::string unknown = good;
  unknown.replace(unknown.find("5:REG-1"), 7, "5:REG-0");
  EXPECT_FALSE(decode_result(unknown).has_value()) << "a clause the catalogue does not have";
}

TEST(ResultEncoding, KeepsEveryDurationExactlyAndRefusesImpossibleOnes) {
  // Every finite duration survives the codec exactly (fuzz_result_codec's round-trip property;
  // a fixed-point encoding in a small buffer would cut 1e300 to its first digits).
  for (double duration :
       {0.0, 1.25, 1e-9, 123456.789, 1e56, 1e300, std::numeric_limits<double>::max()}) {
    ClauseResult r = result("LIFE-2", BackendKind::fake, Level::must, Outcome::pass);
    r.duration_ms = duration;
    const std::optional<ClauseResult> back = decode_result(encode_result(r));
    ASSERT_TRUE(back.has_value()) << duration;
    EXPECT_EQ(back->duration_ms, duration);
    EXPECT_EQ(encode_result(*back), encode_result(r));
  }
  const std::string good =
      encode_result(result("LIFE-2", BackendKind::fake, Level::must, Outcome::pass));
  const std::string zero = encode_result([] {
    ClauseResult r = result("LIFE-2", BackendKind::fake, Level::must, Outcome::pass);
    r.duration_ms = 0;
    return r;
  }());
  for (const char* duration : {"3:nan", "3:inf", "4:-inf", "2:-1", "6:1e9999"}) {
    std::string garbled = zero;
    garbled.replace(garbled.find("1:0"), 3, duration);
    EXPECT_FALSE(decode_result(garbled).has_value()) << "a duration of " << duration;
  }
  EXPECT_TRUE(decode_result(good).has_value());
}

TEST(Report, UnobservedPartsAreNamedOnTheCertificate) {
  CertificationReport report = full_report();
  ClauseResult deferred = result("DEFER-3", BackendKind::gpu, Level::must, Outcome::pass);
  deferred.unobserved = {"host-free deferral"};
  set_result(report, deferred);
  report.backends[1].ran = true;
  for (const Clause* clause : catalogue().plugin_clauses()) {
    if (clause->id != "DEFER-3") {
      report.results.push_back(
          result(clause->id.c_str(), BackendKind::gpu, clause->level, Outcome::pass));
    }
  }
  const Certificate certificate = certify(report);
  const std::string note = "DEFER-3: host-free deferral not observable on gpu";
  EXPECT_NE(to_text(certificate).find("  " + note + "\n"), std::string::npos);
  EXPECT_NE(to_markdown(certificate).find("- " + note + "\n"), std::string::npos);
  EXPECT_NE(to_json(certificate).find("\"" + note + "\""), std::string::npos);
  EXPECT_TRUE(certificate.verdict.certified);
}

}  // namespace
}  // namespace emm::conformance
