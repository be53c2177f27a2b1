// The C API: converts arguments and calls yb::Client. No logic lives here.
#include "yuebing/store_c.h"

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <new>
#include <string>
#include <vector>

#include "common/log.h"
#include "yuebing/client.h"
#include "yuebing/embedded.h"

namespace {

using yb::Code;
using yb::Status;

struct StoreHandle {
  std::mutex setup_mu;
  std::unique_ptr<yb::Client> client;       // set once by setup, under setup_mu
  std::atomic<yb::Client*> ready{nullptr};  // client.get() once set up: read without the lock
  std::string etcd_ca, etcd_cert, etcd_key;
};

constexpr int kInvalid = -600;  // INVALID_PARAMS: a bad argument
constexpr int kNull = -1;       // a NULL store or key, as Mooncake answers it
// Where a NULL master_server_addr, and init_all, look for the master: Mooncake's default.
constexpr const char* kDefaultMaster = yb::kDefaultMasterAddress;
// health_check's answers, as Mooncake's.
constexpr int kHealthy = 0;
constexpr int kNotInitialized = 1;
constexpr int kMasterUnreachable = 2;

int Code(const Status& s) { return s.mooncake_code(); }

yb::Client* ClientOf(mooncake_store_t store) {
  if (!store) return nullptr;
  return static_cast<StoreHandle*>(store)->ready.load(std::memory_order_acquire);
}

yb::ReplicateConfig ToConfig(const mooncake_replicate_config_t* c) {
  yb::ReplicateConfig r;
  if (!c) return r;
  r.replica_num = c->replica_num == 0 ? 1 : c->replica_num;
  r.with_soft_pin = c->with_soft_pin != 0;
  r.with_hard_pin = c->with_hard_pin != 0;
  for (size_t i = 0; c->preferred_segments && i < c->preferred_segments_count; ++i) {
    if (c->preferred_segments[i]) r.preferred_segments.emplace_back(c->preferred_segments[i]);
  }
  return r;
}

const char* Or(const char* s, const char* fallback) { return s && *s ? s : fallback; }

// Every entry point runs through this: no exception crosses into C.
template <typename F>
auto Guard(F&& f) -> decltype(f()) {
  try {
    return f();
  } catch (const std::bad_alloc&) {
    return -1;
  } catch (...) {
    return -1;
  }
}

}  // namespace

