// The grid's cell functions, reachable from TypeScript for tests and tools: cellOf,
// subscriptionBox, subscriptionDiff.
#pragma once

#include <napi.h>

namespace sightline::addon {

Napi::Value CellOf(const Napi::CallbackInfo& info);
Napi::Value SubscriptionBox(const Napi::CallbackInfo& info);
Napi::Value SubscriptionDiff(const Napi::CallbackInfo& info);

}  // namespace sightline::addon
