// Every request handler of the master (rpc/master_server.cc) on whatever a caller sends: the first
// byte picks the method, the rest is its body. Each input is served twice, as sent (a body that
// does not parse, or a context the master did not give, is refused before the method runs) and
// with the context of a registered client stamped in (so that the method itself runs on the
// request's other fields: keys, sizes, configs, patterns, segments, batches).
#include <cstdint>
#include <string>
#include <string_view>

#include "common/clock.h"
#include "master/master_service.h"
#include "rpc/master_convert.h"
#include "rpc/master_server.h"

namespace {

using namespace yb;
using rpc::MasterMethod;

struct World {
  ManualClock clock;
  std::unique_ptr<MasterService> master;
  rpc::RpcServer server{rpc::RpcServer::Options{}};
  CallContext ctx;
  World() {
    MasterConfig c;
    c.object_shards = 4;
    master = MasterService::Create(c, clock).value();
    rpc::RegisterMasterService(server, *master);
    ctx = master->RegisterClient({ClientId{7, 7}, "fuzz", "default"}).value();
    (void)master->MountSegment(ctx, SegmentMount{{1, "fuzz-node", 0, 64ULL << 20, "local"}, 1});
  }
};

template <MasterMethod m>
std::string Stamped(std::string_view body, const CallContext& ctx) {
  typename rpc::MethodTraits<m>::Request q;
  if (!q.ParseFromArray(body.data(), static_cast<int>(body.size()))) return std::string(body);
  if constexpr (requires { q.mutable_ctx(); }) rpc::ToPb(ctx, q.mutable_ctx());
  return q.SerializeAsString();
}

using StampFn = std::string (*)(std::string_view, const CallContext&);
constexpr StampFn kStamp[] = {
#define YB_STAMP(id, name, req, resp) &Stamped<MasterMethod::k##name>,
    YB_MASTER_METHODS(YB_STAMP)
#undef YB_STAMP
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static World* w = new World();  // lives for the run: the master keeps what the inputs put
  if (size == 0) return 0;
  const size_t row = data[0] % rpc::kMasterMethods.size();
  const auto method = static_cast<uint16_t>(rpc::kMasterMethods[row].method);
  const std::string_view body(reinterpret_cast<const char*>(data) + 1, size - 1);
  const net::Peer anyone;
  (void)w->server.Call(method, anyone, body);
  (void)w->server.Call(method, anyone, kStamp[row](body, w->ctx));
  w->clock.Advance(1000);  // leases, pins and liveness move on
  w->master->RunBackgroundOnce();
  return 0;
}
