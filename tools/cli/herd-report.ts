// The herd report as text: the table `sightline herd` prints without --json.
import { GOVERNOR_LEVELS, HEADER_BYTES } from 'sightline';
import { TARGETS } from '../herd/metrics.js';
import type { NetworkReport } from '../herd/net-herd.js';
import type { HerdReport } from '../herd/run.js';
import { fmt, fmtRate, renderTable, type Row } from './util.js';

// "98 slots", or with an event reserve "98 slots, 90 while events take the reserve": events take
// their reserve only when some are waiting.
function slotsText(c: HerdReport['config']): string {
  const free = Math.floor((c.payloadBytes - HEADER_BYTES) / c.recordBytes);
  return free === c.slotsPerPacket ? `${free} slots` : `${free} slots, ${c.slotsPerPacket} while events take the reserve`;
}

/** Renders a herd report as readable text. */
export function formatHerdReport(r: HerdReport): string {
  const m = r.metrics;
  const ms = (v: number): string => `${fmt(v, 2)} ms`;
  const rpp = m.recordsPerPacket;
  const rows: Row[] = [
    ['Metric', 'Value', 'Target'],
    'rule',
    ['ticks run', `${fmt(m.ticks)} of ${fmt(r.ticksDue)} due, in ${fmt(m.seconds, 2)} s (${fmt(m.ticksPerSecond, 1)}/s)${r.interrupted ? ', interrupted (SIGINT)' : ''}`],
    ['pass time p50', ms(m.passMs.p50), `≤ ${TARGETS.passP50Ms} ms`, m.targets.passP50Ms.met],
    ['pass time p99', ms(m.passMs.p99), `≤ ${TARGETS.passP99Ms} ms`, m.targets.passP99Ms.met],
    ['pass time worst', ms(m.passMs.worst)],
    ['pass time mean', ms(m.passMs.mean)],
    ['  native snapshot (mean)', ms(m.nativeMs.snapshot)],
    ['  native pass (mean)', ms(m.nativeMs.pass)],
    ['step time p50 / p99', `${ms(m.stepMs.p50)} / ${ms(m.stepMs.p99)}`],
    ['late ticks', fmt(m.lateTicks), `${TARGETS.lateTicks}`, m.targets.lateTicks.met],
    ['dropped ticks', fmt(m.droppedTicks)],
    ['lateness p99 / worst', `${ms(m.latenessMs.p99)} / ${ms(m.latenessMs.worst)}`],
    'rule',
    ['entities in snapshot', fmt(m.entities)],
    ['viewers served per tick', fmt(m.viewersPerTick, 1)],
    ['records per packet (mean)', `${fmt(rpp.mean, 1)} of ${rpp.slots} slots (${fmt(rpp.fill * 100, 1)}%)`, `${rpp.slots} slots`],
    ['records per packet p50 / p10', `${fmt(rpp.p50)} / ${fmt(rpp.p10)}`],
    ['full packets', `${fmt(rpp.fullShare * 100, 1)}%`],
    ['despawns per packet', fmt(m.despawnsPerPacket, 2)],
    ['candidates per viewer', fmt(m.candidatesPerViewer, 1)],
    ['examined per viewer', fmt(m.examinedPerViewer, 1)],
    ['eligible per viewer', fmt(m.eligiblePerViewer, 1)],
    'rule',
    ['bytes sent', `${fmt(m.bytes.total)} B`],
    ['bandwidth, all clients', fmtRate(m.bytes.perSecond)],
    ['bandwidth, per client', fmtRate(m.bytes.perClientPerSecond)],
    ...(r.state
      ? ([
          ['  of which fields', fmtRate(m.bytes.fieldsPerClientPerSecond)],
          ['  of which kinds', fmtRate(m.bytes.kindsPerClientPerSecond)],
          ['  of which attributes', fmtRate(m.bytes.attributesPerClientPerSecond)],
        ] satisfies Row[])
      : []),
    ['packet size (mean)', `${fmt(m.bytes.perPacket, 1)} B`],
  ];
  if (m.coverage) {
    const c = m.coverage;
    rows.push([
      'in range, never sent (past the ghost cap)',
      `${fmt(c.neverSentShare * 100, 2)}% (${fmt(c.neverSent)} of ${fmt(c.inRange)} pairs, ${c.sampledViewers} viewer${c.sampledViewers === 1 ? '' : 's'})`,
    ]);
    rows.push([
      'eligible (nearest ghost cap), never sent',
      `${fmt(c.eligibleNeverSentShare * 100, 2)}% (${fmt(c.eligibleNeverSent)} of ${fmt(c.eligible)} pairs)`,
    ]);
    rows.push([
      '10 nearest (brute force), never sent',
      `${fmt(c.nearestNeverSentShare * 100, 2)}% (${fmt(c.nearestNeverSent)} of ${fmt(c.nearest)} pairs)`,
    ]);
  }
  if (m.eventLoopDelayMs) {
    const e = m.eventLoopDelayMs;
    rows.push(['event-loop delay p50 / p99 / max', `${ms(e.p50)} / ${ms(e.p99)} / ${ms(e.max)}`]);
  }
  rows.push('rule', ...governorRows(r.loop.governor));
  rows.push('rule', ...gcRows(r.gc));
  if (r.congestion) rows.push('rule', ...congestionRows(r.congestion));
  if (r.network) rows.push('rule', ...networkRows(r.network));
  if (r.web) {
    const w = r.web.server;
    rows.push(
      'rule',
      ['live page', r.web.url],
      ['pages joined', fmt(r.web.pagesJoined)],
      ['packets sent / skipped backed up (pages)', `${fmt(w.packetsSent)} / ${fmt(w.packetsBackedUp)}`],
    );
  }
  const count = (n: number, one: string, many: string) => `${fmt(n)} ${n === 1 ? one : many}`;
  const clients = r.network ? ` + ${count(r.network.clients, 'UDP client', 'UDP clients')}` : '';
  const head =
    `sightline herd: ${r.scenario}, ${count(r.entities, 'entity', 'entities')}, ${count(r.viewers, 'viewer', 'viewers')}${clients}, ` +
    `${r.threads} thread${r.threads === 1 ? '' : 's'}, seed ${r.seed}, ${r.seconds} s at ${r.config.tickHz} Hz, overrun ${r.overrun}` +
    `\nregion ${r.config.regionSize} m, view radius ${r.config.viewRadius} m, cell ${r.config.cellSize} m, ` +
    `${r.config.payloadBytes}-byte packets (${slotsText(r.config)}), walk cap ${r.config.walkCap}, ghost cap ${r.config.ghostCap}; set-up ${fmt(r.setupMs)} ms`;
  const verdict = m.ticks === 0 ? 'targets not measured: no tick ran' : m.targets.allMet ? 'targets met' : 'targets MISSED';
  return `${head}\n\n${renderTable(rows)}\n\n  ${verdict} (p50 ≤ ${TARGETS.passP50Ms} ms, p99 ≤ ${TARGETS.passP99Ms} ms, no late ticks)\n`;
}

