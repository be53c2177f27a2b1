// LogGate: the metadata log as the RPC server's ReplyGate. A ticket is a MetaLog::Ticket packed
// into one number (the sequence number, and whether it must be synced).
#pragma once

#include "ha/meta_log.h"
#include "rpc/server.h"

namespace yb::ha {

class LogGate final : public rpc::ReplyGate {
 public:
  explicit LogGate(MetaLog& log) : log_(log) {}
  uint64_t TakeTicket() override { return Pack(MetaLog::TakeTicket()); }
  bool Released(uint64_t ticket) const override { return log_.Released(Unpack(ticket)); }
  void WhenReleased(uint64_t ticket, std::function<void()> fn) override {
    log_.WhenReleased(Unpack(ticket), std::move(fn));
  }
  // Released up to the ticket's record at the strongest level any ticket may ask: synced at
  // `always`; written at `process`, where no ticket asks for a sync (a reply held for a standby
  // must not wait for the background sync too).
  uint64_t Cover(uint64_t ticket) const override { return Pack(log_.Cover(Unpack(ticket))); }
  void Flush() override { log_.Flush(); }

  static uint64_t Pack(MetaLog::Ticket t) { return t.seq == 0 ? 0 : (t.seq << 1) | (t.sync ? 1 : 0); }
  static MetaLog::Ticket Unpack(uint64_t v) { return MetaLog::Ticket{v >> 1, (v & 1) != 0}; }

 private:
  MetaLog& log_;
};

}  // namespace yb::ha
