#include "config.h"

#include <bit>
#include <cmath>
#include <sstream>

#include "errors.h"
#include "fixed.h"

namespace sightline {

namespace {

std::string num(double v) { return formatNumber(v); }

void requireFinitePositive(const char* name, double v) {
  if (!std::isfinite(v))
    throw CoreError("ERR_SIGHTLINE_CONFIG_NOT_FINITE",
                    std::string(name) + " must be a finite number, received " + num(v));
  if (!(v > 0))
    throw CoreError("ERR_SIGHTLINE_CONFIG_NOT_POSITIVE",
                    std::string(name) + " must be greater than 0, received " + num(v));
}

uint32_t requireInteger(const char* name, double v, double lo, double hi) {
  if (!std::isfinite(v))
    throw CoreError("ERR_SIGHTLINE_CONFIG_NOT_FINITE",
                    std::string(name) + " must be a finite number, received " + num(v));
  if (lo > 0 && !(v > 0))
    throw CoreError("ERR_SIGHTLINE_CONFIG_NOT_POSITIVE",
                    std::string(name) + " must be greater than 0, received " + num(v));
  if (v != std::floor(v))
    throw CoreError("ERR_SIGHTLINE_CONFIG_NOT_INTEGER",
                    std::string(name) + " must be an integer, received " + num(v));
  if (v < lo || v > hi)
    throw CoreError("ERR_SIGHTLINE_CONFIG_OUT_OF_RANGE", std::string(name) + " must be between " + num(lo) +
                                                             " and " + num(hi) + ", received " + num(v));
  return static_cast<uint32_t>(v);
}

void fnvWord(uint32_t& h, uint32_t word) {
  for (int i = 0; i < 4; ++i) {
    h ^= (word >> (8 * i)) & 0xffu;
    h *= 16777619u;
  }
}

}  // namespace

uint32_t protocolHash(int64_t regionRaw, int64_t verticalRaw, int quantShift, const std::vector<FieldSpec>& fields,
                      uint32_t attributeBytes) {
  uint32_t bits = 0;
  for (const FieldSpec& f : fields) bits += f.bits;
  uint32_t h = 2166136261u;
  fnvWord(h, kProtocolVersion);
  fnvWord(h, static_cast<uint32_t>(kFracBits));
  fnvWord(h, static_cast<uint32_t>(regionRaw));
  fnvWord(h, static_cast<uint32_t>(verticalRaw));
  fnvWord(h, static_cast<uint32_t>(quantShift));
  fnvWord(h, kHeaderBytes);
  fnvWord(h, kRecordBytes + (bits + 7) / 8);
  fnvWord(h, kDespawnRecordBytes);
  fnvWord(h, static_cast<uint32_t>(fields.size()));
  fnvWord(h, attributeBytes);
  for (const FieldSpec& f : fields) {
    fnvWord(h, f.bits);
    const uint64_t lo = std::bit_cast<uint64_t>(f.min), hi = std::bit_cast<uint64_t>(f.max);
    fnvWord(h, uint32_t(lo)), fnvWord(h, uint32_t(lo >> 32)), fnvWord(h, uint32_t(hi)), fnvWord(h, uint32_t(hi >> 32));
    fnvWord(h, static_cast<uint32_t>(f.name.size()));
    for (unsigned char ch : f.name) h = (h ^ ch) * 16777619u;
  }
  return h;
}

std::array<uint32_t, kBandCount> defaultBandWeights() {
  std::array<uint32_t, kBandCount> w{};
  for (int b = 0; b < kBandCount; ++b) {
    // 2^(31 - b/2), computed exactly with integer shifts and one correctly rounded sqrt(2).
    double v = std::ldexp(1.0, 31 - b / 2);
    if (b % 2 == 1) v /= std::sqrt(2.0);
    uint64_t r = static_cast<uint64_t>(std::llround(v));
    w[b] = r < 1 ? 1u : static_cast<uint32_t>(r);
  }
  return w;
}

namespace {

[[noreturn]] void fieldProblem(size_t i, const std::string& what) {
  throw CoreError("ERR_SIGHTLINE_CONFIG_FIELD_INVALID", "fields[" + num(double(i)) + "]" + what);
}

// Validates the fields in order (each one whole, then whether its name was taken), then their total
// width, and lays them out from bit 0.
std::vector<FieldSpec> buildFields(const std::vector<FieldInput>& in) {
  std::vector<FieldSpec> out;
  uint32_t offset = 0;
  for (size_t i = 0; i < in.size(); ++i) {
    const FieldInput& f = in[i];
    const std::string& n = f.name;
    bool ok = !n.empty() && n.size() <= kMaxFieldNameLength && !(n[0] >= '0' && n[0] <= '9') && n != "__proto__";
    for (char ch : n) ok = ok && ((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') || ch == '_');
    if (!ok)
      fieldProblem(i, ".name must be 1 to " + num(kMaxFieldNameLength) +
                          " letters, digits or underscores, not starting with a digit (nor __proto__), received \"" + n + "\"");
    if (!std::isfinite(f.bits) || f.bits != std::floor(f.bits) || f.bits < 1 || f.bits > kMaxOneFieldBits)
      fieldProblem(i, ".bits must be an integer from 1 to " + num(kMaxOneFieldBits) + ", received " + num(f.bits));
    const uint32_t bits = uint32_t(f.bits);
    const double top = double((uint64_t{1} << bits) - 1);
    const double lo = f.min.value_or(0), hi = f.max.value_or(top);
    if (!std::isfinite(lo)) fieldProblem(i, ".min must be a finite number, received " + num(lo));
    if (!std::isfinite(hi)) fieldProblem(i, ".max must be a finite number, received " + num(hi));
    if (!(lo < hi)) fieldProblem(i, ".min must be less than .max, received min " + num(lo) + " and max " + num(hi));
    const double w = f.weight.value_or(1);
    if (!std::isfinite(w) || w < 0 || w > 4294967295.0 / kRawPerMeter)
      fieldProblem(i, ".weight must be from 0 to 4294967295/1024 m (raw 0 to 2^32 - 1), received " + num(w));
    for (size_t j = 0; j < i; ++j)
      if (in[j].name == n)
        throw CoreError("ERR_SIGHTLINE_CONFIG_FIELD_DUPLICATE", "fields[" + num(double(i)) + "].name \"" + n +
                                                                    "\" is the name of fields[" + num(double(j)) + "] already");
    out.push_back(FieldSpec{n, bits, offset, lo, hi, w, uint32_t(metersToRaw(w))});
    offset += bits;
  }
  if (offset > kMaxFieldBits)
    throw CoreError("ERR_SIGHTLINE_CONFIG_FIELDS_TOO_WIDE", "the fields must fit " + num(kMaxFieldBits) +
                                                                " bits together, received " + num(offset) + " bits in " +
                                                                num(double(in.size())) + " fields");
  return out;
}

}  // namespace

Config buildConfig(const ConfigInput& in) {
  Config c{};
  c.input = in;

  requireFinitePositive("regionSize", in.regionSize);
  requireFinitePositive("verticalExtent", in.verticalExtent);
  requireFinitePositive("viewRadius", in.viewRadius);
  requireFinitePositive("maxSpeed", in.maxSpeed);
  requireFinitePositive("tickHz", in.tickHz);
  if (in.tickHz > kMaxTickHz)
    throw CoreError("ERR_SIGHTLINE_CONFIG_OUT_OF_RANGE", "tickHz must be at most " + num(kMaxTickHz) + " Hz, received " + num(in.tickHz));

  // Region: a power of two of whole meters, so a cell index is the top bits of a raw coordinate.
  if (in.regionSize > kMaxRegionMeters)
    throw CoreError("ERR_SIGHTLINE_CONFIG_OUT_OF_RANGE",
                    "regionSize must be at most " + num(kMaxRegionMeters) + " m, received " + num(in.regionSize));
  if (in.regionSize != std::floor(in.regionSize) || !isPow2(static_cast<uint64_t>(in.regionSize)))
    throw CoreError("ERR_SIGHTLINE_CONFIG_REGION_NOT_POWER_OF_TWO",
                    "regionSize must be a power of two in meters (1024, 2048, 4096, ...), received " +
                        num(in.regionSize));
  c.regionRaw = static_cast<int64_t>(in.regionSize) * kRawPerMeter;
  c.regionShift = ilog2(static_cast<uint64_t>(c.regionRaw));

  if (in.verticalExtent > kMaxRegionMeters)
    throw CoreError("ERR_SIGHTLINE_CONFIG_OUT_OF_RANGE", "verticalExtent must be at most " +
                                                             num(kMaxRegionMeters) + " m, received " +
                                                             num(in.verticalExtent));
  c.verticalRaw = metersToRaw(in.verticalExtent);
  if (c.verticalRaw < 2)
    throw CoreError("ERR_SIGHTLINE_CONFIG_OUT_OF_RANGE",
                    "verticalExtent must be at least 2 raw units (0.002 m), received " + num(in.verticalExtent));
  c.zBits = ceilLog2(static_cast<uint64_t>(c.verticalRaw));

  // Compared in raw units, as the TypeScript check does (a radius a rounding above regionSize is
  // regionSize); one far above is refused before the raw conversion could overflow.
  c.viewRadiusRaw = in.viewRadius > in.regionSize + 1 ? c.regionRaw + 1 : metersToRaw(in.viewRadius);
  if (c.viewRadiusRaw < 1)
    throw CoreError("ERR_SIGHTLINE_CONFIG_NOT_POSITIVE",
                    "viewRadius must be at least 1 raw unit (1/1024 m), received " + num(in.viewRadius));
  if (c.viewRadiusRaw > c.regionRaw)
    throw CoreError("ERR_SIGHTLINE_CONFIG_RADIUS_EXCEEDS_REGION",
                    "viewRadius must be at most regionSize (" + num(in.regionSize) + " m), received " +
                        num(in.viewRadius));
  c.viewRadiusSq = static_cast<uint64_t>(c.viewRadiusRaw) * static_cast<uint64_t>(c.viewRadiusRaw);

  // Cell: a power of two; by default the largest one <= viewRadius / 2 (so the box is 5 x 5).
  if (in.cellSize == 0) {
    int64_t half = c.viewRadiusRaw / 2;
    c.cellRaw = half < 1 ? 1 : (int64_t{1} << ilog2(static_cast<uint64_t>(half)));
  } else {
    requireFinitePositive("cellSize", in.cellSize);
    double raw = in.cellSize * kRawPerMeter;
    if (raw != std::floor(raw) || raw > static_cast<double>(c.regionRaw) ||
        !isPow2(static_cast<uint64_t>(raw)))
      throw CoreError("ERR_SIGHTLINE_CONFIG_CELL_NOT_POWER_OF_TWO",
                      "cellSize must be a power of two in meters (..., 64, 128, 256) no larger than regionSize (" +
                          num(in.regionSize) + " m), received " + num(in.cellSize));
    c.cellRaw = static_cast<int64_t>(raw);
  }
  c.cellShift = ilog2(static_cast<uint64_t>(c.cellRaw));
  if (c.cellRaw > c.regionRaw) c.cellRaw = c.regionRaw, c.cellShift = c.regionShift;
  c.cellsPerAxis = static_cast<uint32_t>(c.regionRaw >> c.cellShift);
  if (c.cellsPerAxis > kMaxCellsPerAxis)
    throw CoreError("ERR_SIGHTLINE_CONFIG_OUT_OF_RANGE",
                    "regionSize / cellSize must be at most " + num(kMaxCellsPerAxis) + " cells per axis, received " +
                        num(c.cellsPerAxis) + " (cell " + num(rawToMeters(c.cellRaw)) + " m)");
  c.cellCount = c.cellsPerAxis * c.cellsPerAxis;
  c.cellRadius = static_cast<uint32_t>((c.viewRadiusRaw + c.cellRaw - 1) / c.cellRaw);
  if (c.cellRadius > kMaxCellRadius)
    throw CoreError("ERR_SIGHTLINE_CONFIG_CELL_RADIUS_TOO_LARGE",
                    "viewRadius / cellSize must be at most " + num(kMaxCellRadius) + " cells, received " +
                        num(c.cellRadius) + " (viewRadius " + num(in.viewRadius) + " m, cell " +
                        num(rawToMeters(c.cellRaw)) + " m)");

  // An entity may cross at most one cell boundary per axis per tick.
  // Compared as a double before the cast: a huge speed must not overflow int64.
  double movePerTick = std::ceil(in.maxSpeed * kRawPerMeter / in.tickHz);
  c.maxMovePerTickRaw = movePerTick >= static_cast<double>(c.cellRaw) ? c.cellRaw : static_cast<int64_t>(movePerTick);
  if (movePerTick >= static_cast<double>(c.cellRaw))
    throw CoreError("ERR_SIGHTLINE_CONFIG_SPEED_EXCEEDS_CELL_PER_TICK",
                    "maxSpeed / tickHz must be less than one cell (" + num(rawToMeters(c.cellRaw)) +
                        " m) per tick, received " + num(in.maxSpeed) + " m/s at " + num(in.tickHz) + " Hz (" +
                        num(movePerTick / kRawPerMeter) + " m per tick)");

  if (std::isfinite(in.payloadBytes) && in.payloadBytes == std::floor(in.payloadBytes) && in.payloadBytes > kMaxPayloadBytes)
    throw CoreError("ERR_SIGHTLINE_CONFIG_OUT_OF_RANGE", "payloadBytes must be at most " + num(kMaxPayloadBytes) +
                                                             " (the largest UDP payload over IPv4), received " +
                                                             num(in.payloadBytes));
  c.payloadBytes = requireInteger("payloadBytes", in.payloadBytes, 1, kMaxPayloadBytes);
  c.eventReserveBytes = requireInteger("eventReserveBytes", in.eventReserveBytes, 0, kMaxPayloadBytes);
  // An events section (3 bytes) with one event (2-byte length, at least 1 byte) needs 6.
  if (c.eventReserveBytes > 0 && c.eventReserveBytes < 6)
    throw CoreError("ERR_SIGHTLINE_CONFIG_OUT_OF_RANGE",
                    "eventReserveBytes must be 0 or at least 6 (a 3-byte events section and one event of 2 + 1 bytes), received " +
                        num(c.eventReserveBytes));
  if (static_cast<uint64_t>(c.payloadBytes) < uint64_t{kHeaderBytes} + c.eventReserveBytes + kRecordBytes)
    throw CoreError("ERR_SIGHTLINE_CONFIG_PAYLOAD_TOO_SMALL",
                    "payloadBytes must hold the " + num(kHeaderBytes) + "-byte header, the event reserve (" +
                        num(c.eventReserveBytes) + ") and one " + num(kRecordBytes) + "-byte record: at least " +
                        num(kHeaderBytes + c.eventReserveBytes + kRecordBytes) + ", received " + num(c.payloadBytes));

  c.walkCap = requireInteger("walkCap", std::isinf(in.walkCap) && in.walkCap > 0 ? 2147483647.0 : in.walkCap, 1,
                             2147483647.0);
  c.ghostCap = requireInteger("ghostCap", in.ghostCap, 1, 16384);
  c.ghostTableCapacity = 2 * c.ghostCap;
  c.graceTicks = requireInteger("graceTicks", in.graceTicks, 0, 30000);
  c.denseCellThreshold = requireInteger("denseCellThreshold", in.denseCellThreshold, 1, 1u << 30);
  c.subGridDivisions = requireInteger("subGridDivisions", in.subGridDivisions, 2, 16);
  if (!isPow2(c.subGridDivisions) || c.subGridDivisions < 2 ||
      static_cast<int64_t>(c.subGridDivisions) > c.cellRaw)
    throw CoreError("ERR_SIGHTLINE_CONFIG_OUT_OF_RANGE",
                    "subGridDivisions must be 2, 4, 8 or 16 and no more than the cell's raw size, received " +
                        num(in.subGridDivisions));
  c.subShift = c.cellShift - ilog2(c.subGridDivisions);

  if (in.newDrift == -1) {
    c.newDrift = static_cast<uint32_t>(c.viewRadiusRaw);
  } else {
    requireFinitePositive("newDrift", in.newDrift);
    int64_t raw = metersToRaw(in.newDrift);
    // The lower bound in meters: rounding would let 1/2048 m become 1 raw unit.
    if (in.newDrift < 1.0 / kRawPerMeter || in.newDrift > 4294967295.0 / kRawPerMeter || raw < 1 || raw > 0xffffffffLL)
      throw CoreError("ERR_SIGHTLINE_CONFIG_OUT_OF_RANGE",
                      "newDrift must be between 1/1024 m and 4294967295/1024 m (raw 1 to 2^32 - 1), received " +
                          num(in.newDrift));
    c.newDrift = static_cast<uint32_t>(raw);
  }

  if (in.bandWeights.empty()) {
    c.bandWeights = defaultBandWeights();
  } else {
    if (in.bandWeights.size() != kBandCount)
      throw CoreError("ERR_SIGHTLINE_CONFIG_OUT_OF_RANGE", "bandWeights must have exactly " + num(kBandCount) +
                                                               " entries, received " + num(in.bandWeights.size()));
    for (int b = 0; b < kBandCount; ++b) {
      double w = in.bandWeights[b];
      std::string name = "bandWeights[" + num(b) + "]";
      if (w == 0)
        throw CoreError("ERR_SIGHTLINE_CONFIG_BAND_WEIGHT_ZERO",
                        name + " must be at least 1 (a zero weight would never send that band), received 0");
      c.bandWeights[b] = requireInteger(name.c_str(), w, 1, 4294967295.0);
    }
  }

  // State beyond positions: fast fields in every record, attributes in a section of their own.
  c.fields = buildFields(in.fields);
  c.fieldBits = 0;
  for (const FieldSpec& f : c.fields) c.fieldBits += f.bits;
  c.fieldBytes = (c.fieldBits + 7) / 8;
  c.recordBytes = kRecordBytes + c.fieldBytes;
  c.attributeBytes = requireInteger("attributeBytes", in.attributeBytes, 0, kMaxAttributeBytes);
  c.attributeRepeatPasses = requireInteger("attributeRepeatPasses", in.attributeRepeatPasses, 0, 65535);
  if (!std::isfinite(in.attributeShare))
    throw CoreError("ERR_SIGHTLINE_CONFIG_NOT_FINITE", "attributeShare must be a finite number, received " + num(in.attributeShare));
  if (!(in.attributeShare >= 1.0 / 64 && in.attributeShare <= 63.0 / 64))
    throw CoreError("ERR_SIGHTLINE_CONFIG_OUT_OF_RANGE",
                    "attributeShare must be from 1/64 to 63/64 (0.015625 to 0.984375), received " + num(in.attributeShare));
  c.attributeShareQ16 = static_cast<uint32_t>(std::llround(in.attributeShare * 65536));
  // A packet holds the header, the event reserve and one record; with attributes, also one
  // attributes section holding the largest entry.
  const uint64_t needRecord = uint64_t{kHeaderBytes} + c.eventReserveBytes + c.recordBytes;
  const uint64_t needAttribute =
      c.attributeBytes == 0 ? 0 : uint64_t{kHeaderBytes} + c.eventReserveBytes + kSectionCountBytes + kAttributeHeaderBytes + c.attributeBytes;
  if (c.payloadBytes < needRecord || c.payloadBytes < needAttribute)
    throw CoreError("ERR_SIGHTLINE_CONFIG_PAYLOAD_TOO_SMALL",
                    "payloadBytes must hold the " + num(kHeaderBytes) + "-byte header, the event reserve (" +
                        num(c.eventReserveBytes) + ") and one " + num(c.recordBytes) + "-byte record" +
                        (c.attributeBytes ? " or an attributes section of one " + num(c.attributeBytes) + "-byte attribute (" +
                                                num(kSectionCountBytes + kAttributeHeaderBytes + c.attributeBytes) + " bytes)"
                                          : std::string()) +
                        ": at least " + num(double(std::max(needRecord, needAttribute))) + ", received " + num(c.payloadBytes));
  c.minPayloadBytes = uint32_t(std::max(needRecord, needAttribute));
  c.slotsPerPacket = (c.payloadBytes - kHeaderBytes - c.eventReserveBytes) / c.recordBytes;

  // Wire position: x and y take (regionShift - q) bits, z takes (zBits - q); the three fit in 64.
  int excess = 2 * c.regionShift + c.zBits - 64;
  c.quantShift = excess <= 0 ? 0 : (excess + 2) / 3;
  c.protocolHash = protocolHash(c.regionRaw, c.verticalRaw, c.quantShift, c.fields, c.attributeBytes);
  return c;
}

}  // namespace sightline
