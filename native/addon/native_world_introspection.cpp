// NativeWorld: what tests and tools read of the engine: the snapshot, a gather, a viewer's ghost
// table, the world's info; and the caps the pass uses (setCaps).
#include "native_world.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "args.h"
#include "config_object.h"
#include "gather.h"

namespace sightline::addon {

Napi::Value NativeWorld::RebuildSnapshot(const Napi::CallbackInfo& info) {
  requireIdle(info.Env(), "rebuildSnapshot()");
  requirePositions(info.Env());
  guarded(info.Env(), [&] { world_->rebuildSnapshot(); return 0; });
  return info.Env().Undefined();
}

Napi::Value NativeWorld::SnapshotInfo(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const Snapshot& s = world_->snapshot();
  Napi::Object o = Napi::Object::New(env);
  o.Set("count", Napi::Number::New(env, s.count()));
  o.Set("outsideRegion", Napi::Number::New(env, s.outsideRegion()));
  o.Set("denseCells", Napi::Number::New(env, s.denseCells()));
  o.Set("maxCellOccupancy", Napi::Number::New(env, s.maxCellOccupancy()));
  return o;
}

// gather(xRaw, yRaw, walkCap, excludeId, radiusRaw) on the current snapshot (radiusRaw 0: the
// config's view radius).
Napi::Value NativeWorld::Gather(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  requireIdle(env, "gather()");
  double vx = numberArg(info, 0, "x"), vy = numberArg(info, 1, "y"), cap = numberArg(info, 2, "walkCap");
  double ex = numberArg(info, 3, "exclude");
  double radius = info.Length() > 4 && info[4].IsNumber() ? info[4].As<Napi::Number>().DoubleValue() : 0;
  const Config& c = world_->config();
  if (!(radius >= 0 && radius <= double(c.viewRadiusRaw)) || radius != double(int64_t(radius)))
    throw codedError(env, "ERR_SIGHTLINE_INVALID_ARGUMENT",
                     "radius must be an integer from 1 to the config's viewRadius (" + std::to_string(c.viewRadiusRaw) +
                         " raw), received " + num(radius));
  const int64_t r = radius == 0 ? c.viewRadiusRaw : int64_t(radius);
  const uint32_t groups = info.Length() > 5 ? groupsArg(info, 5, "groups") : ~0u;
  if (vx != double(int64_t(vx)) || vy != double(int64_t(vy)) || std::abs(vx) > 4e15 || std::abs(vy) > 4e15)
    throw codedError(env, "ERR_SIGHTLINE_INVALID_POSITION", "x and y must be integer raw coordinates");
  uint32_t walkCap = cap >= 4294967295.0 || std::isinf(cap) ? UINT32_MAX : uint32_t(std::max(cap, 1.0));
  uint32_t exclude = ex >= 0 && ex <= 4294967295.0 ? uint32_t(ex) : UINT32_MAX;
  const Snapshot& s = world_->snapshot();
  std::vector<uint64_t> outD2(s.count() + kGatherSlack);
  std::vector<uint32_t> outIndex(s.count() + kGatherSlack);
  std::vector<uint64_t> outIdOdo(s.count() + kGatherSlack);
  GatherResult g = gather(s, GatherQuery{int64_t(vx), int64_t(vy), uint64_t(r) * uint64_t(r), uint32_t((r + c.cellRaw - 1) / c.cellRaw),
                                      walkCap, exclude, groups},
                          Candidates{outD2.data(), outIndex.data(), outIdOdo.data()});
  Napi::Uint32Array ids = Napi::Uint32Array::New(env, g.count);
  Napi::Float64Array d2 = Napi::Float64Array::New(env, g.count);
  for (uint32_t i = 0; i < g.count; ++i) ids[i] = candIdOf(outIdOdo[i]), d2[i] = double(outD2[i]);
  Napi::Object o = Napi::Object::New(env);
  o.Set("ids", ids);
  o.Set("d2", d2);
  o.Set("examined", Napi::Number::New(env, g.examined));
  return o;
}

// The ghost table of a viewer: what its client holds, with last-sent raw positions.
Napi::Value NativeWorld::Ghosts(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  requireIdle(env, "ghosts()");
  uint32_t id = idArg(info, 0);
  const Viewer& v = guarded(env, [&]() -> const Viewer& { return world_->viewer(id); });
  const GhostTable& g = v.ghosts;
  uint32_t n = g.size();
  Napi::Uint32Array ids = Napi::Uint32Array::New(env, n);
  Napi::Uint8Array state = Napi::Uint8Array::New(env, n);
  // 3: the server believes the client does not hold it (an announcement lost for certain).
  for (uint32_t i = 0; i < n; ++i)
    ids[i] = g.at(i).id, state[i] = (g.at(i).flags & kUnheld) ? 3 : g.at(i).state;
  Napi::Object o = Napi::Object::New(env);
  o.Set("ids", ids), o.Set("state", state);
  if (g.tracksPositions()) {
    Napi::Int32Array x = Napi::Int32Array::New(env, n), y = Napi::Int32Array::New(env, n),
                     z = Napi::Int32Array::New(env, n);
    for (uint32_t i = 0; i < n; ++i) x[i] = g.positionAt(i).x, y[i] = g.positionAt(i).y, z[i] = g.positionAt(i).z;
    o.Set("x", x), o.Set("y", y), o.Set("z", z);
  } else {
    o.Set("x", env.Null()), o.Set("y", env.Null()), o.Set("z", env.Null());
  }
  o.Set("sequence", Napi::Number::New(env, v.sequence));
  o.Set("passes", Napi::Number::New(env, v.passes));
  return o;
}

Napi::Value NativeWorld::Info(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Napi::Object o = Napi::Object::New(env);
  o.Set("config", configToObject(env, world_->config()));
  o.Set("capacity", Napi::Number::New(env, world_->entities().capacity()));
  o.Set("liveCount", Napi::Number::New(env, world_->entities().liveCount()));
  o.Set("threads", Napi::Number::New(env, pool_->size()));
  o.Set("tick", Napi::Number::New(env, world_->tick()));
  o.Set("externalBuffers", Napi::Boolean::New(env, external_));
  o.Set("running", Napi::Boolean::New(env, running_));
  o.Set("memoryBytes", Napi::Number::New(env, double(world_->memoryBytes())));
  o.Set("walkCap", Napi::Number::New(env, world_->walkCap()));
  o.Set("ghostCap", Napi::Number::New(env, world_->ghostCap()));
  return o;
}

// setCaps(walkCap, ghostCap): the caps the pass uses from the next tick on (integers; the engine
// checks their range). Not during a pass.
Napi::Value NativeWorld::SetCaps(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  requireIdle(env, "setCaps");
  const double walk = numberArg(info, 0, "walkCap"), ghost = numberArg(info, 1, "ghostCap");
  for (const auto& [name, v] : {std::pair{"walkCap", walk}, std::pair{"ghostCap", ghost}}) {
    if (!(v >= 1 && v <= 4294967295.0) || v != std::floor(v))
      throw codedError(env, "ERR_SIGHTLINE_INVALID_ARGUMENT", std::string(name) + " must be an integer from 1 to the config's " + name + ", received " + num(v));
  }
  guarded(env, [&] { world_->setCaps(uint32_t(walk), uint32_t(ghost)); return 0; });
  return env.Undefined();
}

}  // namespace sightline::addon
