/* Compiled as C: the header is valid C, and a minimal Mooncake-style program runs: against an
 * in-process master (contributing 4 MiB) by default, or as a pure caller against the yb-master
 * named by argv[1] ("host:port"). */
#include <stdio.h>
#include <string.h>

#include "yuebing/store_c.h"

int main(int argc, char** argv) {
  const char* master = argc > 1 ? argv[1] : "embedded:c-check";
  uint64_t segment = argc > 1 ? 0 : 4u << 20; /* a pure caller against a real cluster */
  mooncake_store_t store = mooncake_store_create();
  if (!store) return 1;
  if (mooncake_store_setup(store, "127.0.0.1", "P2PHANDSHAKE", segment, 1u << 20, "tcp", "", master) != 0) return 2;
  const char* value = "hello from C";
  if (mooncake_store_put(store, "c-key", value, strlen(value) + 1, NULL) != 0) return 3;
  char out[64];
  if (mooncake_store_get_into(store, "c-key", out, sizeof(out)) != (int64_t)(strlen(value) + 1)) return 4;
  if (strcmp(out, value) != 0) return 5;
  if (mooncake_store_is_exist(store, "c-key") != 1) return 6;
  if (mooncake_store_get_size(store, "c-key") != (int64_t)(strlen(value) + 1)) return 7;
  if (mooncake_store_remove(store, "c-key", 1) != 0) return 8;
  if (mooncake_store_get_into(store, "c-key", out, sizeof(out)) != -704) return 9;
  mooncake_store_destroy(store);
  printf("C API check passed\n");
  return 0;
}
