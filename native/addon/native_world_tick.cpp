// NativeWorld: tick(), and the JavaScript objects of its result (made before the pass, filled after).
#include "native_world.h"

#include <cstring>
#include <iterator>
#include <stdexcept>
#include <string>

#include "buffers.h"
#include "pass_worker.h"
#include "tick_meta.h"

namespace sightline::addon {

Napi::Value NativeWorld::Tick(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (running_)
    throw codedError(env, "ERR_SIGHTLINE_TICK_IN_PROGRESS",
                     "tick() was called while the previous tick's pass is still running; await it first");
  requirePositions(env);
  // Everything the tick allocates comes first: the work, the engine's buffers (reserveTick) and
  // the JavaScript objects of its result (prepareSlot). Running out of memory in any of them
  // leaves the world as it was; startTick then starts the tick and cannot fail.
  auto* worker = guarded(env, [&] { return new PassWorker(env, this, Value(), *world_, pool_, data_, transportForTick()); });
  try {
    guarded(env, [&] { world_->reserveTick(pool_->size()); return 0; });
    try {
      prepareSlot(env, (world_->tick() + 1) & 1, world_->nextOutputBuffer(), world_->viewerCount());
    } catch (const Napi::Error& e) {
      throw codedError(env, "ERR_SIGHTLINE_OUT_OF_MEMORY", std::string("sightline could not allocate memory: ") + e.Message());
    }
  } catch (...) {
    delete worker;
    throw;
  }
  world_->startTick();
  reportMemory(env);  // the tick's buffers may have grown
  // Queueing can throw (a worker thread being terminated): neither the running flag nor the
  // in-flight count may stay taken.
  Napi::Promise p = worker->promise();
  running_ = true;
  data_->begin();
  try {
    worker->Queue();
  } catch (...) {
    running_ = false;
    data_->end();
    delete worker;
    throw;
  }
  return p;
}

// The JavaScript objects the next tick's result needs, made before the tick starts (Tick), so
// that finishing it allocates nothing: the view of the output buffer `out` (re-created only when
// the block changed; in the fallback, a V8 buffer the packets are copied into, also when the one
// made before was detached: it is the caller's now), the packet index for `viewers` and the
// metadata array.
void NativeWorld::prepareSlot(Napi::Env env, unsigned which, const std::shared_ptr<OutputBlock>& out, size_t viewers) {
  Slot& slot = out_[which];
  if (slot.buffer.IsEmpty() || slot.data != out->data.get() || slot.size < out->size || slot.buffer.Value().IsDetached()) {
    Napi::Value ab;
    if (external_) ab = externalBuffer(env, out->data.get(), out->size, out);
    if (ab.IsEmpty()) {
      Napi::ArrayBuffer v8 = Napi::ArrayBuffer::New(env, out->size);
      ab = v8;
      slot.copy = true;
    } else {
      slot.copy = false;
    }
    slot.buffer = Napi::Persistent(ab.As<Napi::ArrayBuffer>());
    slot.data = out->data.get();
    slot.size = out->size;
    ++slot.views;
  }
  if (slot.index.IsEmpty() || slot.indexCap < viewers * 3) {
    slot.indexCap = viewers * 3 + 64;
    slot.index = Napi::Persistent(Napi::Uint32Array::New(env, slot.indexCap));
    slot.indexData = slot.index.Value().Data();
    ++slot.views;
  }
  if (slot.meta.IsEmpty()) {
    slot.meta = Napi::Persistent(Napi::Float64Array::New(env, std::size(kTickMetaFields)));
    slot.metaData = slot.meta.Value().Data();
  }
}

// Called by PassWorker on the JavaScript thread when the pass is done. Returns the tick's metadata,
// a Float64Array in kTickMetaFields order, reused every other tick: building a result object
// through Node-API costs tens of microseconds here (the pass has just taken both cores' caches),
// so the package reads these numbers and builds the objects in JavaScript. The buffer and the
// index come from outputViews() when the metadata's `views` generation says they changed.
// The tick's metadata, with its packets listed in the slot prepared for it; then the viewer
// changes queued during the pass. Allocates nothing.
Napi::Value NativeWorld::finishTick(Napi::Env env) {
  running_ = false;
  World& w = *world_;
  unsigned which = w.tick() & 1;
  const std::shared_ptr<OutputBlock>& out = w.outputBuffer(which);
  Slot& slot = out_[which];
  const size_t size = w.outputSize(), nv = w.viewerCount();
  if (slot.data != out->data.get() || slot.size < size || slot.indexCap < nv * 3 || slot.meta.IsEmpty()) {
    applyPending(env);  // unreachable: Tick prepared the slot for this block and these viewers
    throw std::logic_error("the output slot was not prepared for this tick");
  }
  // A buffer detached while the pass ran (ArrayBuffer.prototype.transfer, refused by untransferable
  // buffers where the runtime honours the mark): made again, the one allocation of this rare case.
  if (slot.buffer.Value().IsDetached()) {
    try {
      slot.buffer.Reset();
      prepareSlot(env, which, out, nv);
    } catch (...) {
      applyPending(env);
      throw;
    }
  }
  if (slot.copy) std::memcpy(slot.buffer.Value().Data(), out->data.get(), size);
  uint32_t* ix = slot.indexData;
  uint32_t count = 0;
  const uint32_t* all = w.packetIndex();
  const char* bytes = reinterpret_cast<const char*>(slot.copy ? slot.buffer.Value().Data() : out->data.get());
  for (size_t i = 0; i < nv; ++i) {
    const uint32_t* e = all + 3 * i;
    if (e[2] == 0) continue;
    ix[3 * count] = e[0], ix[3 * count + 1] = e[1], ix[3 * count + 2] = e[2];
    // The pool's threads wrote the packet, on other cores: its first line is asked for now, so
    // that the caller's reads find it near (measured: reading every packet's first byte took
    // 0.13-0.15 ms more for the first loop to touch them).
    __builtin_prefetch(bytes + e[1], 0, 2);
    ++count;
  }

  const TickStats& s = w.stats();
  const Snapshot& snap = w.snapshot();
  const double meta[] = {
      double(w.tick()), double(count), double(slot.views),
      double(s.served), double(s.skippedNotDue), double(s.skippedAvatarGone), double(s.skippedOutsideRegion),
      double(s.candidates), double(s.examined), double(s.eligible), double(s.records), double(s.newGhosts),
      double(s.despawns), double(s.bytes), double(s.ghostTableFull), double(s.pressureEvictions),
      double(s.subscriptionChanges), double(s.events), double(s.eventBytes), double(s.kinds), double(s.attributes),
      double(s.attributeBytes), double(snap.count()),
      double(snap.outsideRegion()), double(snap.denseCells()), w.odometerMicros, w.snapshotMicros, w.passMicros,
  };
  static_assert(std::size(meta) == std::size(kTickMetaFields), "one value per field of kTickMetaFields");
  std::memcpy(slot.metaData, meta, sizeof(meta));
  applyPending(env);
  return slot.meta.Value();
}

// outputViews(which): { buffer, index } of output slot `which` (a tick's parity), as the last
// finishTick of that parity left them.
Napi::Value NativeWorld::OutputViews(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const Slot& slot = out_[info.Length() > 0 && info[0].IsNumber() ? info[0].As<Napi::Number>().Uint32Value() & 1 : 0];
  if (slot.buffer.IsEmpty() || slot.index.IsEmpty()) return env.Null();
  Napi::Object o = Napi::Object::New(env);
  o.Set("buffer", slot.buffer.Value());
  o.Set("index", slot.index.Value());
  return o;
}

void NativeWorld::failTick(Napi::Env env) {
  running_ = false;
  applyPending(env);
}

}  // namespace sightline::addon
