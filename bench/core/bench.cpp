// Over 500 lines as one file: one benchmark driver; each --mode is a short function over the same world builders and timing.
// Engine benchmarks without Node: snapshot rebuild, gather and the full pass, per scenario.
// Build and run: npm run bench:core -- [options]   (see usage()). Prints one JSON object per run.
// Times are medians over the measured ticks, from std::chrono::steady_clock.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "config.h"
#include "gather.h"
#include "simd.h"
#include "thread_pool.h"
#include "world.h"

using namespace sightline;
using Clock = std::chrono::steady_clock;

namespace {

struct Options {
  std::string scenario = "town-square";
  std::string mode = "pass";  // pass | snapshot | gather | wake | pair | state | controls
  std::string controls = "none";  // none | meet | filter (see applyControls); --mode controls: meet unless given
  uint32_t entities = 8192;
  uint32_t viewers = 0;  // 0 = scenario default
  unsigned threads = 1;
  uint32_t ticks = 50;
  uint32_t warmup = 20;
  double walkCap = 256;
  double ghostCap = 256;
  double denseThreshold = 512;
  bool still = false;
  std::string walk = "jitter";  // jitter | wander
  bool digest = false;  // print a digest of every packet (to check that two builds send the same bytes)
  double gapMs = 15;  // --mode wake: idle time before each dispatch
  double attributeBytes = 32;   // --mode state: the attributes' size
  double attributeRate = 0.1;   // --mode state: the share of entities whose attributes change each second
  bool kinds = false;           // --mode state: every entity has a kind (1 to 4)
  double repeatPasses = -1;     // --mode state: attributeRepeatPasses (-1: the default, 20)
  bool acks = false;            // viewers acknowledge every packet as soon as it is written (both scenes alike)
  std::string scene = "both";   // --mode state: which scenes tick (positions | state | both), for instruction counts
  bool warmupGiven = false;
};

void usage(const char* problem = nullptr, int code = 2) {
  if (problem) std::fprintf(stderr, "bench-core: %s\n", problem);
  std::fprintf(code == 0 ? stdout : stderr,
               "usage: bench-core [--scenario uniform|town-square|crowd|crowd-50k] [--mode pass|snapshot|gather|wake|pair|state|controls]\n"
               "             [--entities N] [--viewers N] [--threads N] [--ticks N] [--warmup N]\n"
               "             [--walk-cap N|inf] [--ghost-cap N] [--dense N|inf] [--still] [--gap-ms N]\n"
               "             [--walk jitter|wander] [--digest] [--attribute-bytes N] [--attribute-rate R] [--kinds] [--acks] [--scene S]\n"
               "             [--controls none|meet|filter|groups|weights|radii|boost] [--help]\n"
               "  Prints one JSON line; times are medians over the --ticks measured after --warmup ticks\n"
               "  (passMs: the pass of every viewer; perViewerUs: passMs / viewers served).\n"
               "  --scenario crowd: 60%% of --entities in one cell; crowd-50k: crowd, --entities 50000 by default (herd's crowd-50k)\n"
               "  --walk jitter (default): each axis moves a uniform -77..77 raw a tick (1.5 m/s at most)\n"
               "  --walk wander: a slowly turning heading at 1.5 m/s (77 raw a tick), as the herd's scenarios\n"
               "                 move; neighbourhoods change faster, so ghost tables churn more\n"
               "  --digest: also print a digest of every packet written (two builds must agree)\n"
               "  --mode wake: how long after a parallelFor starts each pool thread takes its first chunk,\n"
               "               when the pool sat idle --gap-ms before it (the thread count includes the caller)\n"
               "  --mode pair: two identical scenes on one thread each, first one alone, then both at once:\n"
               "               how much the machine's cores slow each other (slowdown = both / alone)\n"
               "  --mode state: two identical scenes ticked in turn (ABBA), one with positions only, one with a\n"
               "               24-bit field schema (yaw 10, anim 6, health 8) written every tick, a kind per entity and\n"
               "               --attribute-bytes N (32) attributes on every entity, --attribute-rate R (0.1) of them\n"
               "               changing a second at 20 Hz (--kinds: and a kind each): the pass time of each and their\n"
               "               ratio; --warmup 80 unless given; --scene positions|state ticks that scene alone\n"
               "               (the measured ticks' passes counted alone under callgrind: valgrind --tool=callgrind\n"
               "               --collect-atstart=no --toggle-collect='*measuredPass*' bench-core --mode state --scene S ...)\n"
               "  --acks: viewers acknowledge every packet right after its pass\n"
               "  --mode controls: two identical scenes, the second with the interest controls in use, their\n"
               "               ticks interleaved (one of each in turn, same pool): plainMs, controlsMs, ratio\n"
               "               (of the medians) and pairedRatio (median of each tick pair's ratio)\n"
               "  --controls none (default; --mode controls: meet): no interest controls\n"
               "             meet: every entity in one of 4 groups plus a group every viewer sees (the\n"
               "               mask test runs on every entity and hides none), priorities 1 to 16, each viewer's\n"
               "               own radius of 192 to 256 m, a boost of 8 entities x4 per viewer;\n"
               "             filter: the same, but each viewer sees 3 of the 4 groups (a quarter hidden)\n"
               "             groups, weights, radii, boost: that control of meet alone\n");
  std::exit(code);
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}
double pct(std::vector<double> v, double p) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[std::min(v.size() - 1, size_t(p * v.size()))];
}

