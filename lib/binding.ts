// The one module that finds and loads the native addon: the file SIGHTLINE_ADDON names when it is
// set, else a prebuild from prebuilds/ when one matches this platform, else the locally compiled
// build/Release. Nothing else knows where binaries live.
import { createRequire } from 'node:module';
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { WorldConfig } from './config.js';
import { SightlineError } from './errors.js';

const require = createRequire(import.meta.url);

/** Derived configuration as the native engine computes it: the same fields as WorldConfig's. */
export type NativeConfig = Pick<
  WorldConfig,
  | 'regionRaw'
  | 'regionShift'
  | 'verticalRaw'
  | 'zBits'
  | 'viewRadiusRaw'
  | 'cellRaw'
  | 'cellShift'
  | 'cellsPerAxis'
  | 'cellCount'
  | 'cellRadius'
  | 'maxMovePerTickRaw'
  | 'payloadBytes'
  | 'eventReserveBytes'
  | 'slotsPerPacket'
  | 'walkCap'
  | 'ghostCap'
  | 'ghostTableCapacity'
  | 'graceTicks'
  | 'denseCellThreshold'
  | 'subGridDivisions'
  | 'subShift'
  | 'newDriftRaw'
  | 'quantShift'
  | 'protocolHash'
  | 'bandWeights'
  | 'fields'
  | 'fieldBits'
  | 'fieldBytes'
  | 'recordBytes'
  | 'minPayloadBytes'
  | 'attributeBytes'
  | 'attributeRepeatPasses'
  | 'attributeShareQ16'
>;

/** Counters of one tick, summed over viewers, plus the once-per-tick phases' timings. */
export interface NativeTickStats {
  served: number;
  skippedNotDue: number;
  skippedAvatarGone: number;
  skippedOutsideRegion: number;
  candidates: number;
  examined: number;
  eligible: number;
  records: number;
  newGhosts: number;
  despawns: number;
  bytes: number;
  /** New candidates not sent because the viewer's ghost table (2 × ghostCap entries) had no room. */
  ghostTableFull: number;
  /**
   * Ghosts evicted before their grace window ran out because their table was full: when new
   * candidates are short of room, the ghosts not eligible on that pass go first, least recently
   * eligible first. Their despawns make the room.
   */
  pressureEvictions: number;
  /**
   * Ghosts that departed at once because the viewer may no longer see them: their entity's groups,
   * or the viewer's, changed so that they no longer meet. Their despawns go ahead of the others.
   */
  hiddenDepartures: number;
  /** Self records sent (viewers added with `{ self: true }`). */
  selfRecords: number;
  /**
   * Viewers served on a teleport ({@link World.teleportViewer}, or a move further than their
   * `teleportDistance`), and the ghosts that departed at once because they were outside the view
   * radius of the new place.
   */
  teleports: number;
  teleportDepartures: number;
  subscriptionChanges: number;
  /** Event records sent (resends included) and the bytes of the events sections. */
  events: number;
  eventBytes: number;
  /** Kind records sent (first sightings of entities whose kind is not 0, and kind changes). */
  kinds: number;
  /** Attribute entries sent (resends and repeats included), and the attributes sections' bytes. */
  attributes: number;
  attributeBytes: number;
  entities: number;
  outsideRegion: number;
  denseCells: number;
  odometerMicros: number;
  snapshotMicros: number;
  passMicros: number;
}

/**
 * The fields of the Float64Array a native tick resolves with, in order (the addon's
 * kTickMetaFields, checked against it when the addon loads): the tick, the packets, the generation
 * of the output views (see NativeWorld.outputViews), then every NativeTickStats field.
 */
export const TICK_META_FIELDS = [
  'tick', 'count', 'views', 'served', 'skippedNotDue', 'skippedAvatarGone', 'skippedOutsideRegion', 'candidates',
  'examined', 'eligible', 'records', 'newGhosts', 'despawns', 'bytes', 'ghostTableFull', 'pressureEvictions',
  'hiddenDepartures', 'selfRecords', 'teleports', 'teleportDepartures', 'subscriptionChanges', 'events', 'eventBytes', 'kinds', 'attributes', 'attributeBytes', 'entities', 'outsideRegion',
  'denseCells', 'odometerMicros',
  'snapshotMicros', 'passMicros',
] as const;

export interface NativeTickResult {
  tick: number;
  buffer: ArrayBuffer;
  /** [viewer, offset, length] per packet; the first 3 × count entries are this tick's. */
  index: Uint32Array;
  count: number;
  stats: NativeTickStats;
}

