// NativeWorld: the JavaScript object over one engine World. Its methods live in the files named
// below, one concept each; this header lists them and the state they share.
#pragma once

#include <napi.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <unordered_map>
#include <vector>

#include "addon_data.h"
#include "coded_error.h"
#if SIGHTLINE_NATIVE_UDP
#include "data_path.h"
#endif
#include "thread_pool.h"
#include "world.h"

namespace sightline::addon {

class NativeWorld : public Napi::ObjectWrap<NativeWorld> {
 public:
  // native_world.cpp: the class, construction, close(), and the checks methods share.
  static Napi::Function Init(Napi::Env env);
  // Method M, on a world not closed (close() released the engine): ERR_SIGHTLINE_WORLD_CLOSED.
  template <Napi::Value (NativeWorld::*M)(const Napi::CallbackInfo&)>
  Napi::Value Open(const Napi::CallbackInfo& info) {
    if (!world_) throw codedError(info.Env(), "ERR_SIGHTLINE_WORLD_CLOSED", "this world was closed");
    return (this->*M)(info);
  }

  Napi::Value Close(const Napi::CallbackInfo& info);
  NativeWorld(const Napi::CallbackInfo& info);
  ~NativeWorld() override;

  // native_world_tick.cpp: tick(), its result's JavaScript objects, and what PassWorker calls back.
  void prepareSlot(Napi::Env env, unsigned which, const std::shared_ptr<OutputBlock>& out, size_t viewers);
  Napi::Value finishTick(Napi::Env env);
  Napi::Value OutputViews(const Napi::CallbackInfo& info);
  void failTick(Napi::Env env);

 private:
  struct Slot {
    Napi::Reference<Napi::ArrayBuffer> buffer;
    const uint8_t* data = nullptr;
    size_t size = 0;
    bool copy = false;
    Napi::Reference<Napi::Uint32Array> index;
    uint32_t* indexData = nullptr;
    size_t indexCap = 0;
    uint32_t views = 0;  // bumped whenever buffer or index is made anew
    Napi::Reference<Napi::Float64Array> meta;
    double* metaData = nullptr;
  };
  // Viewer changes asked for while a pass runs take effect after it, in order.
  struct PendingOp {
    enum Kind : uint8_t { Add, Remove, Change } kind;
    uint32_t id;
    std::unique_ptr<Viewer> viewer;  // Add: the viewer, built when asked for
    ViewerChange change;             // Change: checked and prepared when asked for
  };

  // native_world_viewers.cpp: viewers, and the changes to them queued while a pass runs.
  void applyPending(Napi::Env env);
  Viewer* effectiveViewer(uint32_t id);
  bool addedDuringPass(uint32_t id);
  Napi::Value AddViewer(const Napi::CallbackInfo& info);
  uint64_t pendingOutputBytes() const;
  Napi::Value RemoveViewer(const Napi::CallbackInfo& info);
  Napi::Value ChangeViewer(const Napi::CallbackInfo& info);
  Napi::Value ViewerSettingsOf(const Napi::CallbackInfo& info);
  Napi::Value ServedSettingsInto(const Napi::CallbackInfo& info);
  Napi::Value ChangeViewers(const Napi::CallbackInfo& info);
  Napi::Value ServedSettingsOf(const Napi::CallbackInfo& info);
  Napi::Value HasViewer(const Napi::CallbackInfo& info);
  Napi::Value TeleportViewer(const Napi::CallbackInfo& info);
  Napi::Value ViewerCount(const Napi::CallbackInfo& info);
  Napi::Value ViewerIds(const Napi::CallbackInfo& info);

  // native_world.cpp
  void requirePositions(Napi::Env env);
  // The data path the next tick takes part with (null: none; always null without one).
  std::shared_ptr<net::DataPath> transportForTick() const {
#if SIGHTLINE_NATIVE_UDP
    return transport_;
#else
    return nullptr;
#endif
  }
  void requireIdle(Napi::Env env, const char* what);
  // Tells V8 how much memory the engine holds now (napi_adjust_external_memory by the change
  // since the last report), so that a World dropped without close() is collected in time.
  void reportMemory(Napi::Env env);
  // After a change of one viewer: reportMemory once enough changes have gathered (the sum walks
  // every viewer, so reporting after each one made adding or changing n viewers cost n²).
  void reportMemorySoon(Napi::Env env);
  void releaseMemoryReport(Napi::Env env);