// --mode wake: the pool idles gapMs, then a parallelFor of 7 µs chunks starts; per pool thread
// (not the caller), the time from the call to its first chunk. After a long enough idle gap, a
// virtual machine's host may have descheduled the idle vCPU and the thread starts late.
int wakeLatency(const Options& o) {
  ThreadPool pool(std::max(o.threads, 2u));
  std::vector<double> lat;
  std::vector<std::atomic<int64_t>> first(pool.size());
  for (uint32_t t = 0; t < o.warmup + o.ticks; ++t) {
    std::this_thread::sleep_for(std::chrono::microseconds(int64_t(o.gapMs * 1000)));
    for (auto& f : first) f.store(-1);
    auto t0 = Clock::now();
    pool.parallelFor(4000, 1, [&](uint32_t, uint32_t, unsigned w) {
      int64_t none = -1;
      first[w].compare_exchange_strong(none, std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - t0).count());
      auto until = Clock::now() + std::chrono::microseconds(7);
      while (Clock::now() < until) {
      }
    });
    double totalUs = std::chrono::duration<double, std::micro>(Clock::now() - t0).count();
    if (t < o.warmup) continue;
    // A thread that never took a chunk started no earlier than the end: counted as the whole call.
    for (unsigned w = 1; w < pool.size(); ++w) lat.push_back(first[w].load() < 0 ? totalUs : first[w].load() / 1000.0);
  }
  std::printf("{\"mode\":\"wake\",\"threads\":%u,\"gapMs\":%.1f,\"dispatches\":%u,\"startMedianUs\":%.0f,"
              "\"startP90Us\":%.0f,\"startMaxUs\":%.0f}\n",
              pool.size(), o.gapMs, o.ticks, median(lat), pct(lat, 0.9), pct(lat, 1.0));
  return 0;
}

// A scenario's world and how its entities move. Jitter: a random step of ~1.5 m/s at 20 Hz (77
// raw per tick per axis at most), kept inside its area. Wander: the heading turns by a turn rate
// that decays by 0.95 and gains up to +-0.01 radians a tick; 77 raw a tick along it; reflected at
// the area's edges. Seeded: two scenes of the same options move alike.
struct Scene {
  const Options& o;
  World w;
  std::mt19937 rng{12345};
  int64_t region, cell, cx0;  // cx0: the crowded cell's lower corner
  uint32_t crowd, viewers;
  std::vector<double> hx, hy, turn, px, py;
  std::uniform_real_distribution<double> noise{-0.01, 0.01};

