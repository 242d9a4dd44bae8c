#include "emm/conformance/report_paths.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <utility>
#include <vector>

namespace emm::conformance {
namespace {

struct FileIdentity {
  dev_t device = 0;
  ino_t inode = 0;
  friend bool operator==(const FileIdentity&, const FileIdentity&) = default;
};

std::string os_reason(int error) { return std::string(" (") + std::strerror(error) + ")"; }

std::string directory_of(const std::string& path) {
  const std::size_t slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

std::string base_of(const std::string& path) {
  const std::size_t slash = path.find_last_of('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

// The file a writable `path` is, however spelled: the canonical directory and the name in it.
std::string canonical(const std::string& path) {
  char* directory = ::realpath(directory_of(path).c_str(), nullptr);
  std::string result = directory != nullptr ? std::string(directory) : directory_of(path);
  std::free(directory);
  return result + "/" + base_of(path);
}

// The file a writable `path` would be: its identity when it exists, else nullopt. Throws
// UsageError when it cannot be written.
std::optional<FileIdentity> check_one(std::string_view flag, const std::string& path) {
  const std::string where = std::string(flag) + " " + path + ": ";
  struct stat info {};
  if (::stat(path.c_str(), &info) == 0) {
    if (S_ISDIR(info.st_mode)) throw UsageError(where + "is a directory; give a file path");
    if (!S_ISREG(info.st_mode)) throw UsageError(where + "is not a regular file");
    if (::access(path.c_str(), W_OK) != 0) {
      throw UsageError(where + "cannot be written" + os_reason(errno));
    }
    return FileIdentity{info.st_dev, info.st_ino};
  }
  if (errno != ENOENT) throw UsageError(where + "cannot be examined" + os_reason(errno));
  const std::string directory = directory_of(path);
  struct stat dir {};
  if (::stat(directory.c_str(), &dir) != 0) {
    throw UsageError(where + "the directory " + directory + " does not exist" + os_reason(errno));
  }
  if (!S_ISDIR(dir.st_mode)) {
    throw UsageError(where + directory + " is not a directory" + os_reason(ENOTDIR));
  }
  if (::access(directory.c_str(), W_OK | X_OK) != 0) {
    throw UsageError(where + "the directory " + directory + " does not accept a new file" +
                     os_reason(errno));
  }
  return std::nullopt;
}

}  // namespace

// The --logs directory: an existing writable directory, or one that can be made in an existing
// writable parent.
void check_logs_directory(const std::string& path) {
  const std::string where = "--logs " + path + ": ";
  struct stat info {};
  if (::stat(path.c_str(), &info) == 0) {
    if (!S_ISDIR(info.st_mode)) throw UsageError(where + "is not a directory");
    if (::access(path.c_str(), W_OK | X_OK) != 0) {
      throw UsageError(where + "does not accept new files" + os_reason(errno));
    }
    return;
  }
  const std::string parent = directory_of(path);
  if (::stat(parent.c_str(), &info) != 0 || !S_ISDIR(info.st_mode)) {
    throw UsageError(where + "cannot be made: the directory " + parent + " does not exist" +
                     os_reason(ENOENT));
  }
  if (::access(parent.c_str(), W_OK | X_OK) != 0) {
    throw UsageError(where + "cannot be made in " + parent + os_reason(errno));
  }
}

void check_report_paths(const ReportPaths& reports, const std::string& plugin_path) {
  if (!reports.logs.empty()) check_logs_directory(reports.logs);
  std::optional<FileIdentity> plugin;
  struct stat info {};
  if (::stat(plugin_path.c_str(), &info) == 0) plugin = FileIdentity{info.st_dev, info.st_ino};
  std::vector<std::pair<std::string_view, FileIdentity>> existing;
  std::vector<std::pair<std::string_view, std::string>> names;
  for (const auto& [flag, path] :
       {std::pair<std::string_view, const std::string&>{"--json", reports.json},
        {"--junit", reports.junit},
        {"--markdown", reports.markdown},
        {"--html", reports.html}}) {
    if (path.empty()) continue;
    const std::optional<FileIdentity> file = check_one(flag, path);
    const std::string name = canonical(path);
    for (const auto& [other, other_name] : names) {
      if (other_name == name) {
        throw UsageError(std::string(other) + " and " + std::string(flag) +
                         " name the same file (" + path + "); give each report its own path");
      }
    }
    names.emplace_back(flag, name);
    if (!file) continue;
    if (plugin && *file == *plugin) {
      throw UsageError(std::string(flag) + " " + path +
                       " is the plugin library itself: writing the report would overwrite it");
    }
    for (const auto& [other, identity] : existing) {
      if (identity == *file) {
        throw UsageError(std::string(other) + " and " + std::string(flag) +
                         " name the same file (" + path + "); give each report its own path");
      }
    }
    existing.emplace_back(flag, *file);
  }
}

}  // namespace emm::conformance