export interface NativeWorld {
  spawn(x: number, y: number, z: number, kind?: number): number;
  setKind(id: number, kind: number): void;
  kindOf(id: number): number;
  /** Returns the new version. */
  setAttributes(id: number, bytes: Uint8Array): number;
  attributes(id: number): { version: number; bytes: Uint8Array } | null;
  despawn(id: number): void;
  slotOf(id: number): number;
  isLive(id: number): boolean;
  positions(): { x: Int32Array; y: Int32Array; z: Int32Array; external: boolean };
  /** The fast fields' Int32Arrays by name (an empty object without fields). */
  fields(): Record<string, Int32Array>;
  odometer(id: number): number;
  /** viewRadius raw, 0: the config's; groups u32; teleportDistance raw, 0: off. */
  addViewer(
    id: number,
    payloadBytes: number,
    sendPeriod: number,
    acks: boolean,
    viewRadius: number,
    groups: number,
    self?: boolean,
    teleportDistance?: number,
  ): void;
  teleportViewer(id: number): void;
  /** The settings named by `what` (lib/interest.ts CHANGE bits); viewRadius raw; groups u32. */
  changeViewer(
    id: number,
    what: number,
    sendPeriod: number,
    payloadBytes: number,
    viewRadius: number,
    groups: number,
    boostFactor: number,
    boost: Uint32Array,
  ): void;
  /** viewRadius raw. */
  viewerSettings(id: number): {
    payloadBytes: number;
    sendPeriod: number;
    viewRadius: number;
    acks: boolean;
    groups: number;
    boostFactor: number;
    boost: Uint32Array;
  };
  /** Writes [payloadBytes, sendPeriod, viewRadius raw] of viewerSettings into out[0..2]; allocates nothing. */
  servedSettingsInto(id: number, out: Float64Array): void;
  /**
   * Viewer ids[i] gets the settings named by what[i] (CHANGE.sendPeriod | payloadBytes |
   * viewRadius), as changeViewer would, for i in order; viewRadius raw. Checked as a whole first:
   * a throw changes nothing. Every array has ids.length elements.
   */
  changeViewers(ids: Uint32Array, what: Uint8Array, sendPeriod: Float64Array, payloadBytes: Float64Array, viewRadius: Float64Array): void;
  /** Writes [payloadBytes, sendPeriod, viewRadius raw] of viewer ids[i] into out[3i .. 3i + 2]. */
  servedSettingsOf(ids: Uint32Array, out: Float64Array): void;
  setGroups(id: number, groups: number): void;
  setPriority(id: number, weight: number): void;
  /** [groups, weight] */
  entityInterest(id: number): [number, number];
  /**
   * Applies an acknowledgement now (false), or during a pass only checks it (true): the caller
   * applies it once the pass has ended.
   */
  acknowledge(id: number, ack: number, ackBits: number): boolean;
  ackStats(id: number): { acked: number; lost: number; assumed: number; probablyLost: number; expired: number; despawnsNotResent: number } | null;
  /** countDrop (default true): count a full queue in the viewer's dropped events. */
  emit(viewer: number, bytes: Uint8Array, countDrop?: boolean): void;
  holders(entity: number): Uint32Array;
  viewerIds(): Uint32Array;
  eventStats(viewer: number): { queued: number; dropped: number; pending: number } | null;
  removeViewer(id: number): void;
  hasViewer(id: number): boolean;
  viewerCount(): number;
  /** Resolves with the tick's metadata (TICK_META_FIELDS), in a Float64Array reused two ticks later. */
  tick(): Promise<Float64Array>;
  /** The output buffer and packet index of the slot a tick's parity uses, as its last tick left them. */
  outputViews(which: number): { buffer: ArrayBuffer; index: Uint32Array } | null;
  close(): void;
  /** Linux: the native UDP data path whose ACKs each tick applies and whose packets it sends; null detaches. */
  attachTransport?(udp: NativeUdp | null): void;
  rebuildSnapshot(): void;
  snapshotInfo(): { count: number; outsideRegion: number; denseCells: number; maxCellOccupancy: number };
  /** radius raw, 0: the config's view radius; groups u32. */
  gather(x: number, y: number, walkCap: number, exclude: number, radius: number, groups: number): { ids: Uint32Array; d2: Float64Array; examined: number };
  ghosts(id: number): {
    ids: Uint32Array;
    x: Int32Array | null;
    y: Int32Array | null;
    z: Int32Array | null;
    state: Uint8Array;
    sequence: number;
    passes: number;
  };
  info(): {
    config: NativeConfig;
    capacity: number;
    liveCount: number;
    threads: number;
    tick: number;
    externalBuffers: boolean;
    running: boolean;
    walkCap: number;
    ghostCap: number;
    memoryBytes: number;
  };
  setCaps(walkCap: number, ghostCap: number): void;
}