  Scene(const Options& opts, const Config& c)
      : o(opts), w(c, std::max<uint32_t>(opts.entities, 1)), region(c.regionRaw), cell(c.cellRaw),
        cx0((c.cellsPerAxis / 2) * c.cellRaw),
        crowd(opts.scenario == "town-square" ? opts.entities : opts.scenario == "crowd" ? opts.entities * 6 / 10 : 0) {
    auto uni = [&](int64_t lo, int64_t hi) { return int32_t(lo + int64_t(rng() % uint64_t(hi - lo))); };
    for (uint32_t i = 0; i < o.entities; ++i) {
      if (i < crowd) w.entities().spawn(uni(cx0, cx0 + cell), uni(cx0, cx0 + cell), 0);
      else w.entities().spawn(uni(0, region), uni(0, region), 0);
    }
    viewers = std::min(o.viewers ? o.viewers : std::min<uint32_t>(o.entities, 8192), o.entities);
    for (uint32_t i = 0; i < viewers; ++i) w.addViewer(w.entities().idOfSlot(i), ViewerOptions{0, 1, opts.acks});
    hx.resize(o.entities), hy.resize(o.entities), turn.resize(o.entities), px.resize(o.entities), py.resize(o.entities);
    std::uniform_real_distribution<double> angle(0, 6.283185307179586);
    for (uint32_t s = 0; s < o.entities; ++s) {
      double a = angle(rng);
      hx[s] = std::cos(a), hy[s] = std::sin(a), px[s] = w.entities().x()[s], py[s] = w.entities().y()[s];
    }
  }

  void move() {
    if (o.still) return;
    int32_t *xs = w.entities().x(), *ys = w.entities().y();
    for (uint32_t s = 0; s < o.entities; ++s) {
      int64_t lo = s < crowd ? cx0 : 0, hi = s < crowd ? cx0 + cell - 1 : region - 1;
      if (o.walk == "jitter") {
        xs[s] = int32_t(std::clamp<int64_t>(xs[s] + int32_t(rng() % 155) - 77, lo, hi));
        ys[s] = int32_t(std::clamp<int64_t>(ys[s] + int32_t(rng() % 155) - 77, lo, hi));
        continue;
      }
      double t = turn[s] = turn[s] * 0.95 + noise(rng);
      double nx = hx[s] - t * hy[s], ny = hy[s] + t * hx[s], inv = 1 / std::sqrt(nx * nx + ny * ny);
      hx[s] = nx * inv, hy[s] = ny * inv;
      px[s] += hx[s] * 77, py[s] += hy[s] * 77;
      if (px[s] < lo || px[s] > hi) hx[s] = -hx[s], px[s] = std::clamp<double>(px[s], lo, hi);
      if (py[s] < lo || py[s] > hi) hy[s] = -hy[s], py[s] = std::clamp<double>(py[s], lo, hi);
      xs[s] = int32_t(std::lround(px[s])), ys[s] = int32_t(std::lround(py[s]));
    }
  }

  // One tick: move, rebuild, serve every viewer on `pool`. Returns the pass time, µs.
  double tick(ThreadPool& pool) {
    move();
    w.prepareTick(pool.size());
    w.runPass(pool);
    acknowledge();
    return w.passMicros;
  }
  // With --acks: each viewer's client acknowledges every packet it was sent (after the pass).
  void acknowledge() {
    if (!o.acks) return;
    for (uint32_t i = 0; i < viewers; ++i) {
      const Viewer& v = w.viewerAt(i);
      if (v.passes > 0) w.acknowledge(v.avatarId, uint16_t(v.sequence - 1), 0xffffffffu);
    }
  }
};

