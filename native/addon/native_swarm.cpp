// NativeSwarm: argument conversion and the notifier between the swarm's threads and JavaScript.
#include "native_swarm.h"

#if SIGHTLINE_NATIVE_UDP

#include <arpa/inet.h>

#include <cstring>
#include <iterator>
#include <string>

#include "args.h"
#include "coded_error.h"
#include "wire.h"

namespace sightline::addon {

namespace {
Napi::Error invalid(Napi::Env env, const std::string& message) {
  return codedError(env, "ERR_SIGHTLINE_INVALID_ARGUMENT", message);
}
double num(const Napi::Object& o, const char* key, double fallback) {
  Napi::Value v = o.Get(key);
  return v.IsNumber() ? v.As<Napi::Number>().DoubleValue() : fallback;
}
std::string str(const Napi::Object& o, const char* key) {
  Napi::Value v = o.Get(key);
  return v.IsString() ? v.As<Napi::String>().Utf8Value() : std::string();
}
}  // namespace

Napi::Function NativeSwarm::Init(Napi::Env env) {
  return DefineClass(env, "NativeSwarm",
                     {
                         InstanceMethod<&NativeSwarm::Start>("start"),
                         InstanceMethod<&NativeSwarm::Info>("info"),
                         InstanceMethod<&NativeSwarm::Aim>("aim"),
                         InstanceMethod<&NativeSwarm::Send>("send"),
                         InstanceMethod<&NativeSwarm::SetConnected>("setConnected"),
                         InstanceMethod<&NativeSwarm::Counters>("counters"),
                         InstanceMethod<&NativeSwarm::TakeBatch>("takeBatch"),
                         InstanceMethod<&NativeSwarm::Close>("close"),
                     });
}

NativeSwarm::NativeSwarm(const Napi::CallbackInfo& info) : Napi::ObjectWrap<NativeSwarm>(info) {
  Napi::Env env = info.Env();
  if (info.Length() < 2 || !info[0].IsObject() || !info[1].IsFunction())
    throw invalid(env, "NativeSwarm(options, onBatch) takes an options object and a function");
  Napi::Object o = info[0].As<Napi::Object>();
  net::SwarmOptions opts;
  in_addr first;
  if (inet_pton(AF_INET, str(o, "firstAddress").c_str(), &first) != 1)
    throw invalid(env, "firstAddress must be a numeric IPv4 address");
  opts.firstAddress = ntohl(first.s_addr);
  opts.clients = uint32_t(num(o, "clients", 1));
  opts.threads = unsigned(num(o, "threads", 1));
  opts.recvBufferBytes = int(num(o, "recvBufferBytes", 0));
  opts.sendBufferBytes = int(num(o, "sendBufferBytes", 0));
  opts.maxBatchBytes = size_t(num(o, "maxBatchBytes", double(opts.maxBatchBytes)));
  notifier_ = std::make_unique<BatchNotifier>(env, info[1].As<Napi::Function>(), "sightline.swarm", [this] {
    if (swarm_) swarm_->stop();
    swarm_.reset();
  });
  try {
    swarm_ = guarded(env, [&] { return std::make_unique<net::ClientSwarm>(opts, notifier_->notify()); });
  } catch (...) {
    notifier_->release();
    throw;
  }
}

net::ClientSwarm& NativeSwarm::open(Napi::Env env) {
  if (!swarm_) throw codedError(env, "ERR_SIGHTLINE_NET_CLOSED", "the client swarm is closed");
  return *swarm_;
}

Napi::Value NativeSwarm::Start(const Napi::CallbackInfo& info) {
  open(info.Env()).start();
  return info.Env().Undefined();
}

// { ports: number[], recvBuffer, sendBuffer, strays, batchDropped }
Napi::Value NativeSwarm::Info(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  net::ClientSwarm& s = open(env);
  Napi::Object o = Napi::Object::New(env);
  std::vector<uint16_t> ports = s.ports();
  Napi::Array p = Napi::Array::New(env, ports.size());
  for (uint32_t i = 0; i < ports.size(); ++i) p.Set(i, double(ports[i]));
  o.Set("ports", p);
  o.Set("recvBuffer", double(s.recvBuffer()));
  o.Set("sendBuffer", double(s.sendBuffer()));
  o.Set("strays", double(s.strays()));
  o.Set("batchDropped", double(s.batchDropped()));
  return o;
}

// aim(address, port): the server the clients send to (a numeric IPv4 address).
Napi::Value NativeSwarm::Aim(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  net::ClientSwarm& s = open(env);
  if (info.Length() < 2 || !info[0].IsString()) throw invalid(env, "aim(address, port) takes a numeric IPv4 address and a port");
  const double port = numberArg(info, 1, "port");
  net::Endpoint e;
  if (!(port >= 1 && port <= 65535) || port != double(uint32_t(port)) ||
      !net::Endpoint::parse(info[0].As<Napi::String>().Utf8Value(), uint16_t(port), AF_INET, e))
    throw invalid(env, "aim(address, port) takes a numeric IPv4 address and a port from 1 to 65535");
  s.aim(e);
  return env.Undefined();
}

// send(client, bytes) -> 0 or the errno.
Napi::Value NativeSwarm::Send(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  net::ClientSwarm& s = open(env);
  const double c = numberArg(info, 0, "client");
  if (!(c >= 0 && c < s.size()) || c != double(uint32_t(c))) throw invalid(env, "client out of range: " + num(c));
  if (info.Length() < 2 || !info[1].IsTypedArray() || info[1].As<Napi::TypedArray>().TypedArrayType() != napi_uint8_array)
    throw invalid(env, "bytes must be a Uint8Array");
  Napi::Uint8Array b = info[1].As<Napi::Uint8Array>();
  return Napi::Number::New(env, s.send(uint32_t(c), b.Data(), b.ByteLength()));
}

// setConnected(client, connected, sample, token: Uint8Array(8) when connected)
Napi::Value NativeSwarm::SetConnected(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  net::ClientSwarm& s = open(env);
  const double c = numberArg(info, 0, "client");
  if (!(c >= 0 && c < s.size()) || c != double(uint32_t(c))) throw invalid(env, "client out of range: " + num(c));
  const uint8_t* token = nullptr;
  if (info.Length() > 3 && info[3].IsTypedArray()) {
    Napi::TypedArray t = info[3].As<Napi::TypedArray>();
    if (t.TypedArrayType() != napi_uint8_array || t.ByteLength() != net::kTokenBytes) throw invalid(env, "token must be a Uint8Array of 8 bytes");
    token = info[3].As<Napi::Uint8Array>().Data();
  }
  s.setConnected(uint32_t(c), info.Length() > 1 && info[1].ToBoolean(), info.Length() > 2 && info[2].ToBoolean(), token);
  return env.Undefined();
}

// counters(out: Float64Array of clients × swarmCounterFields.length)
Napi::Value NativeSwarm::Counters(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  net::ClientSwarm& s = open(env);
  if (info.Length() < 1 || !info[0].IsTypedArray() || info[0].As<Napi::TypedArray>().TypedArrayType() != napi_float64_array ||
      info[0].As<Napi::Float64Array>().ElementLength() < size_t{s.size()} * net::kSwarmCounterFields)
    throw invalid(env, "counters(out) takes a Float64Array of clients × swarmCounterFields.length");
  s.counters(info[0].As<Napi::Float64Array>().Data());
  return env.Undefined();
}

Napi::Value NativeSwarm::TakeBatch(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (!swarm_) return env.Null();
  swarm_->takeBatch(batch_);
  if (batch_.empty()) return env.Null();
  Napi::ArrayBuffer ab = Napi::ArrayBuffer::New(env, batch_.size());
  std::memcpy(ab.Data(), batch_.data(), batch_.size());
  return ab;
}

Napi::Value NativeSwarm::Close(const Napi::CallbackInfo& info) {
  notifier_->release();
  return info.Env().Undefined();
}

}  // namespace sightline::addon

#endif  // SIGHTLINE_NATIVE_UDP
