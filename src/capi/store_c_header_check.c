/* Compiled as C: the header is valid C, and a minimal Mooncake-style program runs. */
#include <stdio.h>
#include <string.h>

#include "yuebing/store_c.h"

int main(void) {
  mooncake_store_t store = mooncake_store_create();
  if (!store) return 1;
  if (mooncake_store_setup(store, "c-host", "P2PHANDSHAKE", 4u << 20, 1u << 20, "tcp", "", "embedded:c-check") != 0)
    return 2;
  const char *value = "hello from C";
  if (mooncake_store_put(store, "c-key", value, strlen(value) + 1, NULL) != 0) return 3;
  char out[64];
  if (mooncake_store_get_into(store, "c-key", out, sizeof(out)) != (int64_t)(strlen(value) + 1)) return 4;
  if (strcmp(out, value) != 0) return 5;
  if (mooncake_store_is_exist(store, "c-key") != 1) return 6;
  mooncake_store_destroy(store);
  printf("C API check passed\n");
  return 0;
}