// The state a game keeps beside positions, for --mode state: yaw from each entity's heading, an
// animation state from its speed (walking, or idle every 16th tick), health that drops now and then,
// attributes (a name) of which --attribute-rate change a second at 20 Hz, and with --kinds a kind
// per entity (1 to 4).
struct StateWriter {
  const Options& o;
  std::mt19937 rng{777};
  uint32_t attributeBytes;
  explicit StateWriter(const Options& opts) : o(opts), attributeBytes(uint32_t(opts.attributeBytes)) {}
  static ConfigInput input(ConfigInput in, const Options& o) {
    in.fields.push_back(FieldInput{"yaw", 10, 0.0, 6.283185307179586, std::nullopt});
    in.fields.push_back(FieldInput{"anim", 6, std::nullopt, std::nullopt, std::nullopt});
    in.fields.push_back(FieldInput{"health", 8, std::nullopt, 100.0, std::nullopt});
    in.attributeBytes = o.attributeBytes;
    if (o.repeatPasses >= 0) in.attributeRepeatPasses = o.repeatPasses;
    return in;
  }
  void spawned(Scene& s) {
    std::vector<uint8_t> name(attributeBytes, 'a');
    for (uint32_t slot = 0; slot < s.o.entities; ++slot) {
      const uint32_t id = s.w.entities().idOfSlot(slot);
      if (o.kinds) s.w.entities().setKind(id, uint16_t(1 + slot % 4));
      if (attributeBytes > 0) s.w.entities().setAttributes(id, name.data(), attributeBytes);
      s.w.entities().fieldValues()[2 * size_t(s.w.entities().capacity()) + slot] = 255;
    }
  }
  void step(Scene& s, uint32_t t) {
    EntityStore& st = s.w.entities();
    int32_t* yaw = st.fieldValues();
    int32_t* anim = yaw + st.capacity();
    int32_t* health = anim + st.capacity();
    for (uint32_t slot = 0; slot < s.o.entities; ++slot) {
      double a = std::atan2(s.hy[slot], s.hx[slot]);
      if (a < 0) a += 6.283185307179586;
      yaw[slot] = int32_t(std::lround(a * 1023 / 6.283185307179586));
      anim[slot] = (t + slot) % 16 == 0 ? 0 : 1;
      if (rng() % 200 == 0) health[slot] = std::max(0, health[slot] - 10);
    }
    // rate x entities per second, at 20 ticks a second.
    const double perTick = o.attributeRate * s.o.entities / 20;
    uint32_t n = attributeBytes == 0 ? 0 : uint32_t(perTick) + (double(rng() % 1000) / 1000 < perTick - std::floor(perTick) ? 1 : 0);
    std::vector<uint8_t> name(attributeBytes);
    for (uint32_t k = 0; k < n; ++k) {
      for (auto& b : name) b = uint8_t('a' + rng() % 26);
      st.setAttributes(st.idOfSlot(rng() % s.o.entities), name.data(), attributeBytes);
    }
  }
};

// The pass of a measured tick of --mode state, apart (not inlined) so that callgrind can count its
// instructions alone: --collect-atstart=no --toggle-collect='*measuredPass*'.
__attribute__((noinline)) void measuredPass(World& w, ThreadPool& pool) { w.runPass(pool); }

