// A fake CUDA driver for tests: built as libcuda.so.1 and found first on LD_LIBRARY_PATH, it stands
// in for NVIDIA's driver on machines without a GPU.
//
// Its "device memory" is memory the CPU cannot touch: cuMemAlloc_v2 maps a memfd PROT_NONE at the
// address it hands out, and a second, writable mapping of the same memfd that only its copy
// functions use. Any load or store through a device address crashes the process (SIGSEGV), so a
// test that passes with its buffers here never let the CPU dereference a device address.
//
// It covers the entry points Yuebing's loader resolves (src/client/device_memory.cc) and, for the
// tests themselves, cuMemAlloc_v2 / cuMemFree_v2 / cuDeviceGetCount. As the real driver: every call
// but cuGetErrorString needs cuInit first; copies and stream creation need a current context; a
// pointer the driver did not allocate is CUDA_ERROR_INVALID_VALUE to cuPointerGetAttribute; an
// async copy whose host memory is not registered (cuMemHostRegister) runs synchronously.
//
// FAKE_CUDA_DEVICES (default 2, at most 4): how many devices cuInit finds; 0 makes cuInit answer
// CUDA_ERROR_NO_DEVICE (a driver installed on a machine without a GPU).
// fake_cuda_counters() tells a test what was used (async copies, synchronous ones, registrations);
// fake_cuda_fail_copies(1) makes every copy fail, as after a device fault.
#define _GNU_SOURCE
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

typedef int CUresult;
typedef int CUdevice;
typedef unsigned long long CUdeviceptr;
typedef struct FakeCtx* CUcontext;
typedef struct FakeStream* CUstream;

enum {
  CUDA_SUCCESS = 0,
  CUDA_ERROR_INVALID_VALUE = 1,
  CUDA_ERROR_OUT_OF_MEMORY = 2,
  CUDA_ERROR_NOT_INITIALIZED = 3,
  CUDA_ERROR_NO_DEVICE = 100,
  CUDA_ERROR_INVALID_DEVICE = 101,
  CUDA_ERROR_INVALID_CONTEXT = 201,
  CUDA_ERROR_INVALID_HANDLE = 400,
  CUDA_ERROR_ILLEGAL_ADDRESS = 700,
  CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED = 712,
  CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED = 713,
};

enum {
  CU_POINTER_ATTRIBUTE_CONTEXT = 1,
  CU_POINTER_ATTRIBUTE_MEMORY_TYPE = 2,
  CU_POINTER_ATTRIBUTE_DEVICE_POINTER = 3,
  CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL = 9,
  CU_POINTER_ATTRIBUTE_RANGE_START_ADDR = 11,
  CU_POINTER_ATTRIBUTE_RANGE_SIZE = 12,
};
enum { CU_MEMORYTYPE_HOST = 1, CU_MEMORYTYPE_DEVICE = 2 };

struct FakeCtx {
  int device;
};

struct Allocation {
  uintptr_t device;  // the address handed out (PROT_NONE)
  uint8_t* shadow;   // the same pages, writable: only the copy functions use it
  size_t size;
  CUcontext ctx;
};

struct Registration {
  uintptr_t start;
  size_t size;
};

enum { kMaxDevices = 4, kMaxAllocations = 4096, kMaxRegistrations = 4096 };

static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static int g_initialized;
static int g_devices;
static struct FakeCtx g_primary[kMaxDevices];
static struct Allocation g_allocs[kMaxAllocations];
static struct Registration g_regs[kMaxRegistrations];
static __thread CUcontext t_current;

struct FakeCudaCounters {
  uint64_t async_copies;      // queued on a stream (registered host memory)
  uint64_t sync_copies;       // cuMemcpy*_v2, and async ones from unregistered host memory
  uint64_t registrations;     // cuMemHostRegister_v2 calls that succeeded
  uint64_t live_registrations;
  uint64_t bytes_to_device;
  uint64_t bytes_to_host;
  uint64_t streams_created;
  uint64_t live_streams;
};
static struct FakeCudaCounters g_counters;
static int g_fail_copies;  // fake_cuda_fail_copies(): every copy answers CUDA_ERROR_ILLEGAL_ADDRESS

// A device that went bad (an Xid, a reset): from now on (1) or again (0), every copy between host
// and device fails as a real driver's would after a fault, and touches no byte.
void fake_cuda_fail_copies(int fail) {
  pthread_mutex_lock(&g_mu);
  g_fail_copies = fail;
  pthread_mutex_unlock(&g_mu);
}

