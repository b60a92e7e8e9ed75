// NativeWorld: acknowledgements of packets, and what they resolved.
#include "native_world.h"

#include <string>

#include "args.h"

namespace sightline::addon {

// acknowledge(viewer, ack u16, ackBits u32) -> whether the caller is to apply it after the pass:
// when no pass runs it is applied now (false); during a pass it is only checked (true: the
// TypeScript layer applies it when the pass ends, in call order with the events it deferred).
Napi::Value NativeWorld::Acknowledge(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  uint32_t id = idArg(info, 0);
  double ack = numberArg(info, 1, "ack"), bits = numberArg(info, 2, "ackBits");
  if (!(ack >= 0 && ack <= 65535) || ack != double(uint32_t(ack)) || !(bits >= 0 && bits <= 4294967295.0) ||
      bits != double(uint32_t(bits)))
    throw codedError(env, "ERR_SIGHTLINE_INVALID_ACK",
                     "ack must be an integer 0..65535 and ackBits an integer 0..4294967295, received " +
                         num(ack) + " and " + num(bits));
  if (!running_) {
    guarded(env, [&] { world_->acknowledge(id, uint16_t(ack), uint32_t(bits)); return 0; });
    return Napi::Boolean::New(env, false);
  }
  const Viewer* v = effectiveViewer(id);
  if (v == nullptr)
    throw codedError(env, "ERR_SIGHTLINE_UNKNOWN_VIEWER", "entity " + std::to_string(id) + " is not a viewer");
  if (v->ackLog == nullptr)
    throw codedError(env, "ERR_SIGHTLINE_ACKS_DISABLED",
                     "viewer " + std::to_string(id) + " was added without { acks: true }; its packets are not logged");
  // Checked now against the packets sent before this tick, as outside a tick: a viewer added
  // during it has sent none; the pass may only add newer ones, which keep the ack valid.
  if (addedDuringPass(id))
    throw codedError(env, "ERR_SIGHTLINE_INVALID_ACK",
                     "ack " + std::to_string(uint32_t(ack)) + " names a packet viewer " + std::to_string(id) +
                         " was never sent (none sent yet)");
  guarded(env, [&] { world_->checkAckDuringPass(id, uint16_t(ack)); return 0; });
  return Napi::Boolean::New(env, true);
}

// Packets resolved for a viewer with acknowledgements: { acked, lost, assumed, probablyLost,
// expired } (null otherwise).
Napi::Value NativeWorld::AckStats(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  uint32_t id = idArg(info, 0);
  const Viewer& v = guarded(env, [&]() -> const Viewer& { return world_->viewer(id); });
  if (!v.ackLog) return env.Null();
  Napi::Object o = Napi::Object::New(env);
  o.Set("acked", Napi::Number::New(env, double(v.ackLog->acked)));
  o.Set("lost", Napi::Number::New(env, double(v.ackLog->lost)));
  o.Set("assumed", Napi::Number::New(env, double(v.ackLog->assumed)));
  o.Set("probablyLost", Napi::Number::New(env, double(v.ackLog->probablyLost)));
  o.Set("expired", Napi::Number::New(env, double(v.ackLog->expired)));
  o.Set("despawnsNotResent", Napi::Number::New(env, double(v.ackLog->despawnsNotResent)));
  return o;
}

}  // namespace sightline::addon
