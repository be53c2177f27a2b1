#include "common/checksum.h"

#include <gtest/gtest.h>
#include <xxhash.h>

#include <algorithm>
#include <random>

namespace yb {
namespace {

struct Piece {
  void* ptr;
  uint64_t size;
};

std::vector<uint8_t> Bytes(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<uint8_t> v(n);
  for (auto& b : v) b = static_cast<uint8_t>(rng());
  return v;
}

// Cuts [0, n) at `cuts` random places.
std::vector<Piece> Cut(std::vector<uint8_t>& v, int cuts, std::mt19937& rng) {
  std::vector<uint64_t> at{0, v.size()};
  for (int i = 0; i < cuts && !v.empty(); ++i) at.push_back(rng() % v.size());
  std::sort(at.begin(), at.end());
  std::vector<Piece> out;
  for (size_t i = 0; i + 1 < at.size(); ++i) out.push_back({v.data() + at[i], at[i + 1] - at[i]});
  return out;
}

TEST(ChecksumTest, AnObjectOfOneChunkHasPlainXxh3) {
  for (size_t n : {size_t{1}, size_t{100}, size_t{kChecksumChunk}}) {
    auto v = Bytes(n, 1);
    EXPECT_EQ(ObjectChecksum(v.data(), n), XXH3_64bits(v.data(), n));
    EXPECT_EQ(Xxh3(v.data(), n), XXH3_64bits(v.data(), n));
  }
}

// However a transfer cuts and orders the pieces it reports, and whatever it leaves out, the sink
// ends with the object's checksum; a flipped byte changes it.
TEST(ChecksumTest, ASinkFedAnyPiecesInAnyOrderGivesTheObjectsChecksum) {
  std::mt19937 rng(7);
  for (size_t n : {size_t{1}, kChecksumChunk - 1, kChecksumChunk, kChecksumChunk + 1, 3 * kChecksumChunk,
                   size_t{(1u << 20) + 17}}) {
    auto v = Bytes(n, static_cast<uint32_t>(n));
    const uint64_t want = ObjectChecksum(v.data(), n);
    for (int round = 0; round < 20; ++round) {
      ChecksumSink sink(n);
      auto moved = Cut(v, round % 7, rng);
      std::shuffle(moved.begin(), moved.end(), rng);
      for (const auto& p : moved) {
        if (rng() % 3 == 0) continue;  // a staged copy: reported by no transport
        sink.Moved(static_cast<uint64_t>(static_cast<uint8_t*>(p.ptr) - v.data()), p.ptr, p.size);
      }
      EXPECT_EQ(sink.Finish(Cut(v, round % 5, rng)), want) << n << " round " << round;
    }
    v[rng() % n] ^= 1;
    ChecksumSink sink(n);
    EXPECT_NE(sink.Finish(std::vector<Piece>{{v.data(), n}}), want);
  }
}

// A transport that copies and hashes in one pass (CopyMoved) copies every byte and leaves the sink
// as Moved() of the same pieces would: the object's checksum, whatever the cuts.
TEST(ChecksumTest, CopyingThroughTheSinkCopiesEveryByteAndHashesAsMovedDoes) {
  std::mt19937 rng(11);
  for (size_t n : {size_t{1}, size_t{5000}, kChecksumChunk, kChecksumChunk + 4097, 4 * kChecksumChunk + 3}) {
    auto v = Bytes(n, static_cast<uint32_t>(n) + 1);
    const uint64_t want = ObjectChecksum(v.data(), n);
    for (int round = 0; round < 10; ++round) {
      std::vector<uint8_t> copy(n, 0);
      ChecksumSink sink(n);
      for (const auto& p : Cut(v, round % 7, rng)) {
        const uint64_t pos = static_cast<uint64_t>(static_cast<uint8_t*>(p.ptr) - v.data());
        sink.CopyMoved(pos, copy.data() + pos, p.ptr, p.size, /*hash_copy=*/round % 2 == 1);
      }
      EXPECT_EQ(copy, v) << n << " round " << round;
      EXPECT_EQ(sink.Finish(std::vector<Piece>{{v.data(), n}}), want) << n << " round " << round;
      if (round % 7 == 0) {
        EXPECT_TRUE(sink.complete()) << n;  // one piece: every chunk hashed on the way
      }
    }
  }
}

TEST(ChecksumTest, ASinkResetForAnotherAttemptForgetsTheFirst) {
  auto good = Bytes(200000, 3);
  auto bad = good;
  bad[70000] ^= 0x40;
  ChecksumSink sink(good.size());
  sink.Moved(0, bad.data(), bad.size());
  EXPECT_NE(sink.Finish(std::vector<Piece>{{bad.data(), bad.size()}}), ObjectChecksum(good.data(), good.size()));
  sink.Reset(good.size());
  sink.Moved(0, good.data(), good.size());
  EXPECT_EQ(sink.Finish(std::vector<Piece>{{good.data(), good.size()}}), ObjectChecksum(good.data(), good.size()));
}

}  // namespace
}  // namespace yb
