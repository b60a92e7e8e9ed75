// NativeUdp: the JavaScript object over one native UDP data path (net/data_path.h, Linux). The
// package's UdpServer drives it (lib/net/native-path.ts): sessions in and out, control messages,
// the batch of datagrams the receive thread hands over, counters. A World it is attached to
// (NativeWorld.attachTransport) applies its ACKs and sends its packets during each tick.
#pragma once

#if SIGHTLINE_NATIVE_UDP

#include <napi.h>

#include <memory>
#include <vector>

#include "batch_notifier.h"
#include "data_path.h"

namespace sightline::addon {

// The fields of counters() and lastTick(), in order; exported as udpCounterFields and
// udpTickFields (the package checks its own lists against them when it loads).
inline constexpr const char* kUdpCounterFields[] = {
    "datagramsReceived", "bytesReceived", "malformed", "strays", "badAcks", "acks", "acksThrottled",
    "forwarded", "batchDropped", "socketErrors", "pings", "packetsSent", "bytesSent", "packetsDropped",
    "sendErrors", "packetsUnrouted", "acksApplied", "acksUnused", "acksInvalid", "badTokens",
    "longWrongDirection", "longBadMagic", "longMalformed", "longOversized", "longUnknownType", "forwardedBytes",
};
inline constexpr const char* kUdpTickFields[] = {
    "tick", "sent", "bytes", "dropped", "failed", "unrouted", "sendMicros", "acksApplied", "acksUnused",
    "acksInvalid", "ackMicros",
};

class NativeUdp : public Napi::ObjectWrap<NativeUdp> {
 public:
  static Napi::Function Init(Napi::Env env);
  // new NativeUdp(options, onBatch): options { address, port, family (4 | 6), fd, v6Only,
  // sendBufferBytes, recvBufferBytes, maxSessions, forwardAcks, maxBatchBytes, dontFragment } (the
  // package checks them); onBatch() runs on the JavaScript thread when a batch is waiting.
  NativeUdp(const Napi::CallbackInfo& info);
  ~NativeUdp() override = default;
  // Null once closed.
  const std::shared_ptr<net::DataPath>& dataPath() const { return dp_; }

 private:
  Napi::Value Start(const Napi::CallbackInfo& info);
  Napi::Value Info(const Napi::CallbackInfo& info);
  Napi::Value AddSession(const Napi::CallbackInfo& info);
  Napi::Value RemoveSession(const Napi::CallbackInfo& info);
  Napi::Value Touch(const Napi::CallbackInfo& info);
  Napi::Value Times(const Napi::CallbackInfo& info);
  Napi::Value SetInputAck(const Napi::CallbackInfo& info);
  Napi::Value SendTo(const Napi::CallbackInfo& info);
  Napi::Value SendOne(const Napi::CallbackInfo& info);
  Napi::Value SendPackets(const Napi::CallbackInfo& info);
  Napi::Value TakeBatch(const Napi::CallbackInfo& info);
  Napi::Value Inject(const Napi::CallbackInfo& info);
  Napi::Value Counters(const Napi::CallbackInfo& info);
  Napi::Value LastTick(const Napi::CallbackInfo& info);
  Napi::Value Close(const Napi::CallbackInfo& info);

  net::DataPath& open(Napi::Env env);
  net::Endpoint endpointArg(const Napi::CallbackInfo& info, size_t i);

  std::shared_ptr<net::DataPath> dp_;
  // Closes dp_ (its receive thread joined, the socket closed) when released or at cleanup.
  std::unique_ptr<BatchNotifier> notifier_;
  int family_ = 0;
  std::vector<uint8_t> batch_;
  std::vector<double> times_;
};

}  // namespace sightline::addon

#endif  // SIGHTLINE_NATIVE_UDP