void fake_cuda_counters(struct FakeCudaCounters* out) {
  pthread_mutex_lock(&g_mu);
  *out = g_counters;
  pthread_mutex_unlock(&g_mu);
}

// ---- lookups (g_mu held)

static struct Allocation* FindAllocation(uintptr_t p) {
  for (int i = 0; i < kMaxAllocations; ++i) {
    struct Allocation* a = &g_allocs[i];
    if (a->size && p >= a->device && p < a->device + a->size) return a;
  }
  return NULL;
}

static int Registered(const void* p, size_t n) {
  uintptr_t s = (uintptr_t)p;
  for (int i = 0; i < kMaxRegistrations; ++i) {
    const struct Registration* r = &g_regs[i];
    if (r->size && s >= r->start && s + n <= r->start + r->size) return 1;
  }
  return 0;
}

// The writable alias of [dptr, dptr + n), or NULL when the range is not inside one allocation.
static uint8_t* Shadow(CUdeviceptr dptr, size_t n) {
  pthread_mutex_lock(&g_mu);
  struct Allocation* a = FindAllocation((uintptr_t)dptr);
  uint8_t* out = NULL;
  if (a && n <= a->size - ((uintptr_t)dptr - a->device)) out = a->shadow + ((uintptr_t)dptr - a->device);
  pthread_mutex_unlock(&g_mu);
  return out;
}

static CUresult Ready(void) {
  pthread_mutex_lock(&g_mu);
  int ok = g_initialized;
  pthread_mutex_unlock(&g_mu);
  return ok ? CUDA_SUCCESS : CUDA_ERROR_NOT_INITIALIZED;
}

static CUresult ReadyWithContext(void) {
  CUresult r = Ready();
  if (r != CUDA_SUCCESS) return r;
  return t_current ? CUDA_SUCCESS : CUDA_ERROR_INVALID_CONTEXT;
}

static CUresult CopyReady(void) {
  CUresult r = ReadyWithContext();
  if (r != CUDA_SUCCESS) return r;
  pthread_mutex_lock(&g_mu);
  int fail = g_fail_copies;
  pthread_mutex_unlock(&g_mu);
  return fail ? CUDA_ERROR_ILLEGAL_ADDRESS : CUDA_SUCCESS;
}

// ---- initialization, devices, contexts

CUresult cuInit(unsigned int flags) {
  if (flags != 0) return CUDA_ERROR_INVALID_VALUE;
  const char* env = getenv("FAKE_CUDA_DEVICES");
  int devices = env ? atoi(env) : 2;
  if (devices <= 0) return CUDA_ERROR_NO_DEVICE;
  if (devices > kMaxDevices) devices = kMaxDevices;
  pthread_mutex_lock(&g_mu);
  if (!g_initialized) {
    g_devices = devices;
    for (int i = 0; i < devices; ++i) g_primary[i].device = i;
    g_initialized = 1;
  }
  pthread_mutex_unlock(&g_mu);
  return CUDA_SUCCESS;
}

CUresult cuDeviceGetCount(int* count) {
  CUresult r = Ready();
  if (r != CUDA_SUCCESS) return r;
  *count = g_devices;
  return CUDA_SUCCESS;
}

CUresult cuDevicePrimaryCtxRetain(CUcontext* pctx, CUdevice dev) {
  CUresult r = Ready();
  if (r != CUDA_SUCCESS) return r;
  if (!pctx) return CUDA_ERROR_INVALID_VALUE;
  if (dev < 0 || dev >= g_devices) return CUDA_ERROR_INVALID_DEVICE;
  *pctx = &g_primary[dev];
  return CUDA_SUCCESS;
}

CUresult cuCtxGetCurrent(CUcontext* pctx) {
  CUresult r = Ready();
  if (r != CUDA_SUCCESS) return r;
  if (!pctx) return CUDA_ERROR_INVALID_VALUE;
  *pctx = t_current;
  return CUDA_SUCCESS;
}

CUresult cuCtxSetCurrent(CUcontext ctx) {
  CUresult r = Ready();
  if (r != CUDA_SUCCESS) return r;
  if (ctx && (ctx < &g_primary[0] || ctx >= &g_primary[g_devices])) return CUDA_ERROR_INVALID_CONTEXT;
  t_current = ctx;
  return CUDA_SUCCESS;
}