// --mode state: the pass with state beyond positions against the position-only pass, the same
// scene ticked in turn on one pool (A B B A ...), so the machine's moods fall on both alike.
int stateComparison(const Options& o, const Config& plain, const Config& withState) {
  Scene a(o, plain), b(o, withState);
  StateWriter writer(o);
  writer.spawned(b);
  ThreadPool pool(o.threads);
  std::vector<double> usA, usB;
  TickStats lastA{}, lastB{};
  uint64_t digest = 0xcbf29ce484222325ull;  // --digest: FNV-1a over the state scene's packets, every tick
  for (uint32_t t = 0; t < o.warmup + o.ticks; ++t) {
    auto tickB = [&] {
      b.move();
      writer.step(b, t);
      b.w.prepareTick(pool.size());
      if (t >= o.warmup) measuredPass(b.w, pool);
      else b.w.runPass(pool);
      b.acknowledge();
      if (o.digest) {
        const uint32_t* pi = b.w.packetIndex();
        const uint8_t* out = b.w.output();
        for (uint32_t i = 0; i < b.viewers; ++i)
          for (uint32_t k = 0; k < pi[3 * i + 2]; ++k) digest = (digest ^ out[pi[3 * i + 1] + k]) * 0x100000001b3ull;
      }
      if (t >= o.warmup) usB.push_back(b.w.passMicros), lastB = b.w.stats();
    };
    auto tickA = [&] {
      a.move();
      a.w.prepareTick(pool.size());
      if (t >= o.warmup) measuredPass(a.w, pool);
      else a.w.runPass(pool);
      a.acknowledge();
      if (t >= o.warmup) usA.push_back(a.w.passMicros), lastA = a.w.stats();
    };
    if (o.scene == "positions") tickA();
    else if (o.scene == "state") tickB();
    else if (t % 2 == 0) tickA(), tickB();
    else tickB(), tickA();
  }
  const double mA = median(usA), mB = median(usB);
  const double servedA = double(std::max<uint64_t>(lastA.served, 1)), servedB = double(std::max<uint64_t>(lastB.served, 1));
  std::printf("{\"scenario\":\"%s\",\"mode\":\"state\",\"entities\":%u,\"viewers\":%u,\"threads\":%u,\"walk\":\"%s\",\"ticks\":%u,"
              "\"kernels\":\"%s\",\"acks\":%s,\"kinds\":%s,\"fieldBits\":%u,\"attributeBytes\":%u,\"attributeRate\":%.3f,"
              "\"positionsMs\":%.3f,\"stateMs\":%.3f,\"ratio\":%.3f,\"positionsMinMs\":%.3f,\"stateMinMs\":%.3f,"
              "\"recordsPerPacket\":%.2f,\"stateRecordsPerPacket\":%.2f,\"bytesPerPacket\":%.1f,\"stateBytesPerPacket\":%.1f,"
              "\"kindsPerTick\":%lu,\"attributesPerTick\":%lu,\"attributeBytesPerTick\":%lu",
              o.scenario.c_str(), o.entities, a.viewers, pool.size(), o.walk.c_str(), o.ticks, simdEnabled() ? "avx512" : "portable",
              o.acks ? "true" : "false", o.kinds ? "true" : "false", withState.fieldBits, withState.attributeBytes, o.attributeRate, mA / 1000, mB / 1000, mB / mA, pct(usA, 0) / 1000,
              pct(usB, 0) / 1000, double(lastA.records) / servedA, double(lastB.records) / servedB, double(lastA.bytes) / servedA,
              double(lastB.bytes) / servedB, (unsigned long)lastB.kinds, (unsigned long)lastB.attributes,
              (unsigned long)lastB.attributeBytes);
  if (o.digest) std::printf(",\"digest\":\"%016llx\"", (unsigned long long)digest);
  std::printf("}\n");
  return 0;
}

// --mode pair: how much two cores slow each other down on this machine. Two identical scenes,
// each served by one thread: first one scene alone, then both at once on two threads. On a
// machine whose two vCPUs share one physical core (SMT siblings) or whose host is busy, "both"
// runs well above "alone", and no 2-thread pass can run twice as fast as a 1-thread one.
int pairContention(const Options& o, const Config& c) {
  Scene a(o, c), b(o, c);
  ThreadPool poolA(1), poolB(1);
  std::vector<double> alone, both;
  for (uint32_t t = 0; t < o.warmup + o.ticks; ++t) {
    double us = a.tick(poolA);
    b.tick(poolB);  // keeps b in step with a
    if (t >= o.warmup) alone.push_back(us);
  }
  for (uint32_t t = 0; t < o.warmup + o.ticks; ++t) {
    double usB = 0;
    std::thread other([&] { usB = b.tick(poolB); });
    double usA = a.tick(poolA);
    other.join();
    if (t >= o.warmup) both.push_back(usA), both.push_back(usB);
  }
  const double m1 = median(alone), m2 = median(both);
  std::printf("{\"scenario\":\"%s\",\"mode\":\"pair\",\"entities\":%u,\"viewers\":%u,\"walk\":\"%s\",\"ticks\":%u,"
              "\"aloneMs\":%.3f,\"bothMs\":%.3f,\"slowdown\":%.3f}\n",
              o.scenario.c_str(), o.entities, a.viewers, o.walk.c_str(), o.ticks, m1 / 1000, m2 / 1000, m2 / m1);
  return 0;
}

