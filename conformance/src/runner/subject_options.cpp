// The subject kinds named by options of their own (subject.hpp, SubjectOption): this tree's rows
// and those a program adds. Apart from subject.cpp so that a build of the command line alone
// (suites/python's emm_python_absent_cli_tests) links without the subjects themselves.
#include <deque>
#include <iterator>
#include <utility>
#include <vector>

#include "emm/conformance/certify_cli.hpp"
#include "emm/conformance/subject.hpp"
#include "emm/errors.hpp"

namespace emm::conformance {
namespace {

// This tree's subject kinds beyond the three built-in ones, one row each: a kind in a file of
// its own, `SubjectOption my_kind_subject_option();`, declared here and listed below.
std::vector<SubjectOption> in_tree_options() { return {}; }

// The options of subject_options(): in_tree_options(), then those add_subject_option added. A
// deque, so that the pointers subject_options() hands out stay valid as options are added.
std::deque<SubjectOption>& options_store() {
  static std::deque<SubjectOption> store = [] {
    std::vector<SubjectOption> rows = in_tree_options();
    return std::deque<SubjectOption>(std::make_move_iterator(rows.begin()),
                                     std::make_move_iterator(rows.end()));
  }();
  return store;
}

std::vector<const SubjectOption*>& options_view() {
  static std::vector<const SubjectOption*> view = [] {
    std::vector<const SubjectOption*> all;
    for (const SubjectOption& option : options_store()) all.push_back(&option);
    return all;
  }();
  return view;
}

}  // namespace

const std::vector<const SubjectOption*>& subject_options() { return options_view(); }

const SubjectOption* find_subject_option(std::string_view flag) {
  for (const SubjectOption* option : subject_options()) {
    if (option->flag == flag) return option;
  }
  return nullptr;
}

void add_subject_option(SubjectOption option) {
  if (!option.flag.starts_with("--") || option.flag.size() < 3) {
    throw Error("add_subject_option: the flag '" + option.flag +
                "' must be an option name starting with --");
  }
  if (!option.make) throw Error("add_subject_option: " + option.flag + " has no make function");
  if (is_certify_option(option.flag)) {
    throw Error("add_subject_option: " + option.flag + " is emm-certify's own option");
  }
  if (find_subject_option(option.flag) != nullptr) {
    throw Error("add_subject_option: " + option.flag + " is added already");
  }
  options_view().push_back(&options_store().emplace_back(std::move(option)));
}

}  // namespace emm::conformance
