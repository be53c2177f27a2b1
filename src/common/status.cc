#include "yuebing/status.h"

#include <array>

#include "common/log.h"

namespace yb {
namespace {

// spdlog builds its registry on first use; build it during static initialization, while the
// process is single-threaded, so that the first log lines of two threads never race to construct
// it. It lives here because every binary links this file (a static library drops unused objects).
[[maybe_unused]] const bool kLoggerReady = (spdlog::default_logger_raw() != nullptr);

// What a caller should do about a code (IsRetryable, IsUnavailable).
enum class Retry : uint8_t {
  kNo,           // the call is wrong or the outcome final: retrying changes nothing
  kLater,        // the same call may succeed later (space freed, a write finished, a lease ended)
  kUnavailable,  // the peer was not reached or did not answer: the call may or may not have happened
};

struct CodeRow {
  Code code;
  std::string_view name;
  int32_t mooncake;
  Retry retry = Retry::kNo;
};

// The one table: internal code -> name -> Mooncake number. Order follows the enum.
constexpr std::array<CodeRow, kNumCodes> kTable = {{
    {Code::kOk, "OK", 0},
    {Code::kInternal, "INTERNAL_ERROR", -1},
    {Code::kBufferOverflow, "BUFFER_OVERFLOW", -10},
    {Code::kSegmentNotFound, "SEGMENT_NOT_FOUND", -101},
    {Code::kSegmentAlreadyExists, "SEGMENT_ALREADY_EXISTS", -102},
    {Code::kClientNotFound, "CLIENT_NOT_FOUND", -103},
    {Code::kNoAvailableHandle, "NO_AVAILABLE_HANDLE", -200, Retry::kLater},
    {Code::kInvalidKey, "INVALID_KEY", -400},
    {Code::kInvalidParams, "INVALID_PARAMS", -600},
    {Code::kInvalidWrite, "INVALID_WRITE", -700},
    {Code::kInvalidRead, "INVALID_READ", -701},
    {Code::kInvalidReplica, "INVALID_REPLICA", -702},
    {Code::kReplicaNotReady, "REPLICA_IS_NOT_READY", -703, Retry::kLater},
    {Code::kObjectNotFound, "OBJECT_NOT_FOUND", -704},
    {Code::kObjectAlreadyExists, "OBJECT_ALREADY_EXISTS", -705},
    {Code::kObjectHasLease, "OBJECT_HAS_LEASE", -706, Retry::kLater},
    {Code::kLeaseExpired, "LEASE_EXPIRED", -707},
    {Code::kTransferFail, "TRANSFER_FAIL", -800, Retry::kLater},
    {Code::kChecksumMismatch, "CHECKSUM_MISMATCH", -801},
    {Code::kRpcFail, "RPC_FAIL", -900, Retry::kUnavailable},
    {Code::kRpcTimeout, "RPC_TIMEOUT", -901, Retry::kUnavailable},
    {Code::kNotSupported, "NOT_SUPPORTED", -1012},
    {Code::kTenantQuotaExceeded, "TENANT_QUOTA_EXCEEDED", -1700},
    {Code::kTenantNotRegistered, "TENANT_NOT_REGISTERED", -1701},
    {Code::kIllegalClient, "ILLEGAL_CLIENT", -601},
    {Code::kWriteFail, "WRITE_FAIL", -500},
    {Code::kObjectReplicaBusy, "OBJECT_REPLICA_BUSY", -714, Retry::kLater},
    {Code::kFileNotFound, "FILE_NOT_FOUND", -1100},
    {Code::kFileOpenFail, "FILE_OPEN_FAIL", -1101},
    {Code::kFileReadFail, "FILE_READ_FAIL", -1102},
    {Code::kFileWriteFail, "FILE_WRITE_FAIL", -1103},
    {Code::kUnableOffload, "UNABLE_OFFLOAD", -1300},
    {Code::kEtcdOperationError, "ETCD_OPERATION_ERROR", -1000, Retry::kUnavailable},
    {Code::kUnavailableInCurrentStatus, "UNAVAILABLE_IN_CURRENT_STATUS", -1010, Retry::kUnavailable},
    {Code::kTaskNotFound, "TASK_NOT_FOUND", -1400},
    {Code::kTaskPendingLimitExceeded, "TASK_PENDING_LIMIT_EXCEEDED", -1401, Retry::kLater},
}};

constexpr bool TableInEnumOrder() {
  for (size_t i = 0; i < kTable.size(); ++i) {
    if (static_cast<size_t>(kTable[i].code) != i) return false;
  }
  return true;
}
static_assert(TableInEnumOrder(), "kTable rows must follow the Code enum order");

const CodeRow& Row(Code code) {
  auto i = static_cast<size_t>(code);
  return i < kTable.size() ? kTable[i] : kTable[static_cast<size_t>(Code::kInternal)];
}

}  // namespace

std::string_view CodeName(Code code) { return Row(code).name; }

bool IsRetryable(Code code) { return Row(code).retry != Retry::kNo; }

bool IsUnavailable(Code code) { return Row(code).retry == Retry::kUnavailable; }

int32_t ToMooncakeCode(Code code) { return Row(code).mooncake; }

Code FromMooncakeCode(int32_t mooncake_code) {
  for (const auto& row : kTable) {
    if (row.mooncake == mooncake_code) return row.code;
  }
  return Code::kInternal;
}

std::string Status::ToString() const {
  std::string s(CodeName(code_));
  if (!msg_.empty()) {
    s += ": ";
    s += msg_;
  }
  return s;
}

}  // namespace yb
