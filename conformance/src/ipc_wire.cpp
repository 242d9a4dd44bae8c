// The IPC import wire format (ipc_wire.hpp).
#include "emm/conformance/ipc_wire.hpp"

#include <cstring>
#include <string>

#include "emm/ipc_handle.hpp"

namespace emm::conformance {
namespace {

constexpr std::string_view kRequestMagic = "EMMIPCQ";
constexpr std::string_view kResponseMagic = "EMMIPCA";
constexpr std::uint8_t kFlagCheckStateMachine = 1;
constexpr std::uint8_t kFlagFill = 2;
constexpr std::size_t kMaxErrorMessage = std::size_t{1} << 20;

template <class T>
void put(std::string& out, T value) {
  for (std::size_t i = 0; i < sizeof(T); ++i) {
    out += static_cast<char>(static_cast<std::uint64_t>(value) >> (8 * i) & 0xFF);
  }
}

void put_bytes(std::string& out, const void* data, std::size_t size) {
  out.append(static_cast<const char*>(data), size);
}

// Reads fields off the front of the input; every shortfall is an IpcWireError naming the field.
class Reader {
 public:
  Reader(std::string_view bytes, const char* what) : rest_(bytes), what_(what) {}

  void expect_magic(std::string_view magic) {
    if (rest_.substr(0, magic.size()) != magic) {
      fail("it does not start with \"" + std::string(magic) + "\" (not an import " + what_ + ")");
    }
    rest_.remove_prefix(magic.size());
  }

  template <class T>
  T take(const char* field) {
    if (rest_.size() < sizeof(T)) {
      fail("truncated: " + std::string(field) + " needs " + std::to_string(sizeof(T)) + " bytes, " +
           std::to_string(rest_.size()) + " are left");
    }
    std::uint64_t value = 0;
    for (std::size_t i = 0; i < sizeof(T); ++i) {
      value |= static_cast<std::uint64_t>(static_cast<unsigned char>(rest_[i])) << (8 * i);
    }
    rest_.remove_prefix(sizeof(T));
    return static_cast<T>(value);
  }

  std::string_view take_bytes(std::uint64_t size, const char* field) {
    if (rest_.size() < size) {
      fail("truncated: " + std::string(field) + " announces " + std::to_string(size) + " bytes, " +
           std::to_string(rest_.size()) + " are left");
    }
    const std::string_view bytes = rest_.substr(0, static_cast<std::size_t>(size));
    rest_.remove_prefix(static_cast<std::size_t>(size));
    return bytes;
  }

  void expect_end() {
    if (!rest_.empty()) fail(std::to_string(rest_.size()) + " bytes after the last field");
  }

  [[noreturn]] void fail(const std::string& why) const {
    throw IpcWireError("malformed IPC import " + std::string(what_) + ": " + why);
  }

