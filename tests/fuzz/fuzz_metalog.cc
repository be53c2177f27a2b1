// What a restarted master or a standby parses from the metadata log (proto/metalog.proto): each
// record applied to an image (MasterImage::Apply, as a standby applies shipped frames), then the
// image loaded into a master (MasterService::Load, as at a restart or a promotion). Frames carry
// checksums, so the input is a sequence of records, each a length byte and its bytes. A record
// that makes no sense is refused by Load, never a crash.
#include <cstdint>
#include <string_view>

#include "common/clock.h"
#include "ha/log_format.h"
#include "master/master_image.h"
#include "master/master_service.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace yb;
  MasterImage image;
  pb::LogRecord rec;
  for (size_t pos = 0; pos < size;) {
    const size_t len = std::min<size_t>(data[pos], size - pos - 1);
    if (rec.ParseFromArray(data + pos + 1, static_cast<int>(len))) image.Apply(rec);
    pos += 1 + len;
  }
  (void)image.Summary();
  ManualClock clock;
  MasterConfig c;
  c.object_shards = 2;
  auto master = MasterService::Create(c, clock).value();
  if (master->Load(image).ok()) {
    CallContext ctx{ClientId{1, 1}};
    (void)master->ListSegments();
    for (const auto& [key, o] : image.objects)
      (void)master->GetReplicaList(ctx, std::string(key.size() > 2 ? key.substr(2) : key), false);
    (void)master->ExpireRecoveredOnce();
  }
  // The framed form of the same bytes: a torn or corrupt frame ends the read, never past the input.
  ha::FrameReader r(std::string_view(reinterpret_cast<const char*>(data), size));
  while (r.Next()) {
  }
  if (r.good_bytes() > size) __builtin_trap();
  return 0;
}
