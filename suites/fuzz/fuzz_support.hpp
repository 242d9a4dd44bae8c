// fuzz_support.hpp — what the fuzz targets in suites/fuzz share.
//
//   if (!round_trips) emm::fuzz::finding("decode(encode(x)) differs from x: ...");   // aborts
//   if (auto dir = emm::fuzz::seed_directory()) { emm::fuzz::write_seed(*dir, "a", bytes); }
//
// finding() reports a broken property and aborts, which libFuzzer (and the corpus replay)
// turns into a kept crashing input. Seeds: a target that can make its own seed corpus from real
// values does so in LLVMFuzzerInitialize when EMM_FUZZ_WRITE_SEEDS names a folder, then exits,
// so the committed corpus is made by the code that reads it:
//   export EMM_FUZZ_WRITE_SEEDS=suites/fuzz/corpus/fuzz_ipc_handle
//   build/default/suites/fuzz/emm_fuzz_replay_fuzz_ipc_handle
//
// Test-only code; single-threaded.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace emm::fuzz {

[[noreturn]] inline void finding(const std::string& what) {
  std::cerr << "FUZZ FINDING: " << what << std::endl;
  std::abort();
}

inline std::string_view as_text(const std::uint8_t* data, std::size_t size) {
  return size == 0 ? std::string_view()
                   : std::string_view(reinterpret_cast<const char*>(data), size);
}

inline std::optional<std::string> seed_directory() {
  const char* directory = std::getenv("EMM_FUZZ_WRITE_SEEDS");
  if (directory == nullptr || *directory == '\0') return std::nullopt;
  return std::string(directory);
}

inline void write_seed(const std::string& directory, const std::string& name,
                       std::span<const std::byte> bytes) {
  const std::string path = directory + "/" + name;
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(bytes.data()),
            static_cast<std::streamsize>(bytes.size()));
  if (!out) finding("cannot write the seed " + path);
  std::cout << "wrote " << path << " (" << bytes.size() << " bytes)\n";
}

inline void write_seed(const std::string& directory, const std::string& name,
                       std::string_view text) {
  write_seed(directory, name, std::as_bytes(std::span(text.data(), text.size())));
}

}  // namespace emm::fuzz
