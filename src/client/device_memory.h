// Device (GPU) memory in a caller's buffers, through the CUDA driver API loaded at run time.
//
// An inference engine hands the client addresses of its KV caches in GPU memory (vLLM registers
// them with register_buffer and passes them to the batch multi-buffer calls). The CPU must never
// dereference such an address: the client asks the driver which addresses are device memory and
// moves their bytes through pinned host staging slots with the driver's copies.
//
// The driver is loaded on first use with dlopen("libcuda.so.1"), as PyTorch and NCCL do: nothing
// of CUDA is needed to build, and a machine without the driver (or whose driver finds no device)
// behaves exactly as before: no address is device memory. Only these entry points are used:
// cuInit, cuPointerGetAttribute, cuCtxGetCurrent, cuCtxSetCurrent, cuDevicePrimaryCtxRetain,
// cuStreamCreate, cuStreamSynchronize, cuStreamDestroy_v2, cuMemcpyHtoD_v2, cuMemcpyDtoH_v2,
// cuMemcpyHtoDAsync_v2, cuMemcpyDtoHAsync_v2, cuMemHostRegister_v2, cuMemHostUnregister,
// cuGetErrorString (tests/fake_cuda covers each).
//
// Thread-safe.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "common/thread_annotations.h"
#include "yuebing/status.h"

namespace yb {

struct CudaApi;  // the driver's entry points (device_memory.cc)

class DeviceMemory {
 public:
  // A CUDA context (CUcontext); nullptr: host memory.
  using Context = void*;

  // Two pinned host slots and a stream on one context: what one pipelined move uses. Its calls
  // run with its context current on the calling thread (Bind). The slots are shared memory
  // (shm/shared_memory.h) where it can be had, so that a dummy client's real client moves bytes
  // straight into them (its relay reaches only such memory).
  class Stager {
   public:
    ~Stager();
    Stager(const Stager&) = delete;
    Stager& operator=(const Stager&) = delete;
    uint8_t* slot(int i) const { return slots_[i]; }
    uint64_t slot_size() const { return slot_size_; }
    Context context() const { return ctx_; }
    // Queue a copy on the stream; it runs while the caller goes on (the slots are pinned).
    Status ToDeviceAsync(void* device_dst, const void* host_src, uint64_t n);
    Status ToHostAsync(void* host_dst, const void* device_src, uint64_t n);
    // Returns once every queued copy is done; the first copy error, if any.
    Status Wait();

   private:
    friend class DeviceMemory;
    Stager(const CudaApi& api, Context ctx, uint64_t slot_size) : api_(api), ctx_(ctx), slot_size_(slot_size) {}
    const CudaApi& api_;
    Context ctx_;
    uint64_t slot_size_;
    uint8_t* slots_[2] = {nullptr, nullptr};
    bool shared_[2] = {false, false};  // from this process's shared memory (else anonymous)
    void* stream_ = nullptr;
  };

  // Makes a context current on this thread for its lifetime, then restores the one before.
  class Bind {
   public:
    Bind(const DeviceMemory& dm, Context ctx);
    ~Bind();
    Bind(const Bind&) = delete;
    Bind& operator=(const Bind&) = delete;
    const Status& status() const { return status_; }

   private:
    const CudaApi* api_ = nullptr;
    Context previous_ = nullptr;
    bool switched_ = false;
    Status status_;
  };

  // The process's: the driver is loaded on the first call.
  static DeviceMemory& Get();

  // Whether a driver with at least one device is loaded (else no address is device memory).
  bool available() const { return api_ != nullptr; }

  // The context of the device memory [p, p + n) (nullptr: host memory, always so without a driver).
  // INVALID_PARAMS when the range starts in a device allocation and runs past its end.
  Result<Context> Locate(const void* p, uint64_t n) const;

  // Copies n bytes from `src` to `dst`, either of which may be device memory (located here): the
  // driver's synchronous copies, for small moves (headers, ranges of an object already read).
  Status Copy(void* dst, const void* src, uint64_t n) const;

  // A stager for `ctx` with slots of at least `slot_size` bytes, from the pool (or new); back to
  // the pool when the pointer is dropped.
  using StagerPtr = std::unique_ptr<Stager, std::function<void(Stager*)>>;
  Result<StagerPtr> Acquire(Context ctx, uint64_t slot_size);

  // The driver's message for one of its error codes.
  std::string ErrorText(int code) const;

 private:
  DeviceMemory();
  Result<std::unique_ptr<Stager>> MakeStager(Context ctx, uint64_t slot_size);
  void Release(Stager* s);

  const CudaApi* api_ = nullptr;  // null: no driver or no device
  Mutex mu_;
  std::vector<std::unique_ptr<Stager>> idle_ GUARDED_BY(mu_);
};

}  // namespace yb
