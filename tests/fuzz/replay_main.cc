// A main() for a fuzz target built without libFuzzer: replays every file it is given (or every
// file of every directory it is given) through LLVMFuzzerTestOneInput once. The test suite runs
// each target so over its seed corpus, in the plain build and under ASan + UBSan, so that an input
// that once crashed a decoder (saved into the corpus) fails CI if it crashes again.
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);
extern "C" __attribute__((weak)) int LLVMFuzzerInitialize(int* argc, char*** argv);

int main(int argc, char** argv) {
  if (LLVMFuzzerInitialize) LLVMFuzzerInitialize(&argc, &argv);
  size_t ran = 0;
  auto run = [&](const std::filesystem::path& p) {
    std::ifstream in(p, std::ios::binary);
    std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
    ++ran;
  };
  for (int i = 1; i < argc; ++i) {
    std::filesystem::path p(argv[i]);
    if (std::filesystem::is_directory(p)) {
      for (const auto& e : std::filesystem::recursive_directory_iterator(p)) {
        if (e.is_regular_file()) run(e.path());
      }
    } else {
      run(p);
    }
  }
  std::printf("replayed %zu inputs\n", ran);
  return ran > 0 ? 0 : 1;
}
