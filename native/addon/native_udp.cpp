// NativeUdp: argument conversion and the notifier between the receive thread and JavaScript; the
// data path itself is net/data_path.h.
#include "native_udp.h"

#if SIGHTLINE_NATIVE_UDP

#include <cerrno>
#include <cstring>
#include <iterator>
#include <string>

#include "args.h"
#include "coded_error.h"
#include "wire.h"

namespace sightline::addon {

namespace {
double optNumber(const Napi::Object& o, const char* key, double fallback) {
  Napi::Value v = o.Get(key);
  return v.IsNumber() ? v.As<Napi::Number>().DoubleValue() : fallback;
}
bool optBool(const Napi::Object& o, const char* key, bool fallback) {
  Napi::Value v = o.Get(key);
  return v.IsBoolean() ? v.As<Napi::Boolean>().Value() : fallback;
}
Napi::Error invalid(Napi::Env env, const std::string& message) {
  return codedError(env, "ERR_SIGHTLINE_INVALID_ARGUMENT", message);
}
}  // namespace

Napi::Function NativeUdp::Init(Napi::Env env) {
  return DefineClass(env, "NativeUdp",
                     {
                         InstanceMethod<&NativeUdp::Start>("start"),
                         InstanceMethod<&NativeUdp::Info>("info"),
                         InstanceMethod<&NativeUdp::AddSession>("addSession"),
                         InstanceMethod<&NativeUdp::RemoveSession>("removeSession"),
                         InstanceMethod<&NativeUdp::Touch>("touch"),
                         InstanceMethod<&NativeUdp::Times>("times"),
                         InstanceMethod<&NativeUdp::SetInputAck>("setInputAck"),
                         InstanceMethod<&NativeUdp::SendTo>("sendTo"),
                         InstanceMethod<&NativeUdp::SendOne>("sendOne"),
                         InstanceMethod<&NativeUdp::SendPackets>("sendPackets"),
                         InstanceMethod<&NativeUdp::TakeBatch>("takeBatch"),
                         InstanceMethod<&NativeUdp::Inject>("inject"),
                         InstanceMethod<&NativeUdp::Counters>("counters"),
                         InstanceMethod<&NativeUdp::LastTick>("lastTick"),
                         InstanceMethod<&NativeUdp::Close>("close"),
                     });
}

NativeUdp::NativeUdp(const Napi::CallbackInfo& info) : Napi::ObjectWrap<NativeUdp>(info) {
  Napi::Env env = info.Env();
  if (info.Length() < 2 || !info[0].IsObject() || !info[1].IsFunction())
    throw invalid(env, "NativeUdp(options, onBatch) takes an options object and a function");
  Napi::Object o = info[0].As<Napi::Object>();
  net::DataPathOptions opts;
  family_ = optNumber(o, "family", 4) == 6 ? AF_INET6 : AF_INET;
  const double fd = optNumber(o, "fd", -1);
  if (fd >= 0) {
    opts.adoptFd = int(fd);
  } else {
    Napi::Value a = o.Get("address");
    const std::string address = a.IsString() ? a.As<Napi::String>().Utf8Value() : std::string(family_ == AF_INET6 ? "::" : "0.0.0.0");
    const double port = optNumber(o, "port", 0);
    if (!(port >= 0 && port <= 65535) || port != double(uint32_t(port))) throw invalid(env, "port must be an integer from 0 to 65535, received " + num(port));
    if (!net::Endpoint::parse(address, uint16_t(port), family_, opts.bind))
      throw codedError(env, "ERR_SIGHTLINE_NET_BIND",
                       "cannot bind UDP " + address + ": the native data path binds numeric addresses only (" +
                           (family_ == AF_INET6 ? "IPv6" : "IPv4") + ")");
  }
  opts.v6Only = optBool(o, "v6Only", false);
  opts.sendBufferBytes = int(optNumber(o, "sendBufferBytes", 0));
  opts.recvBufferBytes = int(optNumber(o, "recvBufferBytes", 0));
  opts.maxSessions = uint32_t(optNumber(o, "maxSessions", 4096));
  opts.forwardAcks = optBool(o, "forwardAcks", false);
  opts.maxBatchBytes = size_t(optNumber(o, "maxBatchBytes", double(opts.maxBatchBytes)));
  opts.dontFragment = optBool(o, "dontFragment", true);

  notifier_ = std::make_unique<BatchNotifier>(env, info[1].As<Napi::Function>(), "sightline.udp", [this] {
    if (dp_) dp_->close();
    dp_.reset();
  });
  try {
    dp_ = guarded(env, [&] { return std::make_shared<net::DataPath>(opts, notifier_->notify()); });
  } catch (...) {
    notifier_->release();
    throw;
  }
  family_ = dp_->socket().family();
}

net::DataPath& NativeUdp::open(Napi::Env env) {
  if (!dp_) throw codedError(env, "ERR_SIGHTLINE_NET_CLOSED", "the UDP data path is closed");
  return *dp_;
}

net::Endpoint NativeUdp::endpointArg(const Napi::CallbackInfo& info, size_t i) {
  Napi::Env env = info.Env();
  if (info.Length() <= i + 1 || !info[i].IsString()) throw invalid(env, "address must be a string");
  const double port = numberArg(info, i + 1, "port");
  if (!(port >= 0 && port <= 65535) || port != double(uint32_t(port))) throw invalid(env, "port must be an integer from 0 to 65535, received " + num(port));
  net::Endpoint e;
  const std::string text = info[i].As<Napi::String>().Utf8Value();
  if (!net::Endpoint::parse(text, uint16_t(port), family_, e))
    throw invalid(env, "address must be a numeric " + std::string(family_ == AF_INET6 ? "IPv6" : "IPv4") + " address, received " + text);
  return e;
}

Napi::Value NativeUdp::Start(const Napi::CallbackInfo& info) {
  open(info.Env()).start();
  return info.Env().Undefined();
}

// { address, port, family (4 | 6), sendBuffer, recvBuffer }: the bound address and the buffer
// sizes the kernel granted (bytes, as getsockopt reports them: Linux doubles the request).
Napi::Value NativeUdp::Info(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  net::DataPath& dp = open(env);
  net::Endpoint local = dp.socket().local();
  Napi::Object o = Napi::Object::New(env);
  o.Set("address", local.addressText());
  o.Set("port", double(local.port()));
  o.Set("family", family_ == AF_INET6 ? 6 : 4);
  o.Set("sendBuffer", double(dp.grantedSendBuffer()));
  o.Set("recvBuffer", double(dp.grantedRecvBuffer()));
  return o;
}

// addSession(viewer, address, port, token: Uint8Array(8)) -> 'added' | 'full' | 'viewer' (has one)
// | 'peer' (address has one).
Napi::Value NativeUdp::AddSession(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  net::DataPath& dp = open(env);
  const uint32_t viewer = idArg(info, 0);
  const net::Endpoint peer = endpointArg(info, 1);
  if (info.Length() < 4 || !info[3].IsTypedArray() || info[3].As<Napi::TypedArray>().TypedArrayType() != napi_uint8_array ||
      info[3].As<Napi::Uint8Array>().ByteLength() != net::kTokenBytes)
    throw invalid(env, "token must be a Uint8Array of 8 bytes");
  const uint8_t* token = info[3].As<Napi::Uint8Array>().Data();
  const char* r = "added";
  switch (guarded(env, [&] { return dp.sessions().add(viewer, peer, token, net::monotonicMs()); })) {
    case net::SessionTable::AddResult::Added: break;
    case net::SessionTable::AddResult::Full: r = "full"; break;
    case net::SessionTable::AddResult::ViewerTaken: r = "viewer"; break;
    case net::SessionTable::AddResult::PeerTaken: r = "peer"; break;
  }
  return Napi::String::New(env, r);
}

// removeSession(viewer) -> whether it had one. Returns once no send to it is in progress.
Napi::Value NativeUdp::RemoveSession(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (!dp_) return Napi::Boolean::New(env, false);
  return Napi::Boolean::New(env, dp_->sessions().remove(idArg(info, 0)));
}

// touch(viewer, heard, sent) -> whether it has a session.
Napi::Value NativeUdp::Touch(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  net::DataPath& dp = open(env);
  const uint32_t viewer = idArg(info, 0);
  const bool heard = info.Length() > 1 && info[1].ToBoolean();
  const bool sent = info.Length() > 2 && info[2].ToBoolean();
  return Napi::Boolean::New(env, dp.sessions().touch(viewer, heard, sent, net::monotonicMs()));
}

// times() -> Float64Array: per session its viewer, then ms since it was last heard from, then ms
// since it was last sent to (what the receive and send threads saw).
Napi::Value NativeUdp::Times(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  net::DataPath& dp = open(env);
  times_.clear();
  dp.sessions().times(net::monotonicMs(), times_);
  Napi::Float64Array out = Napi::Float64Array::New(env, times_.size());
  if (!times_.empty()) std::memcpy(out.Data(), times_.data(), times_.size() * sizeof(double));
  return out;
}

// setInputAck(viewer, ack u16, ackBits u16) -> whether it has a session.
Napi::Value NativeUdp::SetInputAck(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  net::DataPath& dp = open(env);
  const uint32_t viewer = idArg(info, 0);
  const double ack = numberArg(info, 1, "ack"), bits = numberArg(info, 2, "ackBits");
  if (!(ack >= 0 && ack <= 65535 && bits >= 0 && bits <= 65535) || ack != double(uint32_t(ack)) || bits != double(uint32_t(bits)))
    throw invalid(env, "ack and ackBits must be integers from 0 to 65535, received " + num(ack) + " and " + num(bits));
  return Napi::Boolean::New(env, dp.sessions().setInputAck(viewer, uint16_t(ack), uint16_t(bits)));
}

namespace {
struct Bytes {
  const uint8_t* data;
  size_t length;
};
Bytes bytesArg(const Napi::CallbackInfo& info, size_t i) {
  if (info.Length() <= i || !info[i].IsTypedArray() || info[i].As<Napi::TypedArray>().TypedArrayType() != napi_uint8_array)
    throw invalid(info.Env(), "bytes must be a Uint8Array");
  Napi::Uint8Array a = info[i].As<Napi::Uint8Array>();
  return {a.Data(), a.ByteLength()};
}
}  // namespace

// sendTo(address, port, bytes) -> 0 (the kernel took it) or the errno (EAGAIN, ENOBUFS: no room).
Napi::Value NativeUdp::SendTo(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  net::DataPath& dp = open(env);
  const net::Endpoint to = endpointArg(info, 0);
  const Bytes b = bytesArg(info, 2);
  return Napi::Number::New(env, dp.sendTo(to, b.data, b.length));
}

// sendOne(viewer, bytes) -> 0, ENOENT (no session) or the errno.
Napi::Value NativeUdp::SendOne(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  net::DataPath& dp = open(env);
  const uint32_t viewer = idArg(info, 0);
  const Bytes b = bytesArg(info, 1);
  return Napi::Number::New(env, dp.sendOne(viewer, b.data, b.length));
}

// sendPackets(buffer: ArrayBuffer, index: Uint32Array, count) -> [sent, bytes, dropped, failed,
// unrouted]: a tick's packets from the JavaScript thread (no World attached). Entries are checked
// against the buffer.
Napi::Value NativeUdp::SendPackets(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  net::DataPath& dp = open(env);
  if (info.Length() < 3 || !info[0].IsArrayBuffer() || !info[1].IsTypedArray() ||
      info[1].As<Napi::TypedArray>().TypedArrayType() != napi_uint32_array)
    throw invalid(env, "sendPackets(buffer, index, count) takes an ArrayBuffer, a Uint32Array and a count");
  Napi::ArrayBuffer buf = info[0].As<Napi::ArrayBuffer>();
  Napi::Uint32Array index = info[1].As<Napi::Uint32Array>();
  const double count = numberArg(info, 2, "count");
  if (!(count >= 0) || count * 3 > double(index.ElementLength()) || count != double(uint32_t(count)))
    throw invalid(env, "count must be an integer from 0 to index.length / 3, received " + num(count));
  const uint32_t n = uint32_t(count);
  const uint32_t* ix = index.Data();
  for (uint32_t i = 0; i < n; ++i)
    if (uint64_t(ix[3 * i + 1]) + ix[3 * i + 2] > buf.ByteLength())
      throw invalid(env, "packet " + std::to_string(i) + " lies outside the buffer");
  const net::SendCounters c = dp.sendPackets(static_cast<const uint8_t*>(buf.Data()), ix, n);
  Napi::Float64Array out = Napi::Float64Array::New(env, 5);
  double* d = out.Data();
  d[0] = double(c.sent), d[1] = double(c.bytes), d[2] = double(c.dropped), d[3] = double(c.failed), d[4] = double(c.unrouted);
  return out;
}

// takeBatch() -> the datagrams the receive thread handed over since the last call (receiver.h's
// record layout), as a new ArrayBuffer, or null when there are none.
Napi::Value NativeUdp::TakeBatch(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (!dp_) return env.Null();
  dp_->receiver().takeBatch(batch_);
  if (batch_.empty()) return env.Null();
  Napi::ArrayBuffer ab = Napi::ArrayBuffer::New(env, batch_.size());
  std::memcpy(ab.Data(), batch_.data(), batch_.size());
  return ab;
}

// inject(bytes, address, port): a datagram sorted as if it had arrived from address:port (tests).
Napi::Value NativeUdp::Inject(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  net::DataPath& dp = open(env);
  const Bytes b = bytesArg(info, 0);
  const net::Endpoint from = endpointArg(info, 1);
  dp.receiver().inject(b.data, b.length, from);
  return env.Undefined();
}

// counters(out: Float64Array of kUdpCounterFields' length): running totals, in that order.
Napi::Value NativeUdp::Counters(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (info.Length() < 1 || !info[0].IsTypedArray() || info[0].As<Napi::TypedArray>().TypedArrayType() != napi_float64_array ||
      info[0].As<Napi::Float64Array>().ElementLength() < std::size(kUdpCounterFields))
    throw invalid(env, "counters(out) takes a Float64Array of udpCounterFields.length");
  if (!dp_) return env.Undefined();
  const net::ReceiveCounters& r = dp_->receiver().counters();
  const net::DataPath::Totals& t = dp_->totals();
  auto ld = [](const std::atomic<uint64_t>& a) { return double(a.load(std::memory_order_relaxed)); };
  const double v[] = {
      ld(r.datagrams), ld(r.bytes), ld(r.malformed), ld(r.strays), ld(r.badAcks), ld(r.acks), ld(r.acksThrottled),
      ld(r.forwarded), ld(r.batchDropped), ld(r.socketErrors), ld(r.pings), ld(t.sent), ld(t.bytes), ld(t.dropped),
      ld(t.failed), ld(t.unrouted), ld(t.acksApplied), ld(t.acksUnused), ld(t.acksInvalid), ld(r.badTokens),
      ld(r.longCodes[0]), ld(r.longCodes[1]), ld(r.longCodes[2]), ld(r.longCodes[3]), ld(r.longCodes[4]), ld(r.forwardedBytes),
  };
  static_assert(size_t(net::LongCode::Count) == 5, "one field per LongCode");
  static_assert(std::size(v) == std::size(kUdpCounterFields), "one value per field of kUdpCounterFields");
  std::memcpy(info[0].As<Napi::Float64Array>().Data(), v, sizeof v);
  return env.Undefined();
}

// lastTick(out: Float64Array of kUdpTickFields' length): what the last tick's part did.
Napi::Value NativeUdp::LastTick(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (info.Length() < 1 || !info[0].IsTypedArray() || info[0].As<Napi::TypedArray>().TypedArrayType() != napi_float64_array ||
      info[0].As<Napi::Float64Array>().ElementLength() < std::size(kUdpTickFields))
    throw invalid(env, "lastTick(out) takes a Float64Array of udpTickFields.length");
  if (!dp_) return env.Undefined();
  const net::TickTransport& t = dp_->lastTick();
  const double v[] = {
      double(t.tick), double(t.send.sent), double(t.send.bytes), double(t.send.dropped), double(t.send.failed),
      double(t.send.unrouted), t.sendMicros, double(t.acksApplied), double(t.acksUnused), double(t.acksInvalid),
      t.ackMicros,
  };
  static_assert(std::size(v) == std::size(kUdpTickFields), "one value per field of kUdpTickFields");
  std::memcpy(info[0].As<Napi::Float64Array>().Data(), v, sizeof v);
  return env.Undefined();
}

// close(): waits for a tick's send in progress, joins the receive thread, closes the socket.
// Idempotent. A World it is attached to goes on ticking without it.
Napi::Value NativeUdp::Close(const Napi::CallbackInfo& info) {
  notifier_->release();
  return info.Env().Undefined();
}

}  // namespace sightline::addon

#endif  // SIGHTLINE_NATIVE_UDP
