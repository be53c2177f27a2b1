#include "common/files.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <fstream>

#include "common/temp_dir.h"

namespace yb {
namespace {

mode_t ModeOf(const std::string& path) {
  struct stat st {};
  EXPECT_EQ(::stat(path.c_str(), &st), 0) << path;
  return st.st_mode & 07777;
}

// A directory of keys is created private, a looser one of ours is tightened, and a directory that
// is not ours alone (shared, sticky, or without our marker) is never changed.
TEST(MakePrivateDirTest, OnlyOursIsEverTightened) {
  TempDir root{"yb-private"};
  const std::string fresh = root.path() + "/fresh";
  ASSERT_TRUE(MakePrivateDir(fresh, "LOCK").ok());
  EXPECT_EQ(ModeOf(fresh), 0700u);

  const std::string old = root.path() + "/old";  // as an earlier version made it
  ASSERT_EQ(::mkdir(old.c_str(), 0755), 0);
  std::ofstream(old + "/LOCK") << "";
  ASSERT_TRUE(MakePrivateDir(old, "LOCK").ok());
  EXPECT_EQ(ModeOf(old), 0700u);

  const std::string shared = root.path() + "/shared";  // an operator's directory, not ours alone
  ASSERT_EQ(::mkdir(shared.c_str(), 0755), 0);
  ASSERT_EQ(::chmod(shared.c_str(), 0755), 0);
  ASSERT_TRUE(MakePrivateDir(shared, "LOCK").ok());
  EXPECT_EQ(ModeOf(shared), 0755u);
  std::ofstream(shared + "/LOCK") << "";
  ASSERT_TRUE(MakePrivateDir(shared, "").ok());  // no marker: never
  EXPECT_EQ(ModeOf(shared), 0755u);

  const std::string sticky = root.path() + "/tmp-like";  // /tmp: sticky, everyone's
  ASSERT_EQ(::mkdir(sticky.c_str(), 0700), 0);
  ASSERT_EQ(::chmod(sticky.c_str(), 01777), 0);
  std::ofstream(sticky + "/LOCK") << "";
  ASSERT_TRUE(MakePrivateDir(sticky, "LOCK").ok());
  EXPECT_EQ(ModeOf(sticky), 01777u);

  std::ofstream(root.path() + "/file") << "";
  EXPECT_EQ(MakePrivateDir(root.path() + "/file", "LOCK").code(), Code::kFileOpenFail);
}

}  // namespace
}  // namespace yb