/** Options of the addon's NativeUdp (checked by lib/net/native-path.ts). */
export interface NativeUdpOptions {
  address?: string;
  port?: number;
  family?: 4 | 6;
  fd?: number;
  v6Only?: boolean;
  sendBufferBytes?: number;
  recvBufferBytes?: number;
  maxSessions?: number;
  forwardAcks?: boolean;
  maxBatchBytes?: number;
  dontFragment?: boolean;
}

/** The addon's native UDP data path (Linux; native/addon/native_udp.h). */
export interface NativeUdp {
  start(): void;
  info(): { address: string; port: number; family: 4 | 6; sendBuffer: number; recvBuffer: number };
  addSession(viewer: number, address: string, port: number, token: Uint8Array): 'added' | 'full' | 'viewer' | 'peer';
  removeSession(viewer: number): boolean;
  touch(viewer: number, heard: boolean, sent: boolean): boolean;
  /** Per session: viewer, ms since heard from, ms since sent to. */
  times(): Float64Array;
  setInputAck(viewer: number, ack: number, ackBits: number): boolean;
  /** 0 when the kernel took it, else the errno. */
  sendTo(address: string, port: number, bytes: Uint8Array): number;
  /** 0, ENOENT (no session) or the errno. */
  sendOne(viewer: number, bytes: Uint8Array): number;
  /** [sent, bytes, dropped, failed, unrouted]. */
  sendPackets(buffer: ArrayBuffer, index: Uint32Array, count: number): Float64Array;
  takeBatch(): ArrayBuffer | null;
  inject(bytes: Uint8Array, address: string, port: number): void;
  counters(out: Float64Array): void;
  lastTick(out: Float64Array): void;
  close(): void;
}

/** The addon's client swarm (Linux; native/addon/native_swarm.h). */
export interface NativeSwarm {
  start(): void;
  aim(address: string, port: number): void;
  info(): { ports: number[]; recvBuffer: number; sendBuffer: number; strays: number; batchDropped: number };
  /** 0 or the errno. */
  send(client: number, bytes: Uint8Array): number;
  setConnected(client: number, connected: boolean, sample: boolean, token?: Uint8Array): void;
  counters(out: Float64Array): void;
  takeBatch(): ArrayBuffer | null;
  close(): void;
}

/** A subscription box: inclusive cell bounds. */
export interface SubscriptionBox {
  x0: number;
  x1: number;
  y0: number;
  y1: number;
}

export interface NativeBinding {
  NativeWorld: new (
    config: object,
    capacity: number,
    threads: number,
    externalBuffers: boolean,
    recordGhostPositions: boolean,
  ) => NativeWorld;
  buildConfig(input: object): NativeConfig;
  /** floor(raw / 2^cellShift). */
  cellOf(raw: number, cellShift: number): number;
  /** Cells within cellRadius of (cx, cy), clipped to the grid; inclusive bounds, or null when empty. */
  subscriptionBox(cx: number, cy: number, cellRadius: number, cellsPerAxis: number): SubscriptionBox | null;
  /** Cells entered and left between two boxes, as flat [x, y, x, y, ...] pairs. */
  subscriptionDiff(prev: SubscriptionBox | null, next: SubscriptionBox | null): { entered: Int32Array; left: Int32Array };
  napiVersion: number;
  /** The addon's own list of TICK_META_FIELDS. */
  tickMetaFields: string[];
  /** Which vector kernels the pass runs: see `kernels` in index.ts. */
  kernels: 'avx512' | 'portable';
  /** Whether this addon was built with profile-guided optimization: see `profileGuided` in world.ts. */
  profileGuided: boolean;
  /** Linux only: the native UDP data path, and the fields of its counters() and lastTick(). */
  NativeUdp?: new (options: NativeUdpOptions, onBatch: () => void) => NativeUdp;
  udpCounterFields?: string[];
  udpTickFields?: string[];
  NativeSwarm?: new (
    options: { clients: number; firstAddress: string; threads: number; recvBufferBytes: number; sendBufferBytes: number },
    onBatch: () => void,
  ) => NativeSwarm;
  swarmCounterFields?: string[];
}

function packageRoot(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (;;) {
    const pkg = join(dir, 'package.json');
    if (existsSync(pkg) && (JSON.parse(readFileSync(pkg, 'utf8')) as { name?: string }).name === 'sightline') return dir;
    const up = dirname(dir);
    if (up === dir) throw new Error('sightline: package.json not found above ' + fileURLToPath(import.meta.url));
    dir = up;
  }
}

const nodeGypBuild = require('node-gyp-build') as (dir: string) => unknown;

/**
 * The environment variable naming an addon file to load instead of the package's own (a path to a
 * `.node` file; a relative one is resolved against the current directory). It is for builds of the
 * same sources made otherwise, such as the AddressSanitizer build the tests run against
 * (`npm run test:asan-addon`). Unset or empty: the prebuild, else build/Release.
 */
