// Argument conversion: numbers, entity ids and raw coordinates from a call's arguments, refused
// with a coded error naming the argument, what was received and what is valid.
#pragma once

#include <napi.h>

#include <cstddef>
#include <cstdint>
#include <string>

namespace sightline::addon {

// A number as messages print it (formatNumber).
std::string num(double v);

// What a non-number argument was, for messages.
std::string kindOf(const Napi::Value& v);

// Argument i as a number: ERR_SIGHTLINE_INVALID_ARGUMENT when it is missing or not a number.
double numberArg(const Napi::CallbackInfo& info, size_t i, const char* name);

// Argument i as an entity id (an integer 0..2^32-1): ERR_SIGHTLINE_INVALID_ENTITY otherwise.
uint32_t idArg(const Napi::CallbackInfo& info, size_t i);

// Argument i as a visibility-groups mask (an integer 0..2^32-1): ERR_SIGHTLINE_INVALID_ARGUMENT otherwise.
uint32_t groupsArg(const Napi::CallbackInfo& info, size_t i, const char* name);

// Argument i as a raw coordinate (an integer within Int32): ERR_SIGHTLINE_INVALID_POSITION otherwise.
int32_t rawArg(const Napi::CallbackInfo& info, size_t i, const char* name);

// Argument i as a kind (an integer 0..65535): ERR_SIGHTLINE_INVALID_KIND otherwise.
uint16_t kindArg(const Napi::CallbackInfo& info, size_t i);

}  // namespace sightline::addon
