#include "client/device_memory.h"

#include <dlfcn.h>
#include <sys/mman.h>

#include <cstring>
#include <mutex>

#include "common/log.h"
#include "transfer/shm/shared_memory.h"

namespace yb {

// The driver API's types, as cuda.h declares them (no CUDA headers at build time).
using CUresult = int;
using CUdeviceptr = unsigned long long;  // NOLINT(runtime/int): the driver's own type
using CUcontext = void*;
using CUstream = void*;

constexpr CUresult kCudaSuccess = 0;
constexpr CUresult kCudaInvalidValue = 1;
constexpr int kAttrContext = 1;          // CU_POINTER_ATTRIBUTE_CONTEXT
constexpr int kAttrMemoryType = 2;       // CU_POINTER_ATTRIBUTE_MEMORY_TYPE
constexpr int kAttrDeviceOrdinal = 9;    // CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL
constexpr int kAttrRangeStart = 11;      // CU_POINTER_ATTRIBUTE_RANGE_START_ADDR
constexpr int kAttrRangeSize = 12;       // CU_POINTER_ATTRIBUTE_RANGE_SIZE
constexpr unsigned kMemoryTypeDevice = 2;  // CU_MEMORYTYPE_DEVICE
constexpr unsigned kHostRegisterPortable = 1;  // CU_MEMHOSTREGISTER_PORTABLE
constexpr unsigned kStreamNonBlocking = 1;     // CU_STREAM_NON_BLOCKING

struct CudaApi {
  CUresult (*cuInit)(unsigned);
  CUresult (*cuPointerGetAttribute)(void*, int, CUdeviceptr);
  CUresult (*cuCtxGetCurrent)(CUcontext*);
  CUresult (*cuCtxSetCurrent)(CUcontext);
  CUresult (*cuDevicePrimaryCtxRetain)(CUcontext*, int);
  CUresult (*cuStreamCreate)(CUstream*, unsigned);
  CUresult (*cuStreamSynchronize)(CUstream);
  CUresult (*cuStreamDestroy_v2)(CUstream);
  CUresult (*cuMemcpyHtoD_v2)(CUdeviceptr, const void*, size_t);
  CUresult (*cuMemcpyDtoH_v2)(void*, CUdeviceptr, size_t);
  CUresult (*cuMemcpyHtoDAsync_v2)(CUdeviceptr, const void*, size_t, CUstream);
  CUresult (*cuMemcpyDtoHAsync_v2)(void*, CUdeviceptr, size_t, CUstream);
  CUresult (*cuMemHostRegister_v2)(void*, size_t, unsigned);
  CUresult (*cuMemHostUnregister)(void*);
  CUresult (*cuGetErrorString)(CUresult, const char**);
};

namespace {

CUdeviceptr Dptr(const void* p) { return static_cast<CUdeviceptr>(reinterpret_cast<uintptr_t>(p)); }

std::string Describe(const CudaApi& api, CUresult r) {
  const char* text = nullptr;
  if (api.cuGetErrorString(r, &text) != kCudaSuccess || !text) text = "unknown error";
  return std::string(text) + " (CUDA error " + std::to_string(r) + ")";
}

Status Fail(const CudaApi& api, CUresult r, const char* what) {
  return Status(Code::kInternal, std::string(what) + ": " + Describe(api, r));
}

// dlopen of libcuda.so.1 and every entry point; nullptr (logged at info level when a driver was
// found but unusable) otherwise.
const CudaApi* LoadDriver() {
  void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib) return nullptr;  // no driver: the common case on a CPU machine, not worth a line
  static CudaApi api;
  bool complete = true;
  auto resolve = [&](auto& fn, const char* name) {
    fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(dlsym(lib, name));
    if (!fn) {
      YB_LOG_WARN("the CUDA driver (libcuda.so.1) has no {}: device memory is not supported", name);
      complete = false;
    }
  };
  resolve(api.cuInit, "cuInit");
  resolve(api.cuPointerGetAttribute, "cuPointerGetAttribute");
  resolve(api.cuCtxGetCurrent, "cuCtxGetCurrent");
  resolve(api.cuCtxSetCurrent, "cuCtxSetCurrent");
  resolve(api.cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain");
  resolve(api.cuStreamCreate, "cuStreamCreate");
  resolve(api.cuStreamSynchronize, "cuStreamSynchronize");
  resolve(api.cuStreamDestroy_v2, "cuStreamDestroy_v2");
  resolve(api.cuMemcpyHtoD_v2, "cuMemcpyHtoD_v2");
  resolve(api.cuMemcpyDtoH_v2, "cuMemcpyDtoH_v2");
  resolve(api.cuMemcpyHtoDAsync_v2, "cuMemcpyHtoDAsync_v2");
  resolve(api.cuMemcpyDtoHAsync_v2, "cuMemcpyDtoHAsync_v2");
  resolve(api.cuMemHostRegister_v2, "cuMemHostRegister_v2");
  resolve(api.cuMemHostUnregister, "cuMemHostUnregister");
  resolve(api.cuGetErrorString, "cuGetErrorString");
  if (!complete) return nullptr;
  if (CUresult r = api.cuInit(0); r != kCudaSuccess) {
    YB_LOG_INFO("the CUDA driver is installed but cannot be used ({}): no address is device memory",
                Describe(api, r));
    return nullptr;
  }
  YB_LOG_INFO("CUDA driver loaded: device addresses are moved through pinned host memory");
  return &api;
}

}  // namespace

// ---- Bind

DeviceMemory::Bind::Bind(const DeviceMemory& dm, Context ctx) {
  if (!dm.api_ || !ctx) return;
  api_ = dm.api_;
  if (CUresult r = api_->cuCtxGetCurrent(&previous_); r != kCudaSuccess) {
    status_ = Fail(*api_, r, "cuCtxGetCurrent");
    return;
  }
  if (previous_ == ctx) return;
  if (CUresult r = api_->cuCtxSetCurrent(ctx); r != kCudaSuccess) {
    status_ = Fail(*api_, r, "cuCtxSetCurrent");
    return;
  }
  switched_ = true;
}

DeviceMemory::Bind::~Bind() {
  if (switched_) (void)api_->cuCtxSetCurrent(previous_);
}

// ---- Stager

DeviceMemory::Stager::~Stager() {
  Bind bound(DeviceMemory::Get(), ctx_);
  if (stream_) {
    (void)api_.cuStreamSynchronize(stream_);
    (void)api_.cuStreamDestroy_v2(stream_);
  }
  for (int i = 0; i < 2; ++i) {
    if (!slots_[i]) continue;
    (void)api_.cuMemHostUnregister(slots_[i]);
    if (shared_[i]) {
      (void)shm::SharedMemory::Process().Free(slots_[i]);
    } else {
      munmap(slots_[i], slot_size_);
    }
  }
}

Status DeviceMemory::Stager::ToDeviceAsync(void* device_dst, const void* host_src, uint64_t n) {
  CUresult r = api_.cuMemcpyHtoDAsync_v2(Dptr(device_dst), host_src, n, stream_);
  return r == kCudaSuccess ? Status::OK() : Fail(api_, r, "copy to device memory");
}

Status DeviceMemory::Stager::ToHostAsync(void* host_dst, const void* device_src, uint64_t n) {
  CUresult r = api_.cuMemcpyDtoHAsync_v2(host_dst, Dptr(device_src), n, stream_);
  return r == kCudaSuccess ? Status::OK() : Fail(api_, r, "copy from device memory");
}

Status DeviceMemory::Stager::Wait() {
  CUresult r = api_.cuStreamSynchronize(stream_);
  return r == kCudaSuccess ? Status::OK() : Fail(api_, r, "waiting for device copies");
}

// ---- DeviceMemory

DeviceMemory::DeviceMemory() : api_(LoadDriver()) {}

DeviceMemory& DeviceMemory::Get() {
  static DeviceMemory* instance = new DeviceMemory();  // never destroyed: stagers may outlive statics
  return *instance;
}

Result<DeviceMemory::Context> DeviceMemory::Locate(const void* p, uint64_t n) const {
  if (!api_ || !p) return Context{nullptr};
  unsigned type = 0;
  CUresult r = api_->cuPointerGetAttribute(&type, kAttrMemoryType, Dptr(p));
  if (r == kCudaInvalidValue || (r == kCudaSuccess && type != kMemoryTypeDevice)) return Context{nullptr};
  if (r != kCudaSuccess) return Fail(*api_, r, "asking the CUDA driver about an address");
  CUdeviceptr start = 0;
  size_t size = 0;
  if (api_->cuPointerGetAttribute(&start, kAttrRangeStart, Dptr(p)) == kCudaSuccess &&
      api_->cuPointerGetAttribute(&size, kAttrRangeSize, Dptr(p)) == kCudaSuccess &&
      n > size - (Dptr(p) - start)) {
    return Status(Code::kInvalidParams, "a buffer of " + std::to_string(n) + " bytes runs past the end of its " +
                                            std::to_string(size) + "-byte device allocation");
  }
  Context ctx = nullptr;
  if (api_->cuPointerGetAttribute(&ctx, kAttrContext, Dptr(p)) != kCudaSuccess || !ctx) {
    // Memory of no particular context (a driver may say so for some allocations): its device's
    // primary context.
    int ordinal = 0;
    if (CUresult e = api_->cuPointerGetAttribute(&ordinal, kAttrDeviceOrdinal, Dptr(p)); e != kCudaSuccess) {
      return Fail(*api_, e, "asking the CUDA driver for an address's device");
    }
    if (CUresult e = api_->cuDevicePrimaryCtxRetain(&ctx, ordinal); e != kCudaSuccess) {
      return Fail(*api_, e, "cuDevicePrimaryCtxRetain");
    }
  }
  return ctx;
}

Status DeviceMemory::Copy(void* dst, const void* src, uint64_t n) const {
  if (n == 0) return Status::OK();
  auto to = Locate(dst, n);
  if (!to.ok()) return to.status();
  auto from = Locate(src, n);
  if (!from.ok()) return from.status();
  if (!*to && !*from) {
    std::memcpy(dst, src, n);
    return Status::OK();
  }
  if (*to && *from) {
    // Device to device through the host: rare (a caller's own buffers on two GPUs), and small.
    std::vector<uint8_t> bounce(n);
    YB_RETURN_IF_ERROR(Copy(bounce.data(), src, n));
    return Copy(dst, bounce.data(), n);
  }
  Bind bound(*this, *to ? *to : *from);
  YB_RETURN_IF_ERROR(bound.status());
  CUresult r = *to ? api_->cuMemcpyHtoD_v2(Dptr(dst), src, n) : api_->cuMemcpyDtoH_v2(dst, Dptr(src), n);
  return r == kCudaSuccess ? Status::OK() : Fail(*api_, r, *to ? "copy to device memory" : "copy from device memory");
}

Result<std::unique_ptr<DeviceMemory::Stager>> DeviceMemory::MakeStager(Context ctx, uint64_t slot_size) {
  std::unique_ptr<Stager> s(new Stager(*api_, ctx, slot_size));
  Bind bound(*this, ctx);
  YB_RETURN_IF_ERROR(bound.status());
  for (int i = 0; i < 2; ++i) {
    void* p = shm::SharedMemory::Process().Allocate(slot_size);
    s->shared_[i] = p != nullptr;
    if (!p) {
      p = mmap(nullptr, slot_size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
      if (p == MAP_FAILED) return Status(Code::kInternal, "cannot map a device staging slot");
    }
    s->slots_[i] = static_cast<uint8_t*>(p);
    if (CUresult r = api_->cuMemHostRegister_v2(p, slot_size, kHostRegisterPortable); r != kCudaSuccess) {
      if (s->shared_[i]) {
        (void)shm::SharedMemory::Process().Free(p);
      } else {
        munmap(p, slot_size);
      }
      s->slots_[i] = nullptr;
      return Fail(*api_, r, "pinning a device staging slot (cuMemHostRegister)");
    }
  }
  if (CUresult r = api_->cuStreamCreate(&s->stream_, kStreamNonBlocking); r != kCudaSuccess) {
    return Fail(*api_, r, "cuStreamCreate");
  }
  return s;
}

Result<DeviceMemory::StagerPtr> DeviceMemory::Acquire(Context ctx, uint64_t slot_size) {
  if (!api_) return Status(Code::kInternal, "no CUDA driver");
  std::unique_ptr<Stager> s;
  {
    MutexLock lock(mu_);
    for (auto it = idle_.begin(); it != idle_.end(); ++it) {
      if ((*it)->ctx_ == ctx && (*it)->slot_size_ >= slot_size) {
        s = std::move(*it);
        idle_.erase(it);
        break;
      }
    }
  }
  if (!s) {
    auto made = MakeStager(ctx, slot_size);
    if (!made.ok()) return made.status();
    s = std::move(made).value();
  }
  return StagerPtr(s.release(), [this](Stager* p) { Release(p); });
}

void DeviceMemory::Release(Stager* s) {
  std::unique_ptr<Stager> owned(s);
  constexpr size_t kMaxIdle = 8;  // pinned memory is the machine's: keep what a few movers use
  MutexLock lock(mu_);
  if (idle_.size() < kMaxIdle) idle_.push_back(std::move(owned));
}

std::string DeviceMemory::ErrorText(int code) const { return api_ ? Describe(*api_, code) : "no CUDA driver"; }

}  // namespace yb
