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

}  // namespace emm::conformance
