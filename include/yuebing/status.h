// Yuebing's one error idiom: a small Status value (code + message) and Result<T>.
//
// Every internal code maps, through one table (src/common/status.cc), to its wire value (the
// enum's own number), its name and Mooncake's numeric error code, which the C API and the Python
// binding return. No exceptions cross a module boundary.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

namespace yb {

// Wire values are stable: append only, never renumber.
enum class Code : uint8_t {
  kOk = 0,
  kInternal = 1,        // a bug or an unexpected system failure
  kBufferOverflow = 2,  // caller's buffer too small
  kSegmentNotFound = 3,
  kSegmentAlreadyExists = 4,
  kClientNotFound = 5,
  kNoAvailableHandle = 6,  // no space: retry later (eviction runs)
  kInvalidKey = 7,
  kInvalidParams = 8,
  kInvalidWrite = 9,
  kInvalidRead = 10,
  kInvalidReplica = 11,
  kReplicaNotReady = 12,  // the object is still being written
  kObjectNotFound = 13,
  kObjectAlreadyExists = 14,
  kObjectHasLease = 15,
  kLeaseExpired = 16,
  kTransferFail = 17,
  kChecksumMismatch = 18,
  kRpcFail = 19,
  kRpcTimeout = 20,
  kNotSupported = 21,
  kTenantQuotaExceeded = 22,
  kTenantNotRegistered = 23,
  kIllegalClient = 24,
  kWriteFail = 25,
  kObjectReplicaBusy = 26,
  kFileNotFound = 27,
  kFileOpenFail = 28,
  kFileReadFail = 29,
  kFileWriteFail = 30,  // an SSD-tier write failed (I/O error, no space left)
  kUnableOffload = 31,  // the object cannot go down to the SSD tier
  kEtcdOperationError = 32,  // etcd could not be reached or refused the operation
  kUnavailableInCurrentStatus = 33,  // this master is not the leader (a standby, or one that stepped down)
  kTaskNotFound = 34,                // no copy or move task with that id (never made, or forgotten)
  kTaskPendingLimitExceeded = 35,    // too many copy and move tasks unfinished: retry later
};

// Number of codes; the table in status.cc has one row per code.
inline constexpr int kNumCodes = 36;

// Name of a code, e.g. "OBJECT_NOT_FOUND" (Mooncake's spelling).
std::string_view CodeName(Code code);
// Mooncake's numeric error code, e.g. -704 for kObjectNotFound.
int32_t ToMooncakeCode(Code code);
// Inverse of ToMooncakeCode; unknown numbers map to kInternal.
Code FromMooncakeCode(int32_t mooncake_code);
// The peer (the master, a transfer server) was not reached or did not answer in time (RPC_FAIL,
// RPC_TIMEOUT): the call may or may not have taken effect, and may be made again once it is back.
bool IsUnavailable(Code code);
// The same call may succeed later without the caller changing anything: the peer is unavailable,
// there was no space (NO_AVAILABLE_HANDLE: eviction runs), the object is being written, leased or
// busy, or a transfer failed (the next try may pick another replica or segment).
bool IsRetryable(Code code);

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(Code code, std::string msg) : code_(code), msg_(std::move(msg)) {}
  explicit Status(Code code) : code_(code) {}

  static Status OK() { return Status(); }

  bool ok() const { return code_ == Code::kOk; }
  Code code() const { return code_; }
  const std::string& message() const { return msg_; }
  int32_t mooncake_code() const { return ToMooncakeCode(code_); }
  // "OBJECT_NOT_FOUND: key 'x'".
  std::string ToString() const;

  bool IsUnavailable() const { return yb::IsUnavailable(code_); }
  bool IsRetryable() const { return yb::IsRetryable(code_); }

  bool operator==(Code c) const { return code_ == c; }

 private:
  Code code_ = Code::kOk;
  std::string msg_;
};

// A value or an error Status.
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}         // NOLINT(google-explicit-constructor)
  Result(Status status) : v_(std::move(status)) {}  // NOLINT(google-explicit-constructor)
  Result(Code code, std::string msg) : v_(Status(code, std::move(msg))) {}

  bool ok() const { return v_.index() == 0; }
  const T& value() const& { return std::get<0>(v_); }
  T& value() & { return std::get<0>(v_); }
  T value() && { return std::get<0>(std::move(v_)); }  // by value: safe on temporaries
  const T& operator*() const& { return value(); }
  T& operator*() & { return value(); }
  const T* operator->() const { return &value(); }
  T* operator->() { return &value(); }

  Status status() const { return ok() ? Status::OK() : std::get<1>(v_); }
  Code code() const { return ok() ? Code::kOk : std::get<1>(v_).code(); }

 private:
  std::variant<T, Status> v_;
};

#define YB_RETURN_IF_ERROR(expr)             \
  do {                                       \
    ::yb::Status yb_status_ = (expr);        \
    if (!yb_status_.ok()) return yb_status_; \
  } while (0)

}  // namespace yb