extern "C" {

mooncake_store_t mooncake_store_create(void) { return new (std::nothrow) StoreHandle(); }

void mooncake_store_destroy(mooncake_store_t store) { delete static_cast<StoreHandle*>(store); }

void mooncake_store_set_etcd_tls_config(mooncake_store_t store, const char* ca_file, const char* cert_file,
                                        const char* key_file) {
  if (!store) return;
  auto* h = static_cast<StoreHandle*>(store);
  std::lock_guard lock(h->setup_mu);
  h->etcd_ca = Or(ca_file, "");
  h->etcd_cert = Or(cert_file, "");
  h->etcd_key = Or(key_file, "");
}

namespace {

// Connects `store` with `c` (the environment applied, etcd TLS as set): setup's and setup_dummy's end.
int ConnectStore(mooncake_store_t store, yb::ClientConfig c) {
  auto* h = static_cast<StoreHandle*>(store);
  // A C program has no main() of ours: this setup is its entry point, and Mooncake's users tune
  // the transport through the environment. The library under it reads none.
  yb::ApplyEnvironment(c, [](const char* name) { return std::getenv(name); });
  std::lock_guard lock(h->setup_mu);
  if (!h->etcd_ca.empty() || !h->etcd_cert.empty()) {  // mooncake_store_set_etcd_tls_config
    c.etcd_tls_ca = h->etcd_ca;
    c.etcd_tls_cert = h->etcd_cert;
    c.etcd_tls_key = h->etcd_key;
  }
  if (h->client) {
    YB_LOG_ERROR("setup: this store is already set up");
    return kInvalid;
  }
  yb::EnableEmbeddedMaster();  // Mooncake's callers may ask for "embedded"
  auto client = yb::Client::Connect(c);
  if (!client.ok()) {
    YB_LOG_ERROR("setup failed: {}", client.status().ToString());
    return Code(client.status());
  }
  h->client = std::move(client).value();
  h->ready.store(h->client.get(), std::memory_order_release);
  return 0;
}

}  // namespace

int mooncake_store_setup(mooncake_store_t store, const char* local_hostname, const char* metadata_server,
                         uint64_t global_segment_size, uint64_t local_buffer_size, const char* protocol,
                         const char* device_name, const char* master_server_addr) {
  return Guard([&]() -> int {
    if (!store) return kNull;
    yb::ClientConfig c;
    c.local_hostname = Or(local_hostname, "localhost");
    c.metadata_server = Or(metadata_server, "P2PHANDSHAKE");
    c.global_segment_size = global_segment_size;
    c.local_buffer_size = local_buffer_size;
    c.protocol = Or(protocol, "tcp");
    c.device_name = Or(device_name, "");
    c.master_server_addr = Or(master_server_addr, kDefaultMaster);
    return ConnectStore(store, std::move(c));
  });
}

int mooncake_store_setup_dummy(mooncake_store_t store, uint64_t mem_pool_size, uint64_t local_buffer_size,
                               const char* server_address) {
  (void)mem_pool_size;  // Mooncake's takes it and maps nothing for it either: buffers come from alloc
  return Guard([&]() -> int {
    if (!store) return kNull;
    if (!server_address || !*server_address) {
      YB_LOG_ERROR("setup_dummy: no server_address (the real client's host:port, e.g. 127.0.0.1:50052)");
      return kInvalid;
    }
    yb::ClientConfig c;
    c.real_client = server_address;
    c.local_buffer_size = local_buffer_size;
    return ConnectStore(store, std::move(c));
  });
}

void* mooncake_store_alloc_shared(size_t size) { return yb::AllocateSharedMemory(size); }

int mooncake_store_free_shared(void* ptr) {
  if (!ptr) return kNull;
  yb::Status st = yb::FreeSharedMemory(ptr);
  return st.ok() ? 0 : Code(st);
}

// Mooncake's: the master on this host, a 1 GiB staging buffer.
int mooncake_store_init_all(mooncake_store_t store, const char* protocol, const char* device_name,
                            uint64_t mount_segment_size) {
  return mooncake_store_setup(store, "localhost", "P2PHANDSHAKE", mount_segment_size, 1ULL << 30, protocol, device_name,
                              kDefaultMaster);
}

int mooncake_store_health_check(mooncake_store_t store) {
  return Guard([&]() -> int {
    if (!store) return kNull;
    yb::Client* c = ClientOf(store);
    if (!c) return kNotInitialized;
    return c->HealthCheck().ok() ? kHealthy : kMasterUnreachable;
  });
}

int mooncake_store_put(mooncake_store_t store, const char* key, const void* value, size_t size,
                       const mooncake_replicate_config_t* config) {
  return Guard([&]() -> int {
    if (!store || !key) return kNull;
    yb::Client* c = ClientOf(store);
    if (!c || (!value && size > 0)) return kInvalid;
    return Code(c->Put(key, value, size, ToConfig(config)));
  });
}

int mooncake_store_put_from(mooncake_store_t store, const char* key, void* buffer, size_t size,
                            const mooncake_replicate_config_t* config) {
  return mooncake_store_put(store, key, buffer, size, config);
}

int mooncake_store_batch_put_from(mooncake_store_t store, const char** keys, void** buffers, const size_t* sizes,
                                  size_t count, const mooncake_replicate_config_t* config, int* results_out) {
  return Guard([&]() -> int {
    if (!store) return kNull;
    yb::Client* c = ClientOf(store);
    if (count > 0 && !keys) return kNull;
    if (!c || (count > 0 && (!buffers || !sizes || !results_out))) return kInvalid;
    std::vector<std::string> k;
    std::vector<std::vector<yb::Slice>> v;
    for (size_t i = 0; i < count; ++i) {
      if (!keys[i]) return kNull;
      if (!buffers[i] && sizes[i] > 0) return kInvalid;
      k.emplace_back(keys[i]);
      v.push_back({{buffers[i], sizes[i]}});
    }
    auto res = c->BatchPut(k, v, ToConfig(config));
    for (size_t i = 0; i < count; ++i) results_out[i] = Code(res[i]);
    return 0;
  });
}

int64_t mooncake_store_get_into(mooncake_store_t store, const char* key, void* buffer, size_t size) {
  return Guard([&]() -> int64_t {
    if (!store || !key) return kNull;
    yb::Client* c = ClientOf(store);
    if (!c || (!buffer && size > 0)) return kInvalid;
    auto r = c->Get(key, buffer, size);
    return r.ok() ? static_cast<int64_t>(*r) : Code(r.status());
  });
}

int mooncake_store_batch_get_into(mooncake_store_t store, const char** keys, void** buffers, const size_t* sizes,
                                  size_t count, int64_t* results_out) {
  return Guard([&]() -> int {
    if (!store) return kNull;
    yb::Client* c = ClientOf(store);
    if (count > 0 && !keys) return kNull;
    if (!c || (count > 0 && (!buffers || !sizes || !results_out))) return kInvalid;
    std::vector<std::string> k;
    std::vector<std::vector<yb::Slice>> b;
    for (size_t i = 0; i < count; ++i) {
      if (!keys[i]) return kNull;
      if (!buffers[i] && sizes[i] > 0) return kInvalid;
      k.emplace_back(keys[i]);
      b.push_back({{buffers[i], sizes[i]}});
    }
    auto res = c->BatchGet(k, b);
    for (size_t i = 0; i < count; ++i) {
      results_out[i] = res[i].ok() ? static_cast<int64_t>(*res[i]) : Code(res[i].status());
    }
    return 0;
  });
}

int mooncake_store_is_exist(mooncake_store_t store, const char* key) {
  return Guard([&]() -> int {
    if (!store || !key) return kNull;
    yb::Client* c = ClientOf(store);
    if (!c) return kInvalid;
    auto r = c->IsExist(key);
    return r.ok() ? (*r ? 1 : 0) : Code(r.status());
  });
}

int mooncake_store_batch_is_exist(mooncake_store_t store, const char** keys, size_t count, int* results_out) {
  return Guard([&]() -> int {
    if (!store) return kNull;
    yb::Client* c = ClientOf(store);
    if (count > 0 && !keys) return kNull;
    if (!c || (count > 0 && !results_out)) return kInvalid;
    std::vector<std::string> k;
    for (size_t i = 0; i < count; ++i) {
      if (!keys[i]) return kNull;
      k.emplace_back(keys[i]);
    }
    auto res = c->BatchIsExist(k);
    for (size_t i = 0; i < count; ++i) results_out[i] = res[i].ok() ? (*res[i] ? 1 : 0) : Code(res[i].status());
    return 0;
  });
}

int64_t mooncake_store_get_size(mooncake_store_t store, const char* key) {
  return Guard([&]() -> int64_t {
    if (!store || !key) return kNull;
    yb::Client* c = ClientOf(store);
    if (!c) return kInvalid;
    auto r = c->GetSize(key);
    return r.ok() ? static_cast<int64_t>(*r) : Code(r.status());
  });
}

int mooncake_store_get_hostname(mooncake_store_t store, char* buf_out, size_t buf_len) {
  return Guard([&]() -> int {
    if (!store) return kNull;
    yb::Client* c = ClientOf(store);
    if (!c || !buf_out || buf_len == 0) return kInvalid;
    const std::string& h = c->hostname();
    if (h.size() >= buf_len) return kInvalid;
    std::memcpy(buf_out, h.c_str(), h.size() + 1);
    return 0;
  });
}

int mooncake_store_remove(mooncake_store_t store, const char* key, int force) {
  return Guard([&]() -> int {
    if (!store || !key) return kNull;
    yb::Client* c = ClientOf(store);
    if (!c) return kInvalid;
    return Code(c->Remove(key, force != 0));
  });
}

int64_t mooncake_store_remove_by_regex(mooncake_store_t store, const char* pattern, int force) {
  return Guard([&]() -> int64_t {
    if (!store || !pattern) return kNull;
    yb::Client* c = ClientOf(store);
    if (!c) return kInvalid;
    auto r = c->RemoveByRegex(pattern, force != 0);
    return r.ok() ? static_cast<int64_t>(*r) : Code(r.status());
  });
}

int64_t mooncake_store_remove_all(mooncake_store_t store, int force) {
  return Guard([&]() -> int64_t {
    if (!store) return kNull;
    yb::Client* c = ClientOf(store);
    if (!c) return kInvalid;
    auto r = c->RemoveAll(force != 0);
    return r.ok() ? static_cast<int64_t>(*r) : Code(r.status());
  });
}

int mooncake_store_register_buffer(mooncake_store_t store, void* buffer, size_t size) {
  return Guard([&]() -> int {
    if (!store) return kNull;
    yb::Client* c = ClientOf(store);
    return c ? Code(c->RegisterBuffer(buffer, size)) : kInvalid;
  });
}

int mooncake_store_unregister_buffer(mooncake_store_t store, void* buffer) {
  return Guard([&]() -> int {
    if (!store) return kNull;
    yb::Client* c = ClientOf(store);
    return c ? Code(c->UnregisterBuffer(buffer)) : kInvalid;
  });
}

}  // extern "C"