 private:
  std::string_view rest_;
  const char* what_;
};

void check_version(Reader& in) {
  const auto version = in.take<std::uint8_t>("the version");
  if (version != kIpcWireVersion) {
    in.fail("version " + std::to_string(version) + " (this kit speaks version " +
            std::to_string(kIpcWireVersion) + "; use an emm-ipc-importer of the same kit)");
  }
}

std::vector<std::byte> to_bytes(std::string_view text) {
  std::vector<std::byte> bytes(text.size());
  if (!text.empty()) std::memcpy(bytes.data(), text.data(), text.size());
  return bytes;
}

}  // namespace

std::string encode_import_request(const ImportRequest& request) {
  if (request.items.size() > kMaxImportItems) {
    throw IpcWireError("an IPC import request holds at most " + std::to_string(kMaxImportItems) +
                       " handles, not " + std::to_string(request.items.size()) +
                       "; split it into several requests");
  }
  std::string out(kRequestMagic);
  put<std::uint8_t>(out, kIpcWireVersion);
  put<std::uint32_t>(out, static_cast<std::uint32_t>(request.items.size()));
  for (const ImportItem& item : request.items) {
    if (item.handle.size() > kMaxSerializedHandle) {
      throw IpcWireError("a serialized handle of " + std::to_string(item.handle.size()) +
                         " bytes is over the wire's limit of " +
                         std::to_string(kMaxSerializedHandle) + " (IpcHandle::serialize() makes " +
                         std::to_string(IpcHandle::kSerializedSize) + ")");
    }
    std::uint8_t flags = 0;
    if (item.check_state_machine) flags |= kFlagCheckStateMachine;
    if (item.fill) flags |= kFlagFill;
    put<std::uint8_t>(out, static_cast<std::uint8_t>(item.context));
    put<std::uint8_t>(out, flags);
    put<std::uint8_t>(out, item.fill.value_or(0));
    put<std::uint32_t>(out, static_cast<std::uint32_t>(item.handle.size()));
    put_bytes(out, item.handle.data(), item.handle.size());
  }
  return out;
}

ImportRequest decode_import_request(std::string_view bytes) {
  Reader in(bytes, "request");
  in.expect_magic(kRequestMagic);
  check_version(in);
  const auto count = in.take<std::uint32_t>("the handle count");
  if (count > kMaxImportItems) {
    in.fail("it announces " + std::to_string(count) + " handles, more than the limit of " +
            std::to_string(kMaxImportItems));
  }
  ImportRequest request;
  request.items.reserve(count);
  for (std::uint32_t i = 0; i < count; ++i) {
    ImportItem item;
    const auto context = in.take<std::uint8_t>("a handle's context");
    if (context > static_cast<std::uint8_t>(ImportContext::source_device)) {
      in.fail("handle " + std::to_string(i) + " has context " + std::to_string(context) +
              " (0: device 0, 1: source device)");
    }
    item.context = static_cast<ImportContext>(context);
    const auto flags = in.take<std::uint8_t>("a handle's flags");
    if ((flags & ~(kFlagCheckStateMachine | kFlagFill)) != 0) {
      in.fail("handle " + std::to_string(i) + " has unknown flags " + std::to_string(flags));
    }
    item.check_state_machine = (flags & kFlagCheckStateMachine) != 0;
    const auto fill = in.take<std::uint8_t>("a handle's fill byte");
    if ((flags & kFlagFill) != 0) item.fill = fill;
    const auto size = in.take<std::uint32_t>("a handle's size");
    if (size > kMaxSerializedHandle) {
      in.fail("handle " + std::to_string(i) + " announces " + std::to_string(size) +
              " bytes, more than the limit of " + std::to_string(kMaxSerializedHandle));
    }
    item.handle = to_bytes(in.take_bytes(size, "a handle"));
    request.items.push_back(std::move(item));
  }
  in.expect_end();
  return request;
}

std::string encode_import_response(const ImportResponse& response) {
  std::string out(kResponseMagic);
  put<std::uint8_t>(out, kIpcWireVersion);
  const std::string error = response.error.substr(0, kMaxErrorMessage);
  put<std::uint32_t>(out, static_cast<std::uint32_t>(error.size()));
  out += error;
  put<std::uint32_t>(out, static_cast<std::uint32_t>(response.answers.size()));
  for (const ImportAnswer& answer : response.answers) {
    put<std::uint8_t>(out, answer.ok ? 1 : 0);
    if (answer.ok) {
      put<std::uint64_t>(out, answer.bytes.size());
      put_bytes(out, answer.bytes.data(), answer.bytes.size());
    } else {
      // An error always says something: an empty one would read as a silent failure.
      const std::string message =
          answer.error.empty() ? "(no message)" : answer.error.substr(0, kMaxErrorMessage);
      put<std::uint64_t>(out, message.size());
      out += message;
    }
  }
  return out;
}

ImportResponse decode_import_response(std::string_view bytes) {
  Reader in(bytes, "response");
  in.expect_magic(kResponseMagic);
  check_version(in);
  ImportResponse response;
  const auto error_size = in.take<std::uint32_t>("the error's size");
  if (error_size > kMaxErrorMessage) {
    in.fail("its error announces " + std::to_string(error_size) + " bytes, more than " +
            std::to_string(kMaxErrorMessage));
  }
  response.error = std::string(in.take_bytes(error_size, "the error"));
  const auto count = in.take<std::uint32_t>("the answer count");
  if (count > kMaxImportItems) {
    in.fail("it announces " + std::to_string(count) + " answers, more than the limit of " +
            std::to_string(kMaxImportItems));
  }
  if (!response.error.empty() && count != 0) {
    in.fail("it both refuses the request and answers " + std::to_string(count) + " handles");
  }
  response.answers.reserve(count);
  for (std::uint32_t i = 0; i < count; ++i) {
    ImportAnswer answer;
    const auto ok = in.take<std::uint8_t>("an answer's status");
    if (ok > 1) in.fail("answer " + std::to_string(i) + " has status " + std::to_string(ok));
    answer.ok = ok == 1;
    const auto size = in.take<std::uint64_t>("an answer's size");
    const std::string_view body = in.take_bytes(size, answer.ok ? "the bytes read" : "an error");
    if (answer.ok) {
      answer.bytes = to_bytes(body);
    } else {
      if (body.empty()) in.fail("answer " + std::to_string(i) + " is an error without a message");
      answer.error = std::string(body);
    }
    response.answers.push_back(std::move(answer));
  }
  in.expect_end();
  return response;
}

}  // namespace emm::conformance
