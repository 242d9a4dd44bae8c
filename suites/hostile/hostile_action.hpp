// hostile_action.hpp — the attacks of the hostile-plugin suite: what a broken plugin does to
// the process that loads it, and where.
//
// The suite's one plugin library (hostile_plugin.cpp) calls strike(site) at each place plugin
// code runs. The environment the test gives emm-certify (inherited by every child it forks)
// picks the attack and the place:
//
//   EMM_HOSTILE_ACTION=segv EMM_HOSTILE_SITE=memalloc emm-certify --plugin libhostile_plugin.so
//
// strike() does nothing unless `site` is EMM_HOSTILE_SITE, and strikes at most once per process
// (a forking or hoarding attack repeated on every memalloc would bury the behaviour under test).
// Unknown names do nothing: the plugin is then the correct BaselinePool.
//
// EMM_HOSTILE_TOKEN is left in the environment of every process the attacks start, so that the
// test finds any process that outlives emm-certify (check_hostile.py).
//
// Thread-safety: strike() may be called from any thread; an atomic flag lets one call act.
#pragma once

#include "emm/plugin_declaration.hpp"

namespace emm::hostile {

// Where plugin code runs: a static initialiser of the library, the entry point
// (emm_memory_manager_plugin), the constructor given a real context (not the null-context
// probe), and three methods.
enum class Site { load, entry, constructor, initialize, memalloc, reset };

// Runs the configured attack when `site` is the configured one (at most once per process).
void strike(Site site);

// What the entry point declares: BaselinePool's declaration, or — for the attack "weird_text" —
// a name and defer_cleanup text holding noncharacters, invalid UTF-8 and terminal escapes.
PluginDeclaration declaration();

}  // namespace emm::hostile
