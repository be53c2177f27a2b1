/*
 * Yuebing's C API: the functions, signatures and error numbers of Mooncake Store's store_c.h, so
 * that programs written for Mooncake link and run unchanged.
 *
 * Returns: 0 or a positive value on success, a negative Mooncake error code on failure
 * (INVALID_PARAMS -600 for bad arguments and for a store not set up, OBJECT_NOT_FOUND -704, ...);
 * -1 for a NULL store or key (or key array), as Mooncake's. Strings passed in are not kept after a
 * call returns. A handle may be used from several threads at once.
 *
 * master_server_addr: "host:port" of a yb-master (protocol "tcp"; NULL: "127.0.0.1:50051", as
 * Mooncake's); or "embedded" / "embedded:NAME", which runs the master inside the calling process,
 * shared by every store of the process that names the same cluster.
 * local_hostname: names this store's segments (what preferred_segments refers to) and, with a
 * networked master, the host (and port, if given) its transfer server listens on. A name without a
 * port gets the transfer server's ("host:port", unique in the cluster, as Mooncake's P2PHANDSHAKE
 * names segments).
 * metadata_server: "P2PHANDSHAKE" (or NULL/empty) needs no other service; etcd:// and http://
 * values are accepted and not contacted: Yuebing's master hands out every segment's transfer
 * endpoint itself, so the metadata service Mooncake's transfer engine needs has no role here.
 */
#ifndef YUEBING_STORE_C_H
#define YUEBING_STORE_C_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef void* mooncake_store_t;

struct mooncake_replicate_config {
  size_t replica_num;              /* copies on distinct segments; 0 is taken as 1 */
  int with_soft_pin;               /* evicted only after unpinned objects */
  int with_hard_pin;               /* never evicted */
  const char** preferred_segments; /* segment (host) names to try first; may be NULL */
  size_t preferred_segments_count;
};
typedef struct mooncake_replicate_config mooncake_replicate_config_t;

/* Lifecycle. */
mooncake_store_t mooncake_store_create(void);
void mooncake_store_destroy(mooncake_store_t store);
/* Kept for etcd connections (HA); must precede setup. NULLs disable TLS. */
void mooncake_store_set_etcd_tls_config(mooncake_store_t store, const char* ca_file, const char* cert_file,
                                        const char* key_file);
int mooncake_store_setup(mooncake_store_t store, const char* local_hostname, const char* metadata_server,
                         uint64_t global_segment_size, uint64_t local_buffer_size, const char* protocol,
                         const char* device_name, const char* master_server_addr);
/* Yuebing's: a dummy client (Mooncake's Python setup_dummy) of the real client of this host, a
 * yb-client serving transfers on the port of server_address ("host:port"; the host is not used):
 * no master address and no network connection of its own, every call served by the real client
 * through a Unix socket. mem_pool_size is accepted and unused, as Mooncake's; the memory the real
 * client moves bytes into directly comes from mooncake_store_alloc_shared (other memory is staged
 * through the local buffer). */
int mooncake_store_setup_dummy(mooncake_store_t store, uint64_t mem_pool_size, uint64_t local_buffer_size,
                               const char* server_address);
/* Yuebing's: size bytes of memory shared with a dummy's real client (Mooncake's
 * MooncakeHostMemAllocator.alloc), NULL when it cannot be had; freed by mooncake_store_free_shared
 * (0, or INVALID_PARAMS -600 for an address it did not give). */
void* mooncake_store_alloc_shared(size_t size);
int mooncake_store_free_shared(void* ptr);
/* setup("localhost", "P2PHANDSHAKE", mount_segment_size, 1 GiB, protocol, device_name, "127.0.0.1:50051"),
 * as Mooncake's (whose fixed "localhost:12345" name would clash between processes: ours gets a free port). */
int mooncake_store_init_all(mooncake_store_t store, const char* protocol, const char* device_name,
                            uint64_t mount_segment_size);
/* 0 healthy, 1 not set up, 2 the master does not answer (-1: a NULL store), as Mooncake's. */
int mooncake_store_health_check(mooncake_store_t store);

/* Puts. config may be NULL (one replica, no pins). Putting an existing key again with the same
 * size returns 0; with another size, OBJECT_ALREADY_EXISTS (-705). */
int mooncake_store_put(mooncake_store_t store, const char* key, const void* value, size_t size,
                       const mooncake_replicate_config_t* config);
int mooncake_store_put_from(mooncake_store_t store, const char* key, void* buffer, size_t size,
                            const mooncake_replicate_config_t* config);
/* Returns 0 when the arguments were valid; per-key codes in results_out[count]. */
int mooncake_store_batch_put_from(mooncake_store_t store, const char** keys, void** buffers, const size_t* sizes,
                                  size_t count, const mooncake_replicate_config_t* config, int* results_out);

/* Gets. Bytes read, or a negative code (a buffer smaller than the object: BUFFER_OVERFLOW -10). */
int64_t mooncake_store_get_into(mooncake_store_t store, const char* key, void* buffer, size_t size);
int mooncake_store_batch_get_into(mooncake_store_t store, const char** keys, void** buffers, const size_t* sizes,
                                  size_t count, int64_t* results_out);

/* 1 exists, 0 does not, negative on error. */
int mooncake_store_is_exist(mooncake_store_t store, const char* key);
int mooncake_store_batch_is_exist(mooncake_store_t store, const char** keys, size_t count, int* results_out);
int64_t mooncake_store_get_size(mooncake_store_t store, const char* key);
/* Copies the local hostname with its terminating NUL; INVALID_PARAMS if buf_len is too small. */
int mooncake_store_get_hostname(mooncake_store_t store, char* buf_out, size_t buf_len);

/* Removal. A leased object needs force; a missing key gives OBJECT_NOT_FOUND (-704). */
int mooncake_store_remove(mooncake_store_t store, const char* key, int force);
int64_t mooncake_store_remove_by_regex(mooncake_store_t store, const char* pattern, int force);
int64_t mooncake_store_remove_all(mooncake_store_t store, int force);

/* Zero-copy buffers for put_from / get_into. */
int mooncake_store_register_buffer(mooncake_store_t store, void* buffer, size_t size);
int mooncake_store_unregister_buffer(mooncake_store_t store, void* buffer);

#ifdef __cplusplus
}
#endif

#endif /* YUEBING_STORE_C_H */
