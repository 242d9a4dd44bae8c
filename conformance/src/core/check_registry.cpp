#include "emm/conformance/check_registry.hpp"

#include <array>

#include "checks/checks.hpp"

namespace emm::conformance {
namespace {

struct Entry {
  std::string_view id;
  PluginClause key;
  CheckFunction body;
};

#define EMM_CHECK_REGISTRY_ENTRY_(Key, Id, TestName) \
  Entry{Id, PluginClause::Key, &checks::check<PluginClause::Key>},
constexpr std::array<Entry, kPluginClauseCount> kEntries{
    {EMM_PLUGIN_CLAUSES(EMM_CHECK_REGISTRY_ENTRY_)}};
#undef EMM_CHECK_REGISTRY_ENTRY_

const Entry* find(std::string_view id) noexcept {
  for (const Entry& entry : kEntries) {
    if (entry.id == id) return &entry;
  }
  return nullptr;
}

}  // namespace

CheckFunction check_for(const Clause& clause) noexcept {
  const Entry* entry = find(clause.id);
  return entry != nullptr ? entry->body : nullptr;
}

std::optional<PluginClause> plugin_clause(std::string_view id) noexcept {
  const Entry* entry = find(id);
  if (entry == nullptr) return std::nullopt;
  return entry->key;
}

bool destroys_contexts(const Clause& clause) noexcept {
  // The only body that calls Backend::destroy_released_contexts() (life_checks.cpp). A body
  // that started to without being listed here would cost a worker replacement, not a verdict.
  return plugin_clause(clause.id) == PluginClause::LIFE_8;
}

bool imports_in_another_process(const Clause& clause) noexcept {
  // ipc_checks.cpp (import_elsewhere() in check_helpers) and device_checks.cpp.
  const std::optional<PluginClause> key = plugin_clause(clause.id);
  return key == PluginClause::IPC_1 || key == PluginClause::IPC_2 || key == PluginClause::DEV_4;
}

bool runs_threads(const Clause& clause) noexcept {
  // The properties whose commands run threads at once (engine/commands.cpp): ALLOC-10's
  // `threads` (and its fixed scenario), and `reset_releasing` (reset() while other threads drop
  // references) of ALLOC-10 and LIFE-8.
  const std::optional<PluginClause> key = plugin_clause(clause.id);
  return key == PluginClause::ALLOC_10 || key == PluginClause::LIFE_8;
}

}  // namespace emm::conformance
