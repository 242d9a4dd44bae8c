// emm/conformance/nep49_certify.hpp — what emm-certify needs to certify a NEP 49 handler with
// the same scheduler, outcomes and reports as a plugin: the load probe and the subject loader.
//
//   ProbeResult probe = probe_nep49(spec, probe_settings);      // in a child
//   settings.load_subject = nep49_subject_loader(spec);          // run in each clause child
//
// Like plugin_probe.hpp, the handler is loaded (and CPython started, for --nep49) only in child
// processes; probe_nep49_in_process is for --in-process.
#pragma once

#include <functional>

#include "emm/conformance/clause_scheduler.hpp"
#include "emm/conformance/nep49_subject.hpp"
#include "emm/conformance/plugin_probe.hpp"

namespace emm::conformance {

// loaded, with description.name = the handler's name (up to its NUL, or its 127 bytes) and
// description.path = spec.text(); or !loaded with the cause.
ProbeResult probe_nep49(const Nep49SubjectSpec& spec, const ProbeSettings& settings);
ProbeResult probe_nep49_in_process(const Nep49SubjectSpec& spec);

std::function<LoadedSubject()> nep49_subject_loader(const Nep49SubjectSpec& spec);

}  // namespace emm::conformance
