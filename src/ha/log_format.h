// The metadata log's files. A frame is a 24-byte header and a payload, little-endian:
//
//   u32 magic 'YBML' | u32 payload length | u64 sequence number | u64 XXH3-64 of the payload,
//   seeded with the sequence number | payload (a pb::LogRecord, or in a snapshot file first a
//   pb::SnapshotHeader)
//
// Log files are named log-<first sequence number>.ybl and hold frames of consecutive sequence
// numbers; a snapshot file snap-<sequence number>.ybs holds the state as of that number, every
// frame carrying it. A frame that is cut short, whose magic or checksum is wrong, or whose payload
// is longer than kMaxPayload ends what a reader takes from a file.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/files.h"
#include "yuebing/status.h"

namespace yb::ha {

inline constexpr uint32_t kFrameMagic = 0x4C4D4259;  // "YBML"
inline constexpr size_t kFrameHeader = 24;
inline constexpr uint32_t kMaxPayload = 64u << 20;

// Appends a frame to `out`.
void AppendFrame(uint64_t seq, std::string_view payload, std::string& out);

struct Frame {
  uint64_t seq = 0;
  std::string_view payload;  // into the buffer it was read from
};

// Reads the frames of a whole file held in memory.
class FrameReader {
 public:
  explicit FrameReader(std::string_view data) : data_(data) {}
  // The next frame; nullopt at the end, or at the first frame that is torn or corrupt (then
  // clean() is false and good_bytes() says where the good frames end).
  std::optional<Frame> Next();
  size_t good_bytes() const { return pos_; }
  bool clean() const { return clean_; }

 private:
  std::string_view data_;
  size_t pos_ = 0;
  bool clean_ = true;
};

// File names.
std::string LogFileName(uint64_t first_seq);
std::string SnapshotFileName(uint64_t seq);
// The sequence number in a file name of that kind ("log-" / "snap-"), or nullopt.
std::optional<uint64_t> ParseFileName(std::string_view name, std::string_view prefix, std::string_view suffix);

// The file helpers the log uses.
using yb::ReadWholeFile;
using yb::SyncDir;
using yb::WriteAll;

}  // namespace yb::ha
