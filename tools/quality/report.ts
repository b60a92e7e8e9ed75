// The quality report as text.
import { UNCAPPED_WALK } from 'sightline';
import type { QualityMoment, QualityMomentReport, QualityReport } from './types.js';

function num(v: number, decimals: number): string {
  return v.toLocaleString('en-US', { minimumFractionDigits: decimals, maximumFractionDigits: decimals });
}

const MOMENT_LABEL: Readonly<Record<QualityMoment, string>> = {
  before: 'before the packet',
  after: 'after the packet',
  extrapolated: 'before the packet, extrapolated',
};

/**
 * Renders a quality report as a text table, the strategies side by side. On a run like umwelt-rs's
 * published one (no `differences`) its figures are a column beside the rows of the moment they
 * were measured at (before the packet); on any other run they follow the table, apart, with the
 * list of what differs, never beside these figures.
 */
export function formatQualityReport(r: QualityReport): string {
  const names = r.strategies.map((s) => s.strategy);
  const ref = r.reference.meanAngularErrorMrad;
  const alike = r.differences.length === 0;
  const extra = alike ? 1 : 0;
  const header = ['', ...names, ...(alike ? ['umwelt-rs¹'] : [])];
  const rows: (string[] | 'rule')[] = [header, 'rule'];
  const section = (title: string): void => {
    rows.push([title, ...names.map(() => ''), ...Array(extra).fill('')]);
  };
  // A band with nothing to measure (no entity held there, or none in range) shows a dash, not 0.
  const perBand = (moment: QualityMoment, fmt: (m: QualityMomentReport) => string, refs?: readonly number[], ofHeld = true): void => {
    const cell = (b: QualityReport['strategies'][number]['overall']): string => ((ofHeld ? b[moment].held : b.observations) === 0 ? '–' : fmt(b[moment]));
    const refCell = (i: number): string[] => (alike ? [refs ? num(refs[i], 2) : ''] : []);
    r.bands.forEach((band, i) => rows.push([`  ${band.label}`, ...r.strategies.map((s) => cell(s.bands[i])), ...refCell(i)]));
    rows.push(['  all', ...r.strategies.map((s) => cell(s.overall)), ...Array(extra).fill('')]);
  };
  for (const moment of ['before', 'extrapolated', 'after'] as const) {
    section(`angular error, mean (mrad), ${MOMENT_LABEL[moment]}`);
    perBand(moment, (m) => num(m.meanAngularErrorMrad, 2), alike && moment === r.reference.moment ? ref : undefined);
  }
  for (const moment of ['before', 'after'] as const) {
    section(`angular error, p99 (mrad), ${MOMENT_LABEL[moment]}`);
    perBand(moment, (m) => num(m.p99AngularErrorMrad, 1));
  }
  for (const moment of ['before', 'after'] as const) {
    section(`position error, mean / p99 (m), ${MOMENT_LABEL[moment]}`);
    perBand(moment, (m) => `${num(m.meanPositionErrorM, 3)} / ${num(m.p99PositionErrorM, 2)}`);
  }
  section(`staleness, mean / p99 (ticks), ${MOMENT_LABEL.before}`);
  perBand('before', (m) => `${num(m.meanStalenessTicks, 1)} / ${num(m.p99StalenessTicks, 0)}`);
  section(`${r.observe === 'gathered' ? 'gathered' : 'in range'}, not held by the client (%), ${MOMENT_LABEL.before}`);
  perBand('before', (m) => num(m.notHeldShare * 100, 1), undefined, false);
  rows.push('rule');
  rows.push([
    `${r.observe === 'gathered' ? 'gathered' : 'in range'}, never updated (pairs)`,
    ...r.strategies.map((s) => `${num(s.neverUpdated, 0)} (${num(s.neverUpdatedShare * 100, 1)}%)`),
    ...Array(extra).fill(''),
  ]);
  rows.push(['packet bytes, mean / max', ...r.strategies.map((s) => `${num(s.meanPacketBytes, 0)} / ${num(s.maxPacketBytes, 0)}`), ...Array(extra).fill('')]);
  rows.push(['update records per packet, mean', ...r.strategies.map((s) => num(s.meanUpdatesPerPacket, 1)), ...Array(extra).fill('')]);
  rows.push(['despawn records per packet, mean', ...r.strategies.map((s) => num(s.meanDespawnsPerPacket, 2)), ...Array(extra).fill('')]);

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
    `sightline quality: ${r.scenario}, ${num(r.entities, 0)} entities, ${num(r.viewers, 0)} viewers, ${num(r.ticks, 0)} ticks at ${c.tickHz} Hz${r.interrupted ? ' (interrupted)' : ''}, seed ${r.seed}\n` +
    `region ${c.regionSize} m, view radius ${c.viewRadius} m, ${c.payloadBytes}-byte packets (${c.slotsPerPacket} update slots), ` +
    `walk cap ${c.walkCap === UNCAPPED_WALK ? 'uncapped' : c.walkCap}, ghost cap ${c.ghostCap}, grace ${c.graceTicks} passes\n` +
    `compared with the truth ${measured}, every viewer, just before and just after each tick's packet, over ${r.observe === 'gathered' ? "the candidates the engine's gather returned" : 'every entity in range'} (${num(r.meanInRange, 1)} per viewer, mean); ` +
    `errors and staleness cover entities the client holds; extrapolated: from the two newest updates, at most ${num(r.extrapolate.maxTicks, 0)} ticks ahead; ` +
    `${r.governorLevel === 0 ? '' : `governor level ${r.governorLevel} held; `}pass ${num(r.meanPassMs, 2)} ms a tick (mean), ${num(r.meanServed, 1)} viewers served; wall ${num(r.wallMs / 1000, 1)} s`;
  const published = ref.map((v) => num(v, 2)).join(' / ');
  const foot = alike
    ? `  ¹ published figures: ${r.reference.source}: the same scenario and counts, measured at the same moment\n` +
      `    (the engines differ: walks, sub-cells, grace windows).`
    : `  umwelt-rs publishes ${published} mrad of mean angular error for these bands\n` +
      `  (${r.reference.source}; ${r.reference.measured}).\n` +
      `  Not comparable with this run, which differs:\n${r.differences.map((d) => `    - ${d}`).join('\n')}`;
  return `${head}\n\n${lines.join('\n')}\n\n${foot}\n`;
}
