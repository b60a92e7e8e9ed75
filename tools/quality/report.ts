// The quality report as text.
import { UNCAPPED_WALK } from 'sightline';
import type { QualityBandReport, QualityReport } from './types.js';

function num(v: number, decimals: number): string {
  return v.toLocaleString('en-US', { minimumFractionDigits: decimals, maximumFractionDigits: decimals });
}

/**
 * Renders a quality report as a text table, the strategies side by side. umwelt-rs's published
 * figures follow the table with the line that says how they differ (measured before the packet,
 * on its own scenario), never as a column beside these.
 */
export function formatQualityReport(r: QualityReport): string {
  const names = r.strategies.map((s) => s.strategy);
  const header = ['', ...names];
  const rows: (string[] | 'rule')[] = [header, 'rule'];
  const section = (title: string): void => {
    rows.push([title, ...names.map(() => '')]);
  };
  // A band with nothing to measure (no entity held there, or none in range) shows a dash, not 0.
  const perBand = (fmtBand: (b: QualityBandReport) => string, overall = true, ofHeld = true): void => {
    const cell = (b: QualityBandReport): string => ((ofHeld ? b.held : b.observations) === 0 ? '–' : fmtBand(b));
    r.bands.forEach((band, i) => rows.push([`  ${band.label}`, ...r.strategies.map((s) => cell(s.bands[i]))]));
    if (overall) rows.push(['  all', ...r.strategies.map((s) => cell(s.overall))]);
  };
  section('angular error, mean (mrad)');
  perBand((b) => num(b.meanAngularErrorMrad, 2));
  section('angular error, p99 (mrad)');
  perBand((b) => num(b.p99AngularErrorMrad, 1));
  section('position error, mean / p99 (m)');
  perBand((b) => `${num(b.meanPositionErrorM, 3)} / ${num(b.p99PositionErrorM, 2)}`);
  section('staleness, mean / p99 (ticks)');
  perBand((b) => `${num(b.meanStalenessTicks, 1)} / ${num(b.p99StalenessTicks, 0)}`);
  section('in range, not held by the client (%)');
  perBand((b) => num(b.notHeldShare * 100, 1), true, false);
  rows.push('rule');
  rows.push([
    'in range, never updated (pairs)',
    ...r.strategies.map((s) => `${num(s.neverUpdated, 0)} (${num(s.neverUpdatedShare * 100, 1)}%)`),
  ]);
  rows.push(['packet bytes, mean / max', ...r.strategies.map((s) => `${num(s.meanPacketBytes, 0)} / ${num(s.maxPacketBytes, 0)}`)]);
  rows.push(['update records per packet, mean', ...r.strategies.map((s) => num(s.meanUpdatesPerPacket, 1))]);
  rows.push(['despawn records per packet, mean', ...r.strategies.map((s) => num(s.meanDespawnsPerPacket, 2))]);

  const cells = rows.filter((x): x is string[] => x !== 'rule');
  const widths = header.map((_, c) => Math.max(...cells.map((row) => row[c].length)));
  const total = widths.reduce((a, b) => a + b, 0) + 2 * (widths.length - 1);
  const lines = rows.map((row) =>
    row === 'rule'
      ? '  ' + '-'.repeat(total)
      : ('  ' + row.map((cell, c) => (c === 0 ? cell.padEnd(widths[c]) : cell.padStart(widths[c]))).join('  ')).trimEnd(),
  );
  const c = r.config;
  const measured =
    r.measureEvery === 1
      ? `every tick after ${r.warmupTicks} warm-up ticks (${num(r.measuredTicks, 0)} tick${r.measuredTicks === 1 ? '' : 's'})`
      : `every ${r.measureEvery} ticks after ${r.warmupTicks} warm-up ticks (${num(r.measuredTicks, 0)} tick${r.measuredTicks === 1 ? '' : 's'})`;
  const head =
    `sightline quality: speed-mix, ${num(r.entities, 0)} entities, ${num(r.viewers, 0)} viewers, ${num(r.ticks, 0)} ticks at ${c.tickHz} Hz${r.interrupted ? ' (interrupted)' : ''}, seed ${r.seed}\n` +
    `region ${c.regionSize} m, view radius ${c.viewRadius} m, ${c.payloadBytes}-byte packets (${c.slotsPerPacket} update slots), ` +
    `walk cap ${c.walkCap === UNCAPPED_WALK ? 'uncapped' : c.walkCap}, ghost cap ${c.ghostCap}, grace ${c.graceTicks} passes\n` +
    `compared with the truth ${measured}, every viewer; ${num(r.meanInRange, 1)} entities in range per viewer (mean); ` +
    `errors and staleness cover entities the client holds; wall ${num(r.wallMs / 1000, 1)} s`;
  const published = r.reference.meanAngularErrorMrad.map((v) => num(v, 2)).join(' / ');
  const foot =
    `  umwelt-rs publishes ${published} mrad of mean angular error for these bands\n` +
    `  (${r.reference.source}),\n` +
    `  measured ${r.reference.measured}.\n` +
    `  The figures above are measured after each tick's packet is applied, on this run's scenario:\n` +
    `  a different method, so the two are not comparable.`;
  return `${head}\n\n${lines.join('\n')}\n\n${foot}\n`;
}