  // native_world_entities.cpp: spawn, despawn, slots and positions.
  Napi::Value Spawn(const Napi::CallbackInfo& info);
  Napi::Value Despawn(const Napi::CallbackInfo& info);
  Napi::Value SlotOf(const Napi::CallbackInfo& info);
  Napi::Value IsLive(const Napi::CallbackInfo& info);
  Napi::Value Positions(const Napi::CallbackInfo& info);
  Napi::Value Fields(const Napi::CallbackInfo& info);
  Napi::Value Odometer(const Napi::CallbackInfo& info);
  Napi::Value SetGroups(const Napi::CallbackInfo& info);
  Napi::Value SetPriority(const Napi::CallbackInfo& info);
  Napi::Value EntityInterest(const Napi::CallbackInfo& info);
  // native_world_state.cpp: kinds and attributes.
  Napi::Value SetKind(const Napi::CallbackInfo& info);
  Napi::Value KindOf(const Napi::CallbackInfo& info);
  Napi::Value SetAttributes(const Napi::CallbackInfo& info);
  Napi::Value Attributes(const Napi::CallbackInfo& info);

  // native_world_acks.cpp: acknowledgements.
  Napi::Value Acknowledge(const Napi::CallbackInfo& info);
  Napi::Value AckStats(const Napi::CallbackInfo& info);

  // native_world_events.cpp: reliable events and who holds an entity.
  Napi::Value Emit(const Napi::CallbackInfo& info);
  Napi::Value Holders(const Napi::CallbackInfo& info);
  Napi::Value EventStats(const Napi::CallbackInfo& info);

  // native_world_tick.cpp
  Napi::Value Tick(const Napi::CallbackInfo& info);

#if SIGHTLINE_NATIVE_UDP
  // native_world_transport.cpp: the native UDP data path a tick applies the ACKs of and sends with.
  Napi::Value AttachTransport(const Napi::CallbackInfo& info);
#endif

  // native_world_introspection.cpp: the snapshot, a gather, a ghost table, the world's info, the
  // caps in use.
  Napi::Value RebuildSnapshot(const Napi::CallbackInfo& info);
  Napi::Value SnapshotInfo(const Napi::CallbackInfo& info);
  Napi::Value Gather(const Napi::CallbackInfo& info);
  Napi::Value Ghosts(const Napi::CallbackInfo& info);
  Napi::Value Info(const Napi::CallbackInfo& info);
  Napi::Value SetCaps(const Napi::CallbackInfo& info);

  std::unique_ptr<World> world_;
  AddonData* data_ = nullptr;
  std::shared_ptr<ThreadPool> pool_;
  unsigned threads_ = 0;
  bool external_ = false;
  bool running_ = false;
  Napi::ObjectReference positions_;
  Napi::ObjectReference fields_;  // name -> Int32Array over the store's field block
  // externalBuffers false: the buffers holding entity memory (x, y, z, and the fields' block when
  // the configuration has fields)
  Napi::Reference<Napi::ArrayBuffer> adopted_[4];
  Slot out_[2];
  std::vector<PendingOp> pending_;
  // While a pass runs: what the queued changes add up to. pendingViewers_: the viewer each id
  // touched by a queued add or removal names once they apply (null: removed); the adds queued;
  // the change in the viewers' payload bytes together and in their count.
  std::unordered_map<uint32_t, Viewer*> pendingViewers_;
  uint32_t pendingAdds_ = 0;
  int64_t pendingOutputDelta_ = 0, pendingCountDelta_ = 0;
  int64_t reportedBytes_ = 0;  // external memory reported to V8 (reportMemory)
  uint32_t unreported_ = 0;    // viewer changes since the last report (reportMemorySoon)
#if SIGHTLINE_NATIVE_UDP
  std::shared_ptr<net::DataPath> transport_;  // null: none attached
#endif
};

}  // namespace sightline::addon
