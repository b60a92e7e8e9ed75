// NativeSwarm: the JavaScript object over a ClientSwarm (net/swarm.h, Linux): many light UDP
// clients in one process for load tests. The package's UdpClientSwarm drives it
// (lib/net/client-swarm.ts): the handshake in JavaScript, game packets and ACKs here.
#pragma once

#include <napi.h>

#if SIGHTLINE_NATIVE_UDP

#include <iterator>
#include <memory>
#include <vector>

#include "batch_notifier.h"
#include "swarm.h"

namespace sightline::addon {

// The fields of counters(), per client, in order (exported as swarmCounterFields).
inline constexpr const char* kSwarmCounterFieldNames[] = {
    "datagramsReceived", "bytesReceived", "gamePackets", "applied", "duplicates", "stale", "malformed", "reordered",
    "acksSent", "acksDropped", "events", "repeatedEvents", "skippedEvents", "early", "newestTick",
};
static_assert(std::size(kSwarmCounterFieldNames) == net::kSwarmCounterFields, "one name per swarm counter");

class NativeSwarm : public Napi::ObjectWrap<NativeSwarm> {
 public:
  static Napi::Function Init(Napi::Env env);
  // new NativeSwarm({ clients, firstAddress, threads, recvBufferBytes, sendBufferBytes,
  // maxBatchBytes }, onBatch); aim() names the server.
  NativeSwarm(const Napi::CallbackInfo& info);
  ~NativeSwarm() override = default;

 private:
  Napi::Value Start(const Napi::CallbackInfo& info);
  Napi::Value Info(const Napi::CallbackInfo& info);
  Napi::Value Aim(const Napi::CallbackInfo& info);
  Napi::Value Send(const Napi::CallbackInfo& info);
  Napi::Value SetConnected(const Napi::CallbackInfo& info);
  Napi::Value Counters(const Napi::CallbackInfo& info);
  Napi::Value TakeBatch(const Napi::CallbackInfo& info);
  Napi::Value Close(const Napi::CallbackInfo& info);
  net::ClientSwarm& open(Napi::Env env);

  std::unique_ptr<net::ClientSwarm> swarm_;
  // Stops swarm_ (its threads joined, the sockets closed) when released or at cleanup.
  std::unique_ptr<BatchNotifier> notifier_;
  std::vector<uint8_t> batch_;
};

}  // namespace sightline::addon

#endif  // SIGHTLINE_NATIVE_UDP
