// TempDir: a fresh directory under /tmp, removed with everything in it when the object goes.
// For tests.
#pragma once

#include <stdlib.h>

#include <filesystem>
#include <string>

namespace yb {

class TempDir {
 public:
  explicit TempDir(const std::string& prefix = "yb") {
    std::string tmpl = "/tmp/" + prefix + "-XXXXXX";
    path_ = mkdtemp(tmpl.data()) ? tmpl : std::string();
  }
  ~TempDir() {
    std::error_code ec;
    if (!path_.empty()) std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

}  // namespace yb
