// The grid's cell functions (cells.h).
#include "cells.h"

#include <cstdint>
#include <vector>

#include "args.h"
#include "subscription.h"

namespace sightline::addon {

namespace {

Napi::Value boxToValue(Napi::Env env, const Subscription& b) {
  if (b.empty()) return env.Null();
  Napi::Object o = Napi::Object::New(env);
  o.Set("x0", b.x0), o.Set("x1", b.x1), o.Set("y0", b.y0), o.Set("y1", b.y1);
  return o;
}

Subscription boxArg(const Napi::CallbackInfo& info, size_t i) {
  Subscription b;
  if (info.Length() <= i || info[i].IsNull() || info[i].IsUndefined()) return b;
  Napi::Object o = info[i].As<Napi::Object>();
  b.x0 = o.Get("x0").As<Napi::Number>().Int32Value(), b.x1 = o.Get("x1").As<Napi::Number>().Int32Value();
  b.y0 = o.Get("y0").As<Napi::Number>().Int32Value(), b.y1 = o.Get("y1").As<Napi::Number>().Int32Value();
  return b;
}

}  // namespace

// cellOf(raw, cellShift): floor(raw / 2^cellShift).
Napi::Value CellOf(const Napi::CallbackInfo& info) {
  double raw = numberArg(info, 0, "raw"), shift = numberArg(info, 1, "cellShift");
  return Napi::Number::New(info.Env(), double(cellOf(int64_t(raw), int(shift))));
}

// subscriptionBox(cx, cy, cellRadius, cellsPerAxis) -> {x0, x1, y0, y1} (inclusive) or null.
Napi::Value SubscriptionBox(const Napi::CallbackInfo& info) {
  int64_t cx = int64_t(numberArg(info, 0, "cx")), cy = int64_t(numberArg(info, 1, "cy"));
  uint32_t r = uint32_t(numberArg(info, 2, "cellRadius")), n = uint32_t(numberArg(info, 3, "cellsPerAxis"));
  return boxToValue(info.Env(), subscriptionBox(cx, cy, r, n));
}

// subscriptionDiff(prev, next) -> { entered: [x, y, ...], left: [x, y, ...] } (flat cell pairs).
Napi::Value SubscriptionDiff(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Subscription prev = boxArg(info, 0), next = boxArg(info, 1);
  std::vector<int32_t> entered, left;
  subscriptionDiff(
      prev, next, [&](int32_t x, int32_t y) { entered.push_back(x), entered.push_back(y); },
      [&](int32_t x, int32_t y) { left.push_back(x), left.push_back(y); });
  auto arr = [&](const std::vector<int32_t>& v) {
    Napi::Int32Array a = Napi::Int32Array::New(env, v.size());
    for (size_t i = 0; i < v.size(); ++i) a[i] = v[i];
    return a;
  };
  Napi::Object o = Napi::Object::New(env);
  o.Set("entered", arr(entered)), o.Set("left", arr(left));
  return o;
}

}  // namespace sightline::addon
