// ClauseRun's imports (ipc_importer.hpp) in its ImportResult form (clause_run.hpp): plain
// imports, each handle opened in device 0's context, read and closed.
#include "emm/conformance/clause_run.hpp"
#include "emm/conformance/ipc_importer.hpp"

namespace emm::conformance {
namespace {

ImportRequest plain_request(const std::vector<std::vector<std::byte>>& handles) {
  ImportRequest request;
  for (const auto& handle : handles) {
    ImportItem item;
    item.handle = handle;
    request.items.push_back(std::move(item));
  }
  return request;
}

std::vector<ImportResult> results_of(ImportResponse response) {
  std::vector<ImportResult> results;
  for (ImportAnswer& answer : response.answers) {
    results.push_back({answer.ok, std::move(answer.bytes), std::move(answer.error)});
  }
  return results;
}

}  // namespace

std::vector<ImportResult> import_handles(Runtime& runtime,
                                         const std::vector<std::vector<std::byte>>& handles) {
  return results_of(serve_import_request(runtime, plain_request(handles)));
}

std::vector<ImportResult> run_ipc_importer(const std::string& importer,
                                           const std::vector<std::vector<std::byte>>& handles,
                                           int timeout_s) {
  ImportResponse response =
      run_import(importer, plain_request(handles), std::chrono::seconds(timeout_s));
  if (!response.error.empty()) throw Error(importer + " refused the request: " + response.error);
  return results_of(std::move(response));
}

}  // namespace emm::conformance