// ---- device memory

CUresult cuMemAlloc_v2(CUdeviceptr* dptr, size_t size) {
  CUresult r = ReadyWithContext();
  if (r != CUDA_SUCCESS) return r;
  if (!dptr || size == 0) return CUDA_ERROR_INVALID_VALUE;
  size_t page = (size_t)sysconf(_SC_PAGESIZE);
  size_t mapped = (size + page - 1) / page * page;
  int fd = memfd_create("fake-cuda-device", MFD_CLOEXEC);
  if (fd < 0) return CUDA_ERROR_OUT_OF_MEMORY;
  if (ftruncate(fd, (off_t)mapped) != 0) {
    close(fd);
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  void* device = mmap(NULL, mapped, PROT_NONE, MAP_SHARED, fd, 0);
  void* shadow = mmap(NULL, mapped, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  close(fd);
  if (device == MAP_FAILED || shadow == MAP_FAILED) {
    if (device != MAP_FAILED) munmap(device, mapped);
    if (shadow != MAP_FAILED) munmap(shadow, mapped);
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  pthread_mutex_lock(&g_mu);
  for (int i = 0; i < kMaxAllocations; ++i) {
    if (g_allocs[i].size == 0) {
      g_allocs[i] = (struct Allocation){(uintptr_t)device, shadow, mapped, t_current};
      pthread_mutex_unlock(&g_mu);
      *dptr = (CUdeviceptr)(uintptr_t)device;
      return CUDA_SUCCESS;
    }
  }
  pthread_mutex_unlock(&g_mu);
  munmap(device, mapped);
  munmap(shadow, mapped);
  return CUDA_ERROR_OUT_OF_MEMORY;
}

CUresult cuMemFree_v2(CUdeviceptr dptr) {
  CUresult r = Ready();
  if (r != CUDA_SUCCESS) return r;
  pthread_mutex_lock(&g_mu);
  struct Allocation* a = FindAllocation((uintptr_t)dptr);
  if (!a || a->device != (uintptr_t)dptr) {
    pthread_mutex_unlock(&g_mu);
    return CUDA_ERROR_INVALID_VALUE;
  }
  struct Allocation gone = *a;
  memset(a, 0, sizeof(*a));
  pthread_mutex_unlock(&g_mu);
  munmap((void*)gone.device, gone.size);
  munmap(gone.shadow, gone.size);
  return CUDA_SUCCESS;
}

CUresult cuPointerGetAttribute(void* data, int attribute, CUdeviceptr ptr) {
  CUresult r = Ready();
  if (r != CUDA_SUCCESS) return r;
  if (!data) return CUDA_ERROR_INVALID_VALUE;
  pthread_mutex_lock(&g_mu);
  struct Allocation* a = FindAllocation((uintptr_t)ptr);
  struct Allocation found = a ? *a : (struct Allocation){0, NULL, 0, NULL};
  int registered = a ? 0 : Registered((const void*)(uintptr_t)ptr, 1);
  pthread_mutex_unlock(&g_mu);
  if (!a) {
    // Registered host memory is known to the driver as host memory; any other pointer is not.
    if (registered && attribute == CU_POINTER_ATTRIBUTE_MEMORY_TYPE) {
      *(unsigned int*)data = CU_MEMORYTYPE_HOST;
      return CUDA_SUCCESS;
    }
    return CUDA_ERROR_INVALID_VALUE;
  }
  switch (attribute) {
    case CU_POINTER_ATTRIBUTE_CONTEXT: *(CUcontext*)data = found.ctx; return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_MEMORY_TYPE: *(unsigned int*)data = CU_MEMORYTYPE_DEVICE; return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_DEVICE_POINTER: *(CUdeviceptr*)data = ptr; return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL: *(int*)data = found.ctx ? found.ctx->device : 0; return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_RANGE_START_ADDR: *(CUdeviceptr*)data = found.device; return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_RANGE_SIZE: *(size_t*)data = found.size; return CUDA_SUCCESS;
    default: return CUDA_ERROR_INVALID_VALUE;
  }
}

// ---- pinned host memory

CUresult cuMemHostRegister_v2(void* p, size_t size, unsigned int flags) {
  (void)flags;
  CUresult r = ReadyWithContext();
  if (r != CUDA_SUCCESS) return r;
  if (!p || size == 0) return CUDA_ERROR_INVALID_VALUE;
  pthread_mutex_lock(&g_mu);
  if (Registered(p, 1)) {
    pthread_mutex_unlock(&g_mu);
    return CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED;
  }
  for (int i = 0; i < kMaxRegistrations; ++i) {
    if (g_regs[i].size == 0) {
      g_regs[i] = (struct Registration){(uintptr_t)p, size};
      ++g_counters.registrations;
      ++g_counters.live_registrations;
      pthread_mutex_unlock(&g_mu);
      return CUDA_SUCCESS;
    }
  }
  pthread_mutex_unlock(&g_mu);
  return CUDA_ERROR_OUT_OF_MEMORY;
}

CUresult cuMemHostUnregister(void* p) {
  CUresult r = Ready();
  if (r != CUDA_SUCCESS) return r;
  pthread_mutex_lock(&g_mu);
  for (int i = 0; i < kMaxRegistrations; ++i) {
    if (g_regs[i].size && g_regs[i].start == (uintptr_t)p) {
      g_regs[i].size = 0;
      --g_counters.live_registrations;
      pthread_mutex_unlock(&g_mu);
      return CUDA_SUCCESS;
    }
  }
  pthread_mutex_unlock(&g_mu);
  return CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED;
}

// ---- streams: a worker thread running queued copies in order

struct Copy {
  void* dst;
  const void* src;
  size_t n;
  struct Copy* next;
};

struct FakeStream {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  struct Copy* head;
  struct Copy* tail;
  int busy;  // a copy taken off the queue is running
  int stop;
  pthread_t worker;
};

static void* StreamWorker(void* arg) {
  struct FakeStream* s = arg;
  pthread_mutex_lock(&s->mu);
  for (;;) {
    while (!s->head && !s->stop) pthread_cond_wait(&s->cv, &s->mu);
    if (!s->head) break;
    struct Copy* c = s->head;
    s->head = c->next;
    if (!s->head) s->tail = NULL;
    s->busy = 1;
    pthread_mutex_unlock(&s->mu);
    memcpy(c->dst, c->src, c->n);
    free(c);
    pthread_mutex_lock(&s->mu);
    s->busy = 0;
    pthread_cond_broadcast(&s->cv);
  }
  pthread_mutex_unlock(&s->mu);
  return NULL;
}

CUresult cuStreamCreate(CUstream* out, unsigned int flags) {
  (void)flags;
  CUresult r = ReadyWithContext();
  if (r != CUDA_SUCCESS) return r;
  if (!out) return CUDA_ERROR_INVALID_VALUE;
  struct FakeStream* s = calloc(1, sizeof(*s));
  if (!s) return CUDA_ERROR_OUT_OF_MEMORY;
  pthread_mutex_init(&s->mu, NULL);
  pthread_cond_init(&s->cv, NULL);
  if (pthread_create(&s->worker, NULL, StreamWorker, s) != 0) {
    free(s);
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  pthread_mutex_lock(&g_mu);
  ++g_counters.streams_created;
  ++g_counters.live_streams;
  pthread_mutex_unlock(&g_mu);
  *out = s;
  return CUDA_SUCCESS;
}

static void Drain(struct FakeStream* s) {
  pthread_mutex_lock(&s->mu);
  while (s->head || s->busy) pthread_cond_wait(&s->cv, &s->mu);
  pthread_mutex_unlock(&s->mu);
}

CUresult cuStreamSynchronize(CUstream s) {
  CUresult r = Ready();
  if (r != CUDA_SUCCESS) return r;
  if (!s) return CUDA_ERROR_INVALID_HANDLE;
  Drain(s);
  return CUDA_SUCCESS;
}

CUresult cuStreamDestroy_v2(CUstream s) {
  CUresult r = Ready();
  if (r != CUDA_SUCCESS) return r;
  if (!s) return CUDA_ERROR_INVALID_HANDLE;
  pthread_mutex_lock(&s->mu);
  s->stop = 1;
  pthread_cond_broadcast(&s->cv);
  pthread_mutex_unlock(&s->mu);
  pthread_join(s->worker, NULL);
  pthread_mutex_destroy(&s->mu);
  pthread_cond_destroy(&s->cv);
  free(s);
  pthread_mutex_lock(&g_mu);
  --g_counters.live_streams;
  pthread_mutex_unlock(&g_mu);
  return CUDA_SUCCESS;
}

// ---- copies

static CUresult CopyNow(void* dst, const void* src, size_t n, uint64_t* direction) {
  memcpy(dst, src, n);
  pthread_mutex_lock(&g_mu);
  ++g_counters.sync_copies;
  *direction += n;
  pthread_mutex_unlock(&g_mu);
  return CUDA_SUCCESS;
}

CUresult cuMemcpyHtoD_v2(CUdeviceptr dst, const void* src, size_t n) {
  CUresult r = CopyReady();
  if (r != CUDA_SUCCESS) return r;
  uint8_t* to = Shadow(dst, n);
  if (!to || (n && !src)) return CUDA_ERROR_INVALID_VALUE;
  return CopyNow(to, src, n, &g_counters.bytes_to_device);
}

CUresult cuMemcpyDtoH_v2(void* dst, CUdeviceptr src, size_t n) {
  CUresult r = CopyReady();
  if (r != CUDA_SUCCESS) return r;
  const uint8_t* from = Shadow(src, n);
  if (!from || (n && !dst)) return CUDA_ERROR_INVALID_VALUE;
  return CopyNow(dst, from, n, &g_counters.bytes_to_host);
}

static CUresult Enqueue(struct FakeStream* s, void* dst, const void* src, size_t n, const void* host,
                        uint64_t* direction) {
  if (!s) return CUDA_ERROR_INVALID_HANDLE;
  pthread_mutex_lock(&g_mu);
  int pinned = Registered(host, n);
  pthread_mutex_unlock(&g_mu);
  if (!pinned) {
    // Pageable host memory: the driver copies it before returning, after what the stream queued.
    Drain(s);
    return CopyNow(dst, src, n, direction);
  }
  struct Copy* c = malloc(sizeof(*c));
  if (!c) return CUDA_ERROR_OUT_OF_MEMORY;
  *c = (struct Copy){dst, src, n, NULL};
  pthread_mutex_lock(&g_mu);
  ++g_counters.async_copies;
  *direction += n;
  pthread_mutex_unlock(&g_mu);
  pthread_mutex_lock(&s->mu);
  if (s->tail) {
    s->tail->next = c;
  } else {
    s->head = c;
  }
  s->tail = c;
  pthread_cond_broadcast(&s->cv);
  pthread_mutex_unlock(&s->mu);
  return CUDA_SUCCESS;
}

CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr dst, const void* src, size_t n, CUstream s) {
  CUresult r = CopyReady();
  if (r != CUDA_SUCCESS) return r;
  uint8_t* to = Shadow(dst, n);
  if (!to || (n && !src)) return CUDA_ERROR_INVALID_VALUE;
  return Enqueue(s, to, src, n, src, &g_counters.bytes_to_device);
}

CUresult cuMemcpyDtoHAsync_v2(void* dst, CUdeviceptr src, size_t n, CUstream s) {
  CUresult r = CopyReady();
  if (r != CUDA_SUCCESS) return r;
  const uint8_t* from = Shadow(src, n);
  if (!from || (n && !dst)) return CUDA_ERROR_INVALID_VALUE;
  return Enqueue(s, dst, from, n, dst, &g_counters.bytes_to_host);
}

// ---- errors

CUresult cuGetErrorString(CUresult error, const char** out) {
  if (!out) return CUDA_ERROR_INVALID_VALUE;
  switch (error) {
    case CUDA_SUCCESS: *out = "no error"; break;
    case CUDA_ERROR_INVALID_VALUE: *out = "invalid argument"; break;
    case CUDA_ERROR_OUT_OF_MEMORY: *out = "out of memory"; break;
    case CUDA_ERROR_NOT_INITIALIZED: *out = "initialization error"; break;
    case CUDA_ERROR_NO_DEVICE: *out = "no CUDA-capable device is detected"; break;
    case CUDA_ERROR_INVALID_DEVICE: *out = "invalid device ordinal"; break;
    case CUDA_ERROR_INVALID_CONTEXT: *out = "invalid device context"; break;
    case CUDA_ERROR_INVALID_HANDLE: *out = "invalid resource handle"; break;
    case CUDA_ERROR_ILLEGAL_ADDRESS: *out = "an illegal memory access was encountered"; break;
    case CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED: *out = "part or all of the requested memory range is already mapped"; break;
    case CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED: *out = "pointer does not correspond to a registered memory region"; break;
    default: *out = NULL; return CUDA_ERROR_INVALID_VALUE;
  }
  return CUDA_SUCCESS;
}