/** The rows of a herd report's governor section: what it shed. */
function governorRows(g: HerdReport['loop']['governor']): Row[] {
  if (!g.enabled) return [['tick governor', 'off (--no-governor)']];
  const ticks = g.ticksAtLevel.reduce((a, b) => a + b, 0);
  const shed = g.ticksAtLevel.slice(1).reduce((a, b) => a + b, 0);
  const rows: Row[] = [
    ['tick governor', shed === 0 ? 'on, nothing shed' : `on, shed on ${fmt(shed)} of ${fmt(ticks)} ticks`],
    ['  ticks at level 0 / 1 / 2 / 3 / 4 / 5', Array.from({ length: GOVERNOR_LEVELS.length }, (_, i) => fmt(g.ticksAtLevel[i] ?? 0)).join(' / ')],
    ['  level changes, lowest load factor', `${fmt(g.changes)}, ${fmt(g.minLoadFactor, 3)}`],
  ];
  const f = g.final;
  if (f && f.level > 0) {
    rows.push(['  at the end', `level ${f.level}: ${GOVERNOR_LEVELS[f.level]}`]);
    rows.push(['  viewers slowed (low-priority), caps', `${fmt(f.slowedViewers)} (${fmt(f.lowPriorityViewers)}), walk ${fmt(f.walkCap)} / ghost ${fmt(f.ghostCap)}`]);
    if (f.payloadScale < 1 || f.radiusScale < 1) rows.push(['  packet size, view radius', `× ${fmt(f.payloadScale, 2)}, × ${fmt(f.radiusScale, 2)}`]);
  }
  return rows;
}

/** The rows of a herd report's congestion-control section. */
function congestionRows(c: NonNullable<HerdReport['congestion']>): Row[] {
  return [
    ['congestion control: clients tracked / in bad mode', `${fmt(c.tracked)} / ${fmt(c.bad)} (${fmt(c.congestions)} congestions)`],
    ['  RTT mean, loss mean / max', `${c.meanRttMs === null ? '-' : `${fmt(c.meanRttMs, 1)} ms`}, ${fmt(c.meanLoss * 100, 1)}% / ${fmt(c.maxLoss * 100, 1)}%`],
  ];
}