export const ADDON_OVERRIDE_VARIABLE = 'SIGHTLINE_ADDON';

// The addon SIGHTLINE_ADDON names: ERR_SIGHTLINE_NO_ADDON when it does not load, or is not this
// package's addon.
function loadOverride(named: string): NativeBinding {
  const file = resolve(named);
  let binding: unknown;
  try {
    binding = require(file);
  } catch (e) {
    throw new SightlineError(
      'ERR_SIGHTLINE_NO_ADDON',
      `sightline: ${ADDON_OVERRIDE_VARIABLE} is ${JSON.stringify(named)} (${file}), which did not load as a Node addon; ` +
        `set it to a built sightline.node, or unset it to load the package's own addon. Cause: ${e instanceof Error ? e.message : String(e)}`,
    );
  }
  if (!Array.isArray((binding as Partial<NativeBinding> | null)?.tickMetaFields)) {
    throw new SightlineError(
      'ERR_SIGHTLINE_NO_ADDON',
      `sightline: ${ADDON_OVERRIDE_VARIABLE} is ${JSON.stringify(named)} (${file}), which loaded but is not sightline's addon ` +
        '(it exports no tickMetaFields); set it to a built sightline.node, or unset it',
    );
  }
  return binding as NativeBinding;
}

function loadAddon(): NativeBinding {
  const named = process.env[ADDON_OVERRIDE_VARIABLE];
  if (named !== undefined && named !== '') return loadOverride(named);
  try {
    return nodeGypBuild(packageRoot()) as NativeBinding;
  } catch (e) {
    const libc = (process.report?.getReport() as { header?: { glibcVersionRuntime?: string } } | undefined)?.header?.glibcVersionRuntime;
    throw new SightlineError(
      'ERR_SIGHTLINE_NO_ADDON',
      `sightline: its native addon did not load on ${process.platform}-${process.arch}` +
        `${libc ? ` (glibc ${libc})` : ''}, Node ${process.versions.node}. The package ships a prebuilt addon for ` +
        'linux-x64 needing glibc 2.32 and the C++ runtime of GCC 12 or later (Debian 12, Ubuntu 22.04 and newer); elsewhere it is compiled ' +
        'on install, which needs python3, make and a C++20 compiler: install them, then run ' +
        `\`npm rebuild sightline\`. Cause: ${e instanceof Error ? e.message : String(e)}`,
    );
  }
}

/** The loaded addon. */
export const native = loadAddon();
if (native.tickMetaFields.join() !== TICK_META_FIELDS.join()) {
  throw new Error(`sightline: the addon's tick fields (${native.tickMetaFields.join()}) are not this package's (rebuild the addon: npm run build)`);
}

/** Position of each field in a tick's metadata. */
export const AT = Object.fromEntries(TICK_META_FIELDS.map((f, i) => [f, i])) as Record<(typeof TICK_META_FIELDS)[number], number>;

/**
 * Reads a tick's metadata into a NativeTickResult, given the slot's buffer and index. Builds the
 * stats in JavaScript: cheaper, right after a pass, than the addon building them through Node-API.
 */
export function readTickMeta(m: Float64Array, views: { buffer: ArrayBuffer; index: Uint32Array }): NativeTickResult {
  return {
    tick: m[AT.tick],
    count: m[AT.count],
    buffer: views.buffer,
    index: views.index,
    stats: {
      served: m[AT.served],
      skippedNotDue: m[AT.skippedNotDue],
      skippedAvatarGone: m[AT.skippedAvatarGone],
      skippedOutsideRegion: m[AT.skippedOutsideRegion],
      candidates: m[AT.candidates],
      examined: m[AT.examined],
      eligible: m[AT.eligible],
      records: m[AT.records],
      newGhosts: m[AT.newGhosts],
      despawns: m[AT.despawns],
      bytes: m[AT.bytes],
      ghostTableFull: m[AT.ghostTableFull],
      pressureEvictions: m[AT.pressureEvictions],
      hiddenDepartures: m[AT.hiddenDepartures],
      selfRecords: m[AT.selfRecords],
      teleports: m[AT.teleports],
      teleportDepartures: m[AT.teleportDepartures],
      subscriptionChanges: m[AT.subscriptionChanges],
      events: m[AT.events],
      eventBytes: m[AT.eventBytes],
      kinds: m[AT.kinds],
      attributes: m[AT.attributes],
      attributeBytes: m[AT.attributeBytes],
      entities: m[AT.entities],
      outsideRegion: m[AT.outsideRegion],
      denseCells: m[AT.denseCells],
      odometerMicros: m[AT.odometerMicros],
      snapshotMicros: m[AT.snapshotMicros],
      passMicros: m[AT.passMicros],
    },
  };
}
