// fuzz_replay_main.cpp — runs a fuzz target's LLVMFuzzerTestOneInput over files, without
// libFuzzer: the corpus replay CTest runs on every build (fuzz.<target>.corpus).
//
//   emm_fuzz_replay_fuzz_catalogue suites/fuzz/corpus/fuzz_catalogue [more files or folders]
//
// Each argument is a file or a folder of files (not recursive, in name order). A finding aborts
// inside the target, as under libFuzzer; the exit status is 0 when every input ran, 1 when an
// argument cannot be read or names no input at all.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <string>
#include <system_error>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size);
// Optional, as under libFuzzer: called once before the first input.
extern "C" __attribute__((weak)) int LLVMFuzzerInitialize(int* argc, char*** argv);

namespace {

std::vector<std::filesystem::path> inputs_of(const std::filesystem::path& argument) {
  std::vector<std::filesystem::path> inputs;
  std::error_code error;
  if (std::filesystem::is_directory(argument, error)) {
    for (const auto& entry : std::filesystem::directory_iterator(argument, error)) {
      if (entry.is_regular_file()) inputs.push_back(entry.path());
    }
    std::sort(inputs.begin(), inputs.end());
  } else if (std::filesystem::is_regular_file(argument, error)) {
    inputs.push_back(argument);
  }
  return inputs;
}

}  // namespace

int main(int argc, char** argv) {
  if (LLVMFuzzerInitialize != nullptr) LLVMFuzzerInitialize(&argc, &argv);
  std::size_t replayed = 0;
  for (int i = 1; i < argc; ++i) {
    const std::vector<std::filesystem::path> inputs = inputs_of(argv[i]);
    if (inputs.empty()) {
      std::cerr << argv[0] << ": " << argv[i] << " is no input file nor a folder holding one\n";
      return 1;
    }
    for (const std::filesystem::path& input : inputs) {
      std::ifstream file(input, std::ios::binary);
      const std::vector<char> bytes{std::istreambuf_iterator<char>(file),
                                    std::istreambuf_iterator<char>()};
      if (!file.good() && !file.eof()) {
        std::cerr << argv[0] << ": cannot read " << input << '\n';
        return 1;
      }
      // A copy of exactly the input's size, so that ASan sees a read past its end.
      std::vector<std::uint8_t> data(bytes.begin(), bytes.end());
      LLVMFuzzerTestOneInput(data.data(), data.size());
      ++replayed;
    }
  }
  if (replayed == 0) {
    std::cerr << "usage: " << argv[0] << " FILE_OR_FOLDER...\n";
    return 1;
  }
  std::cout << "replayed " << replayed << " input(s)\n";
  return 0;
}