// --mode controls: the interest controls of --controls on a scene (seeded: both kinds draw alike).
// groups, weights, radii, boost: one control of meet alone (to see what each costs).
void applyControls(Scene& sc, const std::string& kind, const Config& c) {
  std::mt19937 rng(777);
  World& w = sc.w;
  const uint32_t common = 1u << 31;
  const bool all = kind == "meet" || kind == "filter";
  const bool groups = all || kind == "groups", weights = all || kind == "weights", radii = all || kind == "radii",
             boost = all || kind == "boost";
  for (uint32_t s = 0; s < sc.o.entities; ++s) {
    const uint32_t id = w.entities().idOfSlot(s);
    if (groups) w.entities().setGroups(id, (1u << (s % 4)) | (kind != "filter" ? common : 0u));
    if (weights) w.entities().setWeight(id, 1 + rng() % 16);
    if (kind == "weights1") w.entities().setWeight(id, s == 0 ? 2 : 1);
  }
  for (uint32_t i = 0; i < sc.viewers; ++i) {
    ViewerChange ch;
    ch.what = (radii ? ViewerChange::kViewRadius : 0u) | (groups ? ViewerChange::kGroups : 0u) | (boost ? ViewerChange::kBoost : 0u);
    ch.to.viewRadiusRaw = c.viewRadiusRaw * 3 / 4 + int64_t(rng() % uint64_t(c.viewRadiusRaw / 4 + 1));
    ch.to.groups = kind != "filter" ? common : (0xfu & ~(1u << (i % 4)));
    ch.to.boostFactor = 4;
    for (uint32_t k = 0; k < 8; ++k) ch.boost.push_back(w.entities().idOfSlot(rng() % sc.o.entities));
    w.changeViewer(w.entities().idOfSlot(i), std::move(ch));
  }
}

