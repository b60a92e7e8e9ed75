// NativeWorld: the native UDP data path attached to the world.
#if SIGHTLINE_NATIVE_UDP
#include "native_udp.h"
#include "native_world.h"

namespace sightline::addon {

// attachTransport(udp: NativeUdp | null): from the next tick on, each tick applies the ACKs that
// data path queued (before the pass) and sends its packets through it (after the pass, on the
// pool's threads). null detaches. Not while a tick runs (ERR_SIGHTLINE_TICK_IN_PROGRESS).
Napi::Value NativeWorld::AttachTransport(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  requireIdle(env, "attaching a transport");
  if (info.Length() < 1 || info[0].IsNull() || info[0].IsUndefined()) {
    if (transport_) transport_->setAttached(false);
    transport_.reset();
    return env.Undefined();
  }
  if (!info[0].IsObject() || !info[0].As<Napi::Object>().InstanceOf(data_->udpClass.Value()))
    throw codedError(env, "ERR_SIGHTLINE_INVALID_ARGUMENT", "attachTransport takes a NativeUdp or null");
  const std::shared_ptr<net::DataPath>& dp = Napi::ObjectWrap<NativeUdp>::Unwrap(info[0].As<Napi::Object>())->dataPath();
  if (!dp) throw codedError(env, "ERR_SIGHTLINE_NET_CLOSED", "the UDP data path is closed");
  guarded(env, [&] { dp->reserveThreads(pool_->size()); return 0; });
  if (transport_ && transport_ != dp) transport_->setAttached(false);
  transport_ = dp;
  transport_->setAttached(true);
  return env.Undefined();
}

}  // namespace sightline::addon
#endif  // SIGHTLINE_NATIVE_UDP