/** The rows of a herd report's garbage-collection section. */
function gcRows(g: HerdReport['gc']): Row[] {
  const ms = (v: number): string => `${fmt(v, 2)} ms`;
  const mib = (b: number): string => `${fmt(b / 1048576, 1)} MiB`;
  const k = g.byKind;
  const rows: Row[] = [
    ['GC pauses: count / total / longest', `${fmt(g.pauses.count)} / ${ms(g.pauses.totalMs)} / ${ms(g.pauses.longestMs)}`],
    ['  minor / major / incremental', `${fmt(k.minor.count)} (${ms(k.minor.totalMs)}) / ${fmt(k.major.count)} (${ms(k.major.totalMs)}) / ${fmt(k.incremental.count)} (${ms(k.incremental.totalMs)})`],
  ];
  if (g.heap) {
    const { start, end } = g.heap;
    rows.push(['heap after forced GC, start → end', `${mib(start.heapUsed)} → ${mib(end.heapUsed)}`]);
    rows.push(['external (array buffers), start → end', `${mib(start.external)} (${mib(start.arrayBuffers)}) → ${mib(end.external)} (${mib(end.arrayBuffers)})`]);
  } else {
    rows.push(['heap after forced GC', 'run with node --expose-gc to measure']);
  }
  if (g.engineBytes) rows.push(['engine memory, start → end', `${mib(g.engineBytes.start)} → ${mib(g.engineBytes.end)}`]);
  return rows;
}

/** The rows of a herd report's network section. */
function networkRows(n: NetworkReport): Row[] {
  const s = n.server;
  const b = n.bots;
  const e = n.events;
  const p = n.perceivedErrorM;
  const m = (v: number | null): string => (v === null ? '-' : `${fmt(v, 3)} m`);
  const rows: Row[] = [
    ['network', `UDP on ${n.address}:${n.port} (${n.dataPath} data path), 1 bot process (${n.botKind === 'native' ? `native bots, ${fmt(n.sampledClients)} sampled` : 'a UdpClient per bot'})`],
    ['CPU over the run: server / bots', `${fmt(n.cpu.serverCores, 2)} / ${fmt(n.cpu.botsCores, 2)} cores (${fmt(n.cpu.serverMs)} / ${fmt(n.cpu.botsMs)} ms in ${fmt(n.cpu.wallMs)} ms)`],
    ['clients connected', `${fmt(n.connected)} of ${fmt(n.clients)} in ${fmt(n.connectMs)} ms${n.connectFailed > 0 ? ` (${fmt(n.connectFailed)} failed)` : ''}`],
    ['packets sent / dropped (server)', `${fmt(s.packetsSent)} / ${fmt(s.packetsDropped)}`],
    ['bytes sent (server)', `${fmt(s.bytesSent)} B`],
    ['datagrams received (bots)', `${fmt(b.datagramsReceived)} (${fmt(b.applied)} packets applied, ${fmt(b.stale + b.duplicates + b.malformed)} discarded)`],
    ['acks sent (bots) / applied (server)', `${fmt(b.acksSent)} / ${fmt(n.acksApplied)}${n.acksPending > 0 ? ` (+${fmt(n.acksPending)} after the last tick)` : ''}`],
    ['perceived error mean / p99', `${m(p.mean)} / ${m(p.p99)}`],
    ['perceived error worst', `${m(p.worst)} (${fmt(p.samples)} samples, ${fmt(p.rounds)} rounds)`],
    ['in-process twins: error mean / p99', `${m(n.inProcessErrorM.mean)} / ${m(n.inProcessErrorM.p99)} (${fmt(n.inProcessErrorM.clients)} clients)`],
    ['entities held per client (mean)', fmt(b.heldMean, 1)],
    ['events sent / delivered', `${fmt(e.sent)} / ${fmt(e.delivered)}`],
    ['events lost / duplicated', `${fmt(e.lost)} / ${fmt(e.duplicated)}`, '0 / 0', e.lost === 0 && e.duplicated === 0],
  ];
  if (n.drainTicks > 0) rows.push(['drain ticks after the run', fmt(n.drainTicks)]);
  if (b.disconnected > 0) rows.push(['clients disconnected during the run', fmt(b.disconnected)]);
  return rows;
}
