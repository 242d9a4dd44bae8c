// ipc_records.hpp — the file format the two-process IPC test and its importer exchange:
// a u32 count, then for each record a u32 length and that many bytes (native byte order: both
// processes run on one machine).
#pragma once

#include <cstdint>
#include <cstring>
#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace emm::test {

using Record = std::vector<std::byte>;

inline void write_records(const std::string& path, const std::vector<Record>& records) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  auto put = [&out](std::uint32_t value) {
    out.write(reinterpret_cast<const char*>(&value), sizeof value);
  };
  put(static_cast<std::uint32_t>(records.size()));
  for (const Record& record : records) {
    put(static_cast<std::uint32_t>(record.size()));
    out.write(reinterpret_cast<const char*>(record.data()),
              static_cast<std::streamsize>(record.size()));
  }
  if (!out) throw std::runtime_error("cannot write " + path);
}

inline std::vector<Record> read_records(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot open " + path);
  auto get = [&in, &path] {
    std::uint32_t value = 0;
    if (!in.read(reinterpret_cast<char*>(&value), sizeof value)) {
      throw std::runtime_error(path + " is truncated");
    }
    return value;
  };
  const std::uint32_t count = get();
  if (count > 1024) throw std::runtime_error(path + ": implausible record count");
  std::vector<Record> records(count);
  for (Record& record : records) {
    const std::uint32_t length = get();
    if (length > (std::uint32_t{1} << 26)) throw std::runtime_error(path + ": record too long");
    record.resize(length);
    if (!in.read(reinterpret_cast<char*>(record.data()), length)) {
      throw std::runtime_error(path + " is truncated");
    }
  }
  return records;
}

}  // namespace emm::test