// --mode controls: plain and controlled scenes ticked in turn on one pool.
int controlsOverhead(const Options& o, const Config& c) {
  Scene plain(o, c), controlled(o, c);
  applyControls(controlled, o.controls, c);
  ThreadPool pool(o.threads);
  std::vector<double> a, b, ratio;
  TickStats sa{}, sb{};
  for (uint32_t t = 0; t < o.warmup + o.ticks; ++t) {
    // Alternate which goes first, so that neither always follows the other's caches.
    double ua, ub;
    if (t % 2 == 0) ua = plain.tick(pool), ub = controlled.tick(pool);
    else ub = controlled.tick(pool), ua = plain.tick(pool);
    if (t < o.warmup) continue;
    a.push_back(ua), b.push_back(ub), ratio.push_back(ub / ua);
    sa = plain.w.stats(), sb = controlled.w.stats();
  }
  const double served = double(std::max<uint64_t>(sa.served, 1));
  std::printf("{\"scenario\":\"%s\",\"mode\":\"controls\",\"controls\":\"%s\",\"entities\":%u,\"viewers\":%u,\"threads\":%u,"
              "\"ticks\":%u,\"kernels\":\"%s\",\"plainMs\":%.3f,\"controlsMs\":%.3f,\"ratio\":%.4f,\"pairedRatio\":%.4f,"
              "\"plainCandidatesPerViewer\":%.1f,\"controlsCandidatesPerViewer\":%.1f,\"plainExaminedPerViewer\":%.1f,"
              "\"controlsExaminedPerViewer\":%.1f,\"plainRecordsPerPacket\":%.2f,\"controlsRecordsPerPacket\":%.2f}\n",
              o.scenario.c_str(), o.controls.c_str(), o.entities, plain.viewers, pool.size(), o.ticks,
              simdEnabled() ? "avx512" : "portable", median(a) / 1000, median(b) / 1000, median(b) / median(a), median(ratio),
              double(sa.candidates) / served, double(sb.candidates) / served, double(sa.examined) / served,
              double(sb.examined) / served, double(sa.records) / served, double(sb.records) / served);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  bool entitiesGiven = false;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) usage((a + " needs a value").c_str());
      return argv[++i];
    };
    // A non-negative number ("inf" for a cap: no cap), else the usage.
    auto num = [&](const std::string& s) {
      if (s == "inf") return 1e18;
      char* end = nullptr;
      double v = std::strtod(s.c_str(), &end);
      if (s.empty() || *end != '\0' || !(v >= 0) || v > 1e18) usage((a + " takes a non-negative number, received " + s).c_str());
      return v;
    };
    // A whole number up to 2^31.
    auto count = [&](const std::string& s) {
      double v = num(s);
      if (v != double(uint64_t(v)) || v > 2147483648.0) usage((a + " takes a whole number up to 2^31, received " + s).c_str());
      return uint32_t(v);
    };
    if (a == "--scenario") o.scenario = next();
    else if (a == "--mode") o.mode = next();
    else if (a == "--entities") o.entities = count(next()), entitiesGiven = true;
    else if (a == "--viewers") o.viewers = count(next());
    else if (a == "--threads") o.threads = count(next());
    else if (a == "--ticks") o.ticks = count(next());
    else if (a == "--warmup") o.warmup = count(next()), o.warmupGiven = true;
    else if (a == "--walk-cap") o.walkCap = num(next());
    else if (a == "--ghost-cap") o.ghostCap = num(next());
    else if (a == "--dense") o.denseThreshold = num(next());
    else if (a == "--still") o.still = true;
    else if (a == "--walk") o.walk = next();
    else if (a == "--digest") o.digest = true;
    else if (a == "--gap-ms") o.gapMs = num(next());
    else if (a == "--controls") o.controls = next();
    else if (a == "--attribute-bytes") o.attributeBytes = num(next());
    else if (a == "--attribute-rate") o.attributeRate = num(next());
    else if (a == "--kinds") o.kinds = true;
    else if (a == "--repeat") o.repeatPasses = num(next());
    else if (a == "--acks") o.acks = true;
    else if (a == "--scene") o.scene = next();
    else if (a == "--help" || a == "-h") usage(nullptr, 0);
    else usage(("unknown option " + a).c_str());
  }
  if (o.walk != "jitter" && o.walk != "wander") usage(("--walk must be jitter or wander, received " + o.walk).c_str());
  if (o.scenario == "crowd-50k") {  // the herd's name: crowd with 50,000 entities unless told otherwise
    o.scenario = "crowd";
    if (!entitiesGiven) o.entities = 50000;
  }
  if (o.scenario != "uniform" && o.scenario != "town-square" && o.scenario != "crowd")
    usage(("--scenario must be uniform, town-square or crowd, received " + o.scenario).c_str());
  if (o.mode != "pass" && o.mode != "snapshot" && o.mode != "gather" && o.mode != "wake" && o.mode != "pair" &&
      o.mode != "state" && o.mode != "controls")
    usage(("--mode must be pass, snapshot, gather, wake, pair, state or controls, received " + o.mode).c_str());
  if (o.controls != "none" && o.controls != "meet" && o.controls != "filter" && o.controls != "groups" &&
      o.controls != "weights" && o.controls != "weights1" && o.controls != "radii" && o.controls != "boost")
    usage(("--controls must be none, meet, filter, groups, weights, radii or boost, received " + o.controls).c_str());
  if (o.mode == "controls" && o.controls == "none") o.controls = "meet";
  if (o.ticks == 0) usage("--ticks must be at least 1");
  if (o.scene != "both" && o.scene != "positions" && o.scene != "state")
    usage(("--scene must be positions, state or both, received " + o.scene).c_str());
  if (o.mode == "wake") return wakeLatency(o);
  ConfigInput in;
  in.walkCap = o.walkCap >= 2147483647.0 ? 2147483647.0 : o.walkCap;
  in.ghostCap = o.ghostCap;
  in.denseCellThreshold = o.denseThreshold >= 1073741824.0 ? 1073741824.0 : o.denseThreshold;
  Config c = buildConfig(in);
  if (o.mode == "pair") return pairContention(o, c);
  if (o.mode == "controls") return controlsOverhead(o, c);
  if (o.mode == "state") {
    // A viewer's first packets introduce its crowd a few first sightings at a time (each carries
    // its attributes): warm up past that by default.
    if (!o.warmupGiven) o.warmup = 80;
    return stateComparison(o, c, buildConfig(StateWriter::input(in, o)));
  }
  Scene scene(o, c);
  if (o.controls != "none") applyControls(scene, o.controls, c);
  World& w = scene.w;
  const uint32_t viewers = scene.viewers;
  ThreadPool pool(o.threads);
  auto move = [&]() { scene.move(); };

  std::vector<double> snapUs, passUs, gatherUs;
  TickStats last{};
  uint64_t gathered = 0, examined = 0;
  uint64_t digest = 0xcbf29ce484222325ull;
  for (uint32_t t = 0; t < o.warmup + o.ticks; ++t) {
    move();
    if (o.mode == "snapshot") {
      auto t0 = Clock::now();
      w.rebuildSnapshot();
      if (t >= o.warmup) snapUs.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count());
      continue;
    }
    w.prepareTick(pool.size());
    if (o.mode == "gather") {
      const Snapshot& snap = w.snapshot();
      std::vector<std::vector<uint64_t>> d2s(pool.size(), std::vector<uint64_t>(o.entities + kGatherSlack));
      std::vector<std::vector<uint32_t>> idxs(pool.size(), std::vector<uint32_t>(o.entities + kGatherSlack));
      std::vector<std::vector<uint64_t>> idOdos(pool.size(), std::vector<uint64_t>(o.entities + kGatherSlack));
      std::vector<uint64_t> g(pool.size() * 16), ex(pool.size() * 16);
      auto t0 = Clock::now();
      pool.parallelFor(viewers, 16, [&](uint32_t b, uint32_t e, unsigned wk) {
        for (uint32_t i = b; i < e; ++i) {
          const Viewer& v = w.viewerAt(i);
          GatherResult r = gather(snap, v.vx, v.vy, c.viewRadiusSq, c.walkCap, v.avatarId,
                                 Candidates{d2s[wk].data(), idxs[wk].data(), idOdos[wk].data()});
          g[wk * 16] += r.count, ex[wk * 16] += r.examined;
        }
      });
      if (t >= o.warmup) {
        gatherUs.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count());
        for (unsigned k = 0; k < pool.size(); ++k) gathered += g[k * 16], examined += ex[k * 16];
      }
      continue;
    }
    w.runPass(pool);
    if (o.digest) {  // FNV-1a over every packet of every tick, in viewer order
      const uint32_t* pi = w.packetIndex();
      const uint8_t* out = w.output();
      for (uint32_t i = 0; i < viewers; ++i)
        for (uint32_t k = 0; k < pi[3 * i + 2]; ++k) digest = (digest ^ out[pi[3 * i + 1] + k]) * 0x100000001b3ull;
    }
    if (t >= o.warmup) snapUs.push_back(w.snapshotMicros), passUs.push_back(w.passMicros), last = w.stats();
  }
  std::printf("{\"scenario\":\"%s\",\"mode\":\"%s\",\"entities\":%u,\"viewers\":%u,\"threads\":%u,\"walkCap\":%.0f,"
              "\"ghostCap\":%.0f,\"denseThreshold\":%.0f,\"walk\":\"%s\",\"ticks\":%u,\"kernels\":\"%s\"",
              o.scenario.c_str(), o.mode.c_str(), o.entities, viewers, pool.size(), double(c.walkCap), o.ghostCap,
              double(c.denseCellThreshold), o.walk.c_str(), o.ticks, simdEnabled() ? "avx512" : "portable");
  if (o.mode == "snapshot") {
    std::printf(",\"snapshotUs\":%.1f,\"snapshotP90Us\":%.1f}\n", median(snapUs), pct(snapUs, 0.9));
  } else if (o.mode == "gather") {
    double med = median(gatherUs);
    std::printf(",\"gatherMs\":%.3f,\"gatherPerViewerUs\":%.3f,\"candidatesPerViewer\":%.1f,\"examinedPerViewer\":%.1f}\n",
                med / 1000, med / viewers, double(gathered) / (double(viewers) * o.ticks),
                double(examined) / (double(viewers) * o.ticks));
  } else {
    double med = median(passUs);
    double served = double(std::max<uint64_t>(last.served, 1));
    std::printf(",\"passMs\":%.3f,\"passP90Ms\":%.3f,\"perViewerUs\":%.3f,\"snapshotUs\":%.1f,\"recordsPerPacket\":%.2f,"
                "\"candidatesPerViewer\":%.1f,\"examinedPerViewer\":%.1f,\"despawnsPerTick\":%lu,\"newGhostsPerTick\":%lu",
                med / 1000, pct(passUs, 0.9) / 1000, med / served, median(snapUs), double(last.records) / served,
                double(last.candidates) / served, double(last.examined) / served, (unsigned long)last.despawns,
                (unsigned long)last.newGhosts);
    if (o.digest) std::printf(",\"digest\":\"%016llx\"", (unsigned long long)digest);
    std::printf("}\n");
  }
  return 0;
}
