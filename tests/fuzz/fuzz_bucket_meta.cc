// The SSD tier's bucket metadata parser (storage/storage_engine.h): a directory holding a bucket
// whose meta file is the input is opened, as a restarted client opens its SSD tier. A damaged
// file is a bucket that never existed: it is dropped, never trusted. The input gets the file's
// trailing checksum added, so that the fuzzer reaches the parser behind it.
#include <unistd.h>
#include <xxhash.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "storage/storage_engine.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::string dir = [] {
    std::string d = (std::filesystem::temp_directory_path() / ("yb-fuzz-bucket-" + std::to_string(getpid()))).string();
    std::filesystem::create_directories(d);
    return d;
  }();
  {
    std::ofstream meta(dir + "/bucket-1.meta", std::ios::binary | std::ios::trunc);
    meta.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
    const uint64_t trailer = XXH3_64bits(data, size);
    meta.write(reinterpret_cast<const char*>(&trailer), sizeof(trailer));
    std::ofstream(dir + "/bucket-1.data", std::ios::binary | std::ios::trunc) << std::string(4096, 'd');
  }
  yb::storage::StorageConfig c;
  c.path = dir;
  yb::storage::StorageEngine engine(c);
  auto objects = engine.Open();
  if (objects.ok()) {
    for (const auto& o : *objects) {
      if (o.size > 4096) std::abort();  // an entry beyond its data file is refused
      std::string buf(o.size, '\0');
      (void)engine.Read(o.key, buf.data(), buf.size());
    }
  }
  std::filesystem::remove_all(dir + "/");
  std::filesystem::create_directories(dir);
  return 0;
}
