// runner/plugin_library_subject.hpp — an EMM plugin library as emm-certify's subject
// (subject.hpp): the plugin clauses, loaded with emm::load_plugin in each child. A Python class
// (python_class_subject.cpp) is one too, loaded through libemm_python.
#pragma once

#include <string>

#include "emm/conformance/subject.hpp"

namespace emm::conformance {

class PluginLibrarySubject : public Subject {
 public:
  explicit PluginLibrarySubject(std::string path);

  SubjectKind kind() const noexcept override { return SubjectKind::emm_plugin; }
  std::string path() const override { return path_; }
  std::string title() const override { return path_; }
  std::vector<const Clause*> clauses() const override;
  std::vector<std::string> preface() const override;
  ProbeResult probe(const ProbeSettings& settings) const override;
  ProbeResult probe_in_process() const override;
  void describe(const ProbeResult& probe, std::ostream& out, std::ostream& err) const override;
  std::function<LoadedSubject()> loader() const override;

 protected:
  // `load` brings the library into the calling process; `python_plugin`: reproducers are shown
  // as Python (RunOptions::python_plugin).
  PluginLibrarySubject(std::string path, PluginLoad load, bool python_plugin);

 private:
  std::string path_;
  PluginLoad load_;
  bool python_plugin_ = false;
};

}  // namespace emm::conformance
